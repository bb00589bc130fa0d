"""Materialize's trivial-solution verdicts kept on this machine between runs (sparring.
result_cache.kept_on_disk): the next run of the same problems runs nothing in the sandbox and
gets the same record; other limits or a changed sandbox are another file, and a torn file is
an empty cache, never an error."""

from __future__ import annotations

import pytest

from sparring.problems import Problem, compute_trivial_passes
from sparring.sandbox import Sandbox, SandboxLimits, result_cache

TOTAL = Problem(
    id="total",
    description="Return the sum of xs.",
    function_signature="def total(xs):",
    baseline_tests=["assert total([1, 2]) == 3", "assert total([]) == 0"],
    reference_solution="def total(xs):\n    return sum(xs)\n",
)


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARRING_RESULT_CACHE", "1")
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "results"


def _counting(monkeypatch) -> list[int]:
    ran: list[int] = []
    real = Sandbox.run_many

    def run_many(self, jobs):
        ran.append(len(jobs))
        return real(self, jobs)

    monkeypatch.setattr(Sandbox, "run_many", run_many)
    return ran


def test_the_second_run_of_the_same_problems_runs_nothing(kept, monkeypatch):
    ran = _counting(monkeypatch)
    first = compute_trivial_passes([TOTAL])
    assert first[0].trivial_passes["const_0"] == [1]  # `return 0` passes total([]) == 0
    assert ran and ran[0] > 0 and len(list(kept.glob("*.json"))) == 1
    ran.clear()
    again = compute_trivial_passes([TOTAL])
    assert ran == [] and again == first
    other = compute_trivial_passes([TOTAL], timeout_s=3.0)  # other limits: other verdicts
    assert ran and other == first and len(list(kept.glob("*.json"))) == 2


def test_a_torn_file_is_an_empty_cache(kept, monkeypatch):
    compute_trivial_passes([TOTAL])
    (path,) = kept.glob("*.json")
    path.write_text('{"results": [["torn"')
    ran = _counting(monkeypatch)
    assert compute_trivial_passes([TOTAL])[0].trivial_passes["const_0"] == [1]
    assert ran and ran[0] > 0


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))  # the suite's default: off
    compute_trivial_passes([TOTAL])
    assert not (tmp_path / "cache").exists()
    assert result_cache._disk_path(SandboxLimits()) is None
