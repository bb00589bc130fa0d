"""The materialize phase: load, check, split and write the datasets and the carried-in bank.

Covers: `materialize` (the training problems and held-out sets of the config's problem
sources, capped, reference solutions checked in the sandbox, split train/val, the training
problems' given tests (`data.given_tests`), the eval set, what trivial code passes, a
manifest), `load_bank` (the persisted adversarial bank at `storage.bank_uri`) and `inherit`
(what of it this run keeps: sparring.rewards.bank.carry's refusal and retirements, then every kept
test
re-validated on its problem's reference in the sandbox: one the reference now fails is retired
as `invalid`).
Does not cover: drawing, checking and splitting the problems (sparring.problems.sources: one
call, `checked_sets`), loading problem files (sparring.problems).
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from sparring import progress, storage
from sparring.config import Config
from sparring.problems import Problem, heldout_sets, write_jsonl
from sparring.problems.sources import checked_sets
from sparring.rewards.bank import (
    BANK_CAP_PER_PROBLEM,
    BANK_FILE,
    Carried,
    carry,
    keep_tests,
    parse_rows,
    read_rows,
    reference_digest,
    task_space,
    tests_by_problem,
    write_rows,
)
from sparring.sandbox import Sandbox
from sparring.sandbox import validate_tests as sandbox_validate
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import SandboxLimits, trusted_limits, untrusted_limits

log = logging.getLogger(__name__)


def materialize(cfg: Config, out_dir: str, bank_in: str | None = None) -> dict[str, float]:
    """Write train/val/eval datasets, the carried-in bank and a manifest into `out_dir`."""
    require_isolation(cfg)  # the first phase: a machine that cannot isolate stops here
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # model-written code and tests run under untrusted limits; a problem's own tests are trusted
    untrusted, trusted = untrusted_limits(cfg), trusted_limits(cfg)
    drawn = checked_sets(cfg.data, cfg.seed, untrusted, trusted)
    train, val, eval_set, sets = drawn.train, drawn.val, drawn.eval, drawn.sets
    withheld = sum(len(p.withheld_tests) for p in train)
    write_jsonl(train, out / "train.jsonl")
    write_jsonl(val, out / "val.jsonl")
    write_jsonl(eval_set, out / "eval.jsonl")
    inherited = inherit(cfg, read_rows(bank_in), train, untrusted)
    bank = inherited.rows
    write_rows(out / BANK_FILE, bank)
    manifest = {
        "loaded": drawn.loaded,
        "checked": drawn.checked,
        "dropped_failing": drawn.failing,
        "train": len(train),
        "val": len(val),
        "eval": len(eval_set),
        "bank": len(bank),
        "bank_inherited": inherited.inherited,
        "bank_retired": dict(inherited.retired),
        "bank_runs": inherited.runs,
        "task_space": task_space(p.id for p in train),
        "heldout_sets": {k: len(v) for k, v in heldout_sets(val).items()},
        "heldout_dropped": sets.dropped,
        "heldout_task_overlap": sets.task_overlap,
        "given_tests": cfg.data.given_tests,
        "tests_given": sum(len(p.baseline_tests) for p in train),
        "tests_withheld": withheld,
        "config_digest": cfg.digest(),
        "seed": cfg.seed,
        **drawn.honest,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return {
        "problems_loaded": float(drawn.loaded),
        "problems_train": float(len(train)),
        "problems_val": float(len(val)),
        "problems_eval": float(len(eval_set)),
        "problems_dropped": float(drawn.failing),
        "bank_size": float(len(bank)),
        "bank_inherited": float(inherited.inherited),
        "bank_retired": float(sum(inherited.retired.values())),
        **{f"bank_retired_{k}": float(v) for k, v in inherited.retired.items()},
        **{f"problems_heldout_{k}": float(len(v)) for k, v in heldout_sets(val).items()},
        "problems_heldout_dropped": float(sum(sets.dropped.values())),
        "heldout_task_overlap": float(sets.task_overlap),
        "tests_withheld": float(withheld),
        **{k: float(v) for k, v in drawn.honest.items()},
    }


def inherit(cfg: Config, rows: list[Any], train: list[Problem], limits: SandboxLimits) -> Carried:
    """The persisted bank's tests this run keeps (sparring.rewards.bank.carry: another task space is
    refused; changed references, duplicates by behaviour and tests over the cap, or over
    `steps.bank_per_problem` where that is smaller, are retired),
    each re-validated on its problem's reference in the sandbox: one it now fails is retired as
    `invalid` (a sandbox failure proves nothing: those are kept)."""
    if not keep_tests(rows):
        return Carried(rows=[], inherited=0)
    refs = {p.id: reference_digest(p.reference_solution) for p in train}
    where = f"the bank at {cfg.storage.bank_uri or 'the given path'}"
    cap = min(BANK_CAP_PER_PROBLEM, cfg.steps.bank_per_problem or BANK_CAP_PER_PROBLEM)
    carried = carry(rows, task_space(refs), refs, cap, where=where)
    by_id = {p.id: p for p in train}
    invalid: set[tuple[str, str]] = set()
    with Sandbox(limits) as sb:
        for pid, tests in tests_by_problem(carried.rows).items():
            report = sandbox_validate(by_id[pid].reference_solution, tests, [], sb)
            if not report.infra_error:
                invalid |= {(pid, v.test) for v in report.verdicts if not v.valid}
    if invalid:
        carried.rows = [r for r in carried.rows if (r["problem_id"], r["test"]) not in invalid]
        carried.retired["invalid"] += len(invalid)
    runs = ", ".join(f"{run}: {n}" for run, n in carried.runs.items()) or "none"
    retired = ", ".join(f"{k} {v}" for k, v in sorted(carried.retired.items())) or "none"
    progress.say(
        f"materialize: inherited {carried.inherited} banked tests, kept {len(carried.rows)} "
        f"(by run {runs}), retired {sum(carried.retired.values())} ({retired})"
    )
    return carried


def load_bank(cfg: Config, out_path: str) -> int:
    """Copy the persisted test bank's rows to out_path (an empty file when none); return how
    many."""
    text = ""
    uri = cfg.storage.bank_uri
    if uri and not cfg.storage.start_fresh and storage.exists(uri):
        text = storage.read_text(uri)
    rows = parse_rows(text)
    write_rows(out_path, rows)
    return len(rows)


def materialize_carrying_bank(cfg: Config, out_dir: str) -> dict[str, float]:
    """`materialize`, carrying in the bank persisted at `storage.bank_uri` (if any)."""
    with tempfile.TemporaryDirectory() as tmp:
        bank = str(Path(tmp) / BANK_FILE)
        n = load_bank(cfg, bank)
        result = dict(materialize(cfg, out_dir, bank_in=bank if n else None))
    result["bank_loaded"] = float(n)
    return result
