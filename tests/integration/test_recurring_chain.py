"""Recurring training across two runs, phase by phase, against a real MLflow server (artifacts in
moto S3) with the tiny model: run 1 persists a bank and registers a champion; run 2's START line
names both, init-models starts from the champion, materialize inherits the bank (retiring an
invalid test and a duplicate), and the evaluate phase measures the final answerer against the
very version it started from. Also the refusal of a bank from another task space."""

from __future__ import annotations

import json
import shutil

import pytest

from sparring import lineage, recurring, tracking
from sparring.backends.builtins import builtin_dir
from sparring.bank import (
    BankRefused,
    read_bank,
    reference_digest,
    task_space,
    write_rows,
)
from sparring.config import load_config
from sparring.phases.common import train_problems
from sparring.phases.evaluate import versus_start
from sparring.phases.init_models import init_models
from sparring.phases.materialize import materialize_carrying_bank
from sparring.phases.select import save_bank


@pytest.fixture
def chain(mlflow_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)

    def cfg(*sets: str):
        return load_config(
            "configs/smoke.yaml",
            [
                "tracking.experiment=recurring-test",
                f"tracking.mlflow_uri={mlflow_server}",
                f"selection.registered_model=recur-{tmp_path.name}",
                "storage.start_fresh=false",
                f"storage.bank_uri={tmp_path / 'persisted' / 'bank.jsonl'}",
                "data.val_samples=2",
                *sets,
            ],
        )

    return cfg


def _run_one(cfg, tmp_path):
    """What run 1 leaves: a persisted bank (three of its problems' own tests, stamped as the
    validate phase stamps them, plus a duplicate by behaviour and a test the reference fails)
    and a registered champion (tiny-random's weights, fully fine-tuned in name)."""
    materialize_carrying_bank(cfg, str(tmp_path / "data1"))
    train = train_problems(str(tmp_path / "data1"))
    space = task_space(p.id for p in train)
    picked = [p for p in train if p.baseline_tests][:3]

    def row(p, test):
        return {"problem_id": p.id, "test": test, "round": 1, "breaks": 1,
                "reference": reference_digest(p.reference_solution), "space": space}  # fmt: skip

    good = [row(p, p.baseline_tests[0]) for p in picked]
    duplicate = row(picked[0], picked[0].baseline_tests[0].replace("==", " == ", 1))
    invalid = row(picked[1], "assert False")
    write_rows(tmp_path / "bank1.jsonl", [*good, duplicate, invalid])
    parent = tracking.start_parent_run(cfg, "kfp-run-1")
    assert save_bank(cfg, str(tmp_path / "bank1.jsonl"), parent)
    champion = tmp_path / "champion"
    shutil.copytree(builtin_dir("tiny-random"), champion)
    meta = {"base": "tiny-random", "tuning_mode": "full", "role": "answerer"}
    (champion / "sparring_model.json").write_text(json.dumps(meta))
    assert tracking.register_champion(cfg, str(champion), parent, 0.5) == "1"
    tracking.finish_parent_run(cfg, parent)
    return parent, good, train


def test_a_second_run_starts_from_the_first_champion_and_inherits_its_bank(
    chain, tmp_path, monkeypatch
):
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPARRING_COMPLETION_CACHE", "1")  # on for this test: a fresh folder
    cfg = chain()
    parent, good, train = _run_one(cfg, tmp_path)

    line = recurring.start_line(cfg)
    assert f"version 1 (registered by run {parent}, trained from tiny-random)" in line
    assert line.endswith(f"bank=5 tests ({parent}: 5)")

    assert init_models(cfg, str(tmp_path / "a2"), str(tmp_path / "g2"), champion=True) == {
        "answerer_from_champion": 1.0
    }
    start = lineage.start_of(str(tmp_path / "a2"))
    assert start["champion"]["version"] == "1" and start["base"] == "tiny-random"
    assert start["weights"] == lineage.weights_digest(tmp_path / "champion")

    metrics = materialize_carrying_bank(cfg, str(tmp_path / "data2"))
    assert metrics["bank_inherited"] == 5 and metrics["bank_retired"] == 2
    assert metrics["bank_retired_invalid"] == 1 and metrics["bank_retired_duplicate"] == 1
    kept = read_bank(tmp_path / "data2")
    assert [(r["problem_id"], r["test"], r["run"]) for r in kept] == [
        (r["problem_id"], r["test"], parent) for r in good
    ]
    manifest = json.loads((tmp_path / "data2" / "manifest.json").read_text())
    assert manifest["bank_runs"] == {parent: 3}

    # the final answerer against its start: here the final IS the start's weights, so the very
    # same answers are sampled and the gain is exactly zero; and since run 1 evaluated those
    # weights (cached as its final snapshot), the start's answers are read, not sampled again
    problems = train[:3]
    ids = [p.id for p in problems]
    from sparring.evaluation import snapshots
    from sparring.evaluation.snapshots import sampled_scores

    scores = sampled_scores(cfg, str(tmp_path / "champion"), problems, "final", cache=True)
    final = {"val_sampled": scores}
    report = {"learning": {"gains": {}}, "snapshots": [final]}
    sets, tasks = {"new_tasks": ids[:2]}, {i: i for i in ids}

    def no_sampling(*args, **kwargs):
        raise AssertionError("the start was sampled again: its cached answers were not found")

    monkeypatch.setattr(snapshots, "sample_answers", no_sampling)
    gain = versus_start(cfg, start, problems, sets, tasks, report)["discriminating"]
    assert gain["n"] == 2 and gain["delta"] == 0.0 and gain["before"] == gain["after"]

    # a start record naming other weights than the registered version holds: not measured
    moved = {**start, "weights": "0" * 16}
    assert versus_start(cfg, moved, problems, sets, tasks, report) == {}


def test_a_bank_of_another_task_space_is_refused_by_materialize(chain, tmp_path):
    cfg = chain()
    _run_one(cfg, tmp_path)
    other = chain("data.max_problems=8")  # another problem set: another task space
    with pytest.raises(BankRefused) as refused:
        materialize_carrying_bank(other, str(tmp_path / "other"))
    assert "\n" not in str(refused.value) and "task space" in str(refused.value)
    fresh = chain("storage.start_fresh=true")  # the way out the message names
    assert materialize_carrying_bank(fresh, str(tmp_path / "fresh"))["bank_loaded"] == 0
