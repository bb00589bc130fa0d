"""MLflow tracking: one parent run per pipeline run, a child run per phase and round, the registry.

Covers: the tracking URI (`MLFLOW_TRACKING_URI` wins over `tracking.mlflow_uri`; relative
`sqlite:///` paths are made absolute so every KFP task process sees the same database), the parent
run (tagged with the KFP run id, the resolved config as `config.yaml` plus flattened params), child
runs opened in whichever process a component runs (`start_run(parent_run_id=...)` works across
processes), metric logging, registering the champion and downloading it for recurring training.

MLflow 3: `register_model("runs:/…")` fails for plain artifact folders, so registration logs the
folder as run artifacts and calls `create_registered_model` + `create_model_version(source=…)` +
`set_registered_model_alias`.

Does not cover: TRL's own MLflow callback (it logs into the child run this module opens).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparring.errors import SparringError

log = logging.getLogger(__name__)

PARENT_TAG = "sparring.kfp_run_id"
MODEL_SUBDIR = "champion"


def tracking_uri(cfg) -> str:
    """MLFLOW_TRACKING_URI if set, else `tracking.mlflow_uri` (relative sqlite paths: absolute)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or cfg.tracking.mlflow_uri or "sqlite:///mlflow.db"
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        uri = prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


def _mlflow(cfg):
    import mlflow

    mlflow.set_tracking_uri(tracking_uri(cfg))
    return mlflow


