"""`sparring problems list | check`: list problem sets, and check them in the sandbox (reference
solutions against their own tests, and which tests trivial code passes).

Does not cover: loading problems and running the checks (sparring.problems, sparring.trivial),
or scoring solutions (`sparring reward`, sparring.cli.reward).
"""

from __future__ import annotations

import argparse
import json
import sys

from sparring.cli.common import add_group


def add_commands(sub) -> None:
    prob = add_group(sub, "problems", "list and check problem sets")
    p = prob.add_parser("list", help="list the problems of a source")
    p.add_argument("--source", default="bundled", help="bundled, humaneval, FILE, DIR or s3://…")
    p.add_argument("--json", action="store_true", help="print a JSON list of full problems")
    p.set_defaults(func=_problems_list)
    p = prob.add_parser(
        "check",
        help="run every reference solution against its own tests, and the trivial solutions too",
        description=(
            "Runs every reference solution against its tests, and the trivial solutions "
            "(constants, echoed arguments, len/list/sorted of the first) against them: a test "
            "that trivial code passes earns no reward. Exit 1 when a reference fails or a "
            "problem has fewer than --min-discriminating tests that no trivial solution passes."
        ),
    )
    p.add_argument("--source", default="bundled", help="bundled, humaneval, FILE, DIR or s3://…")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per test")
    p.add_argument(
        "--min-discriminating",
        type=int,
        default=3,
        metavar="N",
        help="tests per problem that no trivial solution may pass (default 3)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="per problem: reference verdict, tests, and the tests trivial code passes",
    )
    p.set_defaults(func=_problems_check)


def _problems_list(args: argparse.Namespace) -> int:
    from sparring.problems import load_source

    problems = load_source(args.source)
    if args.json:
        json.dump([p.to_dict() for p in problems], sys.stdout, indent=1)
        print()
        return 0
    for p in problems:
        print(f"{p.id:40s} {p.difficulty:7s} {len(p.baseline_tests):2d} tests  {','.join(p.tags)}")
    print(f"{len(problems)} problems")
    return 0


def _problems_check(args: argparse.Namespace) -> int:
    from sparring.problems import (
        answer_tests,
        check_problems,
        compute_trivial_passes,
        load_source,
    )
    from sparring.trivial import discriminating_indices

    problems = load_source(args.source)
    failures = dict(check_problems(problems, timeout_s=args.timeout))
    scored = compute_trivial_passes(problems, timeout_s=args.timeout)
    rows, weak = [], []
    for p in scored:
        tests = answer_tests(p)
        by_test: dict[int, list[str]] = {}
        for name, hits in p.trivial_passes.items():
            for i in hits:
                by_test.setdefault(i, []).append(name)
        n_disc = len(discriminating_indices(len(tests), p.trivial_passes))
        if n_disc < args.min_discriminating:
            weak.append(p.id)
        rows.append(
            {
                "id": p.id,
                "reference_passes": p.id not in failures,
                "reference_failure": failures.get(p.id),
                "tests": len(tests),
                "discriminating_tests": n_disc,
                "trivially_passed": [
                    {"test": tests[i], "passed_by": names} for i, names in sorted(by_test.items())
                ],
            }
        )
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        for problem_id, detail in failures.items():
            print(f"FAIL {problem_id}: {detail}", file=sys.stderr)
        for row in rows:
            if row["discriminating_tests"] < args.min_discriminating:
                print(
                    f"WEAK {row['id']}: {row['discriminating_tests']} of {row['tests']} tests "
                    "discriminate (trivial code passes the rest)",
                    file=sys.stderr,
                )
        n_tests = sum(r["tests"] for r in rows)
        n_disc = sum(r["discriminating_tests"] for r in rows)
        print(
            f"{len(problems) - len(failures)}/{len(problems)} reference solutions pass their "
            f"tests; {n_disc}/{n_tests} tests discriminate (no trivial solution passes them); "
            f"{len(weak)} problems have fewer than {args.min_discriminating} such tests"
        )
    return 1 if failures or weak else 0
