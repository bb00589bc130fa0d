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
    from sparring.phases import table

    return table.run_task("warm-start", locals())
