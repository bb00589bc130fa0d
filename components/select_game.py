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
    from sparring import tracking
    from sparring.evaluation import headline
    from sparring.phases import kfp_io
    from sparring.phases.game import game_headline
    from sparring.phases.game import select_game as phase

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    with tracking.phase_run(cfg, parent_run_id, "select", 3) as run:
        result = run.log(phase(cfg, model.path, report.path, champion.path, parent_run_id))
        if parent_run_id:  # the last phase: the run's headline numbers onto the parent run
            headline.log_headline(cfg, run, parent_run_id, game_headline(report.path, result))
    if parent_run_id:
        tracking.finish_parent_run(cfg, parent_run_id)
    kfp_io.to_kfp_metrics(metrics, result)
    champion.metadata["reason"] = str(result.get("reason", ""))
    return str(result.get("version", ""))
