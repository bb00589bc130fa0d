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
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    run_id, result = ps.run_materialize(cfg, parent_run_id, kfp_run_id, data.path)
    ps.to_kfp_metrics(metrics, result)
    return run_id
