"""GRPO with LoRA on MLX: a real update loop, the MLX twin of TRL's GRPOTrainer as Sparring uses it.

Covers: `train_grpo(...)`: sample a group per prompt, reward through a TRL-style `reward_fn`,
group-relative advantages (`sparring.engine.credit.group_advantages`), one Adam step per batch on
the clipped policy-gradient loss (ratio 1, as TRL with `num_iterations=1`), optional KL term
(`beta > 0`, reference = LoRA off), TRL loss aggregations (`dapo` default, `grpo`, `bnpo`,
`dr_grpo`), grad-norm clip 1.0.

Does not cover: gradient accumulation, multiple updates per batch (`num_iterations > 1`),
quantized training, vLLM. `mlx` is imported lazily.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from sparring.backends.mlx.generation import _decode, _encode, _sample_ids
from sparring.backends.mlx.models import _hf, _lora_modules, _require, add_lora

LOSS_TYPES = ("dapo", "grpo", "bnpo", "dr_grpo")


def _set_lora_scale(model: Any, scales: list[float] | float) -> list[float]:
    mods = [m for _, m in _lora_modules(model)]
    old = [m.scale for m in mods]
    for i, m in enumerate(mods):
        m.scale = scales[i] if isinstance(scales, list) else scales
    return old


def _split_head(model: Any) -> tuple[Any, Any] | None:
    """(trunk returning hidden states, LM head) for mlx_lm causal LMs, or None when unknown."""
    trunk = getattr(model, "model", None)
    if trunk is None or not callable(trunk):
        return None
    if "lm_head" in model:
        return trunk, model.lm_head
    embed = getattr(trunk, "embed_tokens", None)
    if embed is not None and hasattr(embed, "as_linear"):
        return trunk, embed.as_linear
    return None


def _token_logprobs(
    model: Any, inputs: Any, targets: Any, temperature: float, index: Any = None
) -> Any:
    """Log-probabilities of `targets` (B, T) given `inputs`; with `index` (B, K) only at those
    positions, so the LM head (the cost of a small model) runs on completion tokens alone."""
    import mlx.core as mx

    parts = _split_head(model) if index is not None else None
    if parts is None:
        logits = model(inputs)
        if index is not None:
            logits = mx.take_along_axis(logits, index[..., None], axis=1)
            targets = mx.take_along_axis(targets, index, axis=1)
    else:
        trunk, head = parts
        hidden = mx.take_along_axis(trunk(inputs), index[..., None], axis=1)
        logits = head(hidden)
        targets = mx.take_along_axis(targets, index, axis=1)
    logits = logits.astype(mx.float32) / temperature
    picked = mx.take_along_axis(logits, targets[..., None], axis=-1).squeeze(-1)
    return picked - mx.logsumexp(logits, axis=-1)


def _aggregate(per_token: Any, mask: Any, loss_type: str, max_completion_length: int) -> Any:
    import mlx.core as mx

    if loss_type == "grpo":
        per_seq = (per_token * mask).sum(axis=1) / mx.maximum(mask.sum(axis=1), 1.0)
        return per_seq.mean()
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (mask.shape[0] * max_completion_length)
    return (per_token * mask).sum() / mx.maximum(mask.sum(), 1.0)  # dapo, bnpo


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
    _require()
    import mlx.core as mx
    import mlx.nn as nn
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
    eos = _hf(tokenizer).eos_token_id
    rng = random.Random(seed)
    order: list[int] = []
    encoded: dict[int, list[int]] = {}

    def loss_fn(inputs: Any, targets: Any, index: Any, mask: Any, adv: Any, ref: Any) -> Any:
        lp = _token_logprobs(model, inputs, targets, temperature, index)
        ratio = mx.exp(lp - mx.stop_gradient(lp))  # old policy = this policy (one update/batch)
        clipped = mx.clip(ratio, 1.0 - epsilon, 1.0 + epsilon)
        per_token = -mx.minimum(ratio * adv[:, None], clipped * adv[:, None])
        if ref is not None:
            diff = ref - lp
            per_token = per_token + beta * (mx.exp(diff) - diff - 1.0)
        return _aggregate(per_token, mask, loss_type, max_completion_length)

    value_and_grad = nn.value_and_grad(model, loss_fn)
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
                encoded[i] = _encode(tokenizer, rows[i]["prompt"], max_prompt_length)
        prompt_ids = [encoded[i] for i in picked for _ in range(num_generations)]
        groups = [g for g in range(n_prompts) for _ in range(num_generations)]
        comp_ids = _sample_ids(
            model,
            tokenizer,
            prompt_ids,
            max_new_tokens=max_completion_length,
            temperature=temperature,
            top_p=top_p,
            seed=seed * 100_003 + step,
        )
        texts = [_decode(tokenizer, c) for c in comp_ids]
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

        # Sequences: prompt + completion (+ EOS when it stopped), right-padded; the loss only
        # reads completion positions, and causal attention makes right padding harmless.
        seqs, starts, ends = [], [], []
        for p, c in zip(prompt_ids, comp_ids, strict=True):
            full = list(p) + list(c)
            if len(c) < max_completion_length and eos is not None:
                full.append(eos)
            seqs.append(full)
            starts.append(len(p))
            ends.append(len(full))
        width = max(ends)
        pad = eos if eos is not None else 0
        tokens = mx.array([s + [pad] * (width - len(s)) for s in seqs])
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        # completion token k of row b is targets[b, starts[b] - 1 + k]
        keep = max(e - s for s, e in zip(starts, ends, strict=True))
        k = mx.arange(keep)[None, :]
        index = mx.minimum(mx.array(starts)[:, None] - 1 + k, width - 2)
        mask = (k < (mx.array(ends) - mx.array(starts))[:, None]).astype(mx.float32)
        adv = mx.array(advantages, dtype=mx.float32)

        model.train()  # LoRA dropout on, as in TRL training
        ref = None
        if beta > 0.0:
            old = _set_lora_scale(model, 0.0)
            ref = _token_logprobs(model, inputs, targets, temperature, index)
            ref = mx.stop_gradient(ref)
            mx.eval(ref)
            _set_lora_scale(model, old)
        loss, grads = value_and_grad(inputs, targets, index, mask, adv, ref)
        if max_grad_norm > 0:
            grads, _ = optim.clip_grad_norm(grads, max_grad_norm)
        optimizer.update(model, grads)
        mx.eval(loss, model.trainable_parameters(), optimizer.state)
        model.eval()

        valid = [float(r) for r in rewards if r is not None]
        stds = _group_std(rewards, groups)
        n_done = sum(len(c) for c in comp_ids)
        metrics = {
            "loss": float(loss.item()),
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
