"""`sparring reward`: what each solution of a JSONL batch earns as the answerer's reward, and why.

Covers: reading and checking the batch, and printing one line (or JSON object) per solution.
Does not cover: the scoring itself (sparring.code_duel.score_answers,
sparring.rewards.answerer_credit) or which tests trivial code passes
(sparring.problems.compute_trivial_passes).
"""

from __future__ import annotations

import argparse
import json


def add_commands(sub) -> None:
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


def _reward(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring import code_duel
    from sparring.errors import SparringError
    from sparring.problems import compute_trivial_passes, load_source
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import trusted_limits

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
    with Sandbox(trusted_limits(None, timeout_s=args.timeout)) as sb:
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
