"""MLX sampling: the contract of sparring.backends.torch.generation.sample on MLX.

Covers: `sample(...)` returning a `Sampled` (`generate`: its texts only): chat template,
`num_samples` completions per prompt, greedy at temperature 0, seeded sampling otherwise, cut at
the closing code fence. Does not cover: vLLM or batching across prompts of different lengths
beyond what mlx_lm does. `mlx` is imported lazily.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sparring.backends.base import Messages, Sampled
from sparring.backends.mlx.models import hf_tokenizer, require_mlx
from sparring.backends.text import render_prompt, trim_after_fence


def _render(tokenizer: Any, messages: Messages) -> str:
    return render_prompt(hf_tokenizer(tokenizer), messages)


def encode(tokenizer: Any, messages: Messages, max_prompt_length: int | None = None) -> list[int]:
    ids = list(
        hf_tokenizer(tokenizer).encode(_render(tokenizer, messages), add_special_tokens=False)
    )
    if max_prompt_length is not None and len(ids) > max_prompt_length:
        ids = ids[-max_prompt_length:]  # left-truncated, as TRL does
    return ids


def sample_ids(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
) -> list[list[int]]:
    """Generated token ids per prompt (the stop token excluded), model in eval mode."""
    import mlx.core as mx
    from mlx_lm.generate import batch_generate
    from mlx_lm.sample_utils import make_sampler

    if not prompts:
        return []
    was_training = bool(getattr(model, "training", False))
    model.eval()
    mx.random.seed(seed)
    greedy = temperature <= 0.0
    sampler = make_sampler(0.0 if greedy else temperature, top_p=1.0 if greedy else top_p)
    try:
        out = batch_generate(
            model,
            tokenizer,
            prompts,
            max_tokens=max_new_tokens,
            sampler=sampler,
            return_token_ids=True,
        )
    finally:
        if was_training:
            model.train()
    return [list(ids) for ids in out.token_ids]


def decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return hf_tokenizer(tokenizer).decode(list(ids), skip_special_tokens=True)


def generate(
    model: Any, tokenizer: Any, messages_batch: list[Messages], **kwargs: Any
) -> list[list[str]]:
    """`sample`'s texts only: per conversation, `num_samples` completions."""
    return sample(model, tokenizer, messages_batch, **kwargs).texts


def sample(
    model: Any,
    tokenizer: Any,
    messages_batch: list[Messages],
    *,
    max_new_tokens: int = 128,
    temperature: float = 0.0,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int = 0,
    stop_at_fence: bool = True,
) -> Sampled:
    """Per conversation, `num_samples` completions (strings without the prompt), with the
    tokens sampled and the seconds taken. With `stop_at_fence`, each text is cut just after the
    closing fence of its first python code block, as `sparring.backends.torch.generation.sample`
    does (here after sampling: mlx_lm's batch generator takes stop token sequences only, and the
    opening fence is the same token)."""
    require_mlx()
    if num_samples < 1:
        raise ValueError("num_samples must be >= 1")
    start = time.perf_counter()
    prompts = [encode(tokenizer, m) for m in messages_batch]
    flat = [p for p in prompts for _ in range(num_samples)]
    ids = sample_ids(
        model,
        tokenizer,
        flat,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
    )
    texts = [decode(tokenizer, x) for x in ids]
    fence_stops = 0
    if stop_at_fence:
        trimmed = [trim_after_fence(t) for t in texts]
        fence_stops = sum(a != b for a, b in zip(texts, trimmed, strict=True))
        texts = trimmed
    grouped = [texts[i * num_samples : (i + 1) * num_samples] for i in range(len(messages_batch))]
    return Sampled(grouped, sum(len(x) for x in ids), time.perf_counter() - start, fence_stops)
