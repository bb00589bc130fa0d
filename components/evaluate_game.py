"""evaluate_game: held-out episodes of a game by the base model and by the trained adapters."""

from kfp.dsl import Artifact, Input, Metrics, Model, Output


def evaluate_game(
    config_yaml: str,
    parent_run_id: str,
    model: Input[Model],
    report: Output[Artifact],
    metrics: Output[Metrics],
):
    from sparring import tracking
    from sparring.phases import kfp_io
    from sparring.phases.game import evaluate_game as phase

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    with tracking.phase_run(cfg, parent_run_id, "evaluate", 2) as run:
        result = run.log(phase(cfg, model.path, report.path))
    kfp_io.to_kfp_metrics(metrics, result)
