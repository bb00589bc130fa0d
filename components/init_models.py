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
    from sparring import pipeline_support as ps

    cfg = ps.config_from_yaml(config_yaml)
    result = ps.run_init_models(cfg, parent_run_id, answerer.path, generator.path, use_champion)
    ps.to_kfp_metrics(metrics, result)
