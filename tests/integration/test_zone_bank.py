"""The zone validation writes for the next answerer phase, in the real sandbox: it scores the
frozen answerer's samples on the tests the answerer's reward will see, the bank's included, so a
problem whose samples all pass the given tests and split on a banked test is drawn first
(steps.screen_pool with grpo.skip_flat_problems would otherwise hold it back as flat)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.config import load_config
from sparring.phases.validate import validate_tests
from sparring.problems import Problem, write_jsonl

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

FIRST = Problem(
    id="first-or-99",
    description="Return the first value of values, or 99 if values is empty.",
    function_signature="def first(values: list[int]) -> int:",
    baseline_tests=[
        "assert first([4, 5]) == 4",
        "assert first([7]) == 7",
        "assert first([0, 1]) == 0",
    ],
    reference_solution="def first(values):\n    return values[0] if values else 99\n",
)
GUARDED = "def first(values):\n    return values[0] if values else 99\n"
UNGUARDED = "def first(values):\n    return values[0]\n"


def _zone(tmp_path: Path, *sets: str) -> dict[str, float]:
    cfg = load_config(ROOT / "configs/smoke.yaml", ["steps.frozen_samples=4", *sets])
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl([FIRST], data / "train.jsonl")
    (tmp_path / "tests.jsonl").write_text(
        json.dumps({"problem_id": FIRST.id, "tests": ["assert first([]) == 99"], "round": 1}) + "\n"
    )
    frozen = {"problem_id": FIRST.id, "solutions": [GUARDED, UNGUARDED, UNGUARDED, GUARDED]}
    (tmp_path / "frozen.jsonl").write_text(json.dumps(frozen) + "\n")
    (tmp_path / "bank_in.jsonl").write_text("")
    out = tmp_path / "out"
    out.mkdir()
    metrics = validate_tests(
        cfg, 1, str(data), str(tmp_path / "tests.jsonl"), str(tmp_path / "frozen.jsonl"),
        str(tmp_path / "bank_in.jsonl"), str(out / "bank.jsonl"),
    )  # fmt: skip
    assert metrics["new_tests"] == 1.0  # the empty case is banked: it splits the samples
    return json.loads((out / "zone.json").read_text())[FIRST.id]


def test_a_problem_the_bank_splits_is_in_the_zone(tmp_path):
    zone = _zone(tmp_path, "rewards.answerer_bank=true")
    assert zone["n"] == 4 and zone["spread"] > 0.0  # broken (given tests only): 0.0


def test_without_the_bank_in_the_reward_the_zone_is_the_given_tests(tmp_path):
    zone = _zone(tmp_path, "rewards.answerer_bank=false")
    assert zone == {"n": 4.0, "mean": 1.0, "spread": 0.0}
