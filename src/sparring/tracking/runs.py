"""The parent run of a pipeline run and the child runs of its phases, created through an outage.

Covers: `call` (a call against the tracking server, retried through an outage for
`SPARRING_MLFLOW_WAIT_SECONDS`, then a one-line TrackingUnavailable), the parent run (named
`<config name> <UTC time>`, tagged with the KFP run id, the resolved config as `config.yaml` plus
flattened params and the library versions as `version.*` params, in an experiment tagged
`mlflow.experimentKind=finetuning` so MLflow's UI opens on its runs), ending it
(`finish_parent_run`, `close_parent_run`: child runs still marked RUNNING, from killed tasks or
ones that ended while MLflow was down, end as FAILED, tagged `sparring.error`), `child_run`
(MLflow's active run, for code that logs through `mlflow.*` directly), `ui_hint`.

Does not cover: a phase's own run fed from the buffer and the logging into it
(sparring.tracking.phase, sparring.tracking.buffer), reading runs back
(sparring.tracking.history), the registry (sparring.tracking.registry), the retry rules
(sparring.tracking.retry).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sparring.tracking import retry
from sparring.tracking.buffer import connect, ensure_experiment, tracking_uri

T = TypeVar("T")

log = logging.getLogger(__name__)

PARENT_TAG = "sparring.kfp_run_id"


def call(cfg, what: str, fn: Callable[[], T]) -> T:
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

    return call(
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
    run = call(
        cfg,
        "creating the parent run",
        lambda: client.create_run(
            exp_id,
            run_name=parent_run_name(cfg),
            tags={
                PARENT_TAG: kfp_run_id,
                "sparring.name": cfg.name,
                "sparring.digest": cfg.digest(),
                # a study's run (tracking.study): findable by study and arm in the runs table
                **(
                    {"sparring.study": cfg.tracking.study, "sparring.arm": cfg.tracking.arm}
                    if cfg.tracking.study
                    else {}
                ),
            },
        ),
    )
    run_id = run.info.run_id
    params = {**flatten(to_dict(cfg)), **library_versions()}
    items = sorted(params.items())
    from mlflow.entities import Param

    for i in range(0, len(items), 100):  # log_batch takes at most 100 params per call
        batch = [Param(k, v) for k, v in items[i : i + 100]]
        call(cfg, "logging the config", lambda b=batch: client.log_batch(run_id, params=b))
    call(cfg, "logging config.yaml", lambda: client.log_text(run_id, dump_yaml(cfg), "config.yaml"))
    log.info("MLflow parent run %s (KFP run %s)", run_id, kfp_run_id)
    return run_id


ORPHAN_ERROR = "its end was never recorded (its task was killed, or MLflow was down when it ended)"


def _end_open_children(cfg, client, parent_run_id: str) -> int:
    """End the parent's child runs still marked RUNNING as FAILED (tag `sparring.error`)."""
    parent = call(cfg, "reading the parent run", lambda: client.get_run(parent_run_id))
    runs = call(
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
        call(
            cfg,
            "ending a phase run",
            lambda rid=rid: client.set_tag(rid, "sparring.error", ORPHAN_ERROR),
        )
        call(cfg, "ending a phase run", lambda rid=rid: client.set_terminated(rid, "FAILED"))
    return len(runs)


def finish_parent_run(cfg, run_id: str, status: str = "FINISHED") -> None:
    """End the parent run (and any child run left RUNNING); retried through an outage."""
    connect(cfg)
    from mlflow import MlflowClient

    client = MlflowClient()
    _end_open_children(cfg, client, run_id)
    call(cfg, "ending the parent run", lambda: client.set_terminated(run_id, status=status))


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
        exp = call(
            cfg,
            "looking up the experiment",
            lambda: mlflow.get_experiment_by_name(cfg.tracking.experiment),
        )
        open_runs = f"tags.`{PARENT_TAG}` = '{kfp_run_id}' and attributes.status = 'RUNNING'"
        runs = (
            []
            if exp is None
            else call(
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
    status = call(cfg, "reading the parent run", lambda: client.get_run(run_id).info.status)
    if status != "RUNNING":
        return ""
    if failed:
        message = (error or "pipeline failed")[:5000]
        call(
            cfg, "tagging the parent run", lambda: client.set_tag(run_id, "sparring.error", message)
        )
    final = "FAILED" if failed else "FINISHED"
    call(cfg, "ending the parent run", lambda: client.set_terminated(run_id, status=final))
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
        parent = call(cfg, "reading the parent run", lambda: mlflow.get_run(parent_run_id))
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
