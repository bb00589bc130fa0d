"""The generator's catch reward (`rewards.generator: catch`, issue 73 item 4): a generated test
earns only for frozen answers the given tests let through. The formula is pure; the scorer runs
in the real sandbox pool (bubblewrap, 2 workers: seconds), no model."""

import pytest

from sparring import rewards
from sparring.engine.credit import catch_step_metrics
from sparring.evaluation import learning
from sparring.problems import Problem
from sparring.rewards import code_duel

ROOMY_S = 5.0  # wall limit per test: every run here must finish, on a machine shared with others

# -- the pure reward ------------------------------------------------------------------------


def test_doctests_of_the_scoring_module():
    """generator_scoring's doctests (catch_by_problem, reference_in_domain) and the generator
    phase's catch_step_metrics;
    rewards', learning's and intervals' run in test_rewards_and_games."""
    import doctest

    from sparring.phases import generator
    from sparring.rewards import generator_scoring

    result = doctest.testmod(generator_scoring)
    assert doctest.testmod(generator).failed == 0
    assert result.attempted > 0 and result.failed == 0


def test_one_caught_answer_outearns_any_side_terms_for_every_sample_count():
    """With K catchable answers a catch is worth 1/K; the side terms never outweigh it, even a
    catcher with no valid-looking side terms against a non-catcher with perfect ones."""
    for k in range(1, 17):
        given = [True] * k
        nothing = rewards.catch_reward(given, [[True]] * k, validity=1.0, consistency=1.0)
        one = rewards.catch_reward(given, [[False]] + [[True]] * (k - 1), 0.0, consistency=0.0)
        assert one == pytest.approx(1 / k, abs=1e-6), k
        assert one > 4 * nothing, k  # "clearly less": at most a fifth of one catch
    assert rewards.catch_reward([True] * 4, [[False]] * 2 + [[True]] * 2, 1.0) == pytest.approx(
        0.5 + 0.2 / 4
    )


def test_answers_the_given_tests_already_fail_pay_nothing():
    """Breaking an answer the given tests fail changes no reward: it pays exactly what breaking
    nothing pays, where the adversarial reward pays it as hardness."""
    given = [False, True]  # the first answer fails a given test
    breaks_failed = rewards.catch_reward(given, [[False], [True]], validity=1.0)
    breaks_none = rewards.catch_reward(given, [[True], [True]], validity=1.0)
    breaks_passing = rewards.catch_reward(given, [[True], [False]], validity=1.0)
    assert breaks_failed == breaks_none == pytest.approx(0.2)  # the side terms of 1 catchable
    assert breaks_passing == pytest.approx(1.2)
    assert rewards.catch_counts(given, [[False], [True]]) == (0, 1)
    # a sandbox failure on an answer that is not catchable decides nothing
    assert rewards.catch_reward(given, [[None], [False]], 1.0) == pytest.approx(1.2)
    assert rewards.catch_reward(given, [[True], [None]], 1.0) is None  # it decides: no signal
    assert rewards.catch_reward([None, True], [[True], [False]], 1.0) is None


def test_with_no_catchable_answer_only_the_side_terms_are_paid():
    for given in ([False, False], []):
        rows = [[False] for _ in given]
        assert rewards.catch_reward(given, rows, validity=1.0) == pytest.approx(0.2)
        assert rewards.catch_reward(given, rows, validity=0.5, consistency=0.0) == 0.05
        assert rewards.catch_counts(given, rows) == (0, 0)
    assert rewards.catch_reward([True], [[False]], 1.0, n_tests=0) == 0.0  # no tests: nothing


def test_generator_score_uses_the_catch_reward_only_when_given_verdicts_come():
    args = (["assert f(2) == 2"], "f", [True], [[False], [True]], [])
    adversarial = code_duel.generator_score(*args)
    assert adversarial.reward == rewards.generator_reward(1.0, 0.5, 1.0, 1.0)  # unchanged
    assert (adversarial.catch, adversarial.catchable) == (None, None)
    catch = code_duel.generator_score(*args, given_passed=[False, True])
    assert (catch.catch, catch.catchable, catch.reward) == (0.0, 1, pytest.approx(0.2))
    assert code_duel.score_metrics([adversarial]).keys() == code_duel.score_metrics([]).keys() | {
        "reward", "validity", "honest_test_share", "hardness", "diversity", "consistency",
        "tests_per_completion",
    }  # fmt: skip
    assert "generator_catch" not in code_duel.score_metrics([adversarial])


def test_catch_metrics_per_batch_and_the_train_catch_line():
    scores = [
        code_duel.GeneratorScore(0.6, 1, 1, 0, 1, 1, catch=c, catchable=k, problem_id=p)
        for c, k, p in [(1.0, 1, "a"), (0.0, 1, "a"), (0.0, 0, "b"), (0.0, 0, "c")]
    ]
    m = code_duel.score_metrics(scores)
    assert m["generator_catch"] == 0.25
    assert m["generator_catchable_share"] == pytest.approx(1 / 3)  # problems, not completions
    first = {f"p{i}": 0.0 for i in range(6)}
    last = {f"p{i}": 1.0 if i < 3 else 0.5 for i in range(6)}
    phase = catch_step_metrics([[first, {"p0": 0.2}, last]])
    assert (phase["generator_catch_first"], phase["generator_catch_last"]) == (0.0, 0.75)
    assert phase["generator_catch_calls"] == 3.0
    summary, *_ = learning.from_phase_runs([("r1-train-generator", phase)])
    line = learning.learn_lines(summary, [], None)
    # the interval: 0.75 +- 1.96 * 0.25 / sqrt(6) (the last step's standard error alone)
    assert "LEARN generator_catch_train first=0.000 last=0.750 ci95_delta=0.550,0.950 n=6" in line
    one = catch_step_metrics([[last]])
    summary, *_ = learning.from_phase_runs([("r1-train-generator", one)])
    assert (
        "LEARN generator_catch_train first=0.750 last=0.750 ci95_delta=n/a (one step) n=6"
        in learning.learn_lines(summary, [], None)
    )
    adversarial, *_ = learning.from_phase_runs([("r1-train-generator", {"reward": 0.3})])
    assert not any(
        "generator_catch_train" in x for x in learning.learn_lines(adversarial, [], None)
    )


