"""What each role earns: reward functions, plain Python data in, a float (or None) out.

The package's modules: this one (the formulas, below), `code_duel` (completions of either role
turned into rewards through the sandbox), `generator_scoring` (the test writer's tests scored
against the frozen answerer) and `bank` (the validated adversarial tests every later phase
attacks with). The verdict cache they share is the sandbox's (sparring.sandbox.result_cache).

This module covers: the answerer's difficulty-aware pass-rate reward, its honest credit (the
stated case optionally weighed on its own, `rewards.stated_case_share`) and the
binary all-tests baseline read off the same results, the generator's weighted adversarial reward
(hardness against a frozen answerer, validity, diversity, consistency) and its catch reward
(`rewards.generator: catch`: only answers the given tests let through count), the proposer's
goldilocks reward, near-duplicate detection, and the checkpoint score.

Convention: `None` means "no signal" (the sandbox itself failed); it is never turned into 0, so a
broken sandbox does not punish the model. Imports nothing heavy: no torch, trl, mlflow or boto3.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    honest: float | None = None,
) -> float | None:
    """Adversarial test writer's reward.

    `validity`: share of its tests that pass the reference solution; `frozen_pass_rate`: the
    frozen answerer's pass rate on its valid tests (None when the sandbox failed);
    `diversity`: 1 - near-duplicate rate; `consistency`: share of tests that call the right
    function; `honest`: share of tests that are valid AND failed by every trivial solution
    (None = same as validity). The core term is the seed's `(1 - frozen pass rate) * validity`,
    counted on honest tests only: `(1 - frozen pass rate) * honest`; the other terms are weighted
    by the config. No tests at all earns 0.

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
    honest = validity if honest is None else honest
    score = (
        w["hardness"] * (1.0 - frozen_pass_rate) * honest
        + w["validity"] * validity
        + w["diversity"] * diversity * validity
        + w["consistency"] * consistency
    )
    return round(score, 6)


# The catch reward's side terms, together, are worth this share of one caught answer (below).
CATCH_SIDE_SHARE = 0.2


def catch_counts(
    given_passed: Sequence[bool | None], honest_passed: Sequence[Sequence[bool | None]]
) -> tuple[int, int] | None:
    """(answers caught, answers catchable) among a problem's frozen answers: catchable ones pass
    every given test (`given_passed[s]`), a caught one also fails at least one honest test
    (`honest_passed[s][i]`: answer s on honest test i). None when the sandbox failed on an
    answer that decides it (a catchable answer's honest results, or any given-test verdict).

    >>> catch_counts([True, True, False], [[True], [False], [False]])  # the 3rd: already failed
    (1, 2)
    >>> catch_counts([True, None], [[True], [True]]) is None
    True
    """
    if len(given_passed) != len(honest_passed):
        raise ValueError(f"{len(given_passed)} given verdicts for {len(honest_passed)} answers")
    if any(g is None for g in given_passed):
        return None
    rows = [row for g, row in zip(given_passed, honest_passed, strict=True) if g]
    if any(v is None for row in rows for v in row):
        return None
    return sum(any(v is False for v in row) for row in rows), len(rows)


