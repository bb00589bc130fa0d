"""Component bodies (`.python_func`) and the phases' edges, with fake phases and a file MLflow.

The phase and evaluation functions are replaced by fakes that write the files their real
counterparts write; MLflow is a sqlite store in tmp_path. Real phases run in
tests/integration/test_pipeline_local.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from components import make_components
from pipelines.selfplay import config_line
from sparring import tracking
from sparring.config import load_config
from sparring.errors import SparringError
from sparring.evaluation import snapshots as evaluation
from sparring.phases import answerer, generator, init_models, select, snapshot, validate
from sparring.phases import evaluate as evaluate_phase
from sparring.phases import materialize as materialize_phase


class Art(SimpleNamespace):
    """Stands in for a KFP artifact: .path, .uri, .metadata, log_metric."""

    def __init__(self, path):
        super().__init__(path=str(path), uri=str(path), metadata={})

    def log_metric(self, key, value):
        self.metadata[key] = value


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    bank_uri = tmp_path / "persist" / "bank.jsonl"
    cfg = load_config("configs/smoke.yaml", [f"storage.bank_uri={bank_uri}"])
    calls = []

    def materialize(cfg, out_dir, bank_in=None):
        calls.append(("materialize", bank_in))
        Path(out_dir).mkdir(parents=True)
        for name in ("train", "val", "eval", "bank"):
            (Path(out_dir) / f"{name}.jsonl").write_text("")
        return {"problems": 3.0}

    def train_answerer(cfg, r, data_dir, bank_path, init_model, out_model, phase="answerer"):
        calls.append(("answerer", r, phase, Path(bank_path).name, init_model))
        Path(out_model).mkdir(parents=True)
        (Path(out_model) / "sparring_model.json").write_text(json.dumps({"round": r}))
        return {"reward": 0.5 + r / 10}

    def train_generator(cfg, r, data_dir, frozen, init_model, out_model, out_tests, out_sol):
        calls.append(("generator", r, frozen))
        Path(out_model).mkdir(parents=True)
        Path(out_tests).write_text('{"test": "assert f(1) == 1"}\n')
        Path(out_sol).write_text("")
        return {"reward": 0.1}

    def validate_tests(cfg, r, data_dir, tests, sols, bank_in, bank_out):
        calls.append(("validate", r, bank_in))
        Path(bank_out).write_text('{"problem_id": "p", "test": "assert True"}\n')
        return {"validity": 0.75, "kept": 1}

    def evaluate_snapshots(cfg, data_dir, models, tests, bank, out_dir):
        calls.append(("evaluate", models, tests))
        snaps = [
            {"model": m, "round": i + 1, "answerer_reward": 0.2 * (i + 1), "promotable": True}
            for i, m in enumerate(models)
        ]
        report = {"snapshots": snaps, "cross_play": [], "elo": {}}
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "report.json").write_text(json.dumps(report))
        return report

    def choose_best(cfg, report):
        return len(report["snapshots"]) - 1, 0.9, "best score"

    for module, name, fn in [
        (materialize_phase, "materialize", materialize),
        (answerer, "train_answerer", train_answerer),
        (generator, "train_generator", train_generator),
        (validate, "validate_tests", validate_tests),
        (evaluate_phase, "evaluate_snapshots", evaluate_snapshots),
        (evaluate_phase, "choose_best", choose_best),
        (evaluation, "choose_best", choose_best),
    ]:
        monkeypatch.setattr(module, name, fn)
    return SimpleNamespace(cfg=cfg, calls=calls, text=config_line(cfg), tmp=tmp_path)


def test_components_end_to_end_with_fakes(env):
    c = make_components(env.cfg)
    t = env.tmp
    parent = tracking.start_parent_run(env.cfg, "kfp-1")
    data, m = Art(t / "data"), Art(t / "m0")
    assert c.materialize.python_func(env.text, parent, "kfp-1", data, m) == parent
    assert m.metadata["problems"] == 3.0 and m.metadata["bank_loaded"] == 0.0

    ans0, gen0 = Art(t / "a0"), Art(t / "g0")
    c.init_models.python_func(env.text, parent, True, ans0, gen0, Art(t / "m1"))
    pointer = json.loads((t / "a0" / "sparring_model.json").read_text())
    assert pointer == {"base": "tiny-random", "pointer": True, "role": "answerer",
                       "tuning_mode": "base", "run_tuning_mode": "lora"}  # fmt: skip

    gen, tests, sols = Art(t / "g1"), Art(t / "tests1"), Art(t / "sol1")
    c.train_generator.python_func(env.text, parent, 1, data, ans0, gen0, gen, tests, sols,
                                  Art(t / "m2"))  # fmt: skip
    bank = Art(t / "bank1")
    vm = Art(t / "m3")
    c.validate_tests.python_func(env.text, 1, data, tests, sols, data, bank, vm)
    assert vm.metadata == {"validity": 0.75, "kept": 1.0}
    assert (t / "bank1" / "validation.json").is_file()

    ans1 = Art(t / "a1")
    c.train_answerer.python_func(env.text, parent, 1, "answerer", data, bank, ans0, ans1,
                                 Art(t / "m4"))  # fmt: skip
    snap = Art(t / "snap1")
    c.snapshot_first.python_func(1, ans1, tests, snap)
    snap2 = Art(t / "snap2")
    c.snapshot_next.python_func(2, snap, ans1, tests, snap2)
    assert [e["round"] for e in json.loads(Path(snap2.path).read_text())] == [1, 2]

    report, em = Art(t / "report"), Art(t / "m5")
    c.evaluate.python_func(env.text, parent, data, snap2, bank, report, em)
    assert em.metadata["r2.answerer_reward"] == pytest.approx(0.4)

    champ = Art(t / "champion")
    version = c.select.python_func(env.text, parent, report, snap2, bank, champ, Art(t / "m6"))
    assert version == "1"
    assert (t / "champion" / "sparring_model.json").is_file()
    assert "assert True" in Path(env.cfg.storage.bank_uri).read_text()  # bank persisted

    kinds = [c[0] for c in env.calls]
    assert kinds == ["materialize", "generator", "validate", "answerer", "evaluate"]
    assert env.calls[3][3] == "bank.jsonl"  # the answerer trained on the validated bank

    import mlflow

    mlflow.set_tracking_uri(tracking.tracking_uri(env.cfg))
    run = mlflow.get_run(parent)
    assert run.info.status == "FINISHED"
    assert run.data.tags[tracking.PARENT_TAG] == "kfp-1"
    assert run.data.params["grpo.num_generations"] == "2"
    children = mlflow.search_runs(
        [run.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent}'",
        output_format="list",
    )
    names = sorted(r.info.run_name for r in children)
    assert names == sorted(
        [
            "r0-materialize",
            "r0-init-models",
            "r1-train-generator",
            "r1-validate-tests",
            "r1-train-answerer",
            "r3-evaluate",
            "r3-select",
        ]
    )
    by_name = {r.info.run_name: r for r in children}
    assert by_name["r1-validate-tests"].data.metrics["validity"] == 0.75
    assert by_name["r1-train-answerer"].data.tags["sparring.round"] == "1"

    # A second run: the persisted bank is loaded and the champion replaces the pointer.
    ans_next = Art(t / "a-next")
    init_models.init_models(env.cfg, ans_next.path, str(t / "g-next"), champion=True)
    assert json.loads((t / "a-next" / "sparring_model.json").read_text()) == {"round": 1}
    data2 = Art(t / "data2")
    c.materialize.python_func(env.text, "", "kfp-2", data2, Art(t / "m7"))
    assert env.calls[-1][0] == "materialize" and env.calls[-1][1] is not None


def test_init_models_start_fresh_ignores_champion(env, monkeypatch):
    monkeypatch.setattr(tracking, "download_champion", lambda cfg, out: pytest.fail("called"))
    cfg = load_config("configs/smoke.yaml", ["storage.start_fresh=true"])
    init_models.init_models(cfg, str(env.tmp / "a"), str(env.tmp / "g"), champion=True)
    assert json.loads((env.tmp / "a" / "sparring_model.json").read_text())["pointer"] is True


def test_bank_load_save(env):
    cfg = env.cfg
    out = env.tmp / "b" / "bank.jsonl"
    assert materialize_phase.load_bank(cfg, str(out)) == 0 and out.read_text() == ""
    folder = env.tmp / "bankdir"
    folder.mkdir()
    (folder / "bank.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
    assert select.save_bank(cfg, str(folder))
    assert materialize_phase.load_bank(cfg, str(out)) == 2
    no_uri = load_config("configs/smoke.yaml")
    assert not select.save_bank(no_uri, str(folder))


def test_snapshot_missing_artifact_is_clear(tmp_path):
    manifest = tmp_path / "m.json"
    snapshot.add_snapshot(None, 1, str(tmp_path / "gone"), str(tmp_path / "t"), str(manifest))
    with pytest.raises(SparringError, match="gone: snapshot artifact does not exist"):
        snapshot.resolve_snapshots(str(manifest), str(tmp_path / "cache"))


def test_select_nothing_promotable(env, monkeypatch):
    monkeypatch.setattr(evaluation, "choose_best", lambda cfg, report: (None, 0.0, "validity 0.1"))
    report = env.tmp / "report"
    report.mkdir()
    (report / "report.json").write_text(json.dumps({"snapshots": []}))
    manifest = env.tmp / "m.json"
    manifest.write_text("[]")
    (env.tmp / "bank.jsonl").write_text("")
    parent = tracking.start_parent_run(env.cfg, "kfp-x")
    result = select.select_and_register(
        env.cfg, str(report), str(manifest), str(env.tmp / "bank.jsonl"), str(env.tmp / "champ"),
        parent,
    )  # fmt: skip
    assert result["promoted"] == 0.0 and result["reason"] == "validity 0.1"
    assert (env.tmp / "champ" / "NOT_PROMOTED.txt").read_text().strip() == "validity 0.1"