# -- the scorer in the real sandbox ---------------------------------------------------------

SIG = "def max_of(xs: list[int]) -> int:"
REF = f"{SIG}\n    return max(xs)\n"
GIVEN = ["assert max_of([1, 5, 3]) == 5", "assert max_of([2, 9]) == 9"]
# passes the given tests, wrong on all-negative lists (starts from 0): catchable
ZERO_START = f"{SIG}\n    m = 0\n    for x in xs:\n        m = x if x > m else m\n    return m\n"
LAST = f"{SIG}\n    return xs[-1]\n"  # fails a given test ([1, 5, 3] gives 3)
RIGHT = f"{SIG}\n    best = xs[0]\n    for x in xs:\n        best = max(best, x)\n    return best\n"
# passes the given tests, returns None on a one-element list: catchable
NO_SINGLE = f"{SIG}\n    return sorted(xs)[-1] if len(xs) > 1 else None\n"
FROZEN = [ZERO_START, LAST, RIGHT, NO_SINGLE]
CATCHES = "```python\nassert max_of([-3, -2]) == -2\n```"  # fails ZERO_START only
STALE = "```python\nassert max_of([7, 2]) == 7\n```"  # fails LAST only: the given tests did


@pytest.fixture(scope="module")
def pool():
    from sparring.sandbox import Sandbox, SandboxLimits

    with Sandbox(SandboxLimits(timeout_s=ROOMY_S, workers=2)) as box:
        assert box.isolation == "bwrap"
        yield box


def scorer(sandbox, reward="catch"):
    problem = Problem("max", "Largest element of a non-empty list.", SIG, GIVEN, REF)
    return code_duel.GeneratorScorer(
        {"max": code_duel.problem_info(problem, FROZEN)}, sandbox, reward=reward
    )


def test_a_test_catching_an_answer_the_given_tests_pass_earns_more(pool):
    """Each test breaks one of the four frozen answers: the adversarial reward pays both alike
    (a quarter of the answers broken); the catch reward pays only the one the given tests let
    through (1 of the 3 that pass them)."""
    adversarial = scorer(pool, "adversarial").score([CATCHES, STALE], ["max", "max"])
    assert adversarial[0].reward == adversarial[1].reward
    assert adversarial[0].hardness == adversarial[1].hardness == pytest.approx(0.25)
    catch, stale = scorer(pool).score([CATCHES, STALE], ["max", "max"])
    assert (catch.catch, catch.catchable) == (pytest.approx(1 / 3), 3)
    assert catch.reward == pytest.approx(1 / 3 + 0.2 / 3, abs=1e-6)
    assert (stale.catch, stale.catchable) == (0.0, 3)
    assert stale.reward == pytest.approx(0.2 / 3, abs=1e-6)
    assert catch.reward > 4 * stale.reward


class Counted:
    """The real pool, counting the (solution, test) pairs it is asked to run."""

    def __init__(self, pool):
        self.pool, self.calls = pool, 0

    def run_many(self, jobs):
        self.calls += sum(len(tests) for _, tests in jobs)
        return self.pool.run_many(jobs)


def test_the_given_tests_run_once_per_frozen_answer(pool):
    counted = Counted(pool)
    s = scorer(counted)
    s.score([CATCHES], ["max"])
    # the new test on the reference, 4 frozen and 16 trivial answers; the 2 given on the 4 frozen
    trivial = len(s.problems["max"].trivial_solutions)
    assert counted.calls == 1 + 4 + trivial + 2 * 4
    s.score([STALE], ["max"])
    assert counted.calls == 2 * (1 + 4 + trivial) + 2 * 4  # the given verdicts: from the cache


def test_degenerate_completions_earn_no_catch_credit(pool):
    """Empty output, a completion repeating the prompt's given tests (it fails LAST), a constant
    `assert True`, an expected value a constant answer gives and an assertion the echoed input
    satisfies (both fail NO_SINGLE): none earns catch credit, nor a quarter of a real catch."""
    degenerate = {
        "empty": "",
        "repeats the given tests": "```python\n" + "\n".join(GIVEN) + "\n```",
        "assert True": "```python\nassert True\n```",
        "a constant's value": "```python\nassert max_of([0]) == 0\n```",  # `return 0` passes
        "accepts the echoed input": "```python\nassert max_of([3]) in ([3], 3)\n```",
    }
    scores = scorer(pool).score([*degenerate.values(), CATCHES], ["max"] * (len(degenerate) + 1))
    real = scores[-1]
    for (name, _), s in zip(degenerate.items(), scores, strict=False):
        assert s.catch == 0.0, name
        assert s.reward < real.reward / 4, name
    # they do break frozen answers: only honesty and the given tests keep them from paying
    adversarial = scorer(pool, "adversarial").score(
        [degenerate["a constant's value"], degenerate["accepts the echoed input"]], ["max"] * 2
    )
    assert all(s.validity == 1.0 and s.honest == 0.0 for s in adversarial)
