"""A generator round's tests, as evaluation sees them.

Covers: reading a round's tests in either format (validated bank rows, or the generator's raw
output that still needs validation: `read_round_tests`, `validate_rows` by the validate
phase's rule) and `round_summary` / `summarize_round` (test validity, duplicate rate, flat-group
share, a sidecar FILE.metrics.json winning over what the rows say). Does not cover: validating
tests during training (sparring.phases.validate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring import rewards
from sparring.rewards.bank import read_bank, tests_by_problem
from sparring.sandbox import Sandbox
from sparring.sandbox.limits import SandboxLimits
from sparring.sandbox.validation import judge_tests

if TYPE_CHECKING:
    from sparring.problems import Problem


def round_metrics(path: str) -> dict[str, Any]:
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
    return summarize_round(read_bank(path), round_metrics(path), duplicate_similarity)


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
    rows: list[dict[str, Any]],
    problems: Mapping[str, Problem],
    limits: Any = None,
    reference_expected: bool = True,
) -> list[dict[str, Any]]:
    """Each row marked `valid` by the validate phase's rule (sparring.sandbox.validation.
    judge_tests, under `limits`: pass the untrusted ones a round's tests ran under), its `test`
    the test as judged (with `reference_expected`, the reference's expected value); rows of
    unknown problems are invalid. So a round's validity here is the validate phase's."""
    out = [{**r, "valid": False} for r in rows]
    at: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r["problem_id"] in problems:
            at.setdefault(str(r["problem_id"]), []).append(i)
    with Sandbox(limits or SandboxLimits()) as sb:
        for pid, index in at.items():
            p = problems[pid]
            report = judge_tests(
                p.reference_solution, [rows[i]["test"] for i in index], [], p.function_name,
                p.function_signature, sb, reference_expected,
            )  # fmt: skip
            if report.infra_error:
                continue
            for i, v in zip(index, report.verdicts, strict=True):
                out[i].update(test=v.test, valid=v.valid)
    return out
