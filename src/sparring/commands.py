"""`sparring config …`, `sparring problems …` and `sparring reward`: validate and show configs,
list and check problem sets (reference solutions and what trivial code passes, in the sandbox),
and show what a solution earns and why."""

from __future__ import annotations

import argparse
import json
import sys

from sparring import config as config_mod
from sparring.cli_common import add_config_args, config_from_args


def add_group(sub, name: str, help_text: str) -> argparse._SubParsersAction:
    """A subcommand group (`sparring NAME …`) whose bare form prints its own help."""
    group = sub.add_parser(name, help=help_text, description=help_text)
    group.set_defaults(func=None, group_parser=group)
    return group.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")


def add_commands(sub) -> None:
    cfg = add_group(sub, "config", "validate and show experiment configs")
    p = cfg.add_parser("validate", help="check a config file; exit 0 when valid")
    p.add_argument("file", help="experiment YAML")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    p.set_defaults(func=_config_validate)
    p = cfg.add_parser("show", help="print the resolved config (defaults filled in)")
    add_config_args(p)
    p.set_defaults(func=_config_show)
    p = cfg.add_parser("reference", help="print every config field with its default and doc")
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.set_defaults(func=_config_reference)

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

    p = sub.add_parser(
        "reward",
        help="what each solution earns as the answerer's reward, and why",
        description=(
            "Scores solutions the way answerer training does: the difficulty-weighted share of "
            "a problem's discriminating tests (tests no trivial solution passes) that the code "
            "passes; code whose results equal a trivial solution's earns 0. Input: JSONL, one "
            '{"problem_id": ..., "solution": ...} per line (a solution may be a whole model '
            "completion: its last python code block defining the function is used)."
        ),
    )
    p.add_argument(
        "--role",
        choices=["answerer"],
        default="answerer",
        help="whose reward (the generator's needs a frozen answerer: see the report)",
    )
    p.add_argument("--batch", required=True, metavar="FILE.jsonl", help="solutions to score")
    p.add_argument("--source", default="bundled", help="where the problems come from")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds per test")
    p.add_argument("--json", action="store_true", help="one JSON object per solution")
    p.set_defaults(func=_reward)


def _config_validate(args: argparse.Namespace) -> int:
    cfg = config_mod.load_config(args.file, args.overrides)
    print(f"{args.file}: valid ({cfg.name}, {cfg.rounds} rounds, digest {cfg.digest()})")
    return 0


def _config_show(args: argparse.Namespace) -> int:
    sys.stdout.write(config_mod.dump_yaml(config_from_args(args)))
    return 0


def _config_reference(args: argparse.Namespace) -> int:
    if args.markdown:
        sys.stdout.write(config_mod.reference_markdown())
        return 0
    for key, tp, default, doc in config_mod.reference():
        print(f"{key:45s} {tp:30s} {default:20s} {doc}")
    return 0


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


def _reward(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring.errors import SparringError
    from sparring.evaluation.humaneval import sandbox_limits
    from sparring.games import code_duel
    from sparring.problems import compute_trivial_passes, load_source
    from sparring.sandbox import Sandbox

    path = Path(args.batch)
    if not path.is_file():
        raise SparringError(f"{args.batch}: no such file")
    items = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SparringError(f"{args.batch}:{n}: invalid JSON: {exc.msg}") from None
        if not isinstance(row, dict) or not isinstance(row.get("problem_id"), str):
            raise SparringError(
                f'{args.batch}:{n}: expected {{"problem_id": ..., "solution": ...}}'
            )
        if not isinstance(row.get("solution"), str):
            raise SparringError(f"{args.batch}:{n}: 'solution' must be a string")
        items.append((n, row["problem_id"], row["solution"]))
    problems = {p.id: p for p in load_source(args.source)}
    for n, pid, _ in items:
        if pid not in problems:
            raise SparringError(f"{args.batch}:{n}: problem_id {pid!r} is not in {args.source}")
    wanted = list(dict.fromkeys(pid for _, pid, _ in items))
    with Sandbox(sandbox_limits(None, timeout_s=args.timeout)) as sb:
        scored = {p.id: p for p in compute_trivial_passes([problems[i] for i in wanted], sb)}
        credits = code_duel.score_answers(
            [scored[pid] for _, pid, _ in items], [text for _, _, text in items], sb
        )
    out = [
        {
            "line": n,
            "problem_id": pid,
            "reward": c.reward,
            "parsed": c.parsed,
            "tests_passed": c.tests_passed,
            "tests_total": c.tests_total,
            "discriminating_passed": c.discriminating_passed,
            "discriminating_total": c.discriminating_total,
            "trivial": c.trivial,
            "strict": c.strict,
            "difficulty": scored[pid].difficulty,
        }
        for (n, pid, _), c in zip(items, credits, strict=True)
    ]
    for row in out:
        if args.json:
            print(json.dumps(row))
            continue
        why = (
            "did not parse"
            if not row["parsed"]
            else "behaves like a trivial solution"
            if row["trivial"]
            else f"{row['discriminating_passed']}/{row['discriminating_total']} discriminating"
        )
        print(
            f"{row['problem_id']:32s} reward={row['reward']} tests={row['tests_passed']}/"
            f"{row['tests_total']} ({why})"
        )
    return 0
