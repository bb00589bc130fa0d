"""Choosing among sampled answers by tests (sparring.evaluation.choose): ties score their exact
expectation, a test that fails the reference never chooses, the fallback, the oracle and the
uniform pick, the union of two sources, and re-scoring from rows read back from JSON. Pure:
no sandbox, no model; milliseconds."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from sparring.evaluation import choose as ch
from sparring.sandbox.validation import TestVerdict

OK = {"valid": True, "reason": "ok"}
BAD = {"valid": False, "reason": "fails the reference solution: failed"}


def row(given, right, tests=None, verdicts=None, task="t", meta=None):
    """A task_row; `tests` {source: [(test, valid)]}, `verdicts` {source: per answer, per test}."""
    tests = tests or {}
    entries = {
        s: [{"test": t, **(OK if valid else BAD)} for t, valid in ts] for s, ts in tests.items()
    }
    return ch.task_row(task, given, right, entries, verdicts or {}, meta=meta)


def three_tied_one_right():
    """Three answers pass the given tests and the writer's one test; only answer 1 is right.
    The fuzzer kept no test here (a source with none is still named)."""
    return row(
        [True, True, True],
        [False, True, False],
        {"writer": [("assert f(0) == 0", True)], "fuzz": []},
        {"writer": [[True], [True], [True]], "fuzz": [[], [], []]},
    )


def test_ties_score_the_exact_expectation_not_a_draw(monkeypatch):
    """3 tied answers, 1 right: exactly 1/3 on every call; a draw would give 0 or 1, and the
    random module is made to fail if anything asks it."""

    def no_draw(*args, **kwargs):
        raise AssertionError("a tie was broken by a random draw")

    for name in ("random", "choice", "choices", "randrange", "randint", "shuffle", "sample"):
        monkeypatch.setattr(random, name, no_draw)
    r = three_tied_one_right()
    for _ in range(20):
        c = ch.choose(r, "writer")
        assert c["tied"] == [0, 1, 2]
        assert c["expected_exact"] == "1/3"
        assert c["expected"] == pytest.approx(1 / 3, abs=1e-15)
    scored = ch.score_rows([r, r, r], ["writer"])["groups"]["all"]["rules"]["writer"]
    assert scored["score_exact"] == "1/3" and scored["tied_tasks"] == 3


def test_a_test_that_fails_the_reference_is_not_used_to_choose():
    """Answer 0 is right and passes the one valid test; answer 1 is wrong and passes two tests
    that fail the reference. Counted, they would choose answer 1 (score 0)."""
    r = row(
        [True, True],
        [True, False],
        {
            "writer": [
                ("assert f(1) == 9", False),
                ("assert f(2) == 4", True),
                ("assert f(3) == 9", False),
            ]
        },
        {"writer": [[False, True, False], [True, False, True]]},
    )
    c = ch.choose(r, "writer")
    assert c["tied"] == [0] and c["expected_exact"] == "1/1"
    assert (c["tests_kept"], c["tests_dropped"]) == (1, 2)
    assert c["passes"] == [1, 0]


def test_validity_comes_from_the_sandbox_verdicts_duplicates_included():
    """task_row takes validation's TestVerdict as it is: invalid and duplicate ones are dropped."""
    verdicts = [
        TestVerdict("assert f(1) == 1", True, "ok"),
        TestVerdict("assert f(1)  ==  1", True, "duplicate of test 0", duplicate=True),
        TestVerdict("assert f(2) == 5", False, "fails the reference solution: failed"),
    ]
    r = ch.task_row(
        "t", [True, True], [True, False], {"writer": verdicts},
        {"writer": [[True, True, False], [False, False, True]]},
    )  # fmt: skip
    assert [e["valid"] for e in r["tests"]["writer"]] == [True, False, False]
    c = ch.choose(r, "writer")
    assert (c["tied"], c["tests_kept"], c["tests_dropped"]) == ([0], 1, 2)


def test_no_answer_passes_the_given_tests_falls_back_to_all():
    r = row(
        [False, False, False],
        [False, False, True],
        {"writer": [("assert f(0) == 1", True)]},
        {"writer": [[False], [False], [True]]},
    )
    c = ch.choose(r, "writer")
    assert c["fallback"] is True and c["candidates"] == [0, 1, 2]
    assert c["tied"] == [2] and c["expected"] == 1.0
    u = ch.choose(r, ch.NONE)
    assert u["fallback"] is True and u["tied"] == [0, 1, 2] and u["expected_exact"] == "1/3"
    passing = row([True, False], [False, True])
    assert ch.choose(passing, ch.NONE)["fallback"] is False


