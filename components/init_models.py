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
    from sparring.phases import table

    return table.run_task("init-models", locals())