def catch_reward(
    given_passed: Sequence[bool | None],
    honest_passed: Sequence[Sequence[bool | None]],
    validity: float,
    consistency: float = 1.0,
    n_tests: int = 1,
) -> float | None:
    """The test writer's catch reward (`rewards.generator: catch`): only what a test can change.

    Core term, weight 1: the share of the frozen answers that pass every given test (the
    answerer's reward would pay them) which at least one of the completion's honest tests
    (valid, and failed by every trivial solution) fails (`catch_counts`). An answer the given
    tests already fail counts for nothing: breaking it changes no reward.

    Side terms: `CATCH_SIDE_SHARE * (validity + consistency) / 2` of ONE caught answer's worth
    (1 / catchable answers), so at most 0.2 / K with K catchable answers. Why scaled so: a catch
    is worth 1/K, and with the 8-16 frozen samples this reward wants, fixed side terms of 0.2
    would outweigh one caught answer (1/16 < 0.2); scaled, one more caught answer always beats
    any difference in the side terms, which only order completions that catch alike. With no
    catchable answer there is nothing to catch: the side terms alone, at most 0.2 (a GRPO group
    of one problem still learns to write valid tests that call the function).

    `validity`: share of the tests the reference passes; `consistency`: share calling the
    function. No tests earns 0; None means the sandbox failed (no signal).

    >>> catch_reward([True, True], [[False], [True]], validity=1.0)  # 1 of 2 caught
    0.6
    >>> catch_reward([True, True], [[True], [True]], validity=1.0)  # valid, catches nothing
    0.1
    >>> catch_reward([False, False], [[False], [False]], validity=1.0)  # none catchable
    0.2
    >>> catch_reward([True], [[None]], 1.0) is None, catch_reward([True], [[False]], 1.0, n_tests=0)
    (True, 0.0)
    """
    if n_tests == 0:
        return 0.0
    counts = catch_counts(given_passed, honest_passed)
    if counts is None:
        return None
    caught, catchable = counts
    unit = 1.0 / catchable if catchable else 1.0
    core = caught / catchable if catchable else 0.0
    return round(core + CATCH_SIDE_SHARE * unit * (validity + consistency) / 2, 6)


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


@dataclass(frozen=True)
class AnswererCredit:
    """What one answer earned, and why (every field is shown by `sparring reward`)."""

    reward: float | None
    tests_passed: int
    tests_total: int
    discriminating_passed: int
    discriminating_total: int
    trivial: bool  # its results equal a trivial solution's on every test
    strict: bool  # every test passes
    parsed: bool = True

    @property
    def raw_fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 0.0

    @property
    def discriminating_fraction(self) -> float:
        if not self.discriminating_total:
            return 0.0
        return self.discriminating_passed / self.discriminating_total


def answerer_credit(
    passed: Sequence[bool | None] | None,
    discriminating: Sequence[bool],
    trivial_results: Sequence[Sequence[bool]] = (),
    difficulty: str = "medium",
    difficulty_weights: Mapping[str, float] | None = None,
    stated: Sequence[int] = (),
    stated_share: float = 0.0,
) -> AnswererCredit:
    """The answerer's honest reward: the difficulty-weighted share of *discriminating* tests
    passed (tests that no trivial solution passes). `passed` is None for code that did not
    parse (reward 0); a None inside it is a sandbox failure (reward None: no signal). Results
    equal to one of `trivial_results` (a trivial solution's pass vector) earn 0, and so does a
    problem without discriminating tests. With `stated_share` s > 0 and `stated` (the indices
    of the tests at the problem's stated case, sparring.problems.families.stated_case_tests),
    the stated case is weighed on its own: the share of the other discriminating tests passed
    times (1 - s) + s x the share of the stated ones passed. An answer that gets the stated
    case and nothing else (a constant returning the stated value) earns 0, not s.

    >>> answerer_credit([True, True, False], [False, True, True]).reward  # 1 of 2 disc. tests
    0.5
    >>> c = answerer_credit([True, False, False], [False, True, True], [[True, False, False]])
    >>> c.reward, c.trivial, c.raw_fraction
    (0.0, True, 0.3333333333333333)
    >>> answerer_credit([True, True], [True, True], difficulty="hard").reward
    1.2
    >>> answerer_credit(None, [True]).reward, answerer_credit([None], [True]).reward
    (0.0, None)
    >>> [answerer_credit(p, [True] * 3, stated=[2], stated_share=0.5).reward
    ...  for p in ([True, True, False], [True, True, True], [False, False, True])]
    [0.5, 1.0, 0.0]
    """
    n = len(discriminating)
    n_disc = sum(bool(d) for d in discriminating)
    if passed is None:
        return AnswererCredit(0.0, 0, n, 0, n_disc, False, False, parsed=False)
    if len(passed) != n:
        raise ValueError(f"{len(passed)} results for {n} tests")
    if any(v is None for v in passed):
        return AnswererCredit(None, 0, n, 0, n_disc, False, False)
    results = [bool(v) for v in passed]
    n_passed = sum(results)
    disc_passed = sum(r and d for r, d in zip(results, discriminating, strict=True))
    trivial = n_passed > 0 and any(list(t) == results for t in trivial_results)
    weights = DEFAULT_DIFFICULTY_WEIGHTS if difficulty_weights is None else difficulty_weights
    share = disc_passed / n_disc if n_disc and not trivial else 0.0
    if stated_share > 0 and not trivial:
        share = _stated_weighed(results, discriminating, stated, stated_share, share)
    reward = round(weights.get(difficulty, 1.0) * share, 6)
    return AnswererCredit(reward, n_passed, n, disc_passed, n_disc, trivial, n_passed == n > 0)


