"""snapshot: append one round's answerer, generated tests and latest generator (by artifact URI)
to the manifest that evaluation reads. Two variants because the first round has no previous
manifest."""

from kfp.dsl import Artifact, Dataset, Input, Model, Output


def snapshot_first(
    round_index: int,
    answerer: Input[Model],
    tests: Input[Dataset],
    generator: Input[Model],
    snapshots: Output[Artifact],
):
    from sparring.phases import table

    return table.run_task("snapshot-first", locals())


def snapshot_next(
    round_index: int,
    previous: Input[Artifact],
    answerer: Input[Model],
    tests: Input[Dataset],
    generator: Input[Model],
    snapshots: Output[Artifact],
):
    from sparring.phases import table

    return table.run_task("snapshot-next", locals())
