"""The champion in MLflow's model registry: registering it and downloading it for recurring
training.

MLflow 3: `register_model("runs:/…")` fails for plain artifact folders, so registration logs the
folder as a logged model of the run (`create_logged_model` + `log_model_artifacts` +
`finalize_logged_model`, and `log_outputs` on the run) and registers that:
`create_model_version(source="models:/<model id>", run_id=…, model_id=…)` +
`set_registered_model_alias`, so the registry version links to the logged model and its run.

Covers: `register_champion`, `log_champion_model`, `download_champion` (an unreachable server is
an error, not "no champion"; a champion of another base model is refused: `ChampionRefused`),
`champion_version` (what the alias names, read only), `download_version` (one registered
version, by number: what a recurring run started from, after the alias has moved on).
Every call is retried through an outage (sparring.tracking.runs.call), then fails in one line.

Does not cover: choosing the champion (sparring.phases.select), the runs themselves
(sparring.tracking.runs).
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.tracking import retry
from sparring.tracking.buffer import connect
from sparring.tracking.runs import call

log = logging.getLogger(__name__)

MODEL_SUBDIR = "champion"


# a writer-only run (phase_schedule: generator) registers its final generator under the
# config's registered_model with this suffix: the answerers' entry stays the answerers'
WRITER_SUFFIX = "-writer"


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
    version = _register_version(cfg, client, model_id, run_id, score, model_dir)
    call(
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
    `sparring.serving.inference.resolve_checkpoint` need."""
    from mlflow.entities import LoggedModelOutput

    run = call(cfg, "reading the parent run", lambda: client.get_run(run_id))
    model = call(
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
    call(
        cfg,
        "uploading the champion",
        lambda: client.log_model_artifacts(model_id, model_dir),
    )
    call(cfg, "finalizing the champion", lambda: client.finalize_logged_model(model_id, "READY"))
    call(
        cfg,
        "linking the champion to its run",
        lambda: client.log_outputs(run_id, [LoggedModelOutput(model_id, step=0)]),
    )
    return model_id


BASE_TAG = "sparring.base"  # a version's base model, readable without downloading it


def _recorded_base(model_dir: str) -> str:
    meta = Path(model_dir) / "sparring_model.json"  # sparring.backends.base.META_FILE
    return str(json.loads(meta.read_text()).get("base") or "") if meta.is_file() else ""


def _alias_version(cfg) -> Any:
    """The registry version `selection.registered_model@alias` names now, or None when there is
    no such model or alias (an unreachable server raises after the wait)."""
    connect(cfg)
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    def lookup() -> Any:
        try:
            return MlflowClient().get_model_version_by_alias(
                cfg.selection.registered_model, cfg.selection.alias
            )
        except MlflowException as exc:
            if retry.transient(exc):
                raise
            return None

    return call(cfg, "looking up the champion", lookup)


def _download(cfg, source: str, out_dir: str, what: str, check=None) -> None:
    """Download a version's `source` into out_dir, through a temporary folder that `check`
    (when given) may refuse before anything reaches out_dir."""
    import shutil

    mlflow = connect(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        got = call(
            cfg,
            f"downloading {what}",
            lambda: mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=tmp),
        )
        if check is not None:
            check(got)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        shutil.copytree(got, out_dir, dirs_exist_ok=True)


def champion_version(cfg) -> dict[str, str] | None:
    """The version the alias names now, {version, run_id, base} (base: the version's tag, ""
    for a version registered by older code), or None when there is none. Reads, downloads
    nothing."""
    found = _alias_version(cfg)
    if found is None:
        return None
    tags = dict(found.tags or {})
    return {
        "version": str(found.version),
        "run_id": found.run_id or "",
        "base": tags.get(BASE_TAG, ""),
    }


def _register_version(
    cfg, client, model_id: str, run_id: str, score: float, model_dir: str = ""
) -> str:
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

    call(cfg, "creating the registered model", ensure_model)
    tags = {"sparring.score": f"{score:.6f}", BASE_TAG: _recorded_base(model_dir)}
    version = call(
        cfg,
        "registering the champion",
        lambda: client.create_model_version(
            name, source=f"models:/{model_id}", run_id=run_id, model_id=model_id, tags=tags
        ),
    )
    link = json.dumps([{"name": name, "version": str(version.version)}])
    call(
        cfg,
        "linking the champion to its version",
        lambda: client.set_logged_model_tags(model_id, {MLFLOW_MODEL_VERSIONS: link}),
    )
    return str(version.version)


class ChampionRefused(SparringError):
    """A registered champion that cannot start this run (another base model)."""


def download_champion(cfg, out_dir: str, base: str) -> dict[str, str] | None:
    """Download `models:/NAME@ALIAS` into out_dir: {name, alias, version} of what was
    downloaded, or None when there is no such model or alias. An unreachable server is an error
    (after the wait), not "no champion": a recurring run must not silently start over from the
    base model. A champion trained from another base model than `base` (the base model under
    this config's answerer: sparring.backends.base_name) is refused (ChampionRefused, naming
    both): a 1.5B champion must not start a 7B run."""
    name, alias = cfg.selection.registered_model, cfg.selection.alias
    version = _alias_version(cfg)
    if version is None:
        return None

    def same_base(folder: str) -> None:
        theirs = _recorded_base(folder)
        if theirs != base:
            raise ChampionRefused(
                f"the champion {name}@{alias} (version {version.version}) was trained from "
                f"{theirs or 'an unrecorded base model'}, this run's answerer is {base}: it "
                "cannot start this run (give this config its own selection.registered_model, "
                "or storage.start_fresh: true to start from the base)"
            )

    _download(cfg, version.source, out_dir, "the champion", same_base)
    return {"name": name, "alias": alias, "version": str(version.version)}


def download_version(cfg, name: str, version: str, out_dir: str) -> None:
    """Download version `version` of registered model `name` into out_dir (a version never
    changes: the start of a recurring run, whatever the alias names now)."""
    connect(cfg)
    from mlflow import MlflowClient

    found = call(
        cfg, "looking up the start's version",
        lambda: MlflowClient().get_model_version(name, str(version)),
    )  # fmt: skip
    _download(cfg, found.source, out_dir, "the start's version")
