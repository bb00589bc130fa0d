"""select_game: register the trained adapters of a game when no trainable role got worse on
held-out episodes, copy the headline metrics onto the MLflow parent run, and finish it."""

from kfp.dsl import Artifact, Input, Metrics, Model, Output


def select_game(
    config_yaml: str,
    parent_run_id: str,
    model: Input[Model],
    report: Input[Artifact],
    champion: Output[Model],
    metrics: Output[Metrics],
) -> str:
    """Returns the registered model version ("" when nothing was promoted)."""
    from sparring.phases import table

    return table.run_task("select-game", locals())
