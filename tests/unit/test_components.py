"""Component bodies (`.python_func`) and the phases' edges, on the real phases and a real MLflow.

Every phase is the real one, in a dry run on tiny-random (materialize a few bundled problems and
one HumanEval task, training phases copy their model and write the generator's fallback tests,
validation runs them in the real sandbox, evaluation samples the tiny model); MLflow is a sqlite
store in tmp_path. Real training phases run in tests/integration/test_pipeline_local.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from components import make_components
from pipelines.common import config_line
from sparring import tracking
from sparring.config import load_config
from sparring.errors import SparringError
from sparring.phases import init_models, select, snapshot
from sparring.phases import materialize as materialize_phase

ROOT = Path(__file__).resolve().parents[2]

DRY = [
    "dry_run=true",
    "data.max_problems=6",
    "data.humaneval_limit=1",
    "steps.problems_per_phase=5",  # every train problem: both roles draw the same ones
    "sandbox.workers=2",
]


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
    # recurring training: the persisted bank and the champion carry over (smoke ships fresh)
    sets = [f"storage.bank_uri={bank_uri}", "storage.start_fresh=false", *DRY]
    cfg = load_config("configs/smoke.yaml", sets)
    return SimpleNamespace(cfg=cfg, text=config_line(cfg), tmp=tmp_path)


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def test_components_end_to_end_in_a_dry_run(env, capsys):
    c = make_components(env.cfg)
    t = env.tmp
    parent = tracking.start_parent_run(env.cfg, "kfp-1")
    data, m = Art(t / "data"), Art(t / "m0")
    assert c.materialize.python_func(env.text, parent, "kfp-1", data, m) == parent
    train = _lines(t / "data" / "train.jsonl")
    assert m.metadata["bank_loaded"] == 0.0 and len(_lines(t / "data" / "eval.jsonl")) == 1
    assert m.metadata["problems_train"] == float(len(train)) == 5.0  # 6, one held out

    ans0, gen0 = Art(t / "a0"), Art(t / "g0")
    c.init_models.python_func(env.text, parent, True, ans0, gen0, Art(t / "m1"))
    pointer = json.loads((t / "a0" / "sparring_model.json").read_text())
    start = pointer.pop("start")  # where the run began: every model trained from it says so
    assert pointer == {"base": "tiny-random", "pointer": True, "role": "answerer",
                       "tuning_mode": "base", "run_tuning_mode": "lora"}  # fmt: skip
    assert (start["model"], start["configured"], start["champion"]) == (
        "tiny-random", "tiny-random", None
    )  # fmt: skip

    gen, tests, sols, gm = Art(t / "g1"), Art(t / "tests1"), Art(t / "sol1"), Art(t / "m2")
    c.train_generator.python_func(
        env.text, parent, 1, "r01-p01-generator", data, ans0, gen0, gen, tests, sols, gm
    )
    written = _lines(tests.path)
    assert len(written) == gm.metadata["problems"] == len(train)  # all of them (see DRY)
    assert gm.metadata["generated_tests"] == float(sum(len(r["tests"]) for r in written)) > 0
    assert gm.metadata["dry_run"] == 1.0 and "steps" not in gm.metadata

    bank, vm = Art(t / "bank1"), Art(t / "m3")
    c.validate_tests.python_func(env.text, 1, data, tests, sols, data, bank, vm)
    banked = _lines(t / "bank1" / "bank.jsonl")
    # the dry run's tests join two baseline asserts: the reference passes every one, none is a
    # copy of a baseline test, and the bank (empty before) holds each of them
    assert vm.metadata["candidates"] == gm.metadata["generated_tests"]
    assert vm.metadata["validity"] == 1.0 and vm.metadata["infra_errors"] == 0.0
    assert vm.metadata["bank_size"] == float(len(banked)) == vm.metadata["new_tests"] > 0
    assert {b["test"] for b in banked} <= {x for r in written for x in r["tests"]}
    # the metrics travel in the bank folder (no MLflow in the sandbox pod): the same numbers
    saved = json.loads((t / "bank1" / "validation.json").read_text())
    assert saved["new_tests"] > 0 and saved == {k: vm.metadata[k] for k in saved}

    ans1, am = Art(t / "a1"), Art(t / "m4")
    c.train_answerer.python_func(
        env.text, parent, 1, "r01-p03-answerer", data, bank, ans0, ans1, am
    )
    # the answerer trained on the validated bank: every banked test is one of its problems'
    assert am.metadata["bank_tests_used"] == float(len(banked)) > 0
    assert json.loads((t / "a1" / "sparring_model.json").read_text())["start"] == start
    # the bank_vs_screening arm (rewards.answerer_bank: false): the same phase, no banked test
    from dataclasses import replace

    from sparring.phases.answerer import train_answerer

    nobank = replace(env.cfg, rewards=replace(env.cfg.rewards, answerer_bank=False))
    out = str(t / "a1-nobank")
    assert train_answerer(nobank, 1, data.path, bank.path, None, out)["bank_tests_used"] == 0.0
    snap = Art(t / "snap1")
    c.snapshot_first.python_func(1, ans1, tests, gen, snap)
    # round 2's tests: round 1's, as a round-2 generator phase would label them
    tests2 = Art(t / "tests2")
    rows2 = [{**r, "round": 2} for r in written]
    Path(tests2.path).write_text("".join(json.dumps(r) + "\n" for r in rows2))
    snap2 = Art(t / "snap2")
    c.snapshot_next.python_func(2, snap, ans1, tests2, gen, snap2)
    manifest = json.loads(Path(snap2.path).read_text())
    assert [e["round"] for e in manifest] == [1, 2]
    assert [e["generator"] for e in manifest] == [gen.uri, gen.uri]  # each round's latest

    report, em = Art(t / "report"), Art(t / "m5")
    c.evaluate.python_func(env.text, parent, data, snap2, bank, report, em)
    evaluated = json.loads((t / "report" / "report.json").read_text())
    assert [s["round"] for s in evaluated["snapshots"]] == [1, 2]
    assert em.metadata["r2.answerer_reward"] == evaluated["snapshots"][1]["answerer_reward"]

    champ = Art(t / "champion")
    version = c.select.python_func(env.text, parent, report, snap2, bank, champ, Art(t / "m6"))
    assert version == "1"
    assert (t / "champion" / "sparring_model.json").is_file()
    persisted = Path(env.cfg.storage.bank_uri).read_text()
    validated = _lines(t / "bank1" / "bank.jsonl")
    assert validated and all("run" not in r for r in validated)
    # bank persisted, each test stamped with the run that banked it (its lineage)
    assert _lines(env.cfg.storage.bank_uri) == [{**r, "run": parent} for r in validated]

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
    assert by_name["r1-validate-tests"].data.metrics["validity"] == 1.0
    assert by_name["r1-train-answerer"].data.tags["sparring.round"] == "1"

    # A second run: the persisted bank is loaded and the champion replaces the pointer.
    ans_next = Art(t / "a-next")
    capsys.readouterr()
    init_models.init_models(env.cfg, ans_next.path, str(t / "g-next"), champion=True)
    # said, since the run's "base" measures are the configured model's, not this start's
    said = capsys.readouterr().out
    assert "the answerer starts from sparring-smoke@champion (version 1)" in said
    champion = json.loads((t / "a-next" / "sparring_model.json").read_text())
    round_1 = json.loads((t / "a1" / "sparring_model.json").read_text())
    assert champion.pop("start")["champion"] == {
        "name": "sparring-smoke", "alias": "champion", "version": "1"
    }  # fmt: skip
    assert champion == {k: v for k, v in round_1.items() if k != "start"}  # round 1's
    assert champion["phase"] == "r01-p03-answerer"  # not the fresh pointer init_models writes
    data2, m7 = Art(t / "data2"), Art(t / "m7")
    c.materialize.python_func(env.text, "", "kfp-2", data2, m7)
    assert m7.metadata["bank_loaded"] == float(len(banked))
    assert (t / "data2" / "bank.jsonl").read_text() == persisted


MAKE_CONFIGS = sorted(set(re.findall(r"configs/[\w.-]+\.yaml", (ROOT / "Makefile").read_text())))


def test_every_config_a_make_target_runs_starts_from_the_base_model():
    """make run, learn (and its arms), smoke, calibrate: their LEARN lines compare the trained
    model with the configured base, so a run after one that registered a champion must not
    start from that champion (it did, silently, until 2026-11-30: every run after the first in
    a checkout trained on from the one before). The one config that chains on purpose is the
    recurring one (make recur), in a chain folder of its own."""
    assert {"configs/learn.yaml", "configs/local.yaml", "configs/smoke.yaml"} <= set(MAKE_CONFIGS)
    chained = [c for c in MAKE_CONFIGS if not load_config(ROOT / c).storage.start_fresh]
    assert chained == ["configs/recur.yaml"], f"set storage.start_fresh: true in {chained}"


def test_every_shipped_config_registers_under_a_name_of_its_own():
    """A champion starts runs of the name it is registered under: two configs sharing a name
    (a 1.5B and a 7B preset did) would hand one's champion to the other."""
    names = {c.name: load_config(c).selection.registered_model for c in ROOT.glob("configs/*.yaml")}
    assert len(set(names.values())) == len(names), names
    assert "sparring-answerer" not in names.values(), names  # the default: nobody's own


