"""finalize: the pipeline's exit task. It runs whether the run succeeded or not, and ends the
MLflow parent run that a failure would otherwise leave RUNNING."""

from kfp import dsl


def finalize(
    config_yaml: str, parent_run_id: str, kfp_run_id: str, status: dsl.PipelineTaskFinalStatus
) -> str:
    """Returns the id of the run it ended ("" when there was none open)."""
    from sparring.phases import table

    return table.run_task("finalize", locals())
