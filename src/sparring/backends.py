"""Which library loads, samples and trains a model: torch (transformers, TRL, PEFT) or MLX.

Covers the calls that the phases, evaluation and inference share whatever the backend:
`backend_of` (an artifact says which backend wrote it), `load_for_sampling`, `sample`, and
`train_mlx` (GRPO with LoRA through `sparring.mlx_backend`; the torch path lives in
`sparring.training.grpo`). Does not cover: model formats (sparring.models, sparring.mlx_backend).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from sparring.config import Config
from sparring.models import read_meta

Messages = list[dict[str, str]]


def backend_of(name_or_path: str, default: str = "torch") -> str:
    """ "mlx" for an artifact written by the MLX backend, else `default`."""
    if name_or_path and os.path.isdir(name_or_path):
        meta = read_meta(name_or_path) or {}
        if meta.get("backend") == "mlx":
            return "mlx"
    return default


def load_for_sampling(
    backend: str, name_or_path: str, *, device: str = "auto", dtype: str = "auto"
) -> tuple[Any, Any]:
    """(model, tokenizer) ready to sample; LoRA adapters are applied (merged on torch)."""
    if backend == "mlx":
        from sparring import mlx_backend

        return mlx_backend.load(name_or_path)
    from sparring.models import load_model

    return load_model(name_or_path, device=device, dtype=dtype, merge=True)


def sample(
    backend: str,
    model: Any,
    tokenizer: Any,
    messages_batch: list[Messages],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int = 0,
    progress: bool = False,
) -> list[list[str]]:
    """`num_samples` completions per prompt (greedy at temperature 0), on either backend."""
    kwargs = dict(
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        num_samples=num_samples,
        seed=seed,
    )
    if backend == "mlx":
        from sparring import mlx_backend

        return mlx_backend.generate(model, tokenizer, messages_batch, **kwargs)
    from sparring.generation import generate

    return generate(model, tokenizer, messages_batch, progress=progress, **kwargs)


def train_mlx(
    cfg: Config,
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    reward_fn: Any,
    steps: int,
    seed: int,
) -> dict[str, float]:
    """GRPO with LoRA on MLX for `steps` steps; returns metrics averaged over the steps."""
    from sparring import mlx_backend

    g = cfg.grpo
    history = mlx_backend.train_grpo(
        model,
        tokenizer,
        rows,
        reward_fn,
        steps=steps,
        num_generations=g.num_generations,
        learning_rate=g.learning_rate,
        epsilon=g.epsilon,
        beta=g.beta,
        max_completion_length=g.max_completion_length,
        temperature=g.temperature,
        seed=seed,
        lora=dataclasses.asdict(cfg.lora),
        batch_size=g.per_device_batch_size,
        top_p=g.top_p,
        loss_type=g.loss_type,
        max_prompt_length=g.max_prompt_length,
    )
    keys = sorted({k for row in history for k in row})
    metrics = {f"mlx/{k}": sum(r.get(k, 0.0) for r in history) / len(history) for k in keys}
    metrics["steps"] = float(steps)
    metrics["step_time_s"] = metrics.get("mlx/step_time_s", 0.0)
    return metrics
