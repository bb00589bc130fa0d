"""The select phase: promote the best snapshot to the registry and persist the bank.

Covers: `select_and_register` (choose by sparring.evaluation.selection.choose_best, copy the
champion, register it under the alias, and with `serving.deploy_champion` create or update its
KServe InferenceService; a writer-only run registers its final generator instead,
`register_writer`), `save_bank` and `headline` (the report's base-vs-champion numbers for
the parent run). Does not cover: the selection rule, the headline's names
(sparring.evaluation.headline).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sparring import storage, tracking
from sparring.config import Config
from sparring.evaluation import headline as headline_mod
from sparring.evaluation.selection import choose_best
from sparring.phases.snapshot import localize
from sparring.rewards.bank import bank_text, dump_rows, parse_rows, stamp_run
from sparring.serving.kserve import deploy_champion
from sparring.tracking.registry import WRITER_SUFFIX


def select_and_register(
    cfg: Config,
    report_dir: str,
    manifest_path: str,
    bank_path: str,
    out_champion: str,
    parent_run_id: str,
) -> dict[str, Any]:
    """Choose the best snapshot, copy it to out_champion, register it under the alias, save the
    bank. Returns what was decided (for metrics and logs)."""
    report = json.loads((Path(report_dir) / "report.json").read_text())
    if cfg.phase_schedule == "generator":
        return register_writer(cfg, report, manifest_path, bank_path, out_champion, parent_run_id)
    index, score, reason = choose_best(cfg, report)
    result: dict[str, Any] = {"promoted": 0.0, "score": float(score), "reason": reason}
    Path(out_champion).mkdir(parents=True, exist_ok=True)
    if index is not None:
        entries = json.loads(Path(manifest_path).read_text())
        snap = report["snapshots"][index]
        with tempfile.TemporaryDirectory() as cache:
            uri = entries[index]["answerer"] if index < len(entries) else snap["model"]
            src = localize(uri, Path(cache))
            shutil.copytree(src, out_champion, dirs_exist_ok=True)
        version = tracking.register_champion(cfg, out_champion, parent_run_id, float(score))
        result.update(
            promoted=1.0, version=version, round=snap.get("round", index + 1), index=index
        )
        if str(version).isdigit():  # a metric: the chain's LEARN champion line reads it
            result["registered_version"] = float(version)
        if cfg.serving.deploy_champion:  # KServe InferenceService of the new champion
            deploy_champion(cfg, out_champion, version)
            result["deployed"] = 1.0
    else:
        (Path(out_champion) / "NOT_PROMOTED.txt").write_text(reason + "\n")
    result["bank_saved"] = 1.0 if save_bank(cfg, bank_path, parent_run_id) else 0.0
    return result


def register_writer(
    cfg: Config,
    report: dict[str, Any],
    manifest_path: str,
    bank_path: str,
    out_champion: str,
    parent_run_id: str,
) -> dict[str, Any]:
    """A writer-only run (phase_schedule: generator): the final generator is what it made.
    Copied to out_champion and registered under selection.registered_model + `-writer` (an
    answerer's registry entry stays the answerers'), scored by its held-out catch rate where it
    was measured, else by the validity of its tests; the bank saved."""
    entries = json.loads(Path(manifest_path).read_text())
    final = next((e["generator"] for e in reversed(entries) if e.get("generator")), "")
    learned = report.get("learning") or {}
    catch = (learned.get("generator_catch_heldout") or {}).get("after")
    validity = (learned.get("generator_validity") or {}).get("after")
    score = float(catch if catch is not None else validity or 0.0)
    what = "held-out catch rate" if catch is not None else "held-out validity"
    result: dict[str, Any] = {"promoted": 0.0, "score": score, "writer": 1.0}
    Path(out_champion).mkdir(parents=True, exist_ok=True)
    if not final:
        result["reason"] = "the snapshot manifest names no generator"
        (Path(out_champion) / "NOT_PROMOTED.txt").write_text(result["reason"] + "\n")
    else:
        with tempfile.TemporaryDirectory() as cache:
            shutil.copytree(localize(final, Path(cache)), out_champion, dirs_exist_ok=True)
        name = cfg.selection.registered_model + WRITER_SUFFIX
        writer_cfg = dataclasses.replace(
            cfg, selection=dataclasses.replace(cfg.selection, registered_model=name)
        )
        version = tracking.register_champion(writer_cfg, out_champion, parent_run_id, score)
        reason = f"the final writer ({what} {score:.3f})"
        result.update(promoted=1.0, version=version, reason=reason)
        if str(version).isdigit():
            result["registered_version"] = float(version)
    result["bank_saved"] = 1.0 if save_bank(cfg, bank_path, parent_run_id) else 0.0
    return result


def save_bank(cfg: Config, bank_path: str, run_id: str = "") -> bool:
    """Persist the bank (file or folder) at `storage.bank_uri`, atomically; each test this run
    banked is stamped with `run_id` (its lineage: sparring.rewards.bank.stamp_run), the rest
    verbatim.
    False when no URI is configured."""
    if not cfg.storage.bank_uri:
        return False
    text = bank_text(bank_path)
    if run_id:
        text = dump_rows(stamp_run(parse_rows(text), run_id))
    storage.write_text(cfg.storage.bank_uri, text)
    return True


def headline(cfg: Config, report_dir: str, result: dict[str, Any]) -> list[tuple[str, float, int]]:
    """The headline metrics the report and the decision give
    (sparring.evaluation.headline.from_report)."""
    report = json.loads((Path(report_dir) / "report.json").read_text())
    return headline_mod.from_report(report, result, cfg.seed)
