"""The answerer phase in filtered fine-tuning mode on the tiny random model: answers planted in
place of sampling (the tiny model writes no working code), judged by the real sandbox, the kept
ones fine-tuned on by a real TRL SFT step. The filter keeps exactly the answers passing every
test (a wrong answer and one without code are left out, and reach the trainer never); the
trained artifact records what it kept; with nothing kept the start model is saved unchanged."""

from __future__ import annotations

import pytest

from sparring import backends
from sparring.backends.base import Sampled
from sparring.backends.torch import models
from sparring.config import load_config
from sparring.phases import filtered_sft
from sparring.phases.table import PHASES
from sparring.problems import load_sources, write_jsonl


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    write_jsonl(load_sources(["bundled"])[:3], d / "train.jsonl")
    return d


def _planted(monkeypatch, answers) -> list[dict]:
    """Sampling returns `answers(problem)`; the rows the SFT step gets are recorded."""

    def sample_answers(answerer, problems, *, num_samples, **kwargs):
        return Sampled([answers(p)[:num_samples] for p in problems])

    monkeypatch.setattr(filtered_sft, "sample_answers", sample_answers)
    trained: list[dict] = []
    backend = backends.get("torch")
    real = type(backend).sft

    def sft(self, cfg, model, tok, rows, peft_config, seed):
        trained.extend(rows)
        return real(self, cfg, model, tok, rows, peft_config, seed)

    monkeypatch.setattr(type(backend), "sft", sft)
    return trained


def _right(p) -> str:
    return f"```python\n{p.reference_solution.strip()}\n```"


def _wrong(p) -> str:
    return f"```python\ndef {p.function_name}(*args):\n    return None\n```"


def _answerer_phase(cfg, data_dir, out) -> dict[str, float]:
    """The answerer row of the phase table, as every runner calls it."""
    inputs = {"data": str(data_dir), "bank": str(data_dir / "bank.jsonl"), "init_model": ""}
    return PHASES["train-answerer"].call(cfg, 1, inputs, {"model": str(out)}, "r01-p01-answerer")


def _cfg(*overrides: str):
    return load_config(
        "configs/smoke.yaml",
        ["filtered_sft.samples=3", "filtered_sft.steps=1", "warm_start.batch_size=2", *overrides],
    )


def test_the_every_test_filter_trains_on_the_right_answers_only(data_dir, tmp_path, monkeypatch):
    trained = _planted(monkeypatch, lambda p: [_wrong(p), _right(p), "no code here"])
    out = tmp_path / "sft"
    metrics = _answerer_phase(_cfg(), data_dir, out)
    assert metrics["filtered_sft_answers"] == 9.0
    assert metrics["filtered_sft_passed_every"] == metrics["filtered_sft_kept"] == 3.0
    assert metrics["filtered_sft_problems_kept"] == 3.0
    assert metrics["filtered_sft_steps"] == 1.0 and metrics["filtered_sft_loss_first"] > 0
    problems = load_sources(["bundled"])[:3]
    assert [r["completion"][0]["content"] for r in trained] == [_right(p) for p in problems]
    meta = models.read_meta(out)
    assert (meta["mode"], meta["filter"], meta["phase"]) == (
        "filtered_sft",
        "every",
        "r01-p01-answerer",
    )
    assert meta["kept"] == {p.id: 1 for p in problems}
    assert meta["tuning_mode"] == "lora"


def test_nothing_kept_saves_the_start_model_unchanged(data_dir, tmp_path, monkeypatch):
    trained = _planted(monkeypatch, lambda p: [_wrong(p), "no code here"])
    out = tmp_path / "same"
    metrics = _answerer_phase(_cfg(), data_dir, out)
    assert metrics["filtered_sft_kept"] == 0.0 and trained == []
    meta = models.read_meta(out)
    assert meta["tuning_mode"] == "base" and meta["base"] == "tiny-random"
