"""What a phase cost this process: its peak resident memory, CPU seconds and wall seconds.

Covers: `PhaseCost` (started where a phase starts, `figures()` where it ends): `peak_rss_mb` is
the resident-set high-water mark since the start (Linux: the kernel's VmHWM, reset at the start
through /proc/self/clear_refs, so a second phase in one process gets its own peak; elsewhere the
process's peak so far, an upper bound), `cpu_s` the process's user + system CPU seconds (its
threads included, not its children: sandbox workers and the local runner's tasks are processes
of their own) and `wall_s` the elapsed seconds. The figures are logged with every phase's
metrics (sparring.tracking.phase) and a study run's record keeps them per phase (`phase_costs`,
read back from the run's MLflow phase runs).

Does not cover: GPU memory (torch's own counters), the memory of child processes, a benchmark's
repetitions (benchmarks/bench_memory.py). Standard library only.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

PREFIX = "phase/"  # the metric names: phase/peak_rss_mb, phase/cpu_s, phase/wall_s
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_rss_mb() -> float:
    """The resident-set high-water mark in MiB: VmHWM where /proc has it (since the last reset),
    else getrusage's ru_maxrss (KiB on Linux, bytes on macOS)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def reset_peak_rss() -> bool:
    """Reset the kernel's VmHWM to the current resident set (Linux 4.0+); whether it could."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (all its threads)."""
    times = os.times()
    return times.user + times.system


class PhaseCost:
    """Started at a phase's start; `figures()` at its end gives the three numbers."""

    def __init__(self) -> None:
        self.own_peak = reset_peak_rss()  # else the figure may include an earlier phase's peak
        self.cpu0 = cpu_seconds()
        self.wall0 = time.perf_counter()

    def figures(self) -> dict[str, float]:
        return {
            f"{PREFIX}peak_rss_mb": round(peak_rss_mb(), 1),
            f"{PREFIX}cpu_s": round(cpu_seconds() - self.cpu0, 2),
            f"{PREFIX}wall_s": round(time.perf_counter() - self.wall0, 2),
        }


def phase_costs(runs: Iterable[tuple[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Each phase's cost figures by its run name, from (run name, metrics) of a run's phases;
    phases that logged none (run before the figures existed) are left out.

    >>> phase_costs([("r1-train-answerer", {"phase/peak_rss_mb": 3100.0, "phase/cpu_s": 90.0,
    ...              "phase/wall_s": 60.0, "reward": 0.2}), ("r0-materialize", {})])
    {'r1-train-answerer': {'peak_rss_mb': 3100.0, 'cpu_s': 90.0, 'wall_s': 60.0}}
    """
    out = {}
    for name, metrics in runs:
        figures = {k[len(PREFIX) :]: float(v) for k, v in metrics.items() if k.startswith(PREFIX)}
        if figures:
            out[name] = figures
    return out
