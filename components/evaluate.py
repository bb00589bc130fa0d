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
    from sparring.phases import table

    return table.run_task("evaluate", locals())
