"""A phase's run and what logs into it: `phase_run` opens the child run `r{round}-{name}` of the
parent run, fed from an outage-proof buffer (sparring.tracking.buffer.PhaseRun), with a progress
line when the phase starts and one with its time, peak memory and main numbers when it is done
(its cost, sparring.tracking.resources, is logged with its metrics); while it is
open, `log_metrics`, `log_params`, `log_artifacts` and `trainer_callbacks` (through which TRL's
and Transformers' per-step logs arrive) write into it, else into MLflow's active run.

Covers: the phase's run as this process's active one (`active`), and the four ways to log into
it. An MLflow outage delays what is logged, never the phase.

Does not cover: the buffer itself (sparring.tracking.buffer), the parent run and MLflow's active
child run (sparring.tracking.runs), reading runs back (sparring.tracking.history).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparring.tracking.buffer import PhaseRun, connect, numeric
from sparring.tracking.resources import PREFIX, PhaseCost

_ACTIVE: PhaseRun | None = None


@contextlib.contextmanager
def phase_run(cfg, parent_run_id: str, name: str, round_index: int) -> Iterator[PhaseRun]:
    """A phase inside the child run `r{round}-{name}` of the parent run (TRL logs into it too,
    through `trainer_callbacks`), with a progress line when it starts and one with its time and
    main numbers when it is done. An MLflow outage delays what is logged, never the phase.

        with tracking.phase_run(cfg, parent_run_id, "train-answerer", 1) as run:
            result = run.log(answerer.train_answerer(cfg, ...))
    """
    global _ACTIVE
    from sparring import progress

    progress.LABEL = f"r{round_index} {name}"
    progress.say(f"{progress.LABEL}: start")
    start = time.perf_counter()
    mlflow = connect(cfg)
    if mlflow.active_run() is not None:
        mlflow.end_run()
    run = PhaseRun(cfg, parent_run_id, name, round_index)
    run.flush(now=True)  # create the run now if MLflow answers
    _ACTIVE = run
    status = "FAILED"
    cost = PhaseCost()
    try:
        with progress.heartbeat():  # a line at least every HEARTBEAT_S, whatever the phase does
            yield run
        status = "FINISHED"
    finally:
        # into the phase's metrics (the dict `run.log` returned, which the KFP task's metrics
        # artifact is written from) and its MLflow run: a study run's record reads them there
        figures = cost.figures()
        run.metrics.update(figures)
        run.log_metrics(figures)
        _ACTIVE = None
        run.close(status)
    seconds = time.perf_counter() - start
    peak = figures[f"{PREFIX}peak_rss_mb"] / 1024
    progress.say(
        f"{progress.LABEL}: done in {seconds:.0f}s (peak memory {peak:.2f} GiB) "
        f"{progress.brief(run.metrics)}"
    )


def active() -> bool:
    """Whether metrics logged now go to a run (a phase's, or MLflow's active run)."""
    if _ACTIVE is not None:
        return True
    try:
        import mlflow
    except ImportError:  # pragma: no cover
        return False
    return mlflow.active_run() is not None


def log_metrics(metrics: dict[str, Any], step: int | None = None) -> None:
    """Log the numeric entries of a dict (non-numbers are skipped) into the phase's run
    (buffered through an outage), or else into MLflow's active run."""
    if _ACTIVE is not None:
        _ACTIVE.log_metrics(metrics, step=step)
        return
    import mlflow

    values = numeric(metrics)
    if values:
        mlflow.log_metrics(values, step=step)


def log_params(params: dict[str, Any], tags: dict[str, Any] | None = None) -> None:
    """Log params and tags on the phase's run (buffered through an outage: `PhaseRun.log_params`),
    or else on MLflow's active run; nothing without a run."""
    if _ACTIVE is not None:
        _ACTIVE.log_params(params, tags)
        return
    import mlflow

    if mlflow.active_run() is None:
        return
    if params:
        mlflow.log_params({k: str(v) for k, v in params.items()})
    if tags:
        mlflow.set_tags({k: str(v) for k, v in tags.items()})


def log_artifacts(files: list[str | Path], artifact_path: str | None = None) -> int:
    """Log files as artifacts of the phase's run (buffered through an outage), or else of
    MLflow's active run; returns how many were handed over (0 without a run)."""
    if _ACTIVE is not None:
        for f in files:
            _ACTIVE.log_artifact(str(f), artifact_path)
        return len(files)
    import mlflow

    if mlflow.active_run() is None:
        return 0
    for f in files:
        mlflow.log_artifact(str(f), artifact_path=artifact_path)
    return len(files)


def trainer_callbacks() -> list[Any]:
    """For a Transformers/TRL trainer: a callback that logs every `on_log` (loss, reward, grad
    norm, TRL's and Sparring's per-step numbers) through `log_metrics` at the global step, when a
    run is active. It replaces `report_to="mlflow"`, whose callback would stop training when
    MLflow is down."""
    if not active():
        return []
    from transformers import TrainerCallback

    class TrackingCallback(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and state.is_world_process_zero:
                log_metrics(logs, step=state.global_step)

    return [TrackingCallback()]
