"""select: choose the best snapshot, register it as the champion, persist the test bank, and
finish the MLflow parent run."""

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
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    result = ps.run_select(
        cfg, parent_run_id, report.path, snapshots.path, bank.path, champion.path
    )
    ps.to_kfp_metrics(metrics, result)
    champion.metadata["reason"] = str(result.get("reason", ""))
    return str(result.get("version", ""))