def test_init_models_start_fresh_ignores_champion(env, monkeypatch):
    monkeypatch.setattr(tracking, "download_champion", lambda *a: pytest.fail("called"))
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


def test_snapshot_manifest_carries_each_rounds_generator(tmp_path):
    for name in ("warm", "a1", "a2", "t1", "t2", "g0", "g1"):
        (tmp_path / name).mkdir()
    art = {name: str(tmp_path / name) for name in ("warm", "a1", "a2", "t1", "t2", "g0", "g1")}
    m0, m1, m2 = (str(tmp_path / f"m{i}.json") for i in range(3))
    snapshot.add_snapshot(None, 0, art["warm"], "", m0, label=snapshot.WARM_START_LABEL)
    snapshot.add_snapshot(m0, 1, art["a1"], art["t1"], m1, generator_uri=art["g0"])
    entries = snapshot.add_snapshot(m1, 2, art["a2"], art["t2"], m2, generator_uri=art["g1"])
    assert [e.get("generator") for e in entries] == [None, art["g0"], art["g1"]]
    resolved = snapshot.resolve_snapshots(m2, str(tmp_path / "cache"))
    # only the final generator is made local: it is the one evaluation measures
    assert [e["generator_path"] for e in resolved] == ["", "", art["g1"]]
    assert [e["answerer_path"] for e in resolved] == [art["warm"], art["a1"], art["a2"]]
    # a manifest of older code names no generator: none to measure
    older = snapshot.resolve_snapshots(m0, str(tmp_path / "cache"))
    assert [e["generator_path"] for e in older] == [""]


def test_select_nothing_promotable(env):
    # the real choose_best, on a report whose only snapshot was refused
    refused = {"round": 1, "promotable": False, "hacking": {"reasons": ["validity 0.1"]}}
    report = env.tmp / "report"
    report.mkdir()
    (report / "report.json").write_text(json.dumps({"snapshots": [refused]}))
    manifest = env.tmp / "m.json"
    manifest.write_text("[]")
    (env.tmp / "bank.jsonl").write_text("")
    parent = tracking.start_parent_run(env.cfg, "kfp-x")
    result = select.select_and_register(
        env.cfg, str(report), str(manifest), str(env.tmp / "bank.jsonl"), str(env.tmp / "champ"),
        parent,
    )  # fmt: skip
    reason = "no promotable snapshot: round 1 (validity 0.1)"
    assert result["promoted"] == 0.0 and result["reason"] == reason
    assert (env.tmp / "champ" / "NOT_PROMOTED.txt").read_text().strip() == reason
