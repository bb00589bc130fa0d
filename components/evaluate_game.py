"""evaluate_game: held-out episodes of a game by the base model and by the trained adapters."""

from kfp.dsl import Artifact, Input, Metrics, Model, Output


def evaluate_game(
    config_yaml: str,
    parent_run_id: str,
    model: Input[Model],
    report: Output[Artifact],
    metrics: Output[Metrics],
):
    from sparring.phases import table

    return table.run_task("evaluate-game", locals())
