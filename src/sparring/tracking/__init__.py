"""MLflow tracking: one parent run per pipeline run, a child run per phase and round, the registry.
The package is all of Sparring's MLflow: this module, `buffer` (the URI, a phase's run fed from
an outage-proof buffer) and `retry` (what to retry, and how long). Why one module here: the
parent run, the phase runs and the registry share one outage-proof client (retries, the
buffer's run ids); split, each part would reach into the others' run state.

Covers: the parent run (named `<config name> <UTC time>`, tagged with the KFP run id, the
resolved config as `config.yaml` plus flattened params and the library versions as `version.*`
params, in an experiment tagged `mlflow.experimentKind=finetuning` so MLflow's UI opens on its
runs), child runs created in whichever process a component runs (`phase_run`), metric logging
(and `trainer_callbacks`, through which TRL's and Transformers' per-step logs arrive), params and
tags of a phase (`log_params`), reading a run's phases back, the headline metrics copied onto the
parent run (`log_headline`; the names are sparring.headline's), registering the champion and
downloading it for recurring training. The tracking URI and the buffer are in
sparring.tracking.buffer.

An MLflow outage does not stop training. A phase's child run (`phase_run`, `PhaseRun`) is fed
from a buffer: metric values and files wait in memory while the server does not answer and are
sent, with the time they were logged, when it answers again (the run itself is created then if
it could not be at the start). At the phase's end Sparring waits up to
`SPARRING_MLFLOW_WAIT_SECONDS` (sparring.tracking.retry) for the rest; past that, the phase still
finishes and prints one line saying what was not logged. Calls that must succeed (the parent
run, the registry) retry for the same wait, then raise a one-line TrackingUnavailable. Ending
the parent run also ends its child runs still marked RUNNING (killed tasks, or ones that ended
while MLflow was down) as FAILED, tagged `sparring.error`.

MLflow 3: `register_model("runs:/…")` fails for plain artifact folders, so registration logs the
folder as a logged model of the run (`create_logged_model` + `log_model_artifacts` +
`finalize_logged_model`, and `log_outputs` on the run) and registers that:
`create_model_version(source="models:/<model id>", run_id=…, model_id=…)` +
`set_registered_model_alias`, so the registry version links to the logged model and its run.

Does not cover: the retry rules (sparring.tracking.retry); metrics lost when the process itself
dies while the server is down (the buffer lives in memory); a child run created twice when the
server died after creating it but before answering (the retry creates another).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from sparring.errors import SparringError
from sparring.tracking import retry
from sparring.tracking.buffer import (
    PhaseRun,
    connect,
    ensure_experiment,
    metric_name,
    numeric,
    tracking_uri,
)
from sparring.tracking.retry import TrackingUnavailable

# re-exported: callers know them as sparring.tracking.*
__all__ = ["PhaseRun", "TrackingUnavailable", "metric_name", "tracking_uri"]

T = TypeVar("T")

log = logging.getLogger(__name__)

PARENT_TAG = "sparring.kfp_run_id"
MODEL_SUBDIR = "champion"


def _call(cfg, what: str, fn: Callable[[], T]) -> T:
    """`fn()` against the tracking server, retried through an outage for the configured wait."""
    return retry.call(tracking_uri(cfg), what, fn)


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
    """The config's experiment (created and tagged as fine-tuning if needed), retried."""
    from mlflow import MlflowClient

    return _call(
        cfg,
        "looking up the experiment",
        lambda: ensure_experiment(MlflowClient(), cfg.tracking.experiment),
    )


# The libraries whose versions change what a run trains and measures; `python` is the
# interpreter. A package that is not installed (torch under MLX) is simply not logged.
VERSIONED = ("torch", "transformers", "trl", "peft", "accelerate", "mlflow", "kfp", "sparring")


