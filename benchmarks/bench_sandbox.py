"""Throughput of the sandbox pool vs. one fresh `python -c` per test (what naive harnesses do).

Runs the same ~200 tests (40 small problems, 5 asserts each, some failing) both ways in the same
run, with the same parallelism (one thread per pool worker), in interleaved rounds, and prints
tests/s of each plus `BENCH sandbox_speedup <median ratio> x`. The pool runs with full isolation
(bwrap when usable). Usage: python benchmarks/bench_sandbox.py [--rounds 3] [--isolation auto]
"""

from __future__ import annotations

import argparse
import statistics
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


def pool_rate(sb: Sandbox, jobs: list[tuple[str, list[str]]], repeat: int) -> tuple[float, int]:
    n_tests = sum(len(t) for _, t in jobs)
    t0 = time.perf_counter()
    for _ in range(repeat):  # one pass is short: a few tame the noise
        reports = sb.run_many(jobs)
    return n_tests * repeat / (time.perf_counter() - t0), sum(r.passed for r in reports)


def baseline_rate(jobs: list[tuple[str, list[str]]], threads: int) -> tuple[float, int]:
    flat = [(s, t) for s, tests in jobs for t in tests]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as ex:
        passed = list(ex.map(lambda st: baseline_one(st[0], st[1], 5.0), flat))
    return len(flat) / (time.perf_counter() - t0), sum(passed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", type=int, default=40)
    ap.add_argument("--isolation", default="auto", choices=["auto", "bwrap", "none"])
    ap.add_argument("--workers", type=int, default=0, help="pool size (0 = cores)")
    ap.add_argument("--repeat", type=int, default=5, help="pool passes per round")
    ap.add_argument(
        "--rounds", type=int, default=3, help="pool/baseline rounds, interleaved; median ratio"
    )
    args = ap.parse_args()
    jobs = make_jobs(args.problems)
    n_tests = sum(len(t) for _, t in jobs)
    limits = SandboxLimits(timeout_s=5.0, isolation=args.isolation, workers=args.workers)

    t0 = time.perf_counter()
    sb = Sandbox(limits)
    sb.run_many(jobs)  # start and warm the workers
    cold = time.perf_counter() - t0
    print(
        f"tests: {n_tests} in {len(jobs)} problems, workers: {sb.size}, isolation: {sb.isolation}"
    )
    print(f"pool start + first pass: {cold:.2f} s")
    # Interleaved rounds: this machine's speed drifts (shared host), and a drift that lands on
    # one side only would skew a single pool-then-baseline comparison.
    ratios = []
    for i in range(args.rounds):
        pool, pool_passed = pool_rate(sb, jobs, args.repeat)
        base, base_passed = baseline_rate(jobs, sb.size)
        ratios.append(pool / base)
        print(
            f"round {i + 1}: pool {pool:7.1f} tests/s ({pool_passed} passed), "
            f"baseline {base:6.1f} tests/s ({base_passed} passed), ratio {pool / base:.1f}"
        )
        if pool_passed != base_passed:
            print(f"WARNING: pass counts differ ({pool_passed} vs {base_passed})")
    replaced = sb.replaced
    sb.close()
    if replaced:
        print(f"WARNING: {replaced} workers were replaced during the run")
    print(f"BENCH sandbox_speedup {statistics.median(ratios):.1f} x")


if __name__ == "__main__":
    main()
