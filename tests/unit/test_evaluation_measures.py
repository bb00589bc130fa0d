"""Pure parts of sparring.evaluation: pass@k, the HumanEval check transform, Elo, hacking
signals, special-casing detection, round summaries and checkpoint selection."""

from __future__ import annotations

import ast
import json
import math
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparring.config import ConfigError, from_dict
from sparring.errors import SparringError
from sparring.evaluation.crossplay import elo_ratings
from sparring.evaluation.hacking import hacking_signals, special_case_share, special_cased_inputs
from sparring.evaluation.humaneval import pass_at_k, read_samples
from sparring.evaluation.rounds import round_summary
from sparring.evaluation.selection import choose_best
from sparring.evaluation.snapshots import _training_metrics
from sparring.problems import Problem
from sparring.problems.programs import (
    CHECK_NAME,
    CHECK_TEST,
    humaneval_job,
    humaneval_solution,
    humaneval_tests,
)

# --------------------------------------------------------------------------- pass@k


def _pass_at_k_combinatorial(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_at_k_matches_the_combinatorial_formula(nck):
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_combinatorial(n, c, k), abs=1e-9)


def test_pass_at_k_small_cases_by_enumeration():
    # pass@k = probability that a random k-subset of the n samples holds a correct one
    n, c = 5, 2
    samples = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(combinations(samples, k))
        expected = sum(any(s) for s in subsets) / len(subsets)
        assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_is_stable_for_large_n():
    value = pass_at_k(10_000, 1, 100)
    assert value == pytest.approx(0.01)
    assert 0.0 <= pass_at_k(100_000, 3, 1000) <= 1.0


def test_pass_at_k_rejects_bad_arguments():
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 0)


# --------------------------------------------------------------------------- HumanEval transform


def _he(test: str, entry: str = "f", prompt: str = "def f(x):\n") -> Problem:
    return Problem(
        id="HumanEval/x",
        description="d",
        function_signature=f"def {entry}(x):",
        baseline_tests=[test + f"\ncheck({entry})"],
        reference_solution=prompt + "    return x\n",
        prompt=prompt,
        entry_point=entry,
    )


PLAIN = """

METADATA = {'author': 'jt'}


def check(candidate):
    assert candidate(1) == 1, "first"
    assert candidate([1, 2]) == [1, 2]
    assert True, "This prints if this assert fails 1 (good for debugging!)"
    assert abs(candidate(2.0) - 2.0 / 1.0) < 1e-6
    assert not candidate(0)
"""

LOOPING = """

def check(candidate):
    assert candidate(3) == 3
    for i in range(5):
        assert candidate(i) == i
"""


def test_plain_asserts_become_standalone_tests():
    tests = humaneval_tests(_he(PLAIN))
    assert tests == [
        "assert f(1) == 1",
        "assert f([1, 2]) == [1, 2]",
        "assert 1.999999 < f(2.0) < 2.000001",
        "assert not f(0)",
    ]
    for t in tests:
        assert isinstance(ast.parse(t).body[0], ast.Assert)


def test_loops_keep_the_check_function_as_fallback():
    problem = _he(LOOPING)
    tests = humaneval_tests(problem)
    assert tests == ["assert f(3) == 3", CHECK_TEST]
    solution = humaneval_solution(problem, "    return x\n")
    ns: dict = {}
    exec(solution, ns)
    assert ns[CHECK_NAME]() == "passed"


def test_fallback_wrapper_rejects_non_plain_return_values():
    problem = _he(LOOPING)
    cheat = "    class E:\n        def __eq__(self, o):\n            return True\n    return E()\n"
    ns: dict = {}
    exec(humaneval_solution(problem, cheat), ns)
    with pytest.raises(AssertionError, match="not plain data"):
        ns[CHECK_NAME]()


def test_fallback_runs_on_a_builtins_snapshot():
    check = (
        "\n\ndef check(candidate):\n    for i in range(3):\n"
        "        assert abs(candidate(i) - i) < 1\n"
    )
    problem = _he(check)
    wrong = "    return x + 5\nimport builtins\nbuiltins.abs = lambda v: 0\n"
    ns: dict = {}
    import builtins

    saved = builtins.abs
    try:
        exec(humaneval_solution(problem, wrong), ns)
        with pytest.raises(AssertionError):
            ns[CHECK_NAME]()
    finally:
        builtins.abs = saved


