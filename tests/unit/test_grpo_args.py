"""TRL's GRPOConfig keywords built from the `grpo:` section (sparring.backends.torch.grpo):
`trl_kwargs` gives, for every configs/*.yaml, the keywords the code produced before the trainer
took cfg.grpo whole (the expectations below were captured once from that code), and
`grpo_args` hands exactly those to TRL. `trl_kwargs` is pure; only the last tests import TRL."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.backends.torch.grpo import trl_kwargs
from sparring.config import load_config
from sparring.distributed import recipes
from sparring.errors import SparringError

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))

# Captured from the code before the change: TRL keyword <- cfg.grpo field, ...
FROM_SECTION = {
    "per_device_train_batch_size": "per_device_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "num_generations": "num_generations",
    "learning_rate": "learning_rate",
    "beta": "beta",
    "epsilon": "epsilon",
    "loss_type": "loss_type",
    "mask_truncated_completions": "mask_truncated_completions",
    "temperature": "temperature",
    "top_p": "top_p",
    "logging_steps": "logging_steps",
    "bf16": "bf16",
}
# ... the keywords it fixed whatever the config ...
FIXED = {
    "save_strategy": "no",
    "report_to": "none",
    "gradient_checkpointing": False,
    "dataloader_num_workers": 0,
    "remove_unused_columns": False,
    "ddp_broadcast_buffers": False,
    "disable_tqdm": False,
}
# ... and every keyword, for smoke.yaml with each mapped field set to a value no other has.
DISTINCT = [
    "grpo.num_generations=3", "grpo.per_device_batch_size=6",
    "grpo.gradient_accumulation_steps=5", "grpo.learning_rate=0.0003", "grpo.beta=0.07",
    "grpo.epsilon=0.15", "grpo.loss_type=bnpo", "grpo.max_completion_length=96",
    "grpo.mask_truncated_completions=false", "grpo.temperature=0.6", "grpo.top_p=0.95",
    "grpo.logging_steps=4", "grpo.bf16=true", "grpo.use_vllm=true",
]  # fmt: skip
DISTINCT_KWARGS = {
    "output_dir": "out", "max_steps": 3, "per_device_train_batch_size": 6,
    "gradient_accumulation_steps": 5, "num_generations": 3, "learning_rate": 0.0003,
    "beta": 0.07, "epsilon": 0.15, "loss_type": "bnpo", "max_completion_length": 96,
    "mask_truncated_completions": False, "temperature": 0.6, "top_p": 0.95, "logging_steps": 4,
    "save_strategy": "no", "report_to": "none", "seed": 7, "data_seed": 7,
    "gradient_checkpointing": False, "bf16": True, "use_cpu": False,
    "dataloader_num_workers": 0, "remove_unused_columns": False,
    "ddp_broadcast_buffers": False, "disable_tqdm": False, "use_vllm": True,
    "vllm_mode": "colocate", "vllm_tensor_parallel_size": 1, "vllm_gpu_memory_utilization": 0.3,
}  # fmt: skip


def kwargs_for(cfg, device="cpu", completion_length=64, world_size=1):
    return trl_kwargs(
        cfg, "out", 3, 7, device, completion_length, world_size=world_size, transformers_major=5
    )


def test_every_mapped_field_lands_on_its_trl_keyword():
    assert kwargs_for(load_config(ROOT / "configs/smoke.yaml", DISTINCT), "cuda", 96) == (
        DISTINCT_KWARGS
    )


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_each_config_gives_the_keywords_it_gave_before(path):
    cfg = load_config(path)
    for device, world_size in (("cpu", 1), ("cuda", 4)):
        expected = {
            "output_dir": "out", "max_steps": 3, "seed": 7, "data_seed": 7,
            "max_completion_length": 64, "use_cpu": device == "cpu",
            **{trl: getattr(cfg.grpo, field) for trl, field in FROM_SECTION.items()},
            **FIXED,
            **recipes.grpo_kwargs(cfg, world_size, 5),
        }  # fmt: skip
        assert kwargs_for(cfg, device, 64, world_size) == expected, (path.name, device)


def test_grpo_args_hands_trl_kwargs_to_trl(tmp_path, monkeypatch):
    from sparring.backends.torch.grpo import grpo_args

    monkeypatch.setenv("WORLD_SIZE", "1")
    cfg = load_config(ROOT / "configs/smoke.yaml")
    args = grpo_args(cfg, str(tmp_path), 3, 7)
    expected = trl_kwargs(
        cfg, str(tmp_path), 3, 7, "cpu", cfg.grpo.max_completion_length,
        world_size=1, transformers_major=5,
    )  # fmt: skip
    assert expected.pop("report_to") == "none" and args.report_to == []  # TRL's reading of it
    assert {k: getattr(args, k) for k in expected} == expected
    assert grpo_args(cfg, str(tmp_path), 3, 7, max_completion_length=40).max_completion_length == 40


def test_an_unresolved_auto_completion_length_is_refused(tmp_path):
    from sparring.backends.torch.grpo import grpo_args

    cfg = load_config(ROOT / "configs/smoke.yaml", ["grpo.max_completion_length=0"])
    with pytest.raises(SparringError, match=r"grpo\.max_completion_length: 0 \(auto\)"):
        grpo_args(cfg, str(tmp_path), 1, 0)
