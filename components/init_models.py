"""init_models: pointer folders for the base models, or the registered champion as answerer."""

from kfp.dsl import Metrics, Model, Output


def init_models(
    config_yaml: str,
    parent_run_id: str,
    use_champion: bool,
    answerer: Output[Model],
    generator: Output[Model],
    metrics: Output[Metrics],
):
    from sparring import tracking
    from sparring.phases import init_models as phase
    from sparring.phases import kfp_io

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    with tracking.phase_run(cfg, parent_run_id, "init-models", kfp_io.SETUP_ROUND) as run:
        result = run.log(phase.init_models(cfg, answerer.path, generator.path, use_champion))
    kfp_io.to_kfp_metrics(metrics, result)
