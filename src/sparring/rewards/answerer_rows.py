"""The answerer's training rows: the prompt and what its reward reads of each problem.

Covers: `answerer_rows` (one row per problem: the prompt, the tests it is judged on, which of
them are at the stated case and which discriminate, the trivial solutions' results on them,
the problem's family and level, and what the pool's screen saw of it) and `training_rows` (the
phase's rows and the curriculum coach's reserve, sparring.problems.coach.Reserve: rows it swaps
in when a family moves mid-phase). The columns are what sparring.rewards.code_duel
.AnswererRewardFn reads. Does not cover: the reward itself (sparring.rewards.code_duel), the
draw (sparring.phases.answerer) or the dataset object a trainer takes (the phase wraps the
rows). Pure: no torch, datasets or trl.
"""

from __future__ import annotations

import random
from collections.abc import Container, Mapping
from typing import Any

from sparring import rewards
from sparring.problems import Problem, prompts
from sparring.problems.coach import Coach, Reserve
from sparring.problems.families import family_and_level, stated_case_tests


def answerer_rows(
    problems: list[Problem],
    bank: dict[str, list[str]],
    stages: list[str],
    flat_ids: Mapping[str, float] | None = None,
    families: Container[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per problem (with `families`, per problem of those families only): the prompt
    and what the answerer's reward needs (tests = baseline + banked, which of them are at the
    stated case, which tests discriminate, and the trivial solutions' results on them), and
    whether the frozen answerer's screen saw the problem flat, with the reward it saw (the
    trainer's skip starts from those: `flat_ids`, id -> that reward)."""
    flat = flat_ids or {}
    rows, kept = [], []
    for p in problems:
        banked = bank.get(p.id, [])
        mask, trivial = rewards.credit_view(len(p.baseline_tests), p.trivial_passes, len(banked))
        family, level = family_and_level(p.tags)  # "" for a problem of no family
        if families is not None and family not in families:
            continue
        kept.append(p)
        rows.append(
            {
                "prompt": prompts.answerer_messages(p, stages),
                "problem_id": p.id,
                "tests": list(p.baseline_tests) + banked,
                "stated_tests": stated_case_tests(p),
                "discriminating": mask,
                "trivial_results": trivial,
                "difficulty": p.difficulty,
                "function_name": p.function_name,
                "signature": p.function_signature,
                "reference_solution": p.reference_solution,
                "family": family,
                "level": level,
                "screened_flat": p.id in flat,
                "screened_mean": float(flat[p.id]) if p.id in flat else 0.0,
            }
        )
    if any(p.withheld_tests for p in kept):  # never scored: false positives only
        for row, p in zip(rows, kept, strict=True):
            row["withheld_tests"] = list(p.withheld_tests)
    return rows


def training_rows(
    problems: list[Problem],
    flat_ids: Mapping[str, float],
    coach: Coach | None,
    everything: list[Problem],
    bank: dict[str, list[str]],
    stages: list[str],
    seed: int,
) -> tuple[list[dict[str, Any]], Reserve | None]:
    """The answerer phase's rows: one per drawn problem of `problems` (`flat_ids`: those the
    pool's screen saw flat), and with a `coach` its reserve: a row per coached problem of
    `everything`, in an order `seed` shuffles, what the coach swaps in when a family moves
    mid-phase (None without a coach). Both are `answerer_rows` on `bank` and `stages`."""
    wanted = [(problems, flat_ids, None)]
    if coach is not None:
        wanted.append((everything, None, coach))
    made = [answerer_rows(ps, bank, stages, flat, families) for ps, flat, families in wanted]
    if coach is None:
        return made[0], None
    return made[0], Reserve(random.Random(seed).sample(made[1], len(made[1])))