def _stated_weighed(
    results: Sequence[bool],
    discriminating: Sequence[bool],
    stated: Sequence[int],
    stated_share: float,
    share: float,
) -> float:
    """`share` with the discriminating tests at `stated` weighed as `answerer_credit` says
    (`share` unchanged when either the stated or the other discriminating tests are none)."""
    marked = set(stated)
    at = [
        r for i, (r, d) in enumerate(zip(results, discriminating, strict=True)) if d and i in marked
    ]
    rest = [
        r
        for i, (r, d) in enumerate(zip(results, discriminating, strict=True))
        if d and i not in marked
    ]
    if not at or not rest:
        return share
    return (sum(rest) / len(rest)) * (1 - stated_share + stated_share * sum(at) / len(at))


def all_tests_reward(credit: AnswererCredit) -> float | None:
    """The binary all-tests reward (`rewards.answerer: all_tests`, the common baseline of
    arXiv 2605.02944): 1.0 when the answer defines the asked-for function (it parsed: code
    without it never runs) and passes every test the reward sees, else 0.0. Read off the same
    pass/fail results as the honest credit (`answerer_credit`: its `strict`), so the sandbox
    runs once for either; unlike it there is no difficulty weight and no trivial-code check: code
    that passes every test earns 1.0 whatever a trivial solution passes. A sandbox failure is
    None (no signal); a problem without tests earns 0.

    >>> all_tests_reward(answerer_credit([True, True, True], [False, True, True]))
    1.0
    >>> all_tests_reward(answerer_credit([True, True, False], [True, True, True]))  # 2 of 3
    0.0
    >>> all_tests_reward(answerer_credit(None, [True])), all_tests_reward(answerer_credit([], []))
    (0.0, 0.0)
    >>> all_tests_reward(answerer_credit([True, None], [True, True])) is None
    True
    >>> t = [[True, True]]  # trivial code passing every test: honest pays 0, all_tests 1
    >>> answerer_credit([True, True], [False, False], t).reward, all_tests_reward(
    ...     answerer_credit([True, True], [False, False], t))
    (0.0, 1.0)
    """
    if credit.reward is None:
        return None
    return 1.0 if credit.parsed and credit.strict else 0.0


def credit_view(
    n_tests: int, trivial_passes: Mapping[str, Sequence[int]], n_extra: int = 0
) -> tuple[list[bool], list[list[bool]]]:
    """(discriminating mask, trivial pass vectors) for a problem's `n_tests` answer tests plus
    `n_extra` banked tests, which validation admits only when every trivial solution fails them.

    >>> credit_view(2, {"const_0": [1]}, 1)
    ([True, False, True], [[False, True, False]])
    """
    vectors = [
        [i in set(hits) for i in range(n_tests)] + [False] * n_extra
        for hits in trivial_passes.values()
    ]
    mask = [not any(v[i] for v in vectors) for i in range(n_tests + n_extra)]
    return mask, vectors