def library_versions() -> dict[str, str]:
    """`version.<package>` params: the versions this process runs with (python included)."""
    import importlib.metadata
    import platform

    out = {"version.python": platform.python_version()}
    for package in VERSIONED:
        try:
            out[f"version.{package}"] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def parent_run_name(cfg, when: float | None = None) -> str:
    """`<config name> <UTC time>`: what a person reads in the runs table. The KFP run id (a
    long generated id that repeated the config name) is the tag `sparring.kfp_run_id`."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() if when is None else when))
    return f"{cfg.name} {stamp}"[:250]


def start_parent_run(cfg, kfp_run_id: str) -> str:
    """Create the parent run of one pipeline run; return its id (the run stays open)."""
    from sparring.config import dump_yaml, to_dict

    mlflow = connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    exp_id = _experiment_id(mlflow, cfg)
    run = _call(
        cfg,
        "creating the parent run",
        lambda: client.create_run(
            exp_id,
            run_name=parent_run_name(cfg),
            tags={
                PARENT_TAG: kfp_run_id,
                "sparring.name": cfg.name,
                "sparring.digest": cfg.digest(),
            },
        ),
    )
    run_id = run.info.run_id
    params = {**flatten(to_dict(cfg)), **library_versions()}
    items = sorted(params.items())
    from mlflow.entities import Param

    for i in range(0, len(items), 100):  # log_batch takes at most 100 params per call
        batch = [Param(k, v) for k, v in items[i : i + 100]]
        _call(cfg, "logging the config", lambda b=batch: client.log_batch(run_id, params=b))
    _call(
        cfg, "logging config.yaml", lambda: client.log_text(run_id, dump_yaml(cfg), "config.yaml")
    )
    log.info("MLflow parent run %s (KFP run %s)", run_id, kfp_run_id)
    return run_id


ORPHAN_ERROR = "its end was never recorded (its task was killed, or MLflow was down when it ended)"


def _end_open_children(cfg, client, parent_run_id: str) -> int:
    """End the parent's child runs still marked RUNNING as FAILED (tag `sparring.error`)."""
    parent = _call(cfg, "reading the parent run", lambda: client.get_run(parent_run_id))
    runs = _call(
        cfg,
        "listing the phase runs",
        lambda: client.search_runs(
            [parent.info.experiment_id],
            filter_string=(
                f"tags.mlflow.parentRunId = '{parent_run_id}' and attributes.status = 'RUNNING'"
            ),
            max_results=1000,
        ),
    )
    for r in runs:
        rid = r.info.run_id
        _call(
            cfg,
            "ending a phase run",
            lambda rid=rid: client.set_tag(rid, "sparring.error", ORPHAN_ERROR),
        )
        _call(cfg, "ending a phase run", lambda rid=rid: client.set_terminated(rid, "FAILED"))
    return len(runs)


def finish_parent_run(cfg, run_id: str, status: str = "FINISHED") -> None:
    """End the parent run (and any child run left RUNNING); retried through an outage."""
    connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    _end_open_children(cfg, client, run_id)
    _call(cfg, "ending the parent run", lambda: client.set_terminated(run_id, status=status))


def close_parent_run(
    cfg, parent_run_id: str, kfp_run_id: str, failed: bool, error: str = ""
) -> str:
    """End the parent run of a pipeline run that is still open: FAILED (with the error as the tag
    `sparring.error`) when the pipeline failed, FINISHED otherwise. The pipeline's exit task
    calls it; on success `select` has normally finished the run already. Returns the run id, or
    "" when there is no open parent run (the pipeline failed before creating it)."""
    mlflow = connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    run_id = parent_run_id
    if not run_id and kfp_run_id:
        exp = _call(
            cfg,
            "looking up the experiment",
            lambda: mlflow.get_experiment_by_name(cfg.tracking.experiment),
        )
        open_runs = f"tags.`{PARENT_TAG}` = '{kfp_run_id}' and attributes.status = 'RUNNING'"
        runs = (
            []
            if exp is None
            else _call(
                cfg,
                "finding the parent run",
                lambda: client.search_runs(
                    [exp.experiment_id], filter_string=open_runs, max_results=5
                ),
            )
        )
        run_id = runs[0].info.run_id if runs else ""
    if not run_id:
        return ""
    _end_open_children(cfg, client, run_id)
    status = _call(cfg, "reading the parent run", lambda: client.get_run(run_id).info.status)
    if status != "RUNNING":
        return ""
    if failed:
        message = (error or "pipeline failed")[:5000]
        _call(
            cfg, "tagging the parent run", lambda: client.set_tag(run_id, "sparring.error", message)
        )
    final = "FAILED" if failed else "FINISHED"
    _call(cfg, "ending the parent run", lambda: client.set_terminated(run_id, status=final))
    return run_id


