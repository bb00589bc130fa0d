"""`sparring reward`: what each solution of a JSONL batch earns as the answerer's reward, and why.

Covers: reading and checking the solutions (one reader for JSON and JSON Lines:
sparring.records; a problem whose reference fails its own tests is refused), and printing one
line (or JSON object) per solution.
Does not cover: the scoring itself (sparring.rewards.code_duel.score_answers,
sparring.rewards.answerer_credit) or which tests trivial code passes
(sparring.problems.compute_trivial_passes).
"""

from __future__ import annotations

import argparse
import json

from sparring.cli.common import Deprecated


def add_commands(sub) -> None:
    p = sub.add_parser(
        "reward",
        help="what each solution earns as the answerer's reward, and why",
        description=(
            "Scores solutions the way answerer training does: the difficulty-weighted share of "
            "a problem's discriminating tests (tests no trivial solution passes) that the code "
            "passes; code whose results equal a trivial solution's earns 0. Input (--solutions): "
            'JSONL, one {"problem_id": ..., "solution": ...} per line, or a JSON list of them '
            "(a solution may be a whole model completion: its last python code block defining "
            "the function is used). A problem whose reference solution fails its own tests is "
            "refused."
        ),
    )
    p.add_argument(
        "--role",
        choices=["answerer"],
        default="answerer",
        help="whose reward (the generator's needs a frozen answerer: see the report)",
    )
    p.add_argument(
        "--solutions",
        metavar="FILE.jsonl",
        help='required: the solutions to score, one {"problem_id", "solution"} per line '
        "(or a JSON list of them)",
    )
    p.add_argument("--batch", dest="solutions", action=Deprecated, new="--solutions")
    p.add_argument(
        "--source",
        default="bundled",
        help="where the problems come from: bundled, humaneval, FILE, DIR or s3://…",
    )
    p.add_argument("--timeout", type=float, default=2.0, help="seconds per test")
    p.add_argument("--json", action="store_true", help="one JSON object per solution")
    p.set_defaults(func=_reward)


def _reward(args: argparse.Namespace) -> int:
    from sparring.errors import SparringError
    from sparring.problems import check_problems, compute_trivial_passes, load_source
    from sparring.records import read_records
    from sparring.rewards import code_duel
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import trusted_limits

    if not args.solutions:
        raise SparringError('--solutions FILE.jsonl is required: one {"problem_id", "solution"} '
                            "per line")  # fmt: skip
    where = f"--solutions {args.solutions}"
    items = []
    for label, row in read_records(args.solutions, "solutions", SparringError, "solutions file"):
        if not isinstance(row, dict) or not isinstance(row.get("problem_id"), str):
            raise SparringError(f'{label}: expected {{"problem_id": ..., "solution": ...}}')
        if not isinstance(row.get("solution"), str):
            raise SparringError(f"{label}: 'solution' must be a string")
        # the line of a JSON Lines file (label FILE:LINE), else the record's place (FILE[i])
        tail = label.rpartition(":")[2]
        n = int(tail) if tail.isdigit() else len(items) + 1
        items.append((n, label, row["problem_id"], row["solution"]))
    if not items:
        raise SparringError(f'{where}: holds no solutions; one {{"problem_id", "solution"}} a line')
    problems = {p.id: p for p in load_source(args.source)}
    for _, label, pid, _ in items:
        if pid not in problems:
            raise SparringError(f"{label}: problem_id {pid!r} is not in {args.source}")
    wanted = list(dict.fromkeys(pid for _, _, pid, _ in items))
    with Sandbox(trusted_limits(None, timeout_s=args.timeout)) as sb:
        # a problem whose reference fails its own tests would score against wrong tests
        broken = check_problems([problems[i] for i in wanted], sandbox=sb)
        if broken:
            pid, why = broken[0]
            raise SparringError(
                f"--source {args.source}: problem {pid}: its reference solution fails its own "
                f"tests ({why}); fix the problem (sparring problems check --source "
                f"{args.source}) before scoring against it"
            )
        scored = {p.id: p for p in compute_trivial_passes([problems[i] for i in wanted], sb)}
        credits = code_duel.score_answers(
            [scored[pid] for _, _, pid, _ in items], [text for *_, text in items], sb
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
        for (n, _, pid, _), c in zip(items, credits, strict=True)
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
