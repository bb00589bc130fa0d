"""The validate phase on tests chosen to exercise each of its refusals, in the real sandbox: one
test of each kind a generator writes (valid and discriminating, invalid, valid but passed by a
trivial solution), checked test by test in the bank and number by number in the metrics."""

from __future__ import annotations

import json

from sparring.config import from_dict
from sparring.phases.validate import VALIDATION_FILE, validate_into
from sparring.problems import Problem, write_jsonl
from sparring.rewards.bank import reference_digest, task_space

ADD = Problem(
    id="add",
    description="Add two numbers.",
    function_signature="def add(a, b):",
    baseline_tests=["assert add(1, 2) == 3"],
    reference_solution="def add(a, b):\n    return a + b\n",
)
GOOD = "assert add(20, 22) == 42"  # the reference passes it, no trivial solution does
# The reference fails it (15 > 15 is false), and so does every trivial solution (0, 1, an echo
# of 7 or 8, ...): only the validity check keeps it out of the bank. Not an equality, so
# rewards.reference_expected does not rewrite it into a valid one.
INVALID = "assert add(7, 8) > 15"
TRIVIAL = "assert add(0, 0) == 0"  # valid, but `return 0` passes it: no credit, not banked


def _validate(tmp_path, problem: Problem, tests: list[str], frozen: str) -> tuple[list, dict]:
    """validate_into on one problem's generated tests against one frozen solution: the banked
    rows and the metrics."""
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl([problem], data / "train.jsonl")
    (data / "bank.jsonl").write_text("")
    generated = tmp_path / "tests.jsonl"
    generated.write_text(json.dumps({"problem_id": problem.id, "tests": tests, "round": 1}) + "\n")
    solutions = tmp_path / "frozen.jsonl"
    solutions.write_text(json.dumps({"problem_id": problem.id, "solutions": [frozen]}) + "\n")
    out = tmp_path / "out"
    cfg = from_dict({"sandbox": {"workers": 2}})
    metrics = validate_into(cfg, 1, str(data), str(generated), str(solutions), str(data), str(out))
    assert json.loads((out / VALIDATION_FILE).read_text()) == metrics
    return [json.loads(x) for x in (out / "bank.jsonl").read_text().splitlines()], metrics


def test_invalid_and_trivially_passed_tests_are_refused_and_not_banked(tmp_path):
    # the frozen answerer subtracts: GOOD breaks it
    banked, metrics = _validate(
        tmp_path, ADD, [GOOD, INVALID, TRIVIAL], "def add(a, b):\n    return a - b\n"
    )
    assert INVALID not in {b["test"] for b in banked}, (
        "an invalid generated test (the reference fails it) was banked"
    )
    assert TRIVIAL not in {b["test"] for b in banked}, "a trivially passed test was banked"
    # with its lineage: the reference it was validated against and the task space it attacks
    lineage = {"reference": reference_digest(ADD.reference_solution), "space": task_space(["add"])}
    assert banked == [{"problem_id": "add", "test": GOOD, "round": 1, "breaks": 1, **lineage}]
    # by hand: 3 candidates, 2 valid (GOOD, TRIVIAL), 1 honest (GOOD), which breaks the one
    # frozen solution
    expected = {
        "candidates": 3.0,
        "validity": 2 / 3,
        "honest_share": 1 / 3,
        "break_rate": 1 / 3,
        "discrimination": 1.0,
        "duplicate_rate": 0.0,
        "new_tests": 1.0,
        "bank_size": 1.0,
        "infra_errors": 0.0,
    }
    got = {k: metrics[k] for k in expected}
    assert got == expected, f"validation metrics: {got} != {expected} (by hand)"


FIRST = Problem(
    id="first",
    description="Return the first element of xs, or 99 if xs is empty.",
    function_signature="def first(xs: list[int]) -> int:",
    baseline_tests=["assert first([4, 5]) == 4", "assert first([]) == 99"],
    reference_solution="def first(xs: list[int]) -> int:\n    return xs[0] if xs else 99\n",
)


def test_a_test_off_the_parameters_types_is_not_banked(tmp_path):
    """`first(None) == 99` passes the reference (its `if xs` takes None for empty) but calls the
    function outside `list[int]`: a correct answer guarding with `len(xs) == 0` fails it."""
    tests = ["assert first([7, 1]) == 7", "assert first(None) == 99", "assert first(0) == 99"]
    # the frozen answer indexes without the guard: every test above breaks it
    rows, metrics = _validate(tmp_path, FIRST, tests, "def first(xs):\n    return xs[1]\n")
    banked = [r["test"] for r in rows]
    assert banked == ["assert first([7, 1]) == 7"], banked
    assert metrics["validity"] == 1 / 3


def test_evaluation_judges_a_round_as_the_validate_phase_did(tmp_path):
    """The promotion gate reads a round's validity from evaluation's re-run of the raw tests:
    the same rule (the reference's expected values, the declared types) gives the same number,
    test by test."""
    from sparring.evaluation.rounds import summarize_round, validate_rows
    from sparring.sandbox.limits import untrusted_limits

    tests = [
        "assert first([7, 1]) == 8",  # a wrong expected value: the reference's is 7
        "assert first(None) == 99",  # off list[int]
        "assert first([3]) > 3",  # fails the reference
        "assert first([]) == 99",
    ]
    _, metrics = _validate(tmp_path, FIRST, tests, "def first(xs):\n    return xs[1]\n")
    raw = [{"problem_id": "first", "test": t, "round": 1} for t in tests]
    cfg = from_dict({})
    judged = validate_rows(raw, {"first": FIRST}, untrusted_limits(cfg))
    assert [r["valid"] for r in judged] == [True, False, False, True]
    assert judged[0]["test"] == "assert first([7, 1]) == 7"
    assert summarize_round(judged)["test_validity"] == metrics["validity"] == 0.5
