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
    from sparring import tracking
    from sparring.phases import kfp_io, snapshot
    from sparring.phases import warm_start as phase
    from sparring.problems import datasets

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    with tracking.phase_run(cfg, parent_run_id, "warm-start", kfp_io.SETUP_ROUND) as run:
        kfp_io.log_problem_sets(run, cfg, data.path, datasets.TRAINING)
        result = run.log(phase.warm_start(cfg, data.path, init_model.path, model.path))
    snapshot.add_snapshot(None, 0, model.uri, "", snapshots.path, label=snapshot.WARM_START_LABEL)
    kfp_io.to_kfp_metrics(metrics, result)
