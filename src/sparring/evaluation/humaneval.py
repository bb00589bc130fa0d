"""HumanEval in Sparring's sandbox: pass@k and turning `check(candidate)` into tests.

Covers: `pass_at_k` (the unbiased estimator of Chen et al. 2021, product form);
`humaneval_tests` / `humaneval_solution` / `humaneval_job`: HumanEval's `check(candidate)` turned
into standalone `assert entry_point(args) == expected` tests that the sandbox decides in the parent
process, so an always-equal object or a patched builtin cannot pass; checks that are not plain
asserts (loops, helpers; 8 of 164 tasks) keep the check-function form as a fallback, run on a
builtins snapshot with the candidate's return values required to be plain builtin data (an
in-process guard: best effort against code written to defeat this particular harness);
`sample_rows` and `evaluate_humaneval_samples` (official sample format) and the sandbox job
runners the other evaluation modules share (`run_jobs`, `run_jobs_fail_fast`, on
sparring.sandbox.limits.trusted_limits).

Does not cover: generating completions (sparring.backends.sampler) or loading the tasks
(sparring.problems.load_humaneval). Pure apart from the sandbox, which is imported lazily.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.errors import SparringError
from sparring.problems import load_humaneval
from sparring.problems.programs import humaneval_job
from sparring.records import read_records
from sparring.sandbox import RunReport, Sandbox
from sparring.sandbox.limits import trusted_limits

if TYPE_CHECKING:
    from sparring.problems import Problem


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k).

    Computed as 1 - prod_{i=n-c+1}^{n} (1 - k / i), stable for large n.

    >>> pass_at_k(10, 0, 1), pass_at_k(10, 10, 1), pass_at_k(10, 5, 1)
    (0.0, 1.0, 0.5)
    >>> round(pass_at_k(5, 1, 2), 6)
    0.4
    """
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n} c={c} k={k}")
    if k > n:
        raise ValueError(f"pass_at_k needs k <= n, got n={n} k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def run_jobs(jobs: list[tuple[str, list[str]]], limits: Any = None) -> list[Any]:
    """Run (solution, tests) jobs in one Sandbox; RunReports in order."""
    if not jobs:
        return []
    with Sandbox(limits or trusted_limits()) as sandbox:
        return sandbox.run_many(jobs)


def run_jobs_fail_fast(jobs: list[tuple[str, list[str]]], limits: Any = None) -> list[Any]:
    """Like run_jobs, for pass/fail verdicts: the first test of every job runs first and only
    jobs that pass it run the rest (a wrong or hanging sample costs one test, not all). A job
    that fails early gets a report holding just that first result."""
    if not jobs:
        return []
    with Sandbox(limits or trusted_limits()) as sandbox:
        first = sandbox.run_many([(code, tests[:1]) for code, tests in jobs])
        rest_index = [
            i
            for i, (report, (_, tests)) in enumerate(zip(first, jobs, strict=True))
            if len(tests) > 1 and report.infra_error is None and report.passed == report.total
        ]
        rest = sandbox.run_many([(jobs[i][0], jobs[i][1][1:]) for i in rest_index])
    reports = list(first)
    for i, report in zip(rest_index, rest, strict=True):
        reports[i] = RunReport(
            results=[*first[i].results, *report.results], infra_error=report.infra_error
        )
    return reports


def sample_rows(problems: Sequence[Problem], completions: Sequence[Sequence[str]]) -> list[dict]:
    """Official-format sample rows ({"task_id", "completion"}), one per completion, in order."""
    return [
        {"task_id": p.id, "completion": c}
        for p, outs in zip(problems, completions, strict=True)
        for c in outs
    ]


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """Samples in the official HumanEval format: JSONL with task_id and completion (or a JSON
    list of them: sparring.records, the one reader)."""
    samples = []
    for label, row in read_records(path, "samples", SparringError, "samples file"):
        if not isinstance(row, dict) or "task_id" not in row or "completion" not in row:
            raise SparringError(f"{label}: each line needs 'task_id' and 'completion'")
        samples.append(row)
    if not samples:
        raise SparringError(f"{path}: holds no samples; one {{task_id, completion}} per line")
    return samples


def evaluate_humaneval_samples(
    samples: Sequence[Mapping[str, Any]],
    problems: Sequence[Problem] | None = None,
    limits: Any = None,
    pass_k: Sequence[int] = (1,),
) -> dict[str, Any]:
    """Verdicts for official-format samples, one result per sample in input order, plus pass@k
    (averaged over tasks) for every k that every evaluated task has enough samples for."""
    if problems is None:
        problems = load_humaneval()
    by_id = {p.id: p for p in problems}
    jobs = []
    for n, sample in enumerate(samples):
        problem = by_id.get(sample["task_id"])
        if problem is None:
            raise SparringError(f"sample {n}: unknown task_id {sample['task_id']!r}")
        completion = sample["completion"] if isinstance(sample["completion"], str) else ""
        jobs.append(humaneval_job(problem, completion))
    reports = run_jobs_fail_fast(jobs, limits)
    results = []
    counts: dict[str, list[int]] = {}
    for sample, report in zip(samples, reports, strict=True):
        passed = report.infra_error is None and report.total > 0 and report.passed == report.total
        failed = [r for r in report.results if not r.passed]
        result = {"task_id": sample["task_id"], "passed": passed}
        if failed:
            result["result"] = f"{failed[0].outcome}: {failed[0].detail}"[:300]
        if report.infra_error:
            result["infra_error"] = report.infra_error
        results.append(result)
        n_c = counts.setdefault(sample["task_id"], [0, 0])
        n_c[0] += 1
        n_c[1] += int(passed)
    out: dict[str, Any] = {}
    for k in sorted(set(pass_k) | {1}):
        if counts and all(n >= k for n, _ in counts.values()):
            values = [pass_at_k(n, c, k) for n, c in counts.values()]
            out[f"pass@{k}"] = round(sum(values) / len(values), 6)
    if "pass@1" not in out:
        out["pass@1"] = 0.0
    out["tasks"] = len(counts)
    out["samples"] = len(results)
    out["results"] = results
    return out
