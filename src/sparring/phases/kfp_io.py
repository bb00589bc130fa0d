"""What every component does at its edges: its arguments, its config, its parent run, its KFP
metrics.

Covers: `TaskArgs` (a component's arguments by name, as its row of the phase table reads them),
`config_from_yaml` (the config a component receives as a YAML string; storage set up from it),
`ensure_parent_run`, `for_parent_run` (the seed a run draws, tagged on its parent), the round
numbers setup, final and game phases log under, and `to_kfp_metrics` and `log_problem_sets` (the
problem sets a phase used, as MLflow dataset inputs of its run and, from materialize, of the
parent run). The MLflow child run of a phase is `sparring.tracking.phase_run`.
Does not cover: any phase's work (the modules beside this one), what each row's task does with
these (sparring.phases.kfp_tasks).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from sparring import storage, tracking
from sparring.config import Config, from_dict
from sparring.problems import datasets

log = logging.getLogger(__name__)


class TaskArgs:
    """The arguments a KFP component's function was called with, by name (its `locals()`):
    parameters as they are, artifacts with `.path`, `.uri` and `.metadata`. A row reads the names
    it needs; anything else in the mapping is never read. `trainjob` is the TrainJob launcher
    (sparring.cluster.launch.run_phase) the training components hand down: the cluster room sits
    above the phases, so the phases cannot import it."""

    def __init__(self, args: Mapping[str, Any], trainjob: Callable[..., Any] | None = None):
        self.args = dict(args)
        self.trainjob = trainjob

    def __getitem__(self, name: str) -> Any:
        return self.args[name]

    def path(self, name: str) -> str:
        return self.args[name].path

    def uri(self, name: str) -> str:
        return self.args[name].uri

    def paths(self, names: Iterable[str]) -> dict[str, str]:
        return {name: self.path(name) for name in names}

    def uris(self, names: Iterable[str]) -> dict[str, str]:
        return {name: self.uri(name) for name in names}

    def config(self) -> Config:
        """The config as the task's parent run trains with it (`config_from_yaml`)."""
        return config_from_yaml(self["config_yaml"], self.args.get("parent_run_id", ""))

    def to_kfp_metrics(self, result: dict) -> None:
        """`result` into the task's `metrics` output (`to_kfp_metrics`)."""
        to_kfp_metrics(self["metrics"], result)


def config_from_yaml(text: str, run_id: str = "") -> Config:
    """The Config a component receives as a YAML string parameter, as run `run_id` (its MLflow
    parent run) trains with it: `Config.for_run` (a seed of its own with `seed_per_run`)."""
    cfg = from_dict(yaml.safe_load(text)).for_run(run_id)
    storage.configure(cfg)
    return cfg


SEED_TAG = "sparring.training_seed"


def for_parent_run(cfg: Config, run_id: str, run: Any) -> Config:
    """`cfg.for_run(run_id)`, the config every task of the run derives; with `seed_per_run`,
    the seed drawn is also tagged on the parent run (`sparring.training_seed`) through the
    phase run `run`, as the parent's params hold the configured seed and MLflow keeps a
    param's first value."""
    derived = cfg.for_run(run_id)
    if cfg.seed_per_run:
        run.log_params({}, tags={SEED_TAG: derived.training_seed}, run_id=run_id)
    return derived


def ensure_parent_run(cfg: Config, parent_run_id: str, kfp_run_id: str) -> str:
    """The given parent run id, or a new parent run tagged with the KFP run id (cluster runs)."""
    if parent_run_id:
        return parent_run_id
    return tracking.start_parent_run(cfg, kfp_run_id or "unknown")


SETUP_ROUND = 0


def final_round(cfg: Config) -> int:
    """The round number under which evaluate and select log (after the last round)."""
    return cfg.rounds + 1


# The game DAG's three tasks log as rounds 1-3 of its parent run, in the order they run.
GAME_TRAIN_ROUND, GAME_EVALUATE_ROUND, GAME_SELECT_ROUND = 1, 2, 3


def to_kfp_metrics(artifact, result: dict) -> None:
    """Numeric entries -> a KFP Metrics artifact (metadata) and a JSON file at its path.

    The file matters for kfp.local: its cache treats an entry whose output artifact path does not
    exist as a miss, and `log_metric` alone writes nothing to disk."""
    numeric = {
        str(k): float(v)
        for k, v in (result or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    for key, value in numeric.items():
        artifact.log_metric(key, value)
    Path(artifact.path).parent.mkdir(parents=True, exist_ok=True)
    Path(artifact.path).write_text(json.dumps(numeric, indent=1, sort_keys=True))


def log_problem_sets(
    run: Any, cfg: Config, data_dir: str, keys: tuple[str, ...], parent_run_id: str = ""
) -> None:
    """Queue the `keys` problem sets of the materialized `data_dir` (sparring.problems.datasets) as
    dataset inputs of the phase's run `run` (a PhaseRun, so an outage only delays them), and of
    `parent_run_id` when given. A dataset that cannot be described is a warning, never a
    failed phase."""
    try:
        found = datasets.inputs(cfg, data_dir, keys)
    except Exception as exc:  # the phase's work matters more than its Dataset column
        log.warning("problem sets not logged as MLflow datasets: %s", exc)
        return
    run.log_inputs(found)
    if parent_run_id:
        run.log_inputs(found, run_id=parent_run_id)
