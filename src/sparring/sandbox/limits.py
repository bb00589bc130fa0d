"""Limits and result types of the sandbox (plain data, no processes).

Covers: `SandboxLimits` with its two named uses, `usable_cpus` (what `workers: 0` means: the
cores this process may run on, under a container's CPU limit), `untrusted_limits` (model-written
tests: the config's limits, length capped) and `trusted_limits` (HumanEval and the project's own
tests: length not capped), the per-test `TestResult`, the per-request `RunReport`, outcome
names.
Does not cover: running anything (see `pool.py`) or deciding pass/fail (see `plan.py`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASSED = "passed"
FAILED = "failed"
ERROR = "error"
TIMEOUT = "timeout"
MEMORY_LIMIT = "memory_limit"
OUTPUT_LIMIT = "output_limit"
INFRA_ERROR = "infra_error"  # the sandbox broke, not the code: rewards should drop it
WALL_FACTOR = 4.0  # a test's wall-clock backstop, in multiples of its CPU limit
OUTCOMES = (PASSED, FAILED, ERROR, TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT, INFRA_ERROR)


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 2.0  # CPU seconds per test (the wall clock stops waiting code at wall_s)
    memory_mb: int = 512  # address space (RLIMIT_AS)
    max_output_bytes: int = 65536  # stdout+stderr cap per test
    max_test_chars: int = 2000  # longer tests are invalid (validation)
    workers: int = 0  # 0 = usable_cpus(): the cores this process may use
    isolation: str = "auto"  # "auto" | "bwrap" | "none"

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_mb < 32:
            raise ValueError(f"memory_mb must be >= 32, got {self.memory_mb}")
        if self.max_output_bytes < 1:
            raise ValueError(f"max_output_bytes must be >= 1, got {self.max_output_bytes}")
        if self.max_test_chars < 1:
            raise ValueError(f"max_test_chars must be >= 1, got {self.max_test_chars}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0, got {self.workers}")
        if self.isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be auto, bwrap or none, got {self.isolation!r}")

    @classmethod
    def from_config(cls, sandbox_cfg: Any, **overrides: Any) -> SandboxLimits:
        """Limits from the experiment config's `sandbox` section (same field names)."""
        return cls(**{**dataclasses.asdict(sandbox_cfg), **overrides})

    @property
    def wall_s(self) -> float:
        """The wall-clock backstop of one test: WALL_FACTOR times its CPU limit. A test's time
        verdict is its CPU time, which a busy machine does not stretch (a test that computed for
        0.5 s of a 1 s limit timed out on a loaded machine when the limit was wall clock); the
        wall clock only stops code that waits without computing. A test starved to less than
        1 / WALL_FACTOR of a core still times out: the limit that remains."""
        return self.timeout_s * WALL_FACTOR

    @property
    def n_workers(self) -> int:
        return self.workers or usable_cpus()


CGROUP_ROOT = "/sys/fs/cgroup"


def usable_cpus(cgroup_root: str = "") -> int:
    """The cores this process may run on: its CPU affinity, capped by the container's CPU limit
    (cgroup v2 `cpu.max`, else v1 `cpu/cpu.cfs_quota_us` over `cpu.cfs_period_us`; a fraction
    rounds up). os.cpu_count() is the node's count: a training pod limited to 8 of a node's 192
    cores would start 192 workers and have the kernel throttle them to 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no affinity
        cores = os.cpu_count() or 1
    root = Path(cgroup_root or CGROUP_ROOT)
    quota = period = None
    try:
        if (root / "cpu.max").is_file():
            q, p = (root / "cpu.max").read_text().split()[:2]  # "max 100000": no limit
            quota, period = (None if q == "max" else int(q)), int(p)
        elif (root / "cpu" / "cpu.cfs_quota_us").is_file():
            q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
            quota = q if q > 0 else None  # -1: no limit
            period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):  # unreadable or unexpected: the affinity stands
        quota = None
    if quota and period:
        cores = min(cores, math.ceil(quota / period))
    return max(1, cores)


def untrusted_limits(cfg: Any) -> SandboxLimits:
    """Limits for model-written code and model-written tests: `cfg.sandbox` as configured, so a
    generated test longer than `sandbox.max_test_chars` is invalid."""
    return SandboxLimits.from_config(cfg.sandbox)


def trusted_limits(cfg: Any = None, **overrides: Any) -> SandboxLimits:
    """Limits for model-written code run against trusted tests (HumanEval's, a problem's own):
    `cfg.sandbox` (defaults without a config) with the tests' length not capped."""
    overrides = {"max_test_chars": 1_000_000, **overrides}
    if cfg is None:
        return SandboxLimits(**overrides)
    return SandboxLimits.from_config(cfg.sandbox, **overrides)


@dataclass(frozen=True)
class TestResult:
    __test__ = False  # not a pytest test class

    test: str
    outcome: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED


@dataclass(frozen=True)
class RunReport:
    results: list[TestResult] = field(default_factory=list)
    infra_error: str | None = None

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def pass_rate(self) -> float | None:
        if self.infra_error is not None:
            return None
        return self.passed / self.total if self.results else 0.0

    def to_dict(self) -> dict:
        return {
            "results": [
                {"test": r.test, "outcome": r.outcome, "detail": r.detail} for r in self.results
            ],
            "passed": self.passed,
            "total": self.total,
            "infra_error": self.infra_error,
        }
