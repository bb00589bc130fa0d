"""`sparring study --jobs N`: a study's runs several at a time, as many as memory allows.

Covers: `run_peak_mb` (what one run of the study needs at most: its largest phase's peak
resident memory from the records of the study's finished runs, sparring.tracking.resources, or
`DEFAULT_PHASE_PEAK_MB` before any has finished, plus the runner's own processes),
`fitting_jobs` (how many runs fit in the memory available now, at most the N asked for, and
what to say when fewer), `available_mb` (the kernel's MemAvailable) and `run_items` (the planned
runs through `run_one`, that many at once, each run's output lines prefixed with its name, one
torch thread a run when more than one run at once: two runs of 2 threads on 2 cores would
fight for them, and a run's thread count is part of what it computed, filed in its record).

Does not cover: planning and filing a run (sparring.experiments.study_runner,
sparring.experiments.filed_runs), the study's statistics (sparring.experiments.study).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

# A run's largest phase before any run of the study has filed its own figure: the generator
# phase of configs/learn.yaml with the S arm's settings after the memory work, 6.03 GiB
# (make bench-memory, 2026-12-06, docs/benchmarks.md), rounded up
DEFAULT_PHASE_PEAK_MB = 6656.0
# what a run holds beside its phase's process: `sparring run`, kfp.local's runner, the sandbox
# workers (measured about 0.6 GiB together on 2026-12-06), rounded up
RUN_OVERHEAD_MB = 1024.0


def run_peak_mb(records: Iterable[Mapping[str, Any]]) -> tuple[float, str]:
    """(MiB one run needs at most, where that figure comes from): the largest phase peak any
    of `records` (finished runs' record.json) names, plus RUN_OVERHEAD_MB.

    >>> run_peak_mb([{"name": "s-S-t1", "phases": {"r1-train-generator": {"peak_rss_mb": 4000.0},
    ...              "r1-train-answerer": {"peak_rss_mb": 3000.0}}}, {"name": "old"}])
    (5024.0, 's-S-t1 r1-train-generator')
    >>> run_peak_mb([])
    (7680.0, 'no finished run of the study filed its phases yet: the benchmark figure')
    """
    best, where = 0.0, ""
    for record in records:
        for phase, figures in (record.get("phases") or {}).items():
            peak = float(figures.get("peak_rss_mb") or 0.0)
            if peak > best:
                best, where = peak, f"{record.get('name', '?')} {phase}"
    if not where:
        where = "no finished run of the study filed its phases yet: the benchmark figure"
        best = DEFAULT_PHASE_PEAK_MB
    return best + RUN_OVERHEAD_MB, where


def fitting_jobs(asked: int, per_run_mb: float, free_mb: float) -> tuple[int, str]:
    """(runs to start at once, '' or why fewer than `asked`): as many of `asked` as fit in
    `free_mb` at `per_run_mb` each; 1 even when one does not fit (the study still runs, and
    says so).

    >>> fitting_jobs(2, 5000.0, 20000.0)
    (2, '')
    >>> fitting_jobs(4, 5000.0, 12000.0)[0]
    2
    """
    fit = int(free_mb // per_run_mb) if per_run_mb > 0 else asked
    jobs = max(1, min(asked, fit))
    gib = f"{per_run_mb / 1024:.1f} GiB a run and {free_mb / 1024:.1f} GiB available"
    if fit < 1:
        return 1, f"--jobs {asked}: not even one run fits ({gib}); running one at a time"
    if jobs < asked:
        return jobs, f"--jobs {asked}: {jobs} runs at once fit ({gib}); running {jobs} at a time"
    return jobs, ""


def available_mb(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """The kernel's MemAvailable in MiB; None where there is no /proc/meminfo."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def run_items(
    items: Sequence[Any],
    jobs: int,
    run_one: Callable[[Any, int | None, str], Any],
    on_done: Callable[[Any, Any], None],
) -> None:
    """Run each of `items` through `run_one(item, threads, prefix)` (threads None: the
    environment's; prefix '' when one at a time), `jobs` at once; `on_done(item, result)` for
    each, one at a time, as they finish. The first run that fails stops new ones from starting;
    its error is raised once the running ones end."""
    if jobs <= 1:
        for item in items:
            on_done(item, run_one(item, None, ""))
        return
    lock = threading.Lock()
    failed: list[BaseException] = []

    def one(item: Any) -> None:
        if failed:
            return
        try:
            result = run_one(item, 1, f"[{item.name}] ")
        except BaseException as exc:  # re-raised below, after the other runs end
            failed.append(exc)
            return
        with lock:
            on_done(item, result)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, items))
    if failed:
        raise failed[0]
