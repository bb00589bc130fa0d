"""The test writers' catch on a fixed pool (sparring.experiments.pool_catch, `sparring
pool-catch`): the committed pre-check pool reads back whole, a writer is compared with the
base generator and the fuzzer over the same answers and tasks, per level and pooled, and the
command runs end to end on tiny-random and refuses bad input in one line."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from sparring.cli.main import main
from sparring.experiments import pool_catch, precheck
from sparring.problems import Problem

ROOT = Path(__file__).resolve().parents[2]
POOL = ROOT / "docs" / "results" / "precheck-2026-12-03-pool.jsonl"


def test_doctests():
    assert doctest.testmod(pool_catch).failed == 0


def test_the_committed_pool_reads_back_whole():
    pool = pool_catch.read_pool(POOL)
    record = json.loads((POOL.parent / "precheck-2026-12-03-precheck.json").read_text())
    assert len(pool) == record["summary"]["pool"] == 177
    assert {e.level for e in pool} == {2, 3}
    assert all(e.fails and e.problem.withheld_tests and len(e.problem.baseline_tests) == 3
               for e in pool)  # fmt: skip


def test_a_broken_pool_line_is_named(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_text('{"problem": {}}\n')
    with pytest.raises(ValueError, match=r"pool.jsonl:1: not a pool row"):
        pool_catch.read_pool(path)


def _entry(pid: str, level: int) -> precheck.PoolEntry:
    return precheck.PoolEntry(Problem(pid, "", "def f(x)", [], ""), "fam", level, 0, "", [])


def test_a_writer_is_paired_with_both_baselines_per_level_and_pooled():
    # two tasks at level 3 (two answers each), one at level 2
    pool = [_entry("a", 3), _entry("a", 3), _entry("b", 3), _entry("b", 3), _entry("c", 2)]
    caught = {
        "fuzz": [False, False, False, False, True],
        "base": [True, False, False, False, False],
        "S-t1": [True, True, True, False, False],
    }
    out = pool_catch.pool_catch(pool, caught, seed=0)
    level3 = out["levels"]["3"]
    assert level3["S-t1"]["value"] == 0.75 and level3["S-t1"]["tasks"] == 2
    assert level3["S-t1_minus_base"]["value"] == 0.5
    assert level3["S-t1_minus_fuzz"]["value"] == 0.75
    assert level3["base_minus_fuzz"]["value"] == 0.25 and "fuzz_minus_base" not in level3
    assert out["levels"]["2"]["S-t1_minus_fuzz"]["value"] == -1.0
    assert out["pooled"]["S-t1"]["value"] == 0.6 and out["pooled"]["S-t1"]["tasks"] == 3
    lines = pool_catch.format_lines(out)
    assert any(line.startswith("POOLCATCH level=3 writer=S-t1 catch=0.750") for line in lines)
    assert any(
        line.startswith("POOLCATCH level=all writer=S-t1_minus_base minus=") for line in lines
    )


def test_the_command_on_tiny_random(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    pool = tmp_path / "pool.jsonl"
    lines = POOL.read_text().splitlines()
    pool.write_text("\n".join(lines[:2] + lines[-2:]) + "\n")  # two of each level
    out = tmp_path / "catch.json"
    argv = ["pool-catch", "--pool", str(pool), "--writer", "base=tiny-random", "--writer",
            "S-t1=tiny-random", "--generator-samples", "1", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "POOLCATCH plan: 4 answers on " in printed
    # minutes of sampling a writer say which writer is at work
    assert "pool-catch: S-t1 writes tests for 2 problems x 1" in printed
    assert "POOLCATCH level=all writer=S-t1_minus_fuzz minus=" in printed
    record = json.loads(out.read_text())
    assert set(record["kept"]) == {"fuzz", "base", "S-t1"}
    # one model, one seed: the same completions, the same kept tests
    assert record["kept"]["base"] == record["kept"]["S-t1"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--writer", "S-t1"], "--writer 'S-t1': give NAME=MODEL"),
        (["--writer", "fuzz=x"], "--writer fuzz: the fuzzer is always measured"),
    ],
)
def test_bad_writers_are_refused_in_one_line(argv, says, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["pool-catch", "--pool", str(POOL), *argv]) != 0
    assert says in capsys.readouterr().err


def test_a_missing_pool_is_refused_in_one_line(tmp_path, capsys):
    assert main(["pool-catch", "--pool", str(tmp_path / "none.jsonl")]) != 0
    assert "no such file" in capsys.readouterr().err
