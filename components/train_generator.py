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
    from sparring import tracking
    from sparring.phases import generator, kfp_io

    cfg = kfp_io.config_from_yaml(config_yaml)
    with tracking.phase_run(cfg, parent_run_id, "train-generator", round_index) as run:
        result = run.log(
            generator.train_generator(
                cfg, round_index, data.path, frozen_answerer.path, init_model.path, model.path,
                tests.path, frozen_solutions.path,
            )
        )  # fmt: skip
    kfp_io.to_kfp_metrics(metrics, result)
