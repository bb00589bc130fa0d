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
    from sparring.phases.snapshot import add_snapshot

    add_snapshot(
        None, round_index, answerer.uri, tests.uri, snapshots.path, generator_uri=generator.uri
    )


def snapshot_next(
    round_index: int,
    previous: Input[Artifact],
    answerer: Input[Model],
    tests: Input[Dataset],
    generator: Input[Model],
    snapshots: Output[Artifact],
):
    from sparring.phases.snapshot import add_snapshot

    add_snapshot(
        previous.path, round_index, answerer.uri, tests.uri, snapshots.path,
        generator_uri=generator.uri,
    )  # fmt: skip
