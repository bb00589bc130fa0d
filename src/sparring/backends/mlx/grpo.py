"""GRPO with LoRA on MLX: a real update loop, the MLX twin of TRL's GRPOTrainer as Sparring uses it.

Covers: `train_grpo(...)`: sample a group per prompt, reward through a TRL-style `reward_fn`,
group-relative advantages (`sparring.engine.credit.group_advantages`), then one Adam step per
batch through `sparring.backends.mlx.step.policy_step`, the MLX policy-gradient step the engine's
policy shares: the clipped loss (ratio 1, as TRL with `num_iterations=1`), optional KL term
(`beta > 0`, reference = LoRA off), TRL loss aggregations (`dapo` default, `grpo`, `bnpo`,
`dr_grpo`), grad-norm clip 1.0; the step's metrics (reward mean and group std, share of flat
groups, completion length, step time).

Does not cover: gradient accumulation, multiple updates per batch (`num_iterations > 1`),
quantized training, vLLM. `mlx` is imported lazily.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from sparring.backends.base import LOSS_TYPES
from sparring.backends.mlx.generation import decode, encode, sample_ids
from sparring.backends.mlx.models import add_lora, hf_tokenizer, require_mlx
from sparring.backends.mlx.step import policy_step


def _group_std(rewards: list[float | None], groups: list[int]) -> list[float]:
    by: dict[int, list[float]] = {}
    for r, g in zip(rewards, groups, strict=True):
        if r is not None:
            by.setdefault(g, []).append(float(r))
    stds = []
    for values in by.values():
        mean = sum(values) / len(values)
        stds.append((sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5)
    return stds


def train_grpo(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    reward_fn: Callable[..., list[float | None]],
    *,
    steps: int,
    num_generations: int,
    learning_rate: float,
    epsilon: float,
    beta: float = 0.0,
    max_completion_length: int,
    temperature: float,
    seed: int,
    lora: dict[str, Any],
    batch_size: int | None = None,
    top_p: float = 1.0,
    loss_type: str = "dapo",
    max_prompt_length: int | None = None,
    max_grad_norm: float = 1.0,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """GRPO with LoRA for `steps` optimizer steps; returns one metrics dict per step.

    Each step takes `batch_size // num_generations` prompts (default one; `batch_size` counts
    completions, like TRL's per-device batch) from `rows` in seeded epoch order, samples
    `num_generations` completions each, rewards them with
    `reward_fn(prompts=, completions=[[{"role": "assistant", "content": text}]], **columns)`,
    and takes one Adam step on the clipped surrogate over completion tokens (the terminating EOS
    included). The model keeps its LoRA layers (trained in place)."""
    require_mlx()
    import mlx.optimizers as optim

    from sparring.engine.credit import group_advantages

    if not rows:
        raise ValueError("train_grpo needs at least one row")
    if num_generations < 2:
        raise ValueError("num_generations must be >= 2 (a GRPO group)")
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    batch = batch_size if batch_size is not None else num_generations
    if batch % num_generations:
        raise ValueError(f"batch_size {batch} must be a multiple of num_generations")
    n_prompts = batch // num_generations

    add_lora(model, lora, seed=seed)
    optimizer = optim.Adam(learning_rate=learning_rate)
    eos = hf_tokenizer(tokenizer).eos_token_id
    rng = random.Random(seed)
    order: list[int] = []
    encoded: dict[int, list[int]] = {}

    history: list[dict[str, float]] = []
    for step in range(steps):
        start = time.perf_counter()
        picked = []
        for _ in range(n_prompts):
            if not order:
                order = list(range(len(rows)))
                rng.shuffle(order)
            picked.append(order.pop())
        for i in picked:
            if i not in encoded:
                encoded[i] = encode(tokenizer, rows[i]["prompt"], max_prompt_length)
        prompt_ids = [encoded[i] for i in picked for _ in range(num_generations)]
        groups = [g for g in range(n_prompts) for _ in range(num_generations)]
        comp_ids = sample_ids(
            model,
            tokenizer,
            prompt_ids,
            max_new_tokens=max_completion_length,
            temperature=temperature,
            top_p=top_p,
            seed=seed * 100_003 + step,
        )
        texts = [decode(tokenizer, c) for c in comp_ids]
        columns = {
            k: [rows[i][k] for i in picked for _ in range(num_generations)]
            for k in rows[picked[0]]
            if k != "prompt"
        }
        rewards = list(
            reward_fn(
                prompts=[rows[i]["prompt"] for i in picked for _ in range(num_generations)],
                completions=[[{"role": "assistant", "content": t}] for t in texts],
                **columns,
            )
        )
        advantages = group_advantages(rewards, groups)

        # the terminating EOS is trained when the completion stopped before the budget
        completions = [
            [*c, eos] if len(c) < max_completion_length and eos is not None else list(c)
            for c in comp_ids
        ]
        step_metrics = policy_step(
            model, optimizer, prompt_ids, completions, advantages,
            pad=eos if eos is not None else 0, temperature=temperature, epsilon=epsilon,
            loss_type=loss_type, max_completion_length=max_completion_length, beta=beta,
            max_grad_norm=max_grad_norm,
        )  # fmt: skip

        valid = [float(r) for r in rewards if r is not None]
        stds = _group_std(rewards, groups)
        n_done = sum(len(c) for c in comp_ids)
        metrics = {
            "loss": step_metrics["loss"],
            "reward_mean": sum(valid) / len(valid) if valid else 0.0,
            "reward_std": sum(stds) / len(stds) if stds else 0.0,
            "frac_reward_zero_std": (sum(1 for s in stds if s == 0.0) / len(stds) if stds else 1.0),
            "step_time_s": time.perf_counter() - start,
            "completion_length": n_done / len(comp_ids),
        }
        history.append(metrics)
        if on_step is not None:
            on_step(step, metrics)
    return history
