"""select: choose the best snapshot, register it as the champion, persist the test bank, copy
the run's headline metrics onto the MLflow parent run (sparring.evaluation.headline), and finish
it."""

from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output


def select(
    config_yaml: str,
    parent_run_id: str,
    report: Input[Artifact],
    snapshots: Input[Artifact],
    bank: Input[Dataset],
    champion: Output[Model],
    metrics: Output[Metrics],
) -> str:
    """Returns the registered model version ("" when nothing was promotable)."""
    from sparring.phases import table

    return table.run_task("select", locals())
