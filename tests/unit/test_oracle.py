"""Expected values from the reference (sandbox/oracle.py): the pure shape checks, then the rewrite
and the generator's reward with real sandbox workers."""

import pytest

from sparring.problems.trivial import trivial_family
from sparring.rewards import code_duel
from sparring.sandbox import Sandbox, SandboxLimits
from sparring.sandbox.oracle import literal_source, split_equality, with_reference_expected

REF = "def f(xs):\n    return sorted(xs, reverse=True)\n"


@pytest.fixture(scope="module")
def sb():
    # isolated (auto no longer runs unisolated), with a wall limit that a loaded machine keeps
    box = Sandbox(SandboxLimits(timeout_s=5.0, workers=2))
    assert box.isolation == "bwrap"
    yield box
    box.close()


def test_split_equality_finds_the_expression_and_the_literal():
    assert split_equality("assert f([3, 1]) == [3, 1]") == ("f([3, 1])", "[3, 1]")
    assert split_equality("assert 2 == len(f('ab'))") == ("len(f('ab'))", "2")
    for other in (
        "assert f(1) != 2",  # not equality
        "assert f(1) == f(2)",  # no literal side
        "assert 1 == 1",  # no expression side
        "assert f(1) == 2, 'msg'",
        "assert f(1) == 2 == 2",
        "x = f(1)",
        "assert f(",
    ):
        assert split_equality(other) is None, other


def test_literal_source_round_trips_or_refuses():
    assert literal_source([1, (2, "a")]) == "[1, (2, 'a')]"
    assert literal_source({"k": 1.5}) == "{'k': 1.5}"
    assert literal_source(True) == "True"
    assert literal_source(float("nan")) is None  # nan != nan: the test could never pass
    assert literal_source([float("inf")]) is None  # `inf` is not a literal
    assert literal_source(frozenset({1})) is None  # `frozenset(...)` is a call, not a literal
    assert literal_source("x" * 1000) is None  # too long to be a readable test


def test_rewrite_takes_the_reference_value_and_keeps_what_it_cannot_judge(sb):
    tests = [
        "assert f([1, 3]) == [1, 3]",  # wrong expected value: corrected
        "assert [] == f([])",  # right already: same test, canonical spelling
        "assert len(f('ba')) == 5",
        "assert f(None) == []",  # the reference raises: left as written (invalid)
        "assert f([1]) != 2",  # other shapes are left alone
    ]
    out = with_reference_expected(REF, tests, sb)
    assert out == [
        "assert f([1, 3]) == [3, 1]",
        "assert f([]) == []",
        "assert len(f('ba')) == 2",
        "assert f(None) == []",
        "assert f([1]) != 2",
    ]
    assert with_reference_expected(REF, out, sb) == out  # idempotent: validation may reapply it


def test_generator_earns_for_inputs_that_break_not_for_arithmetic(sb):
    """Wrong expected values are invalid as written; in the oracle form the same inputs are valid
    and earn hardness where the frozen answerer fails them. Trivial code still earns nothing."""
    frozen = ["def f(xs):\n    return list(xs)[::-1]\n"]  # forgets to sort
    trivial = list(trivial_family("f", 1).values())
    info = {
        "p": code_duel.ProblemInfo("p", "f", REF, ["assert f([1, 2]) == [2, 1]"], frozen, trivial)
    }
    text = "```python\nassert f([2, 9, 4]) == [2, 9, 4]\nassert f([5, 3, 8, 1]) == [0]\n```"
    as_written = code_duel.GeneratorScorer(info, sb).score([text], ["p"])[0]
    oracle = code_duel.GeneratorScorer(info, sb, reference_expected=True)
    scored = oracle.score([text], ["p"])[0]
    assert as_written.validity == 0.0 and as_written.hardness == 0.0
    assert scored.validity == 1.0 and scored.hardness == 1.0
    assert scored.reward > as_written.reward
    assert oracle.generated["p"] == [
        "assert f([2, 9, 4]) == [9, 4, 2]",
        "assert f([5, 3, 8, 1]) == [8, 5, 3, 1]",
    ]
    # degenerate: inputs the frozen answerer already gets right earn no hardness
    easy = oracle.score(["```python\nassert f([]) == [9]\nassert f([1]) == []\n```"], ["p"])[0]
    assert easy.validity == 1.0 and easy.hardness == 0.0 and easy.reward < scored.reward
