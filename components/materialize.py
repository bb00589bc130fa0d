"""materialize: load and check problems, split, write datasets; create the MLflow parent run."""

from kfp.dsl import Dataset, Metrics, Output


def materialize(
    config_yaml: str,
    parent_run_id: str,
    kfp_run_id: str,
    data: Output[Dataset],
    metrics: Output[Metrics],
) -> str:
    """Returns the MLflow parent run id (the given one, or a new one tagged with kfp_run_id)."""
    from sparring import tracking
    from sparring.phases import kfp_io
    from sparring.phases.materialize import materialize_carrying_bank
    from sparring.problems import datasets

    cfg = kfp_io.config_from_yaml(config_yaml)
    run_id = kfp_io.ensure_parent_run(cfg, parent_run_id, kfp_run_id)
    with tracking.phase_run(cfg, run_id, "materialize", kfp_io.SETUP_ROUND) as run:
        cfg = kfp_io.for_parent_run(cfg, run_id, run)  # seed_per_run: every task's seed
        result = run.log(materialize_carrying_bank(cfg, data.path))
        kfp_io.log_problem_sets(run, cfg, data.path, datasets.SETS_ALL, parent_run_id=run_id)
    kfp_io.to_kfp_metrics(metrics, result)
    return run_id