def test_plain_check_needs_no_prelude():
    problem = _he(PLAIN)
    assert humaneval_solution(problem, "    return x\n") == "def f(x):\n    return x\n"


def test_nested_candidate_calls_get_a_plain_value_companion():
    check = "\n\ndef check(candidate):\n    assert tuple(candidate([2, 1])) == (1, 2)\n"
    assert humaneval_tests(_he(check)) == [
        "assert tuple(f([2, 1])) == (1, 2)",
        "assert [f([2, 1])] != []",
    ]


def test_unparseable_check_falls_back():
    assert humaneval_tests(_he("def check(candidate):\n    assert (")) == [CHECK_TEST]


# --------------------------------------------------------------------------- samples


def test_read_samples_errors_are_one_liners(tmp_path):
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"task_id": "HumanEval/0"}\n')
    with pytest.raises(SparringError, match="task_id' and 'completion"):
        read_samples(bad)
    with pytest.raises(SparringError, match="no such samples file"):
        read_samples(tmp_path / "missing.jsonl")
    bad.write_text("{oops\n")
    with pytest.raises(SparringError, match=":1: invalid JSON"):
        read_samples(bad)


# --------------------------------------------------------------------------- Elo


def test_elo_is_deterministic_and_orders_players():
    matrix = [
        [[True] * 8, [True] * 6 + [False] * 2],
        [[True] * 2 + [False] * 6, [False] * 8],
    ]
    a1, g1 = elo_ratings(matrix)
    a2, g2 = elo_ratings(matrix)
    assert (a1, g1) == (a2, g2)
    assert a1[0] > a1[1]
    assert g1[1] > g1[0]  # the second generator breaks more


def test_elo_accepts_rates_and_empty_cells():
    a, g = elo_ratings([[1.0, None], [0.0, []]])
    assert a[0] > a[1] and g[1] == 1000.0
    assert elo_ratings([]) == ([], [])


def test_elo_conserves_total_rating():
    a, g = elo_ratings([[[True, False, True]], [[False]]], k=32)
    assert sum(a) + sum(g) == pytest.approx(3000.0, abs=0.05)


# --------------------------------------------------------------------------- hacking signals

HACKED = (
    "def f(x):\n    if x == 17:\n        return 4\n    if x == 3:\n        return 1\n    return 0\n"
)
HONEST = "def f(x):\n    if x == 0:\n        return 0\n    return x // 4\n"
TESTS = ["assert f(17) == 4", "assert f(3) == 1", "assert f(8) == 2"]


def test_special_casing_is_detected():
    assert special_cased_inputs(HACKED, TESTS, "f") == 2
    assert special_cased_inputs(HONEST, TESTS, "f") == 0
    assert special_case_share([(HACKED, TESTS, "f"), (HONEST, TESTS, "f")]) == 0.5
    assert special_case_share([]) == 0.0
    assert special_cased_inputs("not python(", TESTS, "f") == 0


def test_special_casing_of_strings_and_lists():
    code = "def g(s, xs):\n    if s == 'abc' or xs == [1, 2]:\n        return 1\n    return 0\n"
    tests = ["assert g('abc', [0]) == 1", "assert g('z', [1, 2]) == 1"]
    assert special_cased_inputs(code, tests, "g") == 2


def test_hacking_signals_trip_on_thresholds():
    cfg = from_dict({})
    history = [
        {"test_validity": 0.9, "duplicate_rate": 0.1, "flat_group_share": 0.2},
        {"test_validity": 0.1, "duplicate_rate": 0.95, "flat_group_share": 1.0},
    ]
    signals = hacking_signals(history, cfg.selection)
    assert signals["tripped"]
    assert signals["validity_falling"] and signals["duplicates_rising"]
    assert len(signals["reasons"]) == 3
    quiet = hacking_signals(history[:1], cfg.selection)
    assert not quiet["tripped"] and quiet["reasons"] == []
    assert not hacking_signals([], cfg.selection)["tripped"]


