"""The MLX backend: mlx-lm models, LoRA and a GRPO loop written in MLX (Apple Silicon, or Linux
CPU with `mlx[cpu]`).

Covers: `MlxBackend`, the `sparring.backends.base.Backend` interface on MLX, for the dual
topology with LoRA; the work is in `models` (load, LoRA layers, adapter artifacts),
`generation` (sampling), `step` (the one policy-gradient step), `grpo` (the code duel's GRPO
loop) and `policy` (the engine's policy). Does not cover: full fine-tuning, the
shared topology or the warm start (the config refuses them with `backend: mlx`). `mlx` is
imported only when a method runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sparring.backends.base import Messages, Sampled
from sparring.errors import SparringError


class MlxBackend:
    name = "mlx"

    def load_trainable(self, cfg: Any, role: str, init_model: str | None) -> tuple[Any, ...]:
        """LoRA layers are added (or kept, from an adapter) by `train`."""
        from sparring.backends.mlx.models import load

        model, tok = load(init_model or cfg.model_for(role).name)
        return model, tok, None

    def train(
        self, cfg, model, tokenizer, dataset, reward_fn, steps, work_dir, seed, peft_config,
        problems, role,
    ):  # fmt: skip
        """GRPO with LoRA for `steps` steps; metrics are averaged over the steps (`mlx/...`)."""
        from sparring.backends.budget import completion_tokens
        from sparring.backends.mlx.grpo import train_grpo

        g = cfg.grpo
        history = train_grpo(
            model, tokenizer, dataset.to_list(), reward_fn, steps=steps,
            num_generations=g.num_generations, learning_rate=g.learning_rate,
            epsilon=g.epsilon, beta=g.beta,
            max_completion_length=completion_tokens(cfg, tokenizer, problems, role),
            temperature=g.temperature, seed=seed, lora=dataclasses.asdict(cfg.lora),
            batch_size=g.per_device_batch_size, top_p=g.top_p, loss_type=g.loss_type,
            max_prompt_length=g.max_prompt_length,
        )  # fmt: skip
        keys = sorted({k for row in history for k in row})
        metrics = {f"mlx/{k}": sum(r.get(k, 0.0) for r in history) / len(history) for k in keys}
        metrics["steps"] = float(steps)
        metrics["step_time_s"] = metrics.get("mlx/step_time_s", 0.0)
        return model, metrics

    def sft(self, cfg, model, tokenizer, rows, peft_config, seed):
        raise SparringError(
            "backend: the warm start (warm_start.steps > 0) runs on torch only; "
            "set warm_start.steps: 0 with backend: mlx"
        )

    def save_trained(
        self, cfg: Any, model: Any, tokenizer: Any, out_dir: str, record: dict
    ) -> None:
        from sparring.backends.mlx.models import save_adapter

        save_adapter(model, out_dir, record, tokenizer=tokenizer)

    def load_frozen(self, cfg: Any, path: str) -> tuple[Any, Any]:
        from sparring.backends.mlx.models import load

        return load(path)

    def load_policy(self, cfg: Any, base: str, roles: list[str], init_dir: str | None) -> Any:
        from sparring.backends.mlx.policy import MlxPolicy

        return MlxPolicy(cfg, base, roles, init_dir)

    def load_for_sampling(
        self, name_or_path: str, *, device: str = "auto", dtype: str = "auto"
    ) -> tuple[Any, Any]:
        from sparring.backends.mlx.models import load

        return load(name_or_path)

    def use_role(self, model: Any, role: str) -> None:
        """Nothing to switch: MLX runs the dual topology only (one model per role)."""

    def sample(
        self, model: Any, tokenizer: Any, messages_batch: list[Messages], *, max_new_tokens: int,
        temperature: float, top_p: float = 1.0, num_samples: int = 1, seed: int = 0,
        progress: bool = False, batch_size: int = 32,
    ) -> Sampled:  # fmt: skip
        from sparring.backends.mlx.generation import sample

        return sample(
            model, tokenizer, messages_batch, max_new_tokens=max_new_tokens,
            temperature=temperature, top_p=top_p, num_samples=num_samples, seed=seed,
        )  # fmt: skip
