"""The gate every phase that runs model-written code passes first: isolation, or a one-line stop.

Covers: `require_isolation`, called at the start of such a phase (materialize, validate, the
answerer and generator phases, evaluate, the game phases) and of `sparring eval`: it fails closed
(sparring.sandbox.isolation.IsolationUnavailable, one line with the fixes) before any model code
runs when `sandbox.isolation` is auto/bwrap and no bubblewrap works here; it says once per run
in the progress output which bwrap it uses (path, version, system or bundled), or that isolation
is off (`sparring run` says it before the pipeline starts; its task processes inherit
SPARRING_SANDBOX_SAID and stay quiet); and it records the same on the phase's MLflow run, when
one is active: params `sandbox.isolation_used`, `sandbox.bwrap`, `sandbox.bwrap_source`,
`sandbox.bwrap_version`, the tag `sparring.sandbox.isolation` (bwrap or none), and the metric
`sandbox_isolated` (1 or 0).

The metric, params and tag go through the phase run's buffer (`tracking.log_metrics`,
`tracking.log_params`): they survive an MLflow outage, and a phase never stops for them. Does
not cover: choosing and probing bwrap (sparring.sandbox.isolation). Imports no heavy framework:
the sandbox image runs it.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from sparring import progress
from sparring.sandbox.isolation import Isolation, check

log = logging.getLogger(__name__)

TAG = "sparring.sandbox.isolation"
# What was said, inherited by a run's task processes (kfp.local starts one per phase), so a local
# run says it once, at its start, not once per phase.
SAID_ENV = "SPARRING_SANDBOX_SAID"


def require_isolation(cfg: Any) -> Isolation:
    """Isolation for the model-written code of this phase, per `cfg.sandbox.isolation`; raises
    IsolationUnavailable (a SparringError) when auto/bwrap cannot isolate here."""
    info = check(cfg.sandbox.isolation)
    line = f"sandbox: {info.describe()}"
    if os.environ.get(SAID_ENV) != line:
        os.environ[SAID_ENV] = line
        progress.say(f"{progress.LABEL}: {line}" if progress.LABEL else line)
    # the phase run's params, tag and metric, only when sparring.tracking is already loaded: a
    # phase run can be active only then, and the sandbox image (validate) must not import MLflow
    tracking = sys.modules.get("sparring.tracking")
    if tracking is None or not tracking.active():
        return info
    tracking.log_metrics({"sandbox_isolated": 1.0 if info.mode == "bwrap" else 0.0})
    try:
        tracking.log_params(info.params(), tags={TAG: info.mode})
    except Exception as exc:  # a param is not worth stopping a phase for (MLflow's active run)
        log.warning("could not record the sandbox's isolation on the MLflow run: %s", exc)
    return info
