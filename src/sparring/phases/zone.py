"""The answerer's zone: problems whose rollouts differed in reward (DAPO dynamic sampling).

Covers: the per-problem rollout statistics that validation writes next to the bank
(`zone.json`, `read_zone`; `in_zone`, `problems_in_zone`), `draw_in_zone`: problems in the zone
first, then untried ones (easy first), flat ones last, `screened_flat`: the drawn problems the
screen saw flat, and `tested_problems`: those the trained test writer writes final tests for.
Does not cover: the statistics themselves, from the frozen answerer's samples run in a sandbox
(sparring.rewards.frozen: `frozen_zone`, `zone_stats`, and for the catch reward the
catchable problems), the batch-level refill and skip (sparring.backends.torch.grpo_sampling).
Pure.
"""

from __future__ import annotations

import json
import random

from sparring.config import Config
from sparring.phases.common import derived_seed, draw_problems
from sparring.problems import Problem
from sparring.rewards.bank import beside_bank

ZONE_FILE = "zone.json"


def read_zone(bank_path: str | None) -> dict[str, dict[str, float]]:
    """Per problem, the answerer's rollout rewards seen so far (n, mean, spread), written by
    validation next to the bank it outputs (a bank file or folder); {} when there is none yet."""
    if not bank_path:
        return {}
    path = beside_bank(bank_path, ZONE_FILE)
    return json.loads(path.read_text()) if path.is_file() else {}


def in_zone(stats: dict[str, float] | None) -> bool:
    """Rewards that differed within the problem's group: its pass rate is strictly between
    0 and 1, so GRPO gets a non-zero advantage there."""
    return bool(stats) and stats.get("spread", 0.0) > 0.0


def problems_in_zone(problems: list[Problem], zone: dict[str, dict[str, float]]) -> int:
    """How many of `problems` are in the zone (`in_zone` of their statistics in `zone`)."""
    return sum(in_zone(zone.get(p.id)) for p in problems)


def screened_flat(problems: list[Problem], zone: dict[str, dict[str, float]]) -> dict[str, float]:
    """The ids among `problems` whose screen saw every sample earn the same reward, each with
    that reward: under `grpo.skip_flat_problems` the answerer samples them only when no other
    problem is left (those below `grpo.skip_mastered_at` first: they were failing, and the
    answerer has trained since).

    >>> from sparring.problems import Problem
    >>> ps = [Problem(i, "", "def f(x):", [], "") for i in "abc"]
    >>> screened_flat(ps, {"a": {"n": 4, "spread": 0.0, "mean": 1.0}, "b": {"n": 4, "spread": 0.5}})
    {'a': 1.0}
    """
    return {
        p.id: zone[p.id].get("mean", 0.0)
        for p in problems
        if zone.get(p.id) and not in_zone(zone[p.id])
    }


_DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}


def draw_in_zone(
    cfg: Config,
    problems: list[Problem],
    zone: dict[str, dict[str, float]],
    round_index: int,
    phase: str,
) -> list[Problem]:
    """DAPO's dynamic sampling, at the level of problems: draw `steps.problems_per_phase`
    problems, first those whose earlier rollouts had differing rewards (the zone), then those
    never tried, and last those whose every rollout earned the same (a flat group trains
    nothing). With `steps.easy_first`, the untried come easy, then medium, then hard: a weak
    model's zone is most likely among easy problems. Seeded like `draw_problems`, which it
    equals when there is no zone estimate and easy_first is off."""
    n = cfg.steps.problems_per_phase
    if not n or n >= len(problems) or not (zone or cfg.steps.easy_first):
        return draw_problems(cfg, problems, round_index, phase)
    rng = random.Random(derived_seed(cfg, round_index, phase))
    shuffled = rng.sample(problems, len(problems))

    def rank(p: Problem) -> int:
        stats = zone.get(p.id)
        if in_zone(stats):
            return 0
        if stats:
            return 4  # flat: every rollout earned the same
        return 1 + (_DIFFICULTY_ORDER.get(p.difficulty, 1) if cfg.steps.easy_first else 0)

    return sorted(shuffled, key=rank)[:n]


def tested_problems(problems: list[Problem], zone: dict[str, dict[str, float]]) -> list[Problem]:
    """The problems of a draw the trained generator writes its final tests for: with a screen
    (`zone` not empty) those where the frozen answers differed, since the answerer samples the
    ones seen flat only when nothing else is left and a test there is seldom used; without one,
    every problem."""
    if not zone:
        return problems
    return [p for p in problems if in_zone(zone.get(p.id))]
