"""MLflow tracking: one parent run per pipeline run, a child run per phase and round, the registry.
The package is all of Sparring's MLflow; this file is its face: it hands on the names callers use
as `sparring.tracking.<name>` (and tests patch there) and holds no logic. The modules:

  runs      the parent run (config, params, library versions), ending it and its orphaned child
            runs, `child_run` (MLflow's active run), `call` (retried through an outage), ui_hint
  phase     `phase_run` (a phase's child run fed from the buffer, with its progress lines) and
            what logs into it: log_metrics, log_params, log_artifacts, trainer_callbacks
  history   reading a run's phases back: child_runs, step_curves, phase_rows, log_to_parent
  registry  register_champion, log_champion_model, download_champion, download_version,
            champion_version,
            ChampionRefused
  buffer    the tracking URI, `connect`, and PhaseRun: a phase's run fed from an outage-proof buffer
  retry     which failures to retry, and for how long (`SPARRING_MLFLOW_WAIT_SECONDS`)

An MLflow outage does not stop training: a phase's values wait in memory and are sent when the
server answers again; past the wait, the phase still finishes and prints one line saying what was
not logged. Calls that must succeed (the parent run, the registry) retry for the same wait, then
raise a one-line TrackingUnavailable.

Does not cover: metrics lost when the process itself dies while the server is down (the buffer
lives in memory); a child run created twice when the server died after creating it but before
answering (the retry creates another).
"""

from sparring.tracking import retry
from sparring.tracking.buffer import (
    PhaseRun,
    connect,
    ensure_experiment,
    metric_name,
    numeric,
    tracking_uri,
)
from sparring.tracking.history import STEP_KEYS, child_runs, log_to_parent, phase_rows, step_curves
from sparring.tracking.phase import (
    active,
    log_artifacts,
    log_metrics,
    log_params,
    phase_run,
    trainer_callbacks,
)
from sparring.tracking.registry import (
    MODEL_SUBDIR,
    ChampionRefused,
    champion_version,
    download_champion,
    download_version,
    log_champion_model,
    register_champion,
)
from sparring.tracking.retry import TrackingUnavailable
from sparring.tracking.runs import (
    ORPHAN_ERROR,
    PARENT_TAG,
    VERSIONED,
    child_run,
    close_parent_run,
    finish_parent_run,
    flatten,
    library_versions,
    parent_run_name,
    start_parent_run,
    ui_hint,
)

__all__ = [
    "MODEL_SUBDIR",
    "ORPHAN_ERROR",
    "PARENT_TAG",
    "STEP_KEYS",
    "VERSIONED",
    "ChampionRefused",
    "PhaseRun",
    "TrackingUnavailable",
    "active",
    "champion_version",
    "child_run",
    "child_runs",
    "close_parent_run",
    "connect",
    "download_champion",
    "download_version",
    "ensure_experiment",
    "finish_parent_run",
    "flatten",
    "library_versions",
    "log_artifacts",
    "log_champion_model",
    "log_metrics",
    "log_params",
    "log_to_parent",
    "metric_name",
    "numeric",
    "parent_run_name",
    "phase_rows",
    "phase_run",
    "register_champion",
    "retry",
    "start_parent_run",
    "step_curves",
    "tracking_uri",
    "trainer_callbacks",
    "ui_hint",
]
