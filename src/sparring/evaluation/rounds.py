"""A generator round's tests, as evaluation sees them.

Covers: reading a round's tests in either format (validated bank rows, or the generator's raw
output that still needs validation: `read_round_tests`, `validate_rows` against the reference
solutions) and `round_summary` / `summarize_round` (test validity, duplicate rate, flat-group
share, a sidecar FILE.metrics.json winning over what the rows say). Does not cover: validating
tests during training (sparring.phases.validate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring import rewards
from sparring.bank import read_bank, tests_by_problem
from sparring.evaluation.humaneval import run_jobs

if TYPE_CHECKING:
    from sparring.problems import Problem


def _round_metrics(path: str) -> dict[str, Any]:
    """Optional sidecar of a round's tests: FILE.metrics.json, else metrics.json beside it."""
    p = Path(path)
    for candidate in (p.with_name(p.name + ".metrics.json"), p.with_name("metrics.json")):
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text())
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                return data
    return {}


def round_summary(path: str, duplicate_similarity: float = 0.9) -> dict[str, Any]:
    """Test validity, duplicate rate and flat-group share of one round's tests.

    Sidecar metrics win (`test_validity` or `validity`, `duplicate_rate`, `flat_group_share`);
    otherwise validity is the share of rows not marked `"valid": false` (1.0 for a bank of
    validated tests) and the duplicate rate is the near-duplicate rate of the tests per problem.
    """
    return summarize_round(read_bank(path), _round_metrics(path), duplicate_similarity)


def summarize_round(
    rows: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, Any] | None = None,
    duplicate_similarity: float = 0.9,
) -> dict[str, Any]:
    """round_summary of rows already read (metrics: the sidecar, if any)."""
    metrics = metrics or {}
    validity = metrics.get("test_validity", metrics.get("validity"))
    if validity is None and rows:
        validity = sum(1 for r in rows if r.get("valid", True)) / len(rows)
    dup = metrics.get("duplicate_rate")
    if dup is None and rows:
        per = tests_by_problem(rows)
        raw = [r["test"] for r in rows]
        dup_count = len(raw) - sum(len(v) for v in per.values())
        near = sum(
            rewards.near_duplicate_rate(ts, threshold=duplicate_similarity) * len(ts)
            for ts in per.values()
        )
        dup = (dup_count + near) / len(raw)
    return {
        "tests": len(rows),
        "test_validity": None if validity is None else float(validity),
        "duplicate_rate": None if dup is None else round(float(dup), 6),
        "flat_group_share": metrics.get("flat_group_share"),
    }


def read_round_tests(path: str | Path) -> tuple[list[dict[str, Any]], bool]:
    """Rows of a round's tests and whether they still need validation: validated rows
    {"problem_id", "test", ...} (bank format) or the generator's raw output
    {"problem_id", "tests": [...], "round"}, expanded to one row per test."""
    if not path or not Path(path).is_file():
        return [], False
    rows: list[dict[str, Any]] = []
    raw = False
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or "problem_id" not in row:
            continue
        if isinstance(row.get("tests"), list):
            raw = True
            rows.extend(
                {"problem_id": row["problem_id"], "test": t, "round": row.get("round")}
                for t in row["tests"]
                if isinstance(t, str)
            )
        elif isinstance(row.get("test"), str):
            rows.append(row)
    return rows, raw


def validate_rows(
    rows: list[dict[str, Any]], problems: Mapping[str, Problem], limits: Any = None
) -> list[dict[str, Any]]:
    """Mark each row `valid` when its test passes the problem's reference solution (rows of
    unknown problems are invalid)."""
    per = tests_by_problem([r for r in rows if r["problem_id"] in problems])
    ids = sorted(per)
    reports = run_jobs([(problems[pid].reference_solution, per[pid]) for pid in ids], limits)
    ok: set[tuple[str, str]] = set()
    for pid, report in zip(ids, reports, strict=True):
        ok.update((pid, r.test) for r in report.results if r.passed)
    return [{**r, "valid": (str(r["problem_id"]), r["test"]) in ok} for r in rows]
