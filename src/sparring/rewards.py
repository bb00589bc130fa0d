"""Reward functions: plain Python data in, a float (or None) out.

Covers: the answerer's difficulty-aware pass-rate reward, the generator's weighted adversarial
reward (hardness against a frozen answerer, validity, diversity, consistency), the proposer's
goldilocks reward, near-duplicate detection, and the checkpoint score.

Convention: `None` means "no signal" (the sandbox itself failed); it is never turned into 0, so a
broken sandbox does not punish the model. Imports nothing heavy: no torch, trl, mlflow or boto3.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

DEFAULT_DIFFICULTY_WEIGHTS = {"easy": 0.8, "medium": 1.0, "hard": 1.2}


def answerer_reward(
    pass_rate: float | None,
    difficulty: str = "medium",
    difficulty_weights: Mapping[str, float] | None = None,
    parsed: bool = True,
    format_bonus: float = 0.0,
) -> float | None:
    """Pass rate on the problem's tests, scaled by difficulty; unparseable code earns 0.

    >>> answerer_reward(0.5, "hard")
    0.6
    >>> answerer_reward(1.0, "easy")
    0.8
    >>> answerer_reward(None) is None
    True
    >>> answerer_reward(0.0, parsed=False)
    0.0
    """
    if not parsed:
        return 0.0
    if pass_rate is None:
        return None
    weights = DEFAULT_DIFFICULTY_WEIGHTS if difficulty_weights is None else difficulty_weights
    scale = weights.get(difficulty, 1.0)
    return round(scale * pass_rate + format_bonus, 6)


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|\S")


def tokens(text: str) -> set[str]:
    """Token set of a test, for near-duplicate checks.

    >>> sorted(tokens("assert f(1) == 2"))
    ['(', ')', '1', '2', '=', 'assert', 'f']
    """
    return set(_TOKEN.findall(text))


def jaccard(a: str, b: str) -> float:
    """Token Jaccard similarity of two tests.

    >>> jaccard("assert f(1) == 2", "assert f(1) == 2")
    1.0
    >>> jaccard("", "")
    1.0
    """
    ta, tb = tokens(a), tokens(b)
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def near_duplicate_rate(
    tests: Sequence[str], reference: Sequence[str] = (), threshold: float = 0.9
) -> float:
    """Share of `tests` that nearly repeat an earlier test or one of `reference`.

    >>> near_duplicate_rate(["assert f(1) == 1", "assert f(1) == 1", "assert f(2) == 4"])
    0.3333333333333333
    >>> near_duplicate_rate([])
    0.0
    """
    if not tests:
        return 0.0
    seen = list(reference)
    duplicates = 0
    for test in tests:
        if any(jaccard(test, other) >= threshold for other in seen):
            duplicates += 1
        seen.append(test)
    return duplicates / len(tests)


def generator_reward(
    validity: float,
    frozen_pass_rate: float | None,
    diversity: float = 1.0,
    consistency: float = 1.0,
    weights: Mapping[str, float] | None = None,
    n_tests: int = 1,
) -> float | None:
    """Adversarial test writer's reward.

    `validity`: share of its tests that pass the reference solution; `frozen_pass_rate`: the
    frozen answerer's pass rate on its valid tests (None when the sandbox failed);
    `diversity`: 1 - near-duplicate rate; `consistency`: share of tests that call the right
    function. The core term is the seed's `(1 - frozen pass rate) * validity`; the other terms
    are weighted by the config. No tests at all earns 0.

    >>> generator_reward(1.0, 0.0)  # every test valid, every frozen solution broken
    1.4
    >>> generator_reward(0.5, 1.0)  # tests the answerer passes: no hardness term
    0.25
    >>> generator_reward(1.0, None) is None
    True
    >>> generator_reward(1.0, 0.5, n_tests=0)
    0.0
    """
    if n_tests == 0:
        return 0.0
    if frozen_pass_rate is None:
        return None
    w = {"validity": 0.2, "hardness": 1.0, "diversity": 0.1, "consistency": 0.1}
    if weights:
        w.update(weights)
    score = (
        w["hardness"] * (1.0 - frozen_pass_rate) * validity
        + w["validity"] * validity
        + w["diversity"] * diversity * validity
        + w["consistency"] * consistency
    )
    return round(score, 6)


def goldilocks_reward(pass_rate: float | None, target: float = 0.5) -> float | None:
    """Proposer's reward: 1 when the frozen solver's pass rate hits `target`, falling
    linearly to 0 at the farther extreme (too easy and too hard both earn little).

    >>> goldilocks_reward(0.5)
    1.0
    >>> goldilocks_reward(1.0), goldilocks_reward(0.0)
    (0.0, 0.0)
    >>> goldilocks_reward(0.75, target=0.5)
    0.5
    """
    if pass_rate is None:
        return None
    span = max(target, 1.0 - target) or 1.0
    return round(max(0.0, 1.0 - abs(pass_rate - target) / span), 6)


def checkpoint_score(
    answerer_reward_mean: float, test_validity: float, weights: Mapping[str, float] | None = None
) -> float:
    """Best-checkpoint score, by default `0.7 * answerer reward + 0.3 * test validity`.

    >>> checkpoint_score(1.0, 0.5)
    0.85
    """
    w = {"answerer_reward": 0.7, "test_validity": 0.3}
    if weights:
        w.update(weights)
    score = w["answerer_reward"] * answerer_reward_mean + w["test_validity"] * test_validity
    return round(score, 6)


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the values that are not None (None when none are).

    >>> mean_or_none([1.0, None, 0.0])
    0.5
    >>> mean_or_none([None]) is None
    True
    """
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None
