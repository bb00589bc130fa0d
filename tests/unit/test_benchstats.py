"""The benchmarks' BENCH lines (benchmarks/benchstats.py): one format, at least three
repetitions per arm run interleaved, paired ratios; and every benchmark prints through it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from benchmarks import benchstats

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"BENCH [a-z_]+ median=[\d.]+ min=[\d.]+ max=[\d.]+ n=\d+")


def test_bench_line_is_median_min_max_and_n_of_paired_ratios():
    baseline, fast = [6.0, 9.0, 4.0], [2.0, 2.0, 4.0]
    ratios = benchstats.paired_ratios(baseline, fast)
    assert ratios == [3.0, 4.5, 1.0]
    line = benchstats.bench_line("x_speedup", ratios)
    assert line == "BENCH x_speedup median=3.00 min=1.00 max=4.50 n=3"
    assert LINE.fullmatch(line)
    with pytest.raises(ValueError, match="at least 3"):
        benchstats.bench_line("x_speedup", ratios[:2])
    with pytest.raises(ValueError, match="repetitions"):
        benchstats.paired_ratios([1.0], [1.0, 2.0])


def test_arms_alternate_and_fewer_than_three_reps_are_refused(capsys):
    order = benchstats.interleaved(["a", "b"], 3)
    assert [arm for _, arm in order] == ["a", "b"] * 3
    assert [rep for rep, _ in order] == [0, 0, 1, 1, 2, 2]
    parser = argparse.ArgumentParser()
    benchstats.add_reps_argument(parser)
    assert benchstats.checked_reps(parser, parser.parse_args([]).reps) == 3
    with pytest.raises(SystemExit):
        benchstats.checked_reps(parser, parser.parse_args(["--reps", "2"]).reps)
    assert "at least 3 repetitions" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks").glob("bench_*.py")), ids=str)
def test_every_benchmark_prints_its_bench_lines_through_benchstats(path):
    text = path.read_text()
    assert "benchstats.bench_line(" in text and "benchstats.interleaved(" in text
    assert "benchstats.checked_reps(" in text
    # no BENCH line written by hand (the docstrings show the format, not an f-string)
    assert not re.search(r"""f["']BENCH """, text), f"{path.name} formats a BENCH line itself"


def test_gpu_benchmark_without_cuda_says_so_in_one_line_and_exits_2():
    import subprocess
    import sys

    env = {"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stdout.count("\n") == 1 and "no CUDA device" in result.stdout
    assert "Traceback" not in result.stderr


def test_learn_benchmark_refuses_unknown_arms_in_one_line():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_learn.py"), "--arms", "fast,nope"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "--arms fast,nope" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_memory_benchmark_counts_a_stages_memory_toward_that_stage(monkeypatch):
    """make bench-memory's stage peaks: while a hooked function runs, the resident memory it
    takes is counted toward its stage, not toward the phase around it."""
    import time

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its own `import benchstats`
    from benchmarks import bench_memory

    class Phase:
        @staticmethod
        def allocate() -> int:
            block = bytearray(256 * 2**20)  # 256 MiB, touched so it is resident
            for i in range(0, len(block), 4096):
                block[i] = 1
            time.sleep(0.3)  # several of the sampler's 20 ms ticks
            return len(block)

    stages = bench_memory.StagePeaks()
    time.sleep(0.1)
    stages.hook(Phase, "allocate", "allocate")
    assert Phase.allocate() == 256 * 2**20
    time.sleep(0.1)
    peaks = stages.peaks()
    assert set(peaks) == {"phase", "allocate"}
    assert peaks["allocate"] >= peaks["phase"] + 0.2, peaks
