"""Throughput of the sandbox pool vs. one fresh `python -c` per test (what naive harnesses do).

Runs the same ~200 tests (40 small problems, 5 asserts each, some failing) both ways in the same
run, with the same parallelism (one thread per pool worker), and prints tests/s of each plus
`BENCH sandbox_speedup <ratio> x`. The pool runs with full isolation (bwrap when usable).
Usage: python benchmarks/bench_sandbox.py [--problems 40] [--isolation auto] [--workers 0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from sparring.sandbox import Sandbox, SandboxLimits

TEMPLATES = [
    ("def f(x):\n    return x * {k}\n", "assert f({i}) == {exp}", lambda k, i: i * k),
    (
        "def f(x):\n    return sorted(x)[::-1][:{k}]\n",
        "assert f(list(range({i}))) == {exp}",
        lambda k, i: sorted(range(i))[::-1][:k],
    ),
    (
        "def f(s):\n    return s.upper() * {k}\n",
        "assert f('a{i}') == {exp!r}",
        lambda k, i: f"A{i}" * k,
    ),
    (
        "def f(n):\n    a, b = 0, 1\n    for _ in range(n + {k}):\n"
        "        a, b = b, a + b\n    return a\n",
        "assert f({i}) == {exp}",
        None,
    ),
]


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def make_jobs(n_problems: int) -> list[tuple[str, list[str]]]:
    jobs = []
    for p in range(n_problems):
        sol_t, test_t, fn = TEMPLATES[p % len(TEMPLATES)]
        k = p % 7 + 1
        tests = []
        for i in range(5):
            exp = fn(k, i) if fn else fib(i + k)
            if i == 4 and p % 3 == 0:  # some failing tests
                exp = "'wrong'" if isinstance(exp, int) else exp * 2 if exp else [-1]
            tests.append(test_t.format(i=i, exp=exp))
        jobs.append((sol_t.format(k=k), tests))
    return jobs


def baseline_one(solution: str, test: str, timeout: float) -> bool:
    try:
        r = subprocess.run(
            [sys.executable, "-c", solution + "\n" + test],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=40)
    ap.add_argument("--isolation", default="auto", choices=["auto", "bwrap", "none"])
    ap.add_argument("--workers", type=int, default=0, help="pool size (0 = cores)")
    ap.add_argument("--repeat", type=int, default=3, help="pool passes to average (cheap)")
    args = ap.parse_args()
    jobs = make_jobs(args.problems)
    n_tests = sum(len(t) for _, t in jobs)
    limits = SandboxLimits(timeout_s=5.0, isolation=args.isolation, workers=args.workers)

    t0 = time.perf_counter()
    sb = Sandbox(limits)
    sb.run_many(jobs[: sb.size])  # start the workers
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(args.repeat):  # the pool pass is short: average a few to tame the noise
        reports = sb.run_many(jobs)
    pool_s = (time.perf_counter() - t0) / args.repeat
    sb.close()
    pool_passed = sum(r.passed for r in reports)

    flat = [(s, t) for s, tests in jobs for t in tests]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=sb.size) as ex:
        base = list(ex.map(lambda st: baseline_one(st[0], st[1], 5.0), flat))
    base_s = time.perf_counter() - t0
    base_passed = sum(base)

    pool_rate, base_rate = n_tests / pool_s, n_tests / base_s
    print(
        f"tests: {n_tests} in {len(jobs)} problems, workers: {sb.size}, isolation: {sb.isolation}"
    )
    print(
        f"pool:     {pool_rate:8.1f} tests/s  ({pool_s:.2f} s, {pool_passed} passed, "
        f"pool start {cold:.2f} s)"
    )
    print(f"baseline: {base_rate:8.1f} tests/s  ({base_s:.2f} s, {base_passed} passed)")
    if pool_passed != base_passed:
        print(f"WARNING: pass counts differ ({pool_passed} vs {base_passed})")
    print(f"BENCH sandbox_speedup {pool_rate / base_rate:.1f} x")


if __name__ == "__main__":
    main()
