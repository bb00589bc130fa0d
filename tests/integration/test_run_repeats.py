"""A run repeats: the generator phase, validation and the answerer's first steps, played twice for
one config and seed on tiny-random with the real sandbox, the second time with every core busy,
give the same generated tests, the same frozen answers, the same verdicts, the same bank and the
same phase numbers (times aside). Both plays sample and judge afresh: the completion cache and
the kept sandbox verdicts are off, so the second cannot read the first's."""

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

pytestmark = pytest.mark.integration
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
