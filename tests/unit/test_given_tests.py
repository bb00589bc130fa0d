"""Sparse given tests (data.given_tests): what a training reward sees of a problem's tests,
and the false positives the withheld ones measure."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparring.config import from_dict
from sparring.problems import Problem, compute_trivial_passes, problem_from_dict
from sparring.problems.families import SPECS, generate
from sparring.problems.given_tests import (
    EDGE_TAG,
    edge_indices,
    edge_tag,
    given_view,
    typical_first,
)
from sparring.rewards import code_duel
from sparring.rewards.answerer_rows import answerer_rows
from sparring.sandbox import Sandbox
from sparring.sandbox.limits import SandboxLimits


def test_given_tests_are_typical_first_and_the_rest_withheld():
    problems = generate(3, 2, levels=[0], families=list(SPECS))
    assert problems
    for p in problems:
        edges = edge_indices(p)
        assert edges, f"{p.id}: a family instance marks its edge tests"
        view = given_view(p, 3)
        typical = len(p.baseline_tests) - len(edges)
        assert len(view.baseline_tests) == 3
        assert sorted(view.baseline_tests + view.withheld_tests) == sorted(p.baseline_tests)
        if typical >= 3:  # no edge case among the given tests while typical ones remain
            assert not {p.baseline_tests[i] for i in edges} & set(view.baseline_tests), p.id
        assert view.trivial_passes == {}  # none known before: none re-indexed
        assert sum(t.startswith(EDGE_TAG) for t in view.tags) == 1
    # a K above the tests keeps every test, typical first: the prompt a sparse arm shows
    p = problems[0]
    dense = given_view(p, 100)
    assert dense.baseline_tests == typical_first(p) and dense.withheld_tests == []
    assert dense.baseline_tests[:2] == given_view(p, 3).baseline_tests[:2]


def test_a_problem_file_without_edge_marks_keeps_its_order():
    tests = [f"assert f({i}) == {i}" for i in range(5)]
    p = Problem("a", "d", "def f(x):", tests, "def f(x):\n    return x\n")
    assert given_view(p, 2).baseline_tests == p.baseline_tests[:2]
    assert given_view(p, 2).withheld_tests == p.baseline_tests[2:]
    with pytest.raises(ValueError, match="k must be >= 1"):
        given_view(p, 0)
    # withheld tests survive the jsonl round trip; a problem without them writes no field
    back = problem_from_dict(given_view(p, 2).to_dict(), "x")
    assert back.withheld_tests == p.baseline_tests[2:]
    assert "withheld_tests" not in p.to_dict()


SUM = Problem(
    id="sum",
    description="Return the sum of the list.",
    function_signature="def total(xs):",
    baseline_tests=["assert total([1, 2]) == 3", "assert total([]) == 0"],
    reference_solution="def total(xs):\n    return sum(xs)\n",
)
FIRST_PLUS_LAST = "```python\ndef total(xs):\n    return xs[0] + xs[-1]\n```"
RIGHT = "```python\ndef total(xs):\n    return sum(xs)\n```"
WRONG = "```python\ndef total(xs):\n    return 7\n```"


@pytest.fixture(scope="module")
def box():
    with Sandbox(SandboxLimits(timeout_s=5.0, workers=2)) as sb:
        yield sb


def _rewards(box, problem: Problem, texts: list[str]):
    rows = answerer_rows([problem], {}, ["code"]) * len(texts)
    columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
    fn = code_duel.AnswererRewardFn(box, from_dict({}).rewards)
    logged: dict[str, float] = {}
    out = fn(
        prompts=[r["prompt"] for r in rows],
        completions=[[{"role": "assistant", "content": t}] for t in texts],
        log_metric=logged.__setitem__,
        **columns,
    )
    return out, logged


def test_the_reward_never_sees_a_withheld_test_and_the_false_positive_is_counted(box):
    """An answer that passes the given test and fails the withheld edge case earns what it
    earns on a problem that has no such test: full credit; the withheld test only shows up
    as a false positive."""
    sparse = given_view(SUM, 1)
    assert sparse.withheld_tests == ["assert total([]) == 0"]
    only_given = Problem(**{**SUM.__dict__, "baseline_tests": ["assert total([1, 2]) == 3"]})
    texts = [FIRST_PLUS_LAST, RIGHT, WRONG]
    out, logged = _rewards(box, sparse, texts)
    plain, plain_logged = _rewards(box, only_given, texts)
    assert out == plain
    assert out[0] == out[1] == 1.0  # the edge case it fails was withheld
    assert logged["sparring/false_positive_rate"] == pytest.approx(1 / 3)
    assert logged["sparring/false_positive_share_of_passes"] == pytest.approx(1 / 2)
    assert "sparring/false_positive_rate" not in plain_logged  # nothing withheld: not measured
    full, _ = _rewards(box, SUM, texts)
    assert full[0] < 1.0  # with every test given, the edge case costs it


def test_materialize_gives_training_problems_k_tests_and_held_out_problems_all(tmp_path):
    from sparring.phases.materialize import materialize
    from sparring.problems import read_jsonl

    cfg = from_dict({
        "data": {"train": ["families"], "given_tests": 3, "humaneval_limit": 1,
                 "families": {"families": ["list_stat", "int_arith", "list_index"], "levels": [0],
                              "per_family": 2, "heldout_per_family": 2}},
    })  # fmt: skip
    metrics = materialize(cfg, str(tmp_path))
    train = read_jsonl(tmp_path / "train.jsonl")
    val = read_jsonl(tmp_path / "val.jsonl")
    assert train and val
    assert all(len(p.baseline_tests) == 3 and p.withheld_tests for p in train)
    assert all(len(p.baseline_tests) >= 8 and not p.withheld_tests for p in val)
    assert metrics["tests_withheld"] == sum(len(p.withheld_tests) for p in train)
    for p in train:  # the trivial solutions were judged on the given tests, not the old list
        assert all(i < 3 for idx in p.trivial_passes.values() for i in idx), p.id
    # a list_index edge case expects None for a short list: `return None` passes it, so it
    # earns no credit anywhere and is not withheld
    assert any("list_index" in p.id for p in train)
    assert not [t for p in train for t in p.withheld_tests if t.endswith("== None")]


def test_each_answer_is_flagged_when_it_passes_the_given_tests_and_fails_a_withheld_one(box):
    """The per-answer flags calibration reads: (passes what the reward saw, false positive);
    None where nothing is withheld."""
    sparse = given_view(SUM, 1)
    texts = [FIRST_PLUS_LAST, RIGHT, WRONG, FIRST_PLUS_LAST]
    flags = code_duel.false_positive_flags(
        texts,
        [sparse.baseline_tests] * 3 + [SUM.baseline_tests],
        [sparse.withheld_tests] * 3 + [[]],
        ["total"] * 4,
        box,
    )
    assert flags == [(True, True), (True, False), (False, False), None]


def test_only_tests_that_could_earn_credit_are_withheld(box):
    """A withheld test that trivial code passes (`total([]) == 0`: `return 0` passes it) carries
    no credit in any honest reward, so it is not withheld and counts no false positive; an edge
    case no trivial solution passes (`-5` for the empty list) is."""
    largest = Problem(
        id="largest",
        description="Return the largest element of xs, or -5 if xs is empty.",
        function_signature="def largest(xs):",
        baseline_tests=["assert largest([3, 1]) == 3", "assert largest([]) == -5"],
        reference_solution="def largest(xs):\n    return max(xs) if xs else -5\n",
    )
    known = compute_trivial_passes([SUM, largest], box)
    assert given_view(known[0], 1).withheld_tests == []
    assert given_view(known[1], 1).withheld_tests == ["assert largest([]) == -5"]
    # without a trivial record every test beyond the K is withheld
    assert given_view(SUM, 1).withheld_tests == ["assert total([]) == 0"]
    # the trivial record is re-indexed to the given tests: the edge case `return 0` passes moves
    # from first to last when typical tests go first, as a run on the given tests finds it
    edge_first = replace(
        SUM,
        baseline_tests=["assert total([]) == 0", "assert total([1, 2]) == 3",
                        "assert total([4, 4]) == 8"],
        tags=[edge_tag([0])],
    )  # fmt: skip
    view = given_view(compute_trivial_passes([edge_first], box)[0], 3)
    assert view.baseline_tests[-1] == "assert total([]) == 0"
    fresh = compute_trivial_passes([replace(view, trivial_passes={})], box)[0]
    assert view.trivial_passes == fresh.trivial_passes
    assert view.trivial_passes["const_0"] == [2]