@contextlib.contextmanager
def child_run(cfg, parent_run_id: str, name: str, round_index: int) -> Iterator[str]:
    """Open a child run `r{round}-{name}` of the parent run as MLflow's active run (for code that
    logs through `mlflow.*` directly). Phases use `phase_run`, which survives an outage."""
    mlflow = connect(cfg)
    if mlflow.active_run() is not None:
        mlflow.end_run()
    exp_id = None
    if parent_run_id:
        parent = _call(cfg, "reading the parent run", lambda: mlflow.get_run(parent_run_id))
        exp_id = parent.info.experiment_id
    if exp_id is None:
        exp_id = _experiment_id(mlflow, cfg)
    with mlflow.start_run(
        experiment_id=exp_id,
        run_name=f"r{round_index}-{name}",
        parent_run_id=parent_run_id or None,
        tags={"sparring.round": str(round_index), "sparring.phase": name},
    ) as run:
        yield run.info.run_id


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
    try:
        with progress.heartbeat():  # a line at least every HEARTBEAT_S, whatever the phase does
            yield run
        status = "FINISHED"
    finally:
        _ACTIVE = None
        run.close(status)
    seconds = time.perf_counter() - start
    progress.say(f"{progress.LABEL}: done in {seconds:.0f}s {progress.brief(run.metrics)}")


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