def test_oracle_and_the_uniform_pick_among_answers_passing_the_given_tests():
    """Answers 0 and 1 pass the given tests (1 is right); 3 is right but fails a given test:
    the oracle sees it, the uniform pick does not."""
    r = row([True, True, False, False], [False, True, False, True], task="a", meta={"level": 2})
    assert ch.oracle(r) == 1
    u = ch.choose(r, ch.NONE)
    assert (u["candidates"], u["tied"], u["expected_exact"]) == ([0, 1], [0, 1], "1/2")
    none_right = row([True, True], [False, False], task="b", meta={"level": 3})
    assert ch.oracle(none_right) == 0
    groups = ch.score_rows([r, none_right], [], by="level")["groups"]
    assert groups["all"]["oracle"] == 0.5 and groups["all"]["rules"]["none"]["score"] == 0.25
    assert groups["2"]["rules"]["none"]["score_exact"] == "1/2"
    assert groups["3"]["oracle"] == 0.0


def union_row():
    """Answer 0 is right; the writer's test catches 1, the fuzzer's catches 2, and both wrote
    one test the same (in two spellings) that every answer passes."""
    return row(
        [True, True, True],
        [True, False, False],
        {
            "writer": [("assert f([]) == 0", True), ("assert f([1]) == 1", True)],
            "fuzz": [("assert f( [1] )==1", True), ("assert f([2, 2]) == 4", True)],
        },
        {
            "writer": [[True, True], [False, True], [True, True]],
            "fuzz": [[True, True], [True, True], [True, False]],
        },
    )


def test_the_union_of_two_sources_counts_each_test_once():
    r = union_row()
    assert ch.choose(r, "writer")["expected_exact"] == "1/2"  # 0 and 2 tie
    assert ch.choose(r, "fuzz")["expected_exact"] == "1/2"  # 0 and 1 tie
    both = ch.choose(r, "writer+fuzz")
    assert both["tied"] == [0] and both["expected_exact"] == "1/1"
    assert (both["tests_kept"], both["tests_repeated"]) == (3, 1)
    assert both["passes"] == [3, 2, 2]
    with pytest.raises(ValueError, match="bank"):
        ch.choose(r, "writer+bank")


def test_right_answers_the_kept_tests_reject():
    """A valid test that fails a right answer rejects it; a sandbox failure (None) rejects
    nothing and passes nothing; an invalid test rejects nothing."""
    r = row(
        [True, True, True],
        [True, True, False],
        {"bank": [("assert f(5) == 5", True), ("assert f(6) == 0", False)]},
        {"bank": [[False, True], [None, False], [True, True]]},
    )
    assert ch.rejected_right(r, "bank") == (2, 1)
    assert ch.choose(r, "bank")["passes"] == [0, 0, 1]
    rules = ch.score_rows([r], ["bank"])["groups"]["all"]["rules"]
    assert rules["bank"]["right_rejected_share"] == 0.5
    assert rules["none"]["right_rejected_share"] == 0.0


def test_the_pool_a_source_catches_is_the_wrong_answers_passing_the_given_tests():
    """The pool: wrong answers passing the given tests (a right one, or one failing a given
    test, is not in it); caught when a valid kept test fails it; None fails nothing."""
    r = row(
        [True, True, True, False],
        [False, False, True, False],
        {"bank": [("assert f(5) == 5", True), ("assert f(6) == 0", False)]},
        {"bank": [[False, True], [None, False], [True, True], [False, False]]},
    )
    assert ch.caught_wrong(r, "bank") == (2, 1)
    assert ch.caught_wrong(r, "none") == (2, 0)
    rules = ch.score_rows([r], ["bank"])["groups"]["all"]["rules"]
    assert (rules["bank"]["pool"], rules["bank"]["pool_caught"]) == (2, 1)
    assert rules["bank"]["pool_caught_share"] == 0.5


def test_rules_rescore_from_rows_read_back_from_json(tmp_path):
    rows = [
        {**three_tied_one_right(), "meta": {"level": 2}},
        {**union_row(), "task": "u", "meta": {"level": 3}},
    ]
    path = tmp_path / "choices.jsonl"
    path.write_text(ch.rows_jsonl(rows))
    back = ch.read_rows(path)
    assert back == rows
    sources = ["writer", "writer+fuzz"]
    assert ch.score_rows(back, sources, by="level") == ch.score_rows(rows, sources, by="level")
    scored = ch.score_rows(back, sources, by="level")
    json.dumps(scored)  # the report is plain JSON too
    pooled = scored["groups"]["all"]["rules"]
    assert Fraction(pooled["writer"]["score_exact"]) == (Fraction(1, 3) + Fraction(1, 2)) / 2
    assert pooled["writer+fuzz"]["score_exact"] == "2/3"  # (1/3 + 1) / 2
    assert scored["groups"]["3"]["rules"]["writer+fuzz"]["score"] == 1.0


def test_rows_that_do_not_hold_together_are_refused(tmp_path):
    good = three_tied_one_right()
    short = json.loads(json.dumps(good))
    short["answers"][1]["verdicts"]["writer"] = []
    with pytest.raises(ValueError, match=r"task 't': answer 1 .*writer"):
        ch.check_row(short)
    with pytest.raises(ValueError, match="reserved"):
        row([True], [True], {"a+b": [("assert f(0) == 0", True)]}, {"a+b": [[True]]})
    path = tmp_path / "bad.jsonl"
    path.write_text(ch.rows_jsonl([good]) + json.dumps(short) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        ch.read_rows(path)
