"""train_answerer: one GRPO phase of the answerer on the problems plus the validated test bank."""

from kfp.dsl import Dataset, Input, Metrics, Model, Output


def train_answerer(
    config_yaml: str,
    parent_run_id: str,
    round_index: int,
    phase: str,
    data: Input[Dataset],
    bank: Input[Dataset],
    init_model: Input[Model],
    model: Output[Model],
    metrics: Output[Metrics],
):
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    result = ps.run_train_answerer(
        cfg, parent_run_id, round_index, phase, data.path, bank.path, init_model.path, model.path
    )
    ps.to_kfp_metrics(metrics, result)
