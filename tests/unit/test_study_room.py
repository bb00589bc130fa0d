"""What the study of issue 73 needs beyond the 2026-12-02 one, without a model: a measure of one
family level, what the bank covered of the problems the answerer sampled (its LEARN line and
record values), and the final bank a run files with the answers each test alone caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.config.fields import ConfigError
from sparring.evaluation import learning
from sparring.experiments import filed_runs, run_outputs, study, study_runner
from sparring.experiments.study import StudyRun
from sparring.experiments.study_design import load_design
from sparring.problems.families import instance_id, level_of_id
from sparring.rewards.bank import sampled_cover

IDS = [instance_id("int_arith", level, 1, i) for level in (2, 3) for i in range(4)]


def _heldout(final: float, seed: int) -> dict:
    start = {"configured": "m", "model": "m", "base": "m", "weights": "w", "base_weights": "w",
             "champion": None, "seed": 0, "training_seed": seed, "code": "c1"}  # fmt: skip
    # level 3 gains `final`, level 2 nothing: a pooled measure hides which level moved
    pairs = {pid: [0.2, 0.2 + (final if level_of_id(pid) == 3 else 0.0)] for pid in IDS}
    return {"format": 3, "reward": "honest", "measure": "discriminating", "seed": 0,
            "config_digest": "x", "sets": {"new_tasks": pairs}, "tasks": {p: p for p in IDS},
            "start": start, "code": "c1"}  # fmt: skip


def _runs() -> list[StudyRun]:
    return [
        StudyRun(f"study-{arm}-t{seed}", arm, seed, _heldout(gain, seed))
        for arm, gain in (("S", 0.5), ("G", 0.0))
        for seed in (1, 2)
    ]


def test_an_instance_id_names_its_level_and_no_other_problem_has_one():
    assert [level_of_id(pid) for pid in IDS] == [2] * 4 + [3] * 4
    assert level_of_id("fam-int_arith-L2-s1") is None and level_of_id("he-3") is None


def test_a_level_measure_reads_only_that_levels_tasks():
    level3 = study.measure_matrix(_runs(), "new_tasks", "discriminating", ["S", "G"], level=3)
    level2 = study.measure_matrix(_runs(), "new_tasks", "discriminating", ["S", "G"], level=2)
    pooled = study.measure_matrix(_runs(), "new_tasks", "discriminating", ["S", "G"])
    assert len(level3["tasks"]) == len(level2["tasks"]) == 4 and len(pooled["tasks"]) == 8
    assert level3["arms"]["S"]["final"][0] == pytest.approx([0.7] * 4)
    assert level2["arms"]["S"]["final"][0] == pytest.approx([0.2] * 4)
    with pytest.raises(study.MeasureMissing, match="no problem of level 1"):
        study.measure_matrix(_runs(), "new_tasks", "discriminating", ["S", "G"], level=1)


def _design(tmp_path: Path, measure: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nbase: configs/learn.yaml\nseeds: [1, 2]\n"
        "arms:\n  G: {what: given, set: [phase_schedule=answerer]}\n"
        "  S: {what: self-play, set: []}\n"
        "contrasts:\n  - {treatment: S, control: G, rank: primary, question: q}\n"
        f"measures:\n  - {measure}\n"
    )
    return path


def test_a_study_file_names_a_measures_level_and_a_bad_one_is_refused(tmp_path):
    design = load_design(
        _design(tmp_path, "{label: l3, set: new_tasks, measure: strict, level: 3}")
    )
    assert design.measures[0].level == 3
    with pytest.raises(ConfigError, match=r"measures\[0\]\.level.*give a family level"):
        load_design(_design(tmp_path, "{label: l3, set: new_tasks, measure: strict, level: x}"))
    with pytest.raises(ConfigError, match=r"measures\[0\].*level: <0-3>"):
        load_design(_design(tmp_path, "{label: l3, set: new_tasks, measure: strict, lvl: 3}"))


def test_the_report_gives_a_contrast_per_level(tmp_path):
    design = load_design(
        _design(tmp_path, "{label: l3, set: new_tasks, measure: discriminating, level: 3}")
    )
    result = study.analyse(_runs(), design, reps=200, seed=0)
    (contrast,) = result["contrasts"]
    assert contrast["measure"] == "l3" and contrast["delta"] == pytest.approx(0.5)


def test_sampled_cover_counts_the_sampled_problems_only():
    given = {"a": 3, "b": 2, "c": 3}
    bank = {"a": ["t1", "t2", "t3"], "c": ["t1"], "z": ["t1"]}
    out = sampled_cover(["a", "b", "b", "unknown"], given, bank)
    assert out == {"sampled_problems": 2.0, "sampled_bank_coverage": 0.5,
                   "sampled_banked_tests": 1.5, "sampled_reward_tests": 4.0}  # fmt: skip
    assert sampled_cover([], given, bank) == {}


def test_the_bank_cover_line_and_record_values_come_from_the_phases_metrics():
    runs = [
        ("r01-validate-tests", {"bank_coverage": 0.95, "bank_tests_per_covered_max": 3.0,
                                "bank_room_problems": 40.0, "bank_room_caught": 0.25}),
        ("r01-train-answerer", {"useful_group_share": 0.9, "completions_trained": 2000.0,
                                "completions_sampled": 2304.0, "sampled_problems": 120.0,
                                "sampled_bank_coverage": 0.9, "sampled_banked_tests": 2.5,
                                "sampled_reward_tests": 5.0}),
    ]  # fmt: skip
    summary, _, _, trained = learning.from_phase_runs(runs)
    line = learning.bank_cover_line(summary[learning.BANK_COVER])
    assert line == (
        "LEARN bank_cover training=0.950 sampled=0.900 sampled_problems=120 "
        "banked_per_sampled=2.500 reward_tests_per_sampled=5.000 per_covered_max=3 "
        "room_problems=40 room_caught=0.250"
    )
    values = study.run_values(summary, trained)
    assert values["bank_cover_sampled"] == 0.9 and values["completions_trained"] == 2000.0
    assert set(values) <= set(study.VALUES)
    # a run without a bank (G, D) prints no bank_cover line
    summary, *_ = learning.from_phase_runs([("r01-train-answerer", {"useful_group_share": 1.0})])
    assert not summary[learning.BANK_COVER]


def _outputs(root: Path, name: str, stamp: str, rows: list[dict]) -> Path:
    out = root / f"sparring-{name}-{stamp}"
    (out / "validate-tests" / "bank").mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (out / "validate-tests" / "bank" / "bank.jsonl").write_text(text)
    (out / "train-generator").mkdir()
    frozen = [{"problem_id": "p1", "solutions": ["def f(): return 0", "def f(): return 1"]}]
    (out / "train-generator" / "frozen_solutions").write_text(
        "".join(json.dumps(r) + "\n" for r in frozen)
    )
    return out


def test_a_run_files_its_newest_bank_with_the_answers_only_its_tests_caught(tmp_path):
    rows = [
        {"problem_id": "p1", "test": "assert f() == 1", "round": 1, "breaks": 1, "caught": [0]},
        {"problem_id": "p1", "test": "assert f() != 2", "round": 1, "breaks": 0},
    ]
    _outputs(tmp_path, "study-s-t1", "2026-12-01-10-00-00-1", [rows[1]])
    newest = _outputs(tmp_path, "study-s-t1", "2026-12-03-10-00-00-1", rows)
    _outputs(tmp_path, "study-s-t10", "2026-12-04-10-00-00-1", [])  # another run's name
    assert run_outputs.run_outputs(tmp_path, "study-S-t1") == newest
    filed = run_outputs.bank_with_catches(newest)
    assert filed[0]["caught_answers"] == ["def f(): return 0"]
    assert "caught_answers" not in filed[1] and len(filed) == 2
    assert run_outputs.run_outputs(tmp_path, "study-G-t1") is None
    assert filed_runs.BANK in filed_runs.FILED


def test_an_arm_runs_only_its_own_seeds_and_they_must_be_the_studys(tmp_path):
    path = tmp_path / "s.yaml"
    body = (
        "name: s\nbase: configs/learn.yaml\nseeds: [1, 2, 3]\n"
        "arms:\n  G: {what: given, set: [phase_schedule=answerer]}\n"
        "  D: {what: dense, set: [phase_schedule=answerer, data.given_tests=0], seeds: SEEDS}\n"
        "contrasts:\n  - {treatment: D, control: G, rank: primary, question: q}\n"
        "measures:\n  - {label: t, set: new_tasks, measure: strict}\n"
    )
    path.write_text(body.replace("SEEDS", "[1, 2]"))
    design = load_design(path)
    items = study_runner.plan(tmp_path / "out", design, ["G", "D"], [1, 2, 3], "c", lambda s: "x")
    names = [design.run_name(a, s) for a, s in [("G", 1), ("D", 1), ("G", 2), ("D", 2), ("G", 3)]]
    assert [i.name for i in items] == names
    path.write_text(body.replace("SEEDS", "[1, 4]"))
    with pytest.raises(ConfigError, match=r"arms\.D\.seeds.*\[4\] not among the study's seeds"):
        load_design(path)
