"""Recurring training across two runs, phase by phase, against a real MLflow server (artifacts in
moto S3) with the tiny model: run 1 persists a bank and registers a champion; run 2's START line
names both, init-models starts from the champion, materialize inherits the bank (retiring an
invalid test and a duplicate), and the evaluate phase measures the final answerer against the
very version it started from. Also the refusal of a bank from another task space, and the start
gate keeping the first run's champion through a second run that scores below it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparring import recurring, tracking
from sparring.backends import lineage
from sparring.backends.builtins import builtin_dir
from sparring.config import load_config
from sparring.phases.common import train_problems
from sparring.phases.evaluate import versus_start
from sparring.phases.init_models import init_models
from sparring.phases.materialize import materialize_carrying_bank
from sparring.phases.select import save_bank
from sparring.rewards.bank import BankRefused, read_bank, reference_digest, task_space, write_rows


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


@pytest.mark.slow  # two chained runs' phases: about a minute on 2 cores (make test-slow, CI)
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


def test_a_run_below_its_start_keeps_the_first_runs_champion(mlflow_server, tmp_path, monkeypatch):
    """Two recurring runs in configs/recur.yaml's configuration (its start gate, start_margin and
    data.val_samples; the tiny model, this test's registry name and bank): run 1 ends above its
    start (the base model) and becomes champion v1; run 2 starts from v1 and ends below it in the
    start gate's own sample, so it is not promoted and the next run starts from v1 again. A tiny
    model cannot be made worse on purpose: the held-out scores are stubbed at the sampler, by
    the weights the sampled model holds. The rest is real: the held-out new tasks recur.yaml
    generates, init-models and the champion's download, the start's download by version with
    its weights check, the gate, the selection and the registry of a real MLflow server."""
    from sparring.evaluation import learning
    from sparring.evaluation.intervals import task_keys
    from sparring.phases import evaluate as evaluate_mod
    from sparring.phases.select import select_and_register
    from sparring.problems import heldout_sets
    from sparring.problems.families.sets import configured_sets

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    cfg = load_config(
        "configs/recur.yaml",
        [
            f"tracking.mlflow_uri={mlflow_server}",
            "tracking.experiment=recurring-gate-test",
            f"selection.registered_model=gate-{tmp_path.name}",
            f"storage.bank_uri={tmp_path / 'persisted' / 'bank.jsonl'}",
            "models.answerer.name=tiny-random",
            "models.generator.name=tiny-random",
        ],
    )
    assert cfg.selection.refuse_below_start and cfg.data.val_samples == 1, "recur.yaml's gate"
    margin = cfg.selection.start_margin
    val = configured_sets(cfg.data.families).heldout_problems()
    sets, tasks = heldout_sets(val), task_keys({p.id: p.tags for p in val})
    new_tasks = sets["new_tasks"]
    assert len(set(tasks[i] for i in new_tasks)) > 40

    def trained(k: int) -> str:
        """Run k's final answerer: tiny-random's files and weights of its own."""
        folder = tmp_path / f"final{k}"
        shutil.copytree(builtin_dir("tiny-random"), folder)
        (folder / "adapter_model.safetensors").write_bytes(f"run {k}".encode())
        meta = {"base": "tiny-random", "tuning_mode": "full", "role": "answerer"}
        (folder / "sparring_model.json").write_text(json.dumps(meta))
        return str(folder)

    finals = [trained(1), trained(2)]
    # held-out new-task score of each model, whichever draw: the base 0.3, run 1 above it,
    # run 2 below run 1 (its start) by more than recur.yaml's start_margin
    score = {"tiny-random": 0.3, lineage.weights_digest(finals[0]): 0.5}
    score[lineage.weights_digest(finals[1])] = 0.5 - margin - 0.2
    draws = []

    def sampler(cfg, model, problems, name, cache=False, seed=None):
        key = lineage.weights_digest(model) if Path(model).is_dir() else model
        draws.append((name, seed))
        return {"discriminating": {p.id: score[key] for p in problems}}

    monkeypatch.setattr(evaluate_mod, "sampled_scores", sampler)
    (tmp_path / "bank.jsonl").write_text("")

    def run(k: int) -> dict:
        """Recurring run k from init-models to select, its training replaced by finals[k-1]."""
        init_models(cfg, str(tmp_path / f"a{k}"), str(tmp_path / f"g{k}"), champion=True)
        start = lineage.start_of(str(tmp_path / f"a{k}"))
        parent = tracking.start_parent_run(cfg, f"kfp-gate-{k}")
        final = finals[k - 1]
        evaluated = sampler(cfg, final, val, "final")  # the evaluation's own draw
        report = {
            "baseline": {"val_sampled": sampler(cfg, "tiny-random", val, "base")},
            "snapshots": [
                {"round": 1, "answerer_reward": 0.5, "test_validity": 0.5, "promotable": True,
                 "val_sampled": evaluated}
            ],
        }  # fmt: skip
        report["learning"] = learning.learning_summary(report, cfg.seed, sets, tasks)
        seed = evaluate_mod.gate_seed(cfg, start)
        evaluate_mod.start_measures(cfg, start, final, val, sets, tasks, report, seed)
        out = tmp_path / f"report{k}"
        out.mkdir()
        (out / "report.json").write_text(json.dumps(report))
        manifest = tmp_path / f"manifest{k}.json"
        manifest.write_text(json.dumps([{"round": 1, "answerer": final}]))
        result = select_and_register(
            cfg, str(out), str(manifest), str(tmp_path / "bank.jsonl"),
            str(tmp_path / f"champion{k}"), parent,
        )  # fmt: skip
        tracking.finish_parent_run(cfg, parent)
        return {"start": start, "report": report, "result": result, "seed": seed}

    first = run(1)
    assert first["start"]["champion"] is None  # from the base model
    assert first["result"]["promoted"] == 1.0 and first["result"]["version"] == "1"

    second = run(2)
    assert second["start"]["champion"]["version"] == "1"
    assert second["start"]["weights"] == lineage.weights_digest(finals[0])
    gate = second["report"]["learning"]["gate"]["discriminating"]
    assert gate["before"] == 0.5 and gate["delta"] < -margin
    assert second["result"]["promoted"] == 0.0, second["result"]
    assert "below -selection.start_margin" in second["result"]["reason"]
    assert (tmp_path / "champion2" / "NOT_PROMOTED.txt").is_file()
    # each run's gate drew with a seed of its start's (base, then v1), never the evaluation's
    gate_seeds = {s for name, s in draws if name.startswith("start gate")}
    assert gate_seeds == {first["seed"], second["seed"]} and len(gate_seeds) == 2
    assert cfg.seed + 1 not in gate_seeds

    # the champion stands: the alias still names version 1, and the next run starts from it
    assert tracking.champion_version(cfg)["version"] == "1"
    assert "@champion version 1 " in recurring.start_line(cfg)
    init_models(cfg, str(tmp_path / "a3"), str(tmp_path / "g3"), champion=True)
    third = lineage.start_of(str(tmp_path / "a3"))
    assert third["champion"]["version"] == "1"
    assert third["weights"] == lineage.weights_digest(finals[0])
