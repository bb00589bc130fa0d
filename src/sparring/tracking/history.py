"""Reading a pipeline run's phases back from MLflow: its child runs, their per-step training
curves, and the headline metrics copied from them onto the parent run.

Covers: `child_runs` (in start order, retries and resumes included), `step_curves` (what
train_reward and the learning figure read), `phase_rows` and `log_to_parent` (what
sparring.evaluation.headline.log_headline reads, and queues through a phase's buffer).

Does not cover: creating and ending runs (sparring.tracking.runs), logging into a phase's run
(sparring.tracking.phase), the registry (sparring.tracking.registry).
"""

from __future__ import annotations

import time
from typing import Any

from sparring.tracking.buffer import PhaseRun, connect, metric_name
from sparring.tracking.runs import call


def child_runs(cfg, parent_run_id: str) -> list[Any]:
    """The MLflow child runs of a pipeline run, in start order (retries and resumes included)."""
    connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    parent = call(cfg, "reading the parent run", lambda: client.get_run(parent_run_id))
    return list(
        call(
            cfg,
            "listing the phase runs",
            lambda: client.search_runs(
                [parent.info.experiment_id],
                filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'",
                order_by=["attributes.start_time ASC"],
                max_results=1000,
            ),
        )
    )


STEP_KEYS = ("reward", "frac_reward_zero_std", "grad_norm", "loss")


def step_curves(cfg, parent_run_id: str, keys: tuple[str, ...] = STEP_KEYS) -> list[dict]:
    """The per-step training curves of a pipeline run: for each child run of `parent_run_id`
    (in start order) that logged any of `keys` at a step >= 1 (TRL and Transformers log every
    optimizer step there; the phase's own summary is logged at step 0), `{"run": name,
    "phase", "round", "curves": {key: [[step, value], ...]}}`."""
    from mlflow import MlflowClient

    client = MlflowClient()
    out = []
    for run in child_runs(cfg, parent_run_id):
        curves = {}
        for key in keys:
            if key not in run.data.metrics:
                continue
            history = call(
                cfg,
                "reading a metric's history",
                lambda run=run, key=key: client.get_metric_history(run.info.run_id, key),
            )
            history = sorted(history, key=lambda m: m.step)
            points = [[m.step, m.value] for m in history if m.step >= 1]
            if points:
                curves[key] = points
        if curves:
            tags = run.data.tags
            out.append(
                {
                    "run": run.info.run_name,
                    "phase": tags.get("sparring.phase", ""),
                    "round": int(tags.get("sparring.round", "0") or 0),
                    "curves": curves,
                }
            )
    return out


def phase_rows(cfg, parent_run_id: str) -> tuple[list[tuple[str, dict, float, float]], float]:
    """(name, metrics, start, end) of each child run of a parent run, and the parent's start
    (seconds): what sparring.evaluation.headline reads its per-round and per-phase numbers from.
    TrackingUnavailable when MLflow does not answer within the wait."""
    from mlflow import MlflowClient

    parent = call(cfg, "reading the parent run", lambda: MlflowClient().get_run(parent_run_id))
    children = [
        (c.info.run_name, c.data.metrics, c.info.start_time / 1000.0,
         (c.info.end_time or 0) / 1000.0)
        for c in child_runs(cfg, parent_run_id)
    ]  # fmt: skip
    return children, parent.info.start_time / 1000.0


def log_to_parent(run: PhaseRun, parent_run_id: str, points: list[tuple[str, float, int]]) -> int:
    """Queue (name, value, step) metrics for the parent run through `run`'s buffer, stamped
    now; returns how many."""
    from mlflow.entities import Metric

    stamp = int(time.time() * 1000)
    metrics = [Metric(metric_name(k), float(v), stamp, int(step)) for k, v, step in points]
    run.log_to(parent_run_id, metrics)
    return len(metrics)
