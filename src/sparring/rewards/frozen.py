"""What the frozen answerer's samples earn, run in a sandbox the caller gives.

Covers: `frozen_zone` (per problem, the answerer's honest rewards of the frozen answerer's
samples on the tests its reward sees, summarised by `zone_stats`: the statistics validation
writes to `zone.json`, the generator phase orders its draw by and the answerer phase's screen
draws by) and, read off the same runs for the catch reward, the catchable problems (a frozen
answer passes the given tests). Does not cover: reading a zone and drawing by it
(sparring.phases.zone), sampling the frozen answerer (sparring.serving.duel), the reward
formulas (sparring.rewards).
"""

from __future__ import annotations

from typing import Any

from sparring import rewards
from sparring.problems import Problem


def zone_stats(values: list[float]) -> dict[str, float]:
    return {
        "n": float(len(values)),
        "mean": sum(values) / len(values) if values else 0.0,
        "spread": (max(values) - min(values)) if values else 0.0,
    }


def frozen_zone(
    frozen_samples: int,
    problems: dict[str, Problem],
    solutions: dict[str, list[str]],
    sandbox: Any,
    banked: dict[str, list[str]] | None = None,
    cache: Any = None,
    catchable: set[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Per problem the frozen answerer was sampled on (`frozen_samples` samples a problem): the
    honest rewards of its solutions on the tests the answerer's reward sees (the problem's given
    tests, then `banked`'s tests of it: where the given tests pass every sample and a banked
    test fails some, the problem is in the zone), unparseable samples earning 0, summarised by
    `zone_stats`. `cache`: a sparring.sandbox.result_cache.ResultCache holding runs the caller
    made already. `catchable`, when given, gets the ids of the problems where a sample passes
    every given test (`baseline_tests`): the only problems where `rewards.generator: catch` can
    pay for a catch (sparring.rewards.catch_counts); a sandbox failure passes nothing."""
    from sparring.sandbox.result_cache import run_cached

    zone: dict[str, dict[str, float]] = {}
    for pid, codes in solutions.items():
        p = problems.get(pid)
        if p is None:
            continue
        extra = (banked or {}).get(pid, [])
        tests = list(p.baseline_tests) + extra
        mask, trivial = rewards.credit_view(len(p.baseline_tests), p.trivial_passes, len(extra))
        rows = run_cached(sandbox, [(c, tests) for c in codes], cache) if codes else []
        n_given = len(p.baseline_tests)
        if catchable is not None and n_given and any(r and all(r[:n_given]) for r in rows):
            catchable.add(pid)
        values = [rewards.answerer_credit(row, mask, trivial, p.difficulty).reward for row in rows]
        kept = [v for v in values if v is not None]
        kept += [0.0] * (frozen_samples - len(codes))  # unparseable samples
        zone[pid] = zone_stats(kept)
    return zone