def ui_hint(cfg) -> str:
    """How to look at the runs: a server URL, or the `mlflow ui` command for a local store."""
    uri = tracking_uri(cfg)
    if uri.startswith(("http://", "https://")):
        return uri
    return f"mlflow ui --backend-store-uri {uri}"


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config data -> {"grpo.beta": "0.0", ...} (MLflow params: strings, <= 6000 chars)."""
    out: dict[str, str] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = str(value)[:6000]
    return out


def _experiment_id(mlflow, cfg) -> str:
    exp = mlflow.get_experiment_by_name(cfg.tracking.experiment)
    if exp is not None:
        return exp.experiment_id
    return mlflow.create_experiment(cfg.tracking.experiment)


def start_parent_run(cfg, kfp_run_id: str) -> str:
    """Create the parent run of one pipeline run; return its id (the run stays open)."""
    from sparring.config import dump_yaml, to_dict

    mlflow = _mlflow(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    run = client.create_run(
        _experiment_id(mlflow, cfg),
        run_name=f"{cfg.name}-{kfp_run_id}"[:250],
        tags={PARENT_TAG: kfp_run_id, "sparring.name": cfg.name, "sparring.digest": cfg.digest()},
    )
    run_id = run.info.run_id
    params = flatten(to_dict(cfg))
    items = sorted(params.items())
    from mlflow.entities import Param

    for i in range(0, len(items), 100):  # log_batch takes at most 100 params per call
        client.log_batch(run_id, params=[Param(k, v) for k, v in items[i : i + 100]])
    client.log_text(run_id, dump_yaml(cfg), "config.yaml")
    log.info("MLflow parent run %s (KFP run %s)", run_id, kfp_run_id)
    return run_id


def finish_parent_run(cfg, run_id: str, status: str = "FINISHED") -> None:
    _mlflow(cfg)
    from mlflow import MlflowClient

    MlflowClient().set_terminated(run_id, status=status)


def close_parent_run(
    cfg, parent_run_id: str, kfp_run_id: str, failed: bool, error: str = ""
) -> str:
    """End the parent run of a pipeline run that is still open: FAILED (with the error as the tag
    `sparring.error`) when the pipeline failed, FINISHED otherwise. The pipeline's exit task
    calls it; on success `select` has normally finished the run already. Returns the run id, or
    "" when there is no open parent run (the pipeline failed before creating it)."""
    mlflow = _mlflow(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    run_id = parent_run_id
    if not run_id and kfp_run_id:
        exp = mlflow.get_experiment_by_name(cfg.tracking.experiment)
        runs = [] if exp is None else client.search_runs(
            [exp.experiment_id],
            filter_string=f"tags.`{PARENT_TAG}` = '{kfp_run_id}' and attributes.status = 'RUNNING'",
            max_results=5,
        )  # fmt: skip
        run_id = runs[0].info.run_id if runs else ""
    if not run_id or client.get_run(run_id).info.status != "RUNNING":
        return ""
    if failed:
        client.set_tag(run_id, "sparring.error", (error or "pipeline failed")[:5000])
    client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")
    return run_id


@contextlib.contextmanager
def child_run(cfg, parent_run_id: str, name: str, round_index: int) -> Iterator[str]:
    """Open a child run `r{round}-{name}` of the parent run, active for `log_metrics` (and TRL)."""
    mlflow = _mlflow(cfg)
    if mlflow.active_run() is not None:
        mlflow.end_run()
    exp_id = mlflow.get_run(parent_run_id).info.experiment_id if parent_run_id else None
    if exp_id is None:
        exp_id = _experiment_id(mlflow, cfg)
    with mlflow.start_run(
        experiment_id=exp_id,
        run_name=f"r{round_index}-{name}",
        parent_run_id=parent_run_id or None,
        tags={"sparring.round": str(round_index), "sparring.phase": name},
    ) as run:
        yield run.info.run_id


class PhaseRun:
    """The active child run of a phase: `log(metrics)` logs the numeric entries and keeps
    them for the line printed when the phase is done."""

    def __init__(self) -> None:
        self.metrics: dict[str, Any] = {}

    def log(self, metrics: dict[str, Any] | None) -> dict[str, Any]:
        self.metrics = dict(metrics or {})
        log_metrics(self.metrics)
        return self.metrics


@contextlib.contextmanager
def phase_run(cfg, parent_run_id: str, name: str, round_index: int) -> Iterator[PhaseRun]:
    """A phase inside the child run `r{round}-{name}` of the parent run (TRL logs into it too),
    with a progress line when it starts and one with its time and main numbers when it is done.

        with tracking.phase_run(cfg, parent_run_id, "train-answerer", 1) as run:
            result = run.log(answerer.train_answerer(cfg, ...))
    """
    import time

    from sparring import progress

    progress.LABEL = f"r{round_index} {name}"
    progress.say(f"{progress.LABEL}: start")
    start = time.perf_counter()
    run = PhaseRun()
    with child_run(cfg, parent_run_id, name, round_index):
        yield run
    seconds = time.perf_counter() - start
    progress.say(f"{progress.LABEL}: done in {seconds:.0f}s {progress.brief(run.metrics)}")


def metric_name(key: str) -> str:
    """An MLflow-legal metric name: `pass@1` -> `pass_at_1`; other odd characters -> `_`."""
    key = str(key).replace("@", "_at_")
    return re.sub(r"[^A-Za-z0-9_\-. :/]", "_", key)


def log_metrics(metrics: dict[str, Any], step: int | None = None) -> None:
    """Log the numeric entries of a dict into the active run (non-numbers are skipped)."""
    import mlflow

    numeric = {
        metric_name(k): float(v)
        for k, v in metrics.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    if numeric:
        mlflow.log_metrics(numeric, step=step)


def child_runs(cfg, parent_run_id: str) -> list[Any]:
    """The MLflow child runs of a pipeline run, in start order (retries and resumes included)."""
    _mlflow(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    parent = client.get_run(parent_run_id)
    return list(
        client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'",
            order_by=["attributes.start_time ASC"],
            max_results=1000,
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
            history = sorted(client.get_metric_history(run.info.run_id, key), key=lambda m: m.step)
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


def register_champion(cfg, model_dir: str, run_id: str, score: float) -> str:
    """Log a model folder as artifacts of `run_id`, register it, point the alias at it."""
    if not Path(model_dir).is_dir():
        raise SparringError(f"{model_dir}: champion model folder does not exist")
    _mlflow(cfg)
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient()
    client.log_artifacts(run_id, model_dir, MODEL_SUBDIR)
    source = f"{client.get_run(run_id).info.artifact_uri.rstrip('/')}/{MODEL_SUBDIR}"
    name = cfg.selection.registered_model
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(name)
    version = client.create_model_version(
        name, source=source, run_id=run_id, tags={"sparring.score": f"{score:.6f}"}
    )
    client.set_registered_model_alias(name, cfg.selection.alias, version.version)
    log.info("registered %s version %s as @%s", name, version.version, cfg.selection.alias)
    return str(version.version)


def download_champion(cfg, out_dir: str) -> bool:
    """Download `models:/NAME@ALIAS` into out_dir; False when there is no such model or alias."""
    mlflow = _mlflow(cfg)
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    name, alias = cfg.selection.registered_model, cfg.selection.alias
    try:
        version = MlflowClient().get_model_version_by_alias(name, alias)
    except MlflowException:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        got = mlflow.artifacts.download_artifacts(artifact_uri=version.source, dst_path=tmp)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        import shutil

        shutil.copytree(got, out_dir, dirs_exist_ok=True)
    return True
