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
    from sparring import tracking
    from sparring.phases import kfp_io
    from sparring.phases.game import train_game as phase

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    run_id = kfp_io.ensure_parent_run(cfg, parent_run_id, kfp_run_id)
    with tracking.phase_run(cfg, run_id, f"train-{cfg.game.name}", 1) as run:
        result = run.log(phase(cfg, model.path))
    kfp_io.to_kfp_metrics(metrics, result)
    model.metadata["game"] = cfg.game.name
    return run_id
