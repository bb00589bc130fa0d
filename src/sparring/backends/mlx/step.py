"""The one policy-gradient step on MLX, shared by the code duel's GRPO loop and the engine's policy.

Covers: `policy_step(model, optimizer, prompt_ids, completion_ids, advantages, ...)`: prompt +
completion token ids right-padded into one batch, completion-token log-probabilities (logits
divided by the sampling temperature; the LM head runs on completion positions only), TRL's
clipped surrogate -min(r * A, clip(r, 1 - eps, 1 + eps) * A) with r = 1 (the old policy is this
one: one update per batch of fresh samples), an optional KL term to the base (`beta > 0`,
reference = LoRA off, TRL's k3 estimator), TRL's loss aggregations (`dapo`, `bnpo`, `grpo`,
`dr_grpo`), the grad norm clipped at `max_grad_norm`, one optimizer update; returns the loss and
the grad norm before clipping. `token_logprobs` and `aggregate` are its parts.
Callers: `sparring.backends.mlx.grpo.train_grpo` (sampled ids, group advantages of a GRPO step)
and `sparring.backends.mlx.policy.MlxPolicy.train` (the engine's training records).
Does not cover: sampling, advantages (the callers bring them), old log-probabilities from a
sampler (off-policy ratios: torch only, sparring.backends.torch.policy), micro-batching.
`mlx` is imported only when a function runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparring.backends.base import LOSS_TYPES
from sparring.backends.mlx.models import set_lora_scale


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


def token_logprobs(
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


def aggregate(per_token: Any, mask: Any, loss_type: str, max_completion_length: int) -> Any:
    """TRL's loss aggregations: `grpo` (mean over each row's tokens, then over rows), `dr_grpo`
    (sum over rows x max_completion_length), `dapo` and `bnpo` (mean over the batch's tokens)."""
    import mlx.core as mx

    if loss_type == "grpo":
        per_seq = (per_token * mask).sum(axis=1) / mx.maximum(mask.sum(axis=1), 1.0)
        return per_seq.mean()
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (mask.shape[0] * max_completion_length)
    return (per_token * mask).sum() / mx.maximum(mask.sum(), 1.0)  # dapo, bnpo


def _batch(
    prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]], pad: int
) -> tuple[Any, Any, Any, Any]:
    """(inputs, targets, index, mask): prompt + completion right-padded; the loss only reads
    completion positions, and causal attention makes right padding harmless."""
    import mlx.core as mx

    seqs = [list(p) + list(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
    starts = [len(p) for p in prompt_ids]
    lengths = [len(c) for c in completion_ids]
    width = max(len(s) for s in seqs)
    tokens = mx.array([s + [pad] * (width - len(s)) for s in seqs])
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    # completion token k of row b is targets[b, starts[b] - 1 + k]
    k = mx.arange(max(lengths))[None, :]
    index = mx.minimum(mx.array(starts)[:, None] - 1 + k, width - 2)
    mask = (k < mx.array(lengths)[:, None]).astype(mx.float32)
    return inputs, targets, index, mask


def policy_step(
    model: Any,
    optimizer: Any,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    advantages: Sequence[float],
    *,
    pad: int,
    temperature: float,
    epsilon: float,
    loss_type: str = "dapo",
    max_completion_length: int,
    beta: float = 0.0,
    max_grad_norm: float = 1.0,
) -> dict[str, float]:
    """One optimizer update of `model`'s trainable parameters on the completions (each at least
    one token; trained as given, EOS included if the caller appended it); returns
    {"loss", "grad_norm"} (the norm before clipping). The model is left in eval mode."""
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim

    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    inputs, targets, index, mask = _batch(prompt_ids, completion_ids, pad)
    adv = mx.array([float(a) for a in advantages], dtype=mx.float32)

    def loss_fn(inputs: Any, targets: Any, index: Any, mask: Any, adv: Any, ref: Any) -> Any:
        lp = token_logprobs(model, inputs, targets, temperature, index)
        ratio = mx.exp(lp - mx.stop_gradient(lp))  # old policy = this policy (one update/batch)
        clipped = mx.clip(ratio, 1.0 - epsilon, 1.0 + epsilon)
        per_token = -mx.minimum(ratio * adv[:, None], clipped * adv[:, None])
        if ref is not None:
            diff = ref - lp
            per_token = per_token + beta * (mx.exp(diff) - diff - 1.0)
        return aggregate(per_token, mask, loss_type, max_completion_length)

    model.train()  # LoRA dropout on, as in TRL training
    ref = None
    if beta > 0.0:
        old = set_lora_scale(model, 0.0)
        ref = mx.stop_gradient(token_logprobs(model, inputs, targets, temperature, index))
        mx.eval(ref)
        set_lora_scale(model, old)
    loss, grads = nn.value_and_grad(model, loss_fn)(inputs, targets, index, mask, adv, ref)
    if max_grad_norm > 0:
        grads, norm = optim.clip_grad_norm(grads, max_grad_norm)
    else:
        _, norm = optim.clip_grad_norm(grads, float("inf"))
    optimizer.update(model, grads)
    mx.eval(loss, norm, model.trainable_parameters(), optimizer.state)
    model.eval()
    return {"loss": float(loss.item()), "grad_norm": float(norm.item())}