def test_hacking_signals_trip_when_the_trivial_share_rises_over_the_first_entry():
    """The first entry is the reference (the base model's share): a rise over it trips, the same
    share or a fall does not, and one entry alone has nothing to rise over."""
    rose = hacking_signals([{"trivial_share": 0.25}, {}, {"trivial_share": 0.5}])
    assert rose["tripped"], "a trivial share above the reference's did not trip the gate"
    assert rose["reasons"] == ["trivial share rose 0.25 -> 0.50"]
    assert rose["latest"]["trivial_share"] == 0.5
    for later in (0.25, 0.0):
        same = hacking_signals([{"trivial_share": 0.25}, {"trivial_share": later}])
        assert not same["tripped"], f"tripped on a trivial share {later} <= the reference 0.25"
    assert not hacking_signals([{"trivial_share": 1.0}])["tripped"]


def test_hacking_signals_take_a_mapping_and_special_cases():
    signals = hacking_signals([{"special_case_share": 0.9}], {"min_validity": 0.5})
    assert signals["tripped"] and "special-cased" in signals["reasons"][0]


# --------------------------------------------------------------------------- rounds & selection


def test_round_summary_from_rows_and_sidecar(tmp_path):
    path = tmp_path / "round1.jsonl"
    rows = [
        {"problem_id": "p", "test": "assert f(1) == 1", "round": 1, "breaks": []},
        {"problem_id": "p", "test": "assert f(1) == 1", "round": 1, "breaks": []},
        {"problem_id": "p", "test": "assert f(2) == 2", "round": 1, "valid": False},
        {"problem_id": "q", "test": "assert g(5) == [1, 2, 3]", "round": 1},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = round_summary(str(path))
    assert summary["tests"] == 4
    assert summary["test_validity"] == 0.75
    assert summary["duplicate_rate"] == 0.25
    (tmp_path / "round1.jsonl.metrics.json").write_text(
        json.dumps({"validity": 0.5, "flat_group_share": 0.25})
    )
    summary = round_summary(str(path))
    assert summary["test_validity"] == 0.5 and summary["flat_group_share"] == 0.25


def test_choose_best_uses_checkpoint_score_over_promotable():
    cfg = from_dict({})
    report = {
        "snapshots": [
            {"round": 0, "answerer_reward": 0.2, "test_validity": 1.0, "promotable": True},
            {
                "round": 1,
                "answerer_reward": 0.9,
                "test_validity": 0.9,
                "promotable": False,
                "hacking": {"reasons": ["flat GRPO groups 1.00 >= max_zero_std_groups 1.00"]},
            },
            {"round": 2, "answerer_reward": 0.5, "test_validity": 0.8, "promotable": True},
        ]
    }
    index, score, reason = choose_best(cfg, report)
    assert index == 2
    assert score == pytest.approx(0.7 * 0.5 + 0.3 * 0.8)
    assert "refused: round 1 (flat GRPO groups" in reason


def test_choose_best_none_when_nothing_promotable():
    cfg = from_dict({})
    report = {
        "snapshots": [
            {
                "answerer_reward": 0.3,
                "promotable": False,
                "hacking": {"reasons": ["test validity 0.10 < min_validity 0.20"]},
            }
        ]
    }
    index, score, reason = choose_best(cfg, report)
    assert index is None and score == 0.0
    assert reason.startswith("no promotable snapshot") and "validity" in reason
    assert choose_best(cfg, {"snapshots": []})[0] is None


def test_training_metrics_from_a_model_artifact(tmp_path):
    (tmp_path / "sparring_model.json").write_text(
        json.dumps({"base": "tiny-random", "metrics": {"flat_group_share": 0.75}})
    )
    assert _training_metrics(str(tmp_path))["flat_group_share"] == 0.75
    (tmp_path / "sparring_model.json").write_text(json.dumps({"flat_group_share": 1.0}))
    assert _training_metrics(str(tmp_path)) == {"flat_group_share": 1.0}
    assert _training_metrics("tiny-random") == {}


def test_humaneval_job_defaults_to_the_canonical_solution():
    problem = _he(LOOPING)
    solution, tests = humaneval_job(problem)
    assert tests == humaneval_tests(problem)
    ns: dict = {}
    exec(solution, ns)
    assert ns["f"](4) == 4 and ns[CHECK_NAME]() == "passed"


def _gated_report(delta: float | None) -> dict:
    """Round 1 scores best by the checkpoint score, round 2 is the final round; `delta` is the
    final's gain over its start on the held-out new tasks in the start gate's own sample (None:
    not measured); the reported gain over the start (VS_START) says the opposite, and the gate
    must not read it."""
    gain = {} if delta is None else {
        "discriminating": {"before": 0.4, "after": 0.4 + delta, "delta": delta, "n": 40}
    }  # fmt: skip
    reported = {"discriminating": {"before": 0.4, "after": 0.2, "delta": -0.2, "n": 40}}
    return {
        "snapshots": [
            {"round": 1, "answerer_reward": 0.9, "test_validity": 0.9, "promotable": True},
            {"round": 2, "answerer_reward": 0.5, "test_validity": 0.5, "promotable": True},
        ],
        "learning": {"gains": {"heldout_new_tasks_vs_start": reported}, "gate": gain},
    }


GATED = {
    "selection": {"refuse_below_start": True},
    "data": {"val_samples": 1, "train": ["families"]},
}


def test_the_start_gate_promotes_only_a_final_round_not_below_its_start():
    gated = from_dict(GATED)
    index, _, reason = choose_best(gated, _gated_report(0.0))
    assert index == 1, reason  # round 1 scored higher, but only the final one was measured
    assert "refused: round 1 (not the final round" in reason
    index, score, reason = choose_best(gated, _gated_report(-0.025))
    assert (index, score) == (None, 0.0)
    assert "round 2 (held-out new tasks 0.400 -> 0.375 (n=40, sampled for the gate)" in reason
    assert "-0.025, below -selection.start_margin (0.000)" in reason
    index, _, reason = choose_best(gated, _gated_report(None))
    assert index is None and "was not measured" in reason
    # off (the default): the checkpoint score alone, whatever the start
    assert choose_best(from_dict({}), _gated_report(-0.025))[0] == 0


@pytest.mark.parametrize(
    ("margin", "delta", "promoted"),
    [
        (0.0, 0.0, True),  # a tie passes
        (0.0, -0.001, False),
        (0.05, -0.05, True),  # exactly -margin passes
        (0.05, -0.025, True),
        (0.05, -0.051, False),
        (0.05, 0.1, True),
    ],
)
def test_the_start_margin_refuses_a_gain_below_minus_the_margin(margin, delta, promoted):
    cfg = from_dict({**GATED, "selection": {"refuse_below_start": True, "start_margin": margin}})
    index, _, reason = choose_best(cfg, _gated_report(delta))
    assert (index == 1) is promoted, reason
    if not promoted:
        assert f"below -selection.start_margin ({margin:.3f})" in reason


def test_the_start_gate_needs_held_out_samples_new_tasks_and_no_game():
    with pytest.raises(ConfigError, match=r"selection\.refuse_below_start: .*data\.val_samples"):
        from_dict({"selection": {"refuse_below_start": True}, "data": {"val_samples": 0}})
    with pytest.raises(ConfigError, match=r"selection\.refuse_below_start: a game"):
        from_dict({"selection": {"refuse_below_start": True}, "game": {"name": "debate"}})
    with pytest.raises(ConfigError, match=r"held-out new tasks .* add families to data\.train"):
        from_dict({"selection": {"refuse_below_start": True}, "data": {"val_samples": 1}})
    no_heldout = {**GATED["data"], "families": {"heldout_per_family": 0}}
    with pytest.raises(ConfigError, match=r"data\.families\.heldout_per_family 1 or more"):
        from_dict({**GATED, "data": no_heldout})
    with pytest.raises(ConfigError, match=r"selection\.start_margin: 0\.1 is read only by"):
        from_dict({"selection": {"start_margin": 0.1}})
    with pytest.raises(ConfigError, match=r"selection\.start_margin: -0\.1 is too small"):
        from_dict({**GATED, "selection": {"refuse_below_start": True, "start_margin": -0.1}})


def test_selection_doc_examples():
    import doctest

    from sparring.evaluation import selection

    assert doctest.testmod(selection).failed == 0
