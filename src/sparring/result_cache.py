"""Running tests on solutions once: the per (solution, test) result cache both duel roles share.

Covers: `ResultCache` (outcome of test T on solution S, keyed by (hash(S), T); sandbox failures
not kept) and `run_cached` (per job, per test: passed, failed or None; only the pairs not in the
cache run, each once, in one `run_many`). The answerer's reward (sparring.code_duel), the
generator's (sparring.generator_scoring), validation (sparring.phases.validate) and the screen
(sparring.phases.zone) all read through it, so a test already run on a solution is never run
again.
Does not cover: what a result earns (sparring.rewards, sparring.code_duel,
sparring.generator_scoring), the sandbox itself (sparring.sandbox).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sparring.sandbox.limits import INFRA_ERROR, PASSED


def _h(code: str) -> str:
    return hashlib.sha1(code.encode()).hexdigest()


class ResultCache:
    """Outcome of running test T on solution S, keyed by (hash(S), T); infra errors not kept."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], bool] = {}
        self.hits = 0
        self.misses = 0

    def get(self, code: str, test: str) -> bool | None:
        value = self._data.get((_h(code), test))
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, code: str, test: str, passed: bool) -> None:
        self._data[(_h(code), test)] = passed

    def __len__(self) -> int:
        return len(self._data)


def run_cached(
    sandbox: Any, jobs: Sequence[tuple[str, Sequence[str]]], cache: ResultCache | None
) -> list[list[bool | None]]:
    """Per job, per test: passed (True/False) or None (sandbox failure). Only (solution, test)
    pairs not in the cache run, each once even when several jobs repeat it, in one `run_many`."""
    out: list[list[bool | None]] = []
    todo: dict[str, list[str]] = {}  # solution -> tests to run (ordered, unique)
    for code, tests in jobs:
        row: list[bool | None] = []
        for t in tests:
            value = cache.get(code, t) if cache is not None else None
            row.append(value)
            if value is None:
                pending = todo.setdefault(code, [])
                if t not in pending:
                    pending.append(t)
        out.append(row)
    got: dict[tuple[str, str], bool | None] = {}
    if todo:
        reports = sandbox.run_many(list(todo.items()))
        for (code, tests), report in zip(todo.items(), reports, strict=True):
            for t, result in zip(tests, report.results, strict=False):
                if report.infra_error is not None or result.outcome == INFRA_ERROR:
                    continue
                got[(code, t)] = result.outcome == PASSED
                if cache is not None:
                    cache.put(code, t, got[(code, t)])
    for (code, tests), row in zip(jobs, out, strict=True):
        for i, t in enumerate(tests):
            if row[i] is None:
                row[i] = got.get((code, t))
    return out
