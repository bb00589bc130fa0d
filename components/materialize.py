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
    from sparring.phases import table

    return table.run_task("materialize", locals())
