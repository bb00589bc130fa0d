"""Warm start (SFT of the answerer) on the tiny random model: real TRL SFTTrainer steps.

Measured on a 2-core machine with 4 bundled problems, batch 4: full fine-tune at lr 5e-3 takes
the loss from 10.84 to about 7.9 in 8 steps; LoRA (r 4 on q/v of a random 2-layer model) moves
it only from 10.84 to about 10.73 in 4 steps at lr 0.05, so the LoRA test asserts a decrease and
the full test a large one (about 6-8 s per step when the 2 cores are shared). Also: only
train.jsonl problems reach the trainer, the artifact loads back with `models.load_model`, the
component writes a "warm-start" snapshot entry, and evaluation reports base -> warm start ->
round 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparring import backends
from sparring.backends.torch import models
from sparring.config import load_config
from sparring.errors import SparringError
from sparring.phases import warm_start as ws_mod
from sparring.phases.evaluate import evaluate
from sparring.phases.init_models import init_models
from sparring.phases.warm_start import completion_text, warm_start
from sparring.problems import load_humaneval, load_sources, programs, write_jsonl


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """train.jsonl: 4 bundled problems; val.jsonl: 2 others; eval.jsonl: 2 HumanEval tasks."""
    d = tmp_path_factory.mktemp("data")
    bundled = load_sources(["bundled"])
    write_jsonl(bundled[:4], d / "train.jsonl")
    write_jsonl(bundled[4:6], d / "val.jsonl")
    write_jsonl(load_humaneval(2), d / "eval.jsonl")
    (d / "bank.jsonl").write_text("")
    return d


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]


def _cfg(*overrides: str):
    return load_config("configs/smoke.yaml", ["warm_start.batch_size=4", *overrides])


def record_trainer_logs(monkeypatch) -> list[dict]:
    """What the trainer logs at each step, as its callbacks see it."""
    from transformers import TrainerCallback

    from sparring import tracking

    logged: list[dict] = []

    class Recorder(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            logged.append(dict(logs or {}))

    real = tracking.trainer_callbacks
    monkeypatch.setattr(tracking, "trainer_callbacks", lambda: [*real(), Recorder()])
    return logged


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_lora_warm_start_uses_only_the_train_split(data_dir, tmp_path, monkeypatch):
    seen = []
    real = ws_mod.sft_examples

    def spy(problems):
        seen.extend(p.id for p in problems)
        return real(problems)

    monkeypatch.setattr(ws_mod, "sft_examples", spy)
    logged = record_trainer_logs(monkeypatch)
    cfg = _cfg("warm_start.steps=4", "warm_start.learning_rate=0.05")
    out = tmp_path / "warm"
    metrics = warm_start(cfg, str(data_dir), None, str(out))

    train_ids = _ids(data_dir / "train.jsonl")
    assert seen == train_ids
    assert not set(seen) & set(_ids(data_dir / "val.jsonl") + _ids(data_dir / "eval.jsonl"))
    assert metrics["examples"] == metrics["examples_used"] == 4.0
    assert metrics["steps"] == 4.0 and metrics["epochs"] == pytest.approx(4.0)
    assert metrics["loss_last"] < metrics["loss_first"]
    # the token accuracies are TRL's own per-step figures (tiny-random stays at 0.0 on them, so
    # a rise is not asserted here; the loss falls instead)
    accuracy = [log["mean_token_accuracy"] for log in logged if "mean_token_accuracy" in log]
    assert len(accuracy) == 4
    assert metrics["mean_token_accuracy_first"] == accuracy[0]
    assert metrics["mean_token_accuracy_last"] == accuracy[-1]
    assert metrics["step_time_s"] > 0 and metrics["peak_memory_mb"] > 0

    meta = models.read_meta(out)
    assert meta["tuning_mode"] == "lora" and meta["base"] == "tiny-random"
    assert (meta["role"], meta["round"], meta["phase"]) == ("answerer", 0, "warm_start")
    assert meta["warm_start_problems"] == train_ids
    from peft import PeftModel

    model, _ = models.load_model(str(out))
    assert isinstance(model, PeftModel)
    # round 1 keeps training this adapter (no fresh LoRA config)
    trainable, _, peft_config = backends.get(cfg.backend).load_trainable(cfg, "answerer", str(out))
    assert peft_config is None and isinstance(trainable, PeftModel)


@pytest.mark.slow  # a full fine-tune (~30 s): CI's slow tier keeps make test under 15 min
def test_full_fine_tune_loss_goes_down(data_dir, tmp_path):
    cfg = _cfg("tuning_mode=full", "warm_start.steps=8", "warm_start.learning_rate=0.005")
    out = tmp_path / "warm"
    metrics = warm_start(cfg, str(data_dir), None, str(out))
    assert metrics["loss_last"] < metrics["loss_first"] - 1.0, metrics
    assert metrics["loss_last_epoch"] < metrics["loss_first_epoch"]
    assert models.read_meta(out)["tuning_mode"] == "full"
    model, _ = models.load_model(str(out))
    assert type(model).__name__ == "LlamaForCausalLM"


def test_completion_is_what_extract_code_parses(data_dir):
    from sparring.problems import read_jsonl

    for p in read_jsonl(data_dir / "train.jsonl"):
        code = programs.extract_code(completion_text(p), p.function_name)
        assert code is not None and code.strip() == p.reference_solution.strip()


def test_dry_run_or_zero_steps_copies_the_init_model(data_dir, tmp_path):
    cases = [("warm_start.steps=0",), ("warm_start.steps=5", "dry_run=true")]
    for i, overrides in enumerate(cases):
        out = tmp_path / f"copy{i}"
        metrics = warm_start(_cfg(*overrides), str(data_dir), "", str(out))
        assert metrics["steps"] == 0.0 and metrics["examples"] == 4.0
        meta = models.read_meta(out)
        assert meta["base"] == "tiny-random" and meta["tuning_mode"] == "base"
        assert meta["phase"] == "warm_start" and meta["role"] == "answerer"


def test_mlx_backend_is_refused(data_dir, tmp_path):
    with pytest.raises(SparringError, match=r"warm_start\.steps"):
        warm_start(_cfg("backend=mlx", "warm_start.steps=2"), str(data_dir), None, str(tmp_path))


class Art(SimpleNamespace):
    """Stands in for a KFP artifact: .path, .uri, .metadata, log_metric."""

    def __init__(self, path):
        super().__init__(path=str(path), uri=str(path), metadata={})

    def log_metric(self, key, value):
        self.metadata[key] = value


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_component_snapshot_and_report(data_dir, tmp_path, monkeypatch):
    """The component's python_func trains (2 real steps, MLflow child run), starts the manifest
    with a warm-start entry; evaluation keeps the base model as baseline and reports the warm
    start between it and round 1."""
    from components import make_components
    from pipelines.common import config_line
    from sparring import tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    cfg = _cfg("warm_start.steps=2", "warm_start.learning_rate=0.05")
    text = config_line(cfg)
    parent = tracking.start_parent_run(cfg, "kfp-warm")
    init, gen = Art(tmp_path / "init"), Art(tmp_path / "gen0")
    init_models(cfg, init.path, gen.path, champion=False)

    c = make_components(cfg)
    model, snaps, m = Art(tmp_path / "warm"), Art(tmp_path / "snaps0"), Art(tmp_path / "m")
    c.warm_start.python_func(text, parent, Art(data_dir), init, model, snaps, m)
    assert m.metadata["steps"] == 2.0 and "loss_first" in m.metadata
    assert json.loads(Path(snaps.path).read_text()) == [
        {"round": 0, "answerer": model.uri, "tests": "", "label": "warm-start"}
    ]
    assert models.read_meta(model.path)["tuning_mode"] == "lora"

    import mlflow

    mlflow.set_tracking_uri(tracking.tracking_uri(cfg))
    run = mlflow.get_run(parent)
    children = mlflow.search_runs(
        [run.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent}'",
        output_format="list",
    )
    child = {r.info.run_name: r for r in children}["r0-warm-start"]
    assert child.data.metrics["loss_first"] == m.metadata["loss_first"]
    # TRL's own MLflow callback logged every step's loss into the child run, the last being the
    # loss the phase reports
    history = mlflow.MlflowClient().get_metric_history(child.info.run_id, "loss")
    assert len(history) == m.metadata["steps"]
    assert history[-1].value == pytest.approx(m.metadata["loss_last"], rel=1e-5)

    # round 1 appends after the warm start; its tests attack a train problem
    train_id = _ids(data_dir / "train.jsonl")[0]
    tests = tmp_path / "tests1.jsonl"
    tests.write_text(json.dumps({"problem_id": train_id, "tests": [], "round": 1}) + "\n")
    snaps1 = Art(tmp_path / "snaps1")
    c.snapshot_next.python_func(1, snaps, model, Art(tests), gen, snaps1)

    out = tmp_path / "report"
    metrics = evaluate(cfg, str(data_dir), snaps1.path, str(data_dir / "bank.jsonl"), str(out))
    report = json.loads((out / "report.json").read_text())
    assert report["baseline"]["model"] == "tiny-random" and report["baseline"]["round"] == 0
    first, second = report["snapshots"]
    assert (first["label"], first["round"], first["model"]) == ("warm-start", 0, model.path)
    assert second["round"] == 1 and "label" not in second
    # the warm start goes through the hacking gate like a round (its own trivial share is what
    # the gate read); on this data no share can rise above the base's, so that the gate trips
    # on a rise is tested on data that rises: test_evaluation_snapshots::test_hacking_gate_*
    assert first["hacking"]["latest"]["trivial_share"] == first["trivial_share"] is not None
    facts = {
        k: (report["baseline"].get(k), first.get(k), second.get(k))
        for k in ("answerer_reward", "test_validity", "trivial_share", "promotable")
    }
    # by hand: the random model writes no code, so no snapshot earns a reward or writes trivial
    # code; the warm start's trivial share did not rise, so nothing refuses it
    assert facts["answerer_reward"] == (0.0, 0.0, 0.0), facts
    assert facts["trivial_share"] == (0.0, 0.0, 0.0), facts
    assert first["hacking"]["reasons"] == [] and first["promotable"], first["hacking"]
    assert metrics["warm-start.answerer_reward"] == metrics["r1.answerer_reward"] == 0.0
    # score = 0.7 * 0.0 + 0.3 * (test validity, missing = 0): round 1's tests are empty, so it
    # cannot score above the warm start's 0.0, and the earlier of equal scores wins: index 0
    assert not second.get("test_validity"), facts
    assert (report["selection"]["index"], report["selection"]["score"]) == (0, 0.0), facts
    md = (out / "report.md").read_text()
    assert md.count(f"`{model.path}`") == 2  # the warm start and round 1 rows
