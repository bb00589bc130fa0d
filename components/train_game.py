"""train_game: the one generic training task of a game pipeline: play, assign credit, update the
roles' adapters for `game.steps` steps; create the MLflow parent run on a cluster."""

from kfp.dsl import Metrics, Model, Output


def train_game(
    config_yaml: str,
    parent_run_id: str,
    kfp_run_id: str,
    model: Output[Model],
    metrics: Output[Metrics],
) -> str:
    """Returns the MLflow parent run id (the given one, or a new one tagged with kfp_run_id)."""
    from sparring.phases import table

    return table.run_task("train-game", locals())
