"""Running tests on solutions once: the per (solution, test) result cache both duel roles share.

Covers: `ResultCache` (outcome of test T on solution S, keyed by (hash(S), T); sandbox failures
not kept) and `run_cached` (per job, per test: passed, failed or None; only the pairs not in the
cache run, each once, in one `run_many`). The answerer's reward (sparring.rewards.code_duel), the
generator's (sparring.rewards.generator_scoring), validation (sparring.phases.validate) and the
frozen answers' zone (sparring.rewards.frozen) all read through it, so a test already run on a
solution is never run again. `kept_on_disk` keeps one on this machine between processes, for
verdicts that never change: materialize's trivial solutions on the same problems' tests, run
again by every run of a config (about 50 s of sandbox time a run of configs/local.yaml's size
on 2 cores).
Does not cover: what a result earns (sparring.rewards, sparring.rewards.code_duel,
sparring.rewards.generator_scoring), the sandbox itself (sparring.sandbox).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sparring.sandbox.limits import INFRA_ERROR, PASSED

log = logging.getLogger(__name__)
DISK_FORMAT = 1


def _h(code: str) -> str:
    return hashlib.sha1(code.encode()).hexdigest()


class ResultCache:
    """Outcome of running test T on solution S, keyed by (hash(S), T); infra errors not kept."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], bool] = {}
        self.hits = 0
        self.misses = 0
        self.added = 0

    def get(self, code: str, test: str) -> bool | None:
        value = self._data.get((_h(code), test))
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, code: str, test: str, passed: bool) -> None:
        self._data[(_h(code), test)] = passed
        self.added += 1

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


def _disk_path(limits: Any) -> Path | None:
    """Where verdicts under `limits` are kept: named by the limits that decide an outcome and
    the sandbox's own source (a changed sandbox is a new file by construction); None when
    SPARRING_RESULT_CACHE is off."""
    if os.environ.get("SPARRING_RESULT_CACHE", "1").strip().lower() in {"0", "false", "no", "off"}:
        return None
    sandbox_dir = Path(__file__).resolve().parent / "sandbox"
    h = hashlib.sha256(f"{DISK_FORMAT}\0".encode())
    for name in ("timeout_s", "memory_mb", "max_output_bytes", "isolation"):
        h.update(f"{name}={getattr(limits, name, None)}\0".encode())
    for source in sorted(sandbox_dir.glob("*.py")):
        h.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    root = os.environ.get("SPARRING_CACHE") or os.path.join(Path.home(), ".cache", "sparring")
    return Path(root) / "results" / f"{h.hexdigest()}.json"


@contextmanager
def kept_on_disk(limits: Any) -> Iterator[ResultCache]:
    """A ResultCache filled from this machine's verdicts under `limits` and written back when
    the block ends with new ones. A torn or foreign file is an empty cache, a cache that cannot
    be written loses only itself: neither fails the caller."""
    cache = ResultCache()
    path = _disk_path(limits)
    if path is not None and path.is_file():
        try:
            for code_hash, test, passed in json.loads(path.read_text())["results"]:
                cache._data[(str(code_hash), str(test))] = bool(passed)
        except (OSError, ValueError, KeyError, TypeError):
            cache = ResultCache()
    yield cache
    if path is None or not cache.added:
        return
    from sparring.atomic import write_file

    rows = [[code_hash, test, passed] for (code_hash, test), passed in cache._data.items()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, json.dumps({"results": rows}).encode())
    except Exception as exc:  # a cache that cannot be written is no reason to fail a run
        log.warning("sandbox verdicts not kept (%s): %s", path, exc)
