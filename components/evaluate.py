"""evaluate: held-out pass@k, bank pass rate, cross-play and hacking signals of every snapshot."""

from kfp.dsl import Artifact, Dataset, Input, Metrics, Output


def evaluate(
    config_yaml: str,
    parent_run_id: str,
    data: Input[Dataset],
    snapshots: Input[Artifact],
    bank: Input[Dataset],
    report: Output[Artifact],
    metrics: Output[Metrics],
):
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    result = ps.run_evaluate(cfg, parent_run_id, data.path, snapshots.path, bank.path, report.path)
    ps.to_kfp_metrics(metrics, result)
