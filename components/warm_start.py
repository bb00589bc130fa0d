"""warm_start: SFT of the answerer on the training split's reference solutions before round 1.

Also starts the snapshot manifest with the warm-started answerer (round 0, label "warm-start"),
so evaluation reports base -> warm start -> rounds without an extra task."""

from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output


def warm_start(
    config_yaml: str,
    parent_run_id: str,
    data: Input[Dataset],
    init_model: Input[Model],
    model: Output[Model],
    snapshots: Output[Artifact],
    metrics: Output[Metrics],
):
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    result = ps.run_warm_start(cfg, parent_run_id, data.path, init_model.path, model.path)
    ps.add_snapshot(None, 0, model.uri, "", snapshots.path, label=ps.WARM_START_LABEL)
    ps.to_kfp_metrics(metrics, result)
