"""The torch backend: transformers models, PEFT LoRA, TRL's GRPOTrainer.

Covers: `TorchBackend`, the `sparring.backends.base.Backend` interface on torch, for the dual
topology (one model per role) and the shared one (one base per process with a LoRA adapter
per role); the work is in `models` (load/save artifacts, built-in models), `generation`
(batched sampling that stops at the closing code fence), `grpo` (GRPO phases through TRL)
and `sft` (the warm start through TRL's SFTTrainer).
Does not cover: MLX (sparring.backends.mlx). torch is imported only when a method runs.
"""

from __future__ import annotations

import os
from typing import Any

from sparring.backends.base import Messages, Sampled


class TorchBackend:
    name = "torch"

    def load_trainable(self, cfg: Any, role: str, init_model: str | None) -> tuple[Any, ...]:
        from sparring.backends.base import resolve_pointer
        from sparring.backends.torch import models

        mc = cfg.model_for(role)
        if cfg.topology == "shared":
            model, tok = models.shared_peft_model(
                cfg.shared_model, cfg.lora, device=mc.device, dtype=mc.dtype
            )
            models.ensure_adapter(model, role, init_model, cfg.lora)
            return model, tok, None
        # a pointer to a LoRA artifact trains that adapter on, as a later round's init does
        source = resolve_pointer(init_model or mc.name)
        meta = models.read_meta(source) if os.path.isdir(source) else None
        if cfg.tuning_mode == "lora":
            if meta and meta.get("tuning_mode") == "lora":
                model, tok = models.load_model(
                    source, device=mc.device, dtype=mc.dtype, trainable=True
                )
                return model, tok, None
            model, tok = models.load_model(source, device=mc.device, dtype=mc.dtype)
            return model, tok, models.peft_lora_config(cfg.lora, models.num_layers(model))
        model, tok = models.load_model(source, device=mc.device, dtype=mc.dtype)
        return model, tok, None

    def train(
        self, cfg, model, tokenizer, dataset, reward_fn, steps, work_dir, seed, peft_config,
        problems, role,
    ):  # fmt: skip
        from sparring.backends.budget import completion_targets
        from sparring.backends.torch.grpo import run_grpo

        return run_grpo(
            model, tokenizer, dataset, reward_fn, cfg, steps, work_dir, seed, peft_config,
            reference_solutions=completion_targets(problems, role, cfg.steps.generator_tests),
        )  # fmt: skip

    def sft(self, cfg, model, tokenizer, rows, peft_config, seed):
        from sparring.backends.torch.sft import run_sft

        return run_sft(cfg, model, tokenizer, rows, peft_config, seed)

    def save_trained(
        self, cfg: Any, model: Any, tokenizer: Any, out_dir: str, record: dict
    ) -> None:
        from sparring.backends.torch import models

        if hasattr(model, "peft_config") and "ref" in model.peft_config:
            model.delete_adapter("ref")  # TRL's frozen reference copy (beta > 0)
        models.save_model(model, tokenizer, out_dir, record)
        if hasattr(model, "sparring_sources"):  # shared base: the adapter now equals the artifact
            model.sparring_sources[record["role"]] = out_dir

    def load_frozen(self, cfg: Any, path: str) -> tuple[Any, Any]:
        from sparring.backends.torch import models

        mc = cfg.model_for("answerer")
        if cfg.topology == "shared":
            model, tok = models.shared_peft_model(
                cfg.shared_model, cfg.lora, device=mc.device, dtype=mc.dtype
            )
            meta = models.read_meta(path) if os.path.isdir(path) else None
            source = path if meta and meta.get("tuning_mode") == "lora" else None
            models.ensure_adapter(model, "answerer", source, cfg.lora)
            return model, tok
        return models.load_model(path, device=mc.device, dtype=mc.dtype, merge=True)

    def load_for_sampling(
        self, name_or_path: str, *, device: str = "auto", dtype: str = "auto"
    ) -> tuple[Any, Any]:
        from sparring.backends.torch.models import load_model

        return load_model(name_or_path, device=device, dtype=dtype, merge=True)

    def use_role(self, model: Any, role: str) -> None:
        if hasattr(model, "sparring_sources"):  # models.shared_peft_model: one adapter per role
            model.set_adapter(role)

    def load_policy(self, cfg: Any, base: str, roles: list[str], init_dir: str | None) -> Any:
        from sparring.backends.torch.policy import TorchPolicy

        return TorchPolicy(cfg, base, roles, init_dir)

    def sample(
        self, model: Any, tokenizer: Any, messages_batch: list[Messages], *, max_new_tokens: int,
        temperature: float, top_p: float = 1.0, num_samples: int = 1, seed: int = 0,
        progress: bool = False, batch_size: int = 32,
    ) -> Sampled:  # fmt: skip
        from sparring.backends.torch.generation import sample

        return sample(
            model, tokenizer, messages_batch, max_new_tokens=max_new_tokens,
            temperature=temperature, top_p=top_p, num_samples=num_samples, seed=seed,
            progress=progress, batch_size=batch_size,
        )  # fmt: skip
