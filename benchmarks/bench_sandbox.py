"""Throughput of the sandbox pool vs. one fresh `python -c` per test (what naive harnesses do).

Runs the same ~200 tests (40 small problems, 5 asserts each, some failing) both ways in the same
run, with the same parallelism (one thread per pool worker), in `--reps` interleaved repetitions
(pool, baseline, pool, baseline, ...; at least 3), and prints tests/s of each per repetition and

  BENCH sandbox_speedup median=X min=Y max=Z n=N

the pool's tests/s over the baseline's, paired per repetition. The pool runs with full isolation
(bwrap when usable). Usage: python benchmarks/bench_sandbox.py [--reps 3] [--isolation auto]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import benchstats

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
    ap.add_argument("--repeat", type=int, default=5, help="pool passes per repetition")
    benchstats.add_reps_argument(ap)
    args = ap.parse_args()
    reps = benchstats.checked_reps(ap, args.reps)
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
    # Interleaved repetitions: this machine's speed drifts (shared host), and a drift that lands
    # on one side only would skew a single pool-then-baseline comparison.
    rates: dict[str, list[float]] = {"pool": [], "baseline": []}
    passes: dict[str, int] = {}
    for i, arm in benchstats.interleaved(list(rates), reps):
        if arm == "pool":
            rate, passes[arm] = pool_rate(sb, jobs, args.repeat)
        else:
            rate, passes[arm] = baseline_rate(jobs, sb.size)
        rates[arm].append(rate)
        print(f"rep {i + 1} {arm}: {rate:7.1f} tests/s ({passes[arm]} passed)", flush=True)
        if arm == "baseline" and passes["pool"] != passes["baseline"]:
            print(f"WARNING: pass counts differ ({passes['pool']} pool, {passes[arm]} baseline)")
    replaced = sb.replaced
    sb.close()
    if replaced:
        print(f"WARNING: {replaced} workers were replaced during the run")
    for arm, values in rates.items():
        print(f"{arm} tests/s: {benchstats.spread(values, 1)}")
    print(benchstats.bench_line("sandbox_speedup", benchstats.paired_ratios(*rates.values())))


if __name__ == "__main__":
    main()
