"""finalize: the pipeline's exit task. It runs whether the run succeeded or not, and ends the
MLflow parent run that a failure would otherwise leave RUNNING."""

from kfp import dsl


def finalize(
    config_yaml: str, parent_run_id: str, kfp_run_id: str, status: dsl.PipelineTaskFinalStatus
) -> str:
    """Returns the id of the run it ended ("" when there was none open)."""
    from sparring import tracking
    from sparring.phases import kfp_io

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    failed = status.state != "SUCCEEDED"
    return tracking.close_parent_run(
        cfg, parent_run_id, kfp_run_id, failed, status.error_message or ""
    )
