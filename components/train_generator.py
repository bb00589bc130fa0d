"""train_generator: one GRPO phase of the test generator against a frozen answerer snapshot."""

from kfp.dsl import Dataset, Input, Metrics, Model, Output


def train_generator(
    config_yaml: str,
    parent_run_id: str,
    round_index: int,
    data: Input[Dataset],
    frozen_answerer: Input[Model],
    init_model: Input[Model],
    model: Output[Model],
    tests: Output[Dataset],
    frozen_solutions: Output[Dataset],
    metrics: Output[Metrics],
):
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    result = ps.run_train_generator(
        cfg,
        parent_run_id,
        round_index,
        data.path,
        frozen_answerer.path,
        init_model.path,
        model.path,
        tests.path,
        frozen_solutions.path,
    )
    ps.to_kfp_metrics(metrics, result)
