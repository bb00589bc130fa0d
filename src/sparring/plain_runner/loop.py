"""The plain-Python runner: every phase of a self-play run in schedule order, with checkpoints.

It walks `plan_phases(cfg)` (the plan the KFP DAG is unrolled from), runs each phase through
the phase table (sparring.phases.table) and passes it its `Phase.name`, which fixes its step
count and seeds its draws as in the DAG.

Workdir layout (`run_selfplay(cfg, workdir)`):
  data/                      materialize output (train/val/eval.jsonl, bank.jsonl, manifest.json)
  r00-p01-warm_start/        with warm_start.steps > 0: the SFT-warm-started answerer (model/)
  rNN-pMM-KIND/              outputs of phase MM (round NN): model/, tests.jsonl,
                             frozen_solutions.jsonl, bank.jsonl (+ validation.json), metrics.json
  checkpoints/rNN-pMM-KIND/  state after that phase (models of both roles, bank, checkpoint.json,
                             COMPLETE marker written last); incomplete ones are ignored
  phases.log                 one `start`/`done` line per phase (what ran, for humans and tests)
  summary.json               metrics of every phase, the best checkpoint, timings

Resume: `resume=True` continues after the latest complete checkpoint; `resume_from=PATH` after a
given one. The state (current model of each role and the adversarial bank) comes from the
checkpoint, so finished phases are not repeated and the bank is not lost.

Mirror: with `mirror=URI` (an S3 prefix or a folder) the datasets go to `URI/data/` and every
checkpoint to `URI/checkpoints/<name>/`, each with its manifest written last. `resume=True` then
also looks there: when the mirror holds a newer finished checkpoint than the workdir (a new pod,
an empty disk), it downloads the datasets and that checkpoint and continues from it; local
checkpoints whose upload did not finish are uploaded again first.
Does not cover: MLflow or KFP (the pipeline runs the same phase functions as components).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from sparring import progress, storage
from sparring.config import Config
from sparring.errors import SparringError, disk_full
from sparring.phases.schedule import Phase, plan_phases
from sparring.phases.table import BY_KIND, outputs_in, run
from sparring.plain_runner import checkpoints as ck
from sparring.rewards.bank import BANK_FILE, copy_bank

log = logging.getLogger(__name__)


def _say(workdir: Path, text: str) -> None:
    line = f"{time.strftime('%H:%M:%S')} {text}"
    print(line, flush=True)
    try:
        with open(workdir / "phases.log", "a") as fh:
            fh.write(line + "\n")
    except OSError as exc:
        raise disk_full(exc, workdir / "phases.log") or exc from None


def run_phase(cfg: Config, phase: Phase, workdir: Path, state: dict[str, Any]) -> dict[str, float]:
    """Run one phase, updating `state` (models, bank, running scores); returns its metrics."""
    data = workdir / "data"
    out = workdir / phase.name
    if out.exists():
        shutil.rmtree(out)  # a killed earlier attempt of this phase
    out.mkdir(parents=True)
    spec = BY_KIND.get(phase.kind)
    if spec is None:  # pragma: no cover
        raise SparringError(f"unknown phase kind {phase.kind}")
    gen = Path(state.get("last_generator_out") or out)
    inputs = {  # where this runner keeps each input, by the table's names
        "materialize": {"bank_in": state.get("bank_in") or ""},
        "warm_start": {"data": str(data), "init_model": state["answerer"] or ""},
        "answerer": {"data": str(data), "bank": state["bank"], "init_model": state["answerer"]},
        "generator": {
            "data": str(data),
            "frozen_answerer": state["answerer"] or cfg.model_for("answerer").name,
            "init_model": state["generator"],
        },
        "validate": {
            "data": str(data),
            "tests": str(gen / "tests.jsonl"),
            "frozen_solutions": str(gen / "frozen_solutions.jsonl"),
            "bank_in": state["bank"],
        },
    }[spec.kind]
    outputs = {"data": str(data)} if spec.name == "materialize" else outputs_in(spec.name, out)
    # its identity (phase.name) seeds its draws, as in the KFP DAG
    metrics = run(spec.name, cfg, phase.round, inputs, outputs, phase=phase.name)
    if spec.kind == "materialize":
        state["bank"] = str(data / BANK_FILE)
    elif spec.kind == "warm_start":
        state["answerer"] = outputs["model"]
    elif spec.kind == "answerer":
        state["answerer"] = outputs["model"]
        state["answerer_reward"] = metrics.get("reward", state.get("answerer_reward"))
    elif spec.kind == "generator":
        state["generator"] = outputs["model"]
        state["last_generator_out"] = str(out)
    else:  # validate
        state["bank"] = str(out / BANK_FILE)
        state["test_validity"] = metrics["validity"]
    storage.write_text(str(out / "metrics.json"), json.dumps(metrics, indent=1, sort_keys=True))
    return metrics


def run_selfplay(
    cfg: Config,
    workdir: str,
    resume: bool = False,
    resume_from: str | None = None,
    mirror: str | None = None,
) -> dict[str, Any]:
    """Run (or resume) the whole self-play run; returns the summary (also in summary.json).
    `mirror`: an S3 prefix or folder that receives the datasets and every checkpoint."""
    root = Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    ck_root = root / "checkpoints"
    plan = plan_phases(cfg)
    state: dict[str, Any] = {"answerer": None, "generator": None, "bank": None}
    history: list[dict[str, Any]] = []
    start_index = 0
    start = ck.load_checkpoint(resume_from) if resume_from else None
    if resume and start is None:
        start = ck.latest(ck_root)
        if mirror:
            start = _newer_from_mirror(root, ck_root, start, mirror)
        if start is None:
            _say(root, "resume: no complete checkpoint; starting from the beginning")
    elif not resume and not resume_from and ck.list_checkpoints(ck_root):
        raise SparringError(
            f"{ck_root}: holds checkpoints of an earlier run; pass --resume, or use a new --workdir"
        )
    if start is not None:
        if start.meta.get("config_digest") != cfg.digest():
            log.warning("checkpoint %s was written with another config digest", start.path)
        start_index = start.index + 1
        state = dict(start.meta["state"])
        state["answerer"] = start.model("answerer")
        state["generator"] = start.model("generator")
        if not (root / "data" / "train.jsonl").is_file():
            raise SparringError(
                f"{root}/data: no datasets; resume in the --workdir of the checkpoint's run"
            )
        # the bank lives in the checkpoint: copy it back so later phases read it
        bank = root / "data" / f"bank-resumed-{start.index:02d}.jsonl"
        copy_bank(start.bank, bank)
        state["bank"] = str(bank)
        history = list(start.meta.get("history", []))
        _say(root, f"resume after {start.path.name} (phase {start_index} of {len(plan)})")
        if mirror:
            _finish_mirror(root, ck_root, mirror)
    t0 = time.perf_counter()
    for phase in plan[start_index:]:
        _say(root, f"start {phase.name} steps={phase.steps}")
        progress.LABEL = phase.name
        t = time.perf_counter()
        with progress.heartbeat():
            metrics = run_phase(cfg, phase, root, state)
        seconds = time.perf_counter() - t
        history.append({**phase.to_dict(), "seconds": seconds, "metrics": metrics})
        meta = {
            "phase_index": phase.index,
            "round": phase.round,
            "phase": phase.kind,
            "stage": phase.stages,
            "metrics": metrics,
            "config_digest": cfg.digest(),
            "answerer_reward": state.get("answerer_reward"),
            "test_validity": state.get("test_validity"),
            "state": {k: v for k, v in state.items() if k not in ("answerer", "generator")},
            "history": history,
        }
        meta["score"] = ck.score_of(meta, ck.selection_weights(cfg))
        checkpoint = ck.write_checkpoint(
            ck_root,
            phase.name,
            meta,
            {"answerer": state["answerer"], "generator": state["generator"]},
            state.get("bank"),
        )
        if mirror:
            if phase.kind == "materialize":
                storage.upload_dir(root / "data", _mirror_data(mirror))
            ck.upload(checkpoint, mirror)
        _say(root, f"done {phase.name} in {seconds:.1f}s " + _brief(metrics))
    best = ck.select_best(ck.list_checkpoints(ck_root), ck.selection_weights(cfg))
    summary = {
        "name": cfg.name,
        "config_digest": cfg.digest(),
        "dry_run": cfg.dry_run,
        "phases": history,
        "n_phases": len(plan),
        "seconds": time.perf_counter() - t0,
        "best_checkpoint": str(best.path) if best else None,
        "best_score": best.meta.get("score") if best else None,
        "final": {
            "answerer": state["answerer"],
            "generator": state["generator"],
            "bank": state.get("bank"),
        },
    }
    storage.write_text(str(root / "summary.json"), json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _mirror_data(mirror: str) -> str:
    return f"{mirror.rstrip('/')}/data"


def _newer_from_mirror(
    root: Path, ck_root: Path, local: ck.Checkpoint | None, mirror: str
) -> ck.Checkpoint | None:
    """The mirror's latest finished checkpoint, downloaded, when it is newer than `local`."""
    remote = ck.latest_remote(mirror)
    if remote is None or (local is not None and local.index >= int(remote[1]["phase_index"])):
        return local
    uri, _ = remote
    if not (root / "data" / "train.jsonl").is_file():
        storage.download_dir(_mirror_data(mirror), root / "data")
    _say(root, f"resume: {uri} is the latest finished checkpoint; downloading it")
    return ck.download(uri, ck_root)


def _finish_mirror(root: Path, ck_root: Path, mirror: str) -> None:
    """Upload what an interrupted run left unmirrored: the datasets, and every local checkpoint
    whose upload did not finish."""
    if (root / "data" / "train.jsonl").is_file() and not storage.is_complete_upload(
        _mirror_data(mirror)
    ):
        storage.upload_dir(root / "data", _mirror_data(mirror))
    for c in ck.list_checkpoints(ck_root):
        if not storage.is_complete_upload(ck.remote_uri(mirror, c.path.name)):
            ck.upload(c, mirror)


def _brief(metrics: dict[str, float]) -> str:
    keys = ("reward", "pass_rate", "validity", "new_tests", "bank_size", "problems_train")
    return " ".join(f"{k}={metrics[k]:.3g}" for k in keys if k in metrics)
