"""What the bank covers and how many tests a problem holds (issue 73, items 3 and 7), through the
validate phase in the real sandbox on planted problems, tests and frozen answers: the cap
(`steps.bank_per_problem`) banks a problem's first k valid tests in the order written, a banked
row names the frozen answers it caught that the given tests pass, and the coverage and room
metrics equal counts made by hand. The fuzz arm's k is the cap's (the config check)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sparring.config import ConfigError, from_dict
from sparring.phases.validate import VALIDATION_FILE, validate_into
from sparring.problems import Problem, write_jsonl

ADD = Problem(
    id="add",
    description="Add two numbers.",
    function_signature="def add(a, b):",
    baseline_tests=["assert add(1, 2) == 3"],
    reference_solution="def add(a, b):\n    return a + b\n",
)
# valid, distinct, no trivial solution passes any (none is 0, 1, -1 or an argument echoed)
ADD_TESTS = [
    "assert add(20, 22) == 42",
    "assert add(5, 9) == 14",
    "assert add(-3, 10) == 7",
    "assert add(100, 1) == 101",
]
SUBTRACTS = "def add(a, b):\n    return a - b\n"  # fails the given test: every new test breaks it

FIRST = Problem(
    id="first",
    description="Return the first element of xs, or 99 if xs is empty.",
    function_signature="def first(xs: list[int]) -> int:",
    baseline_tests=["assert first([4, 5]) == 4"],
    reference_solution="def first(xs: list[int]) -> int:\n    return xs[0] if xs else 99\n",
    withheld_tests=["assert first([]) == 99"],
)
# index 0 did not parse; 1 passes the given test and fails the withheld one (room); 2 fails the
# given test; 3 is right
FIRST_ANSWERS = [
    "",
    "def first(xs):\n    return xs[0]\n",
    "def first(xs):\n    return xs[1]\n",
    FIRST.reference_solution,
]
EMPTY = "assert first([]) == 99"  # breaks answers 1 and 2; the given test passes only 1
SECOND = "assert first([7, 1]) == 7"  # breaks answer 2 only, which the given test fails


def _validate(tmp_path, problems, generated, frozen, bank=(), **steps):
    """validate_into on planted generated tests (problem id -> tests), frozen answers (problem
    id -> solutions) and a planted bank_in: the banked rows and the metrics."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    write_jsonl(problems, data / "train.jsonl")
    (data / "bank.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bank))
    lines = [{"problem_id": pid, "tests": t, "round": 1} for pid, t in generated.items()]
    (tmp_path / "tests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    sols = [{"problem_id": pid, "solutions": s} for pid, s in frozen.items()]
    (tmp_path / "frozen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sols))
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    cfg = from_dict({"sandbox": {"workers": 2}, "steps": steps})
    metrics = validate_into(
        cfg, 1, str(data), str(tmp_path / "tests.jsonl"), str(tmp_path / "frozen.jsonl"),
        str(data), str(out),
    )  # fmt: skip
    assert json.loads((out / VALIDATION_FILE).read_text()) == metrics
    rows = [json.loads(x) for x in (out / "bank.jsonl").read_text().splitlines()]
    return rows, metrics


def test_the_cap_banks_the_first_k_valid_tests_in_the_order_written(tmp_path):
    """k + 2 valid tests for one problem: k banked, the first k as written, the same twice;
    without the cap all of them (today's behaviour). Break check: without `bank.full`, 4 bank."""
    k = 2
    frozen = {"add": [SUBTRACTS]}
    rows, metrics = _validate(tmp_path, [ADD], {"add": ADD_TESTS}, frozen, bank_per_problem=k)
    assert [r["test"] for r in rows] == ADD_TESTS[:k]
    assert metrics["new_tests"] == k and metrics["over_cap"] == len(ADD_TESTS) - k
    again, _ = _validate(tmp_path, [ADD], {"add": ADD_TESTS}, frozen, bank_per_problem=k)
    assert again == rows  # deterministic
    uncapped, metrics = _validate(tmp_path, [ADD], {"add": ADD_TESTS}, frozen)
    assert [r["test"] for r in uncapped] == ADD_TESTS and metrics["over_cap"] == 0


def test_the_cap_counts_the_tests_the_bank_holds_already(tmp_path):
    """A problem holding one banked test takes k - 1 more; another problem's tests do not count."""
    held = {"problem_id": "add", "test": "assert add(7, 7) == 14", "round": 0, "breaks": 1}
    other = {"problem_id": "first", "test": SECOND, "round": 0, "breaks": 0}
    rows, metrics = _validate(
        tmp_path, [ADD, FIRST], {"add": ADD_TESTS}, {"add": [SUBTRACTS]}, [held, other],
        bank_per_problem=3,
    )  # fmt: skip
    assert [r["test"] for r in rows if r["problem_id"] == "add"] == [held["test"], *ADD_TESTS[:2]]
    assert metrics["new_tests"] == 2 and metrics["bank_size"] == 4


def test_a_banked_row_names_the_answers_it_caught_that_the_given_tests_pass(tmp_path):
    """EMPTY breaks answers 1 and 2 (indices into the frozen row, the unparsed 0 counted); the
    given test passes 1 only: caught [1]. SECOND breaks only 2, which the given test fails: no
    `caught`. Break check: filtering by the given tests' verdicts removed, EMPTY names [1, 2];
    the frozen row's indices replaced by the parsed answers', [0]."""
    rows, _ = _validate(tmp_path, [FIRST], {"first": [EMPTY, SECOND]}, {"first": FIRST_ANSWERS})
    by_test = {r["test"]: r for r in rows}
    assert by_test[EMPTY]["caught"] == [1] and by_test[EMPTY]["breaks"] == 2
    assert "caught" not in by_test[SECOND] and by_test[SECOND]["breaks"] == 1


def test_coverage_and_room_by_hand(tmp_path):
    """Three training problems. `first` withholds a test its answer 1 fails after passing the
    given test (room), and banks EMPTY, which fails that answer: room caught. `add` withholds
    one its answer fails after passing the given test (room), and banks a test that answer
    passes (it fails SUBTRACTS, which the given test fails too): room not caught. `mul`
    withholds nothing and banks nothing. A planted row of a problem no longer trained is not
    counted. By hand: coverage 2/3, per covered problem max 2 (first) and mean 1.5, room
    measured on 2, room on 2, caught on 1 of them."""
    add = replace(ADD, withheld_tests=["assert add(-1, -1) == -2"])
    times = "def mul(a, b):\n    return a * b\n"
    mul = Problem("mul", "Multiply.", "def mul(a, b):", ["assert mul(2, 3) == 6"], times)
    absolute = "def add(a, b):\n    return abs(a) + abs(b)\n"  # passes add(1, 2) and 20 + 22
    gone = {"problem_id": "gone", "test": "assert gone() == 1", "round": 0, "breaks": 0}
    rows, m = _validate(
        tmp_path, [FIRST, add, mul], {"first": [EMPTY, SECOND], "add": ADD_TESTS[:1]},
        {"first": FIRST_ANSWERS, "add": [absolute, SUBTRACTS], "mul": [times]},
        [gone],
    )  # fmt: skip
    assert [r["problem_id"] for r in rows] == ["gone", "first", "first", "add"]
    got = {k: m[k] for k in m if k.startswith("bank_") and k != "bank_size"}
    assert got == {
        "bank_coverage": 2 / 3,
        "bank_tests_per_covered_max": 2.0,
        "bank_tests_per_covered_mean": 1.5,
        "bank_room_measured": 2.0,
        "bank_room_problems": 2.0,
        "bank_room_caught": 0.5,
    }, got


def test_no_room_measure_without_frozen_answers(tmp_path):
    """The fuzz arm samples no answerer: coverage is reported, the room measure is not."""
    _, m = _validate(tmp_path, [FIRST], {"first": [EMPTY]}, {})
    assert m["bank_coverage"] == 1.0 and m["bank_tests_per_covered_max"] == 1.0
    assert not any(k.startswith("bank_room") for k in m)


def test_the_fuzz_arm_writes_the_caps_k():
    """With a cap, generator_mode fuzz must write k tests a problem: steps.fuzz_tests equal to
    steps.bank_per_problem, else the config is refused naming the field and the fix."""
    with pytest.raises(ConfigError, match=r"steps\.fuzz_tests: 3 must equal .*fuzz_tests: 5"):
        from_dict({"generator_mode": "fuzz", "steps": {"bank_per_problem": 5}})
    cfg = from_dict({"generator_mode": "fuzz", "steps": {"bank_per_problem": 5, "fuzz_tests": 5}})
    assert cfg.steps.fuzz_tests == cfg.steps.bank_per_problem == 5
    # the learned generator's arm has no fuzz_tests to match; no cap leaves fuzz as it was
    assert from_dict({"steps": {"bank_per_problem": 5}}).steps.bank_per_problem == 5
    assert from_dict({"generator_mode": "fuzz"}).steps.bank_per_problem == 0
