"""Rewards and credit assignment: doctests plus the properties the trainers rely on."""

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparring import rewards
from sparring.engine import credit
from sparring.engine.core import Rollout
from sparring.engine.credit import GRPOCredit, group_advantages
from sparring.evaluation import intervals, learning
from sparring.problems import trivial


@pytest.mark.parametrize("module", [rewards, credit, trivial, learning, intervals])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_answerer_reward_is_difficulty_aware_and_none_on_infra_error():
    assert rewards.answerer_reward(1.0, "hard") > rewards.answerer_reward(1.0, "easy")
    assert rewards.answerer_reward(None, "hard") is None
    assert rewards.answerer_reward(0.5, "medium", {"medium": 2.0}) == 1.0


def test_generator_reward_prefers_valid_tests_that_break_the_answerer():
    breaking = rewards.generator_reward(validity=1.0, frozen_pass_rate=0.0)
    passing = rewards.generator_reward(validity=1.0, frozen_pass_rate=1.0)
    invalid = rewards.generator_reward(validity=0.0, frozen_pass_rate=0.0, consistency=0.0)
    assert breaking > passing > invalid == 0.0
    # the seed's core term alone, with every other weight off
    core = {"validity": 0, "diversity": 0, "consistency": 0, "hardness": 1}
    assert rewards.generator_reward(0.5, 0.2, weights=core) == pytest.approx(0.4)


def test_goldilocks_peaks_at_target():
    values = [rewards.goldilocks_reward(p / 10, 0.3) for p in range(11)]
    assert max(values) == values[3] == 1.0
    assert values[0] < 1.0 and values[10] == 0.0


def test_near_duplicates_against_a_reference_set():
    rate = rewards.near_duplicate_rate(
        ["assert f(1) == 1", "assert f(9) == 81"], reference=["assert f(1)  ==  1"]
    )
    assert rate == 0.5


@given(st.lists(st.floats(-10, 10), min_size=2, max_size=12))
def test_group_advantages_are_centered(values):
    adv = group_advantages(values, ["g"] * len(values), scale=False)
    assert sum(adv) == pytest.approx(0.0, abs=1e-4)


def test_children_are_compared_only_with_their_siblings():
    # Two proposers; the solver children of each are one sibling group.
    def solvers(rewards):
        return [Rollout("solve", None, [], rewards={"solver": r}) for r in rewards]

    easy = Rollout("propose", "easy", [], rewards={"proposer": 0.0}, group="p")
    easy.children = solvers((1.0, 1.0, 0.0))
    hard = Rollout("propose", "hard", [], rewards={"proposer": 1.0}, group="p")
    hard.children = solvers((0.0, 0.0, 1.0))
    GRPOCredit(scale=False).assign([easy, hard])
    assert easy.advantages["proposer"] == -0.5 and hard.advantages["proposer"] == 0.5
    # a failing solver under the easy proposer is below its siblings' mean (2/3) ...
    assert easy.children[2].advantages["solver"] == pytest.approx(-2 / 3, abs=1e-5)
    # ... while the lone success under the hard proposer is above its own siblings' mean (1/3)
    assert hard.children[2].advantages["solver"] == pytest.approx(2 / 3, abs=1e-5)


def test_paired_bootstrap_interval_excludes_zero_only_for_a_real_gain():
    before = [0.1 * (i % 5) for i in range(40)]
    gain = intervals.paired_delta(before, [b + 0.2 for b in before])
    assert gain["lo"] == pytest.approx(0.2) and gain["hi"] == pytest.approx(0.2)
    noise = intervals.paired_delta(before, before[::-1])  # same values, other problems
    assert noise["lo"] < 0 < noise["hi"]


def test_learn_lines_have_the_promised_format():
    report = {
        "baseline": {
            "val_sampled": {"discriminating": {"a": 0.0, "b": 0.5}, "strict": {"a": 0.0, "b": 0.0}},
            "humaneval_pass@1": 0.05,
            "bank_pass_rate": 0.0,
        },
        "snapshots": [
            {
                "label": "warm-start",  # the answerer round 1's generator attacked
                "val_sampled": {"discriminating": {"a": 0.5, "b": 0.5}},
                "bank_pass_rate": 0.2,
            },
            {
                "round": 1,
                "val_sampled": {
                    "discriminating": {"a": 1.0, "b": 0.5},
                    "strict": {"a": 1.0, "b": 0.0},
                },
                "humaneval_pass@1": 0.1,
                "bank_pass_rate": 0.4,
            },
        ],
    }
    lines = learning.learn_lines(learning.learning_summary(report), [0.05, 0.2], 0.8)
    assert lines[:2] == [
        "LEARN completions_trained n/a sampled=n/a",
        "LEARN train_reward first=n/a last=n/a ci95_delta=n/a (n=0)",
    ]
    # two held-out problems: the gains are printed, their intervals are not (n < 5)
    assert "LEARN validation_pass_rate base=0.250 final=0.750 ci95_delta=n/a (n=2)" in lines
    assert "LEARN strict_pass_rate base=0.000 final=0.500 ci95_delta=n/a (n=2)" in lines
    assert "LEARN pass_at_n base=n/a final=n/a ci95_delta=n/a (n=0)" in lines  # not measured
    assert "LEARN stage base_to_warm_start delta=0.250 ci95_delta=n/a (n=2)" in lines
    assert "LEARN generator_break_rate first=0.050 last=0.200" in lines
    assert "LEARN bank_pass_rate before=0.200 after=0.400" in lines
    assert "LEARN humaneval_pass_at_1 base=0.050 final=0.100" in lines
    assert "LEARN useful_group_share 0.800" in lines