def child_runs(cfg, parent_run_id: str) -> list[Any]:
    """The MLflow child runs of a pipeline run, in start order (retries and resumes included)."""
    connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    parent = _call(cfg, "reading the parent run", lambda: client.get_run(parent_run_id))
    return list(
        _call(
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
            history = _call(
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


def log_headline(
    cfg, run: PhaseRun, parent_run_id: str, points: list[tuple[str, float, int]]
) -> int:
    """Queue the run's headline metrics (sparring.headline) for the parent run through `run`'s
    buffer: `points` (what the calling phase knows: the report, its decision) plus those read
    from the parent's child runs (per round, per phase kind, wall times). Returns how many were
    queued. When MLflow cannot list the child runs (after the usual wait), only `points` go, and
    one line says so: the headline never fails a phase."""
    from mlflow.entities import Metric

    from sparring import headline, progress

    now = time.time()
    points = list(points)
    try:
        from mlflow import MlflowClient

        parent = _call(cfg, "reading the parent run", lambda: MlflowClient().get_run(parent_run_id))
        children = [
            (c.info.run_name, c.data.metrics, c.info.start_time / 1000.0,
             (c.info.end_time or 0) / 1000.0)
            for c in child_runs(cfg, parent_run_id)
        ]  # fmt: skip
        points += headline.from_phase_runs(children, now, parent.info.start_time / 1000.0)
    except TrackingUnavailable as exc:
        progress.say(f"headline: per-round and per-phase numbers not copied to the parent ({exc})")
    stamp = int(now * 1000)
    metrics = [Metric(metric_name(k), float(v), stamp, int(step)) for k, v, step in points]
    run.log_to(parent_run_id, metrics)
    return len(metrics)


def register_champion(cfg, model_dir: str, run_id: str, score: float) -> str:
    """Log a model folder as an MLflow 3 logged model of `run_id` (the run that produced it: its
    output, so the runs table's Model column shows it), register a version of it, point the
    alias at it; returns the version. Each call is retried through an outage for
    `SPARRING_MLFLOW_WAIT_SECONDS`, then fails in one line: a champion that was not registered
    is not reported as registered."""
    if not Path(model_dir).is_dir():
        raise SparringError(f"{model_dir}: champion model folder does not exist")
    connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    model_id = log_champion_model(cfg, client, model_dir, run_id, score)
    version = _register_version(cfg, client, model_id, run_id, score)
    _call(
        cfg,
        "setting the champion alias",
        lambda: client.set_registered_model_alias(
            cfg.selection.registered_model, cfg.selection.alias, version
        ),
    )
    log.info(
        "registered %s version %s as @%s (logged model %s)",
        cfg.selection.registered_model, version, cfg.selection.alias, model_id,
    )  # fmt: skip
    return version


def log_champion_model(cfg, client, model_dir: str, run_id: str, score: float) -> str:
    """The champion folder as a READY logged model whose source run is `run_id`, logged as that
    run's output; returns its id. A plain folder (weights, tokenizer, Sparring's meta), not a
    flavor: `models:/<id>` downloads it as it is, which is all `download_champion` and
    `sparring.inference.resolve_checkpoint` need."""
    from mlflow.entities import LoggedModelOutput

    run = _call(cfg, "reading the parent run", lambda: client.get_run(run_id))
    model = _call(
        cfg,
        "creating the champion's logged model",
        lambda: client.create_logged_model(
            run.info.experiment_id,
            name=MODEL_SUBDIR,
            source_run_id=run_id,
            tags={"sparring.score": f"{score:.6f}", "sparring.name": cfg.name},
            model_type="answerer",
        ),
    )
    model_id = model.model_id
    _call(
        cfg,
        "uploading the champion",
        lambda: client.log_model_artifacts(model_id, model_dir),
    )
    _call(cfg, "finalizing the champion", lambda: client.finalize_logged_model(model_id, "READY"))
    _call(
        cfg,
        "linking the champion to its run",
        lambda: client.log_outputs(run_id, [LoggedModelOutput(model_id, step=0)]),
    )
    return model_id


def _register_version(cfg, client, model_id: str, run_id: str, score: float) -> str:
    """A registry version of the logged model (source `models:/<id>`, its run and model id),
    and the logged model's `mlflow.modelVersions` tag naming it, as `mlflow.register_model`
    does (the logged model's page then links to the registry)."""
    import json

    from mlflow.exceptions import MlflowException
    from mlflow.utils.mlflow_tags import MLFLOW_MODEL_VERSIONS

    name = cfg.selection.registered_model

    def ensure_model() -> None:
        try:
            client.get_registered_model(name)
        except MlflowException as exc:
            if retry.transient(exc):
                raise
            client.create_registered_model(name)

    _call(cfg, "creating the registered model", ensure_model)
    version = _call(
        cfg,
        "registering the champion",
        lambda: client.create_model_version(
            name,
            source=f"models:/{model_id}",
            run_id=run_id,
            model_id=model_id,
            tags={"sparring.score": f"{score:.6f}"},
        ),
    )
    link = json.dumps([{"name": name, "version": str(version.version)}])
    _call(
        cfg,
        "linking the champion to its version",
        lambda: client.set_logged_model_tags(model_id, {MLFLOW_MODEL_VERSIONS: link}),
    )
    return str(version.version)


class ChampionRefused(SparringError):
    """A registered champion that cannot start this run (another base model)."""


def download_champion(cfg, out_dir: str) -> dict[str, str] | None:
    """Download `models:/NAME@ALIAS` into out_dir: {name, alias, version} of what was
    downloaded, or None when there is no such model or alias. An unreachable server is an error
    (after the wait), not "no champion": a recurring run must not silently start over from the
    base model. A champion trained from another base model than this config's answerer is
    refused (SparringError naming both): a 1.5B champion must not start a 7B run."""
    mlflow = connect(cfg)
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from sparring.backends.base import base_name, read_meta

    name, alias = cfg.selection.registered_model, cfg.selection.alias

    def lookup() -> Any:
        try:
            return MlflowClient().get_model_version_by_alias(name, alias)
        except MlflowException as exc:
            if retry.transient(exc):
                raise
            return None

    version = _call(cfg, "looking up the champion", lookup)
    if version is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        got = _call(
            cfg,
            "downloading the champion",
            lambda: mlflow.artifacts.download_artifacts(artifact_uri=version.source, dst_path=tmp),
        )
        theirs = str((read_meta(got) or {}).get("base") or "")
        ours = base_name(cfg, "answerer", None)
        if theirs != ours:
            raise ChampionRefused(
                f"the champion {name}@{alias} (version {version.version}) was trained from "
                f"{theirs or 'an unrecorded base model'}, this run's answerer is {ours}: it "
                "cannot start this run (give this config its own selection.registered_model, "
                "or storage.start_fresh: true to start from the base)"
            )
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        import shutil

        shutil.copytree(got, out_dir, dirs_exist_ok=True)
    return {"name": name, "alias": alias, "version": str(version.version)}
