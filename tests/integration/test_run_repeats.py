"""A run repeats: the generator phase, validation and the answerer's first steps, played twice for
one config and seed on tiny-random with the real sandbox, the second time with every core busy,
give the same generated tests, the same frozen answers, the same verdicts, the same bank and the
same phase numbers (times aside). Both plays sample and judge afresh: the completion cache and
the kept sandbox verdicts are off, so the second cannot read the first's. Tiny-random's tests
error at once, so no verdict of those plays nears a time limit: the second test plants a
reference that computes for half its limit and materializes beside eight busy jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparring.config import load_config
from sparring.phases.answerer import train_answerer
from sparring.phases.generator import train_generator
from sparring.phases.materialize import materialize
from sparring.phases.validate import validate_tests

# slow tier (make test-slow, CI): each test runs the phases twice beside busy cores
pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SETS = ["data.max_problems=6", "data.humaneval_limit=2", "steps.problems_per_phase=3",
        "sandbox.workers=2", "steps.answerer=2"]  # fmt: skip
# what the clock and the allocator decide, not the run: left out of the comparison
TIMED = ("time", "seconds", "_s", "per_s", "tokens_per", "runtime", "throughput", "memory")


def _untimed(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not any(t in k for t in TIMED)}


def _rows(path: Path) -> list:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def play(cfg, data: Path, out: Path) -> dict:
    """One generator phase, its validation, and the answerer's steps against the bank it made."""
    out.mkdir(parents=True)
    tests, frozen, bank = out / "tests.jsonl", out / "frozen.jsonl", out / "bank.jsonl"
    gen = train_generator(cfg, 1, str(data), "", None, str(out / "gen"), str(tests), str(frozen))
    val = validate_tests(cfg, 1, str(data), str(tests), str(frozen), str(data / "bank.jsonl"),
                         str(bank))  # fmt: skip
    ans = train_answerer(cfg, 1, str(data), str(bank), None, str(out / "answerer"))
    return {
        "generator": _untimed(gen), "validate": _untimed(val), "answerer": _untimed(ans),
        "tests": _rows(tests), "frozen": _rows(frozen), "bank": _rows(bank),
    }  # fmt: skip


def test_one_config_and_seed_repeat_with_the_cores_busy(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARRING_COMPLETION_CACHE", "0")
    monkeypatch.setenv("SPARRING_RESULT_CACHE", "0")
    cfg = load_config(ROOT / "configs/smoke.yaml", SETS)
    data = tmp_path / "data"
    materialize(cfg, str(data))
    first = play(cfg, data, tmp_path / "quiet")
    # other jobs on every core, each in a session of its own (as the scheduler sees other jobs)
    cmd = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(cmd, start_new_session=True) for _ in range(os.cpu_count() or 1)]
    try:
        second = play(cfg, data, tmp_path / "busy")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert first["tests"] and first["frozen"], "nothing was generated: the check sees nothing"
    for part in first:
        assert second[part] == first[part], f"{part} differs between the two plays"


def _loop_for(cpu_s: float) -> int:
    """Iterations of `s += i % 7` that take about `cpu_s` of CPU here."""
    import time

    # this thread's time: another thread of the pytest process would count as the loop's
    n, t0, s = 2_000_000, time.thread_time(), 0
    for i in range(n):
        s += i % 7
    return int(cpu_s / (max(time.thread_time() - t0, 1e-3) / n))


def test_materialize_keeps_the_same_problems_with_the_cores_busy(tmp_path, monkeypatch):
    """Materialize drops a problem whose reference fails its own tests. A reference computing
    for half its 1 s limit passes them on an idle machine and on one whose cores are shared
    with eight other jobs: the same train set both times (with a wall-clock limit the busy
    machine timed it out and dropped it: break-check of the CPU-time limit)."""
    monkeypatch.setenv("SPARRING_RESULT_CACHE", "0")
    n = _loop_for(0.5)
    total = sum(i % 7 for i in range(n))
    slow = {
        "id": "slow_total",
        "description": "Return n plus a fixed checksum.",
        "function_signature": "def slow_total(n: int) -> int:",
        "reference_solution": (
            f"def slow_total(n):\n    s = 0\n    for i in range({n}):\n        s += i % 7\n"
            "    return s + n\n"
        ),
        "baseline_tests": [f"assert slow_total({k}) == {total + k}" for k in (1, 2)],
    }
    quick = [
        {**slow, "id": f"plus_{k}", "function_signature": f"def plus_{k}(n: int) -> int:",
         "reference_solution": f"def plus_{k}(n):\n    return n + {k}\n",
         "baseline_tests": [f"assert plus_{k}({j}) == {j + k}" for j in (1, 2)]}
        for k in range(3)
    ]  # fmt: skip
    source = tmp_path / "slow.json"
    source.write_text(json.dumps([slow, *quick]))
    cfg = load_config(
        ROOT / "configs/smoke.yaml",
        [f"data.train=[{source}]", "data.max_problems=0", "data.val_fraction=0",
         "sandbox.timeout_s=1.0", "sandbox.workers=1", "data.humaneval_limit=1"],
    )  # fmt: skip
    materialize(cfg, str(tmp_path / "idle"))
    cmd = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(cmd, start_new_session=True) for _ in range(8)]
    try:
        materialize(cfg, str(tmp_path / "busy"))
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    idle = _rows(tmp_path / "idle" / "train.jsonl")
    busy = _rows(tmp_path / "busy" / "train.jsonl")
    assert "slow_total" in {p["id"] for p in idle}, "the planted problem never reached the check"
    assert [p["id"] for p in busy] == [p["id"] for p in idle], (
        "the busy machine kept other problems: a verdict followed the load"
    )
    assert busy == idle
