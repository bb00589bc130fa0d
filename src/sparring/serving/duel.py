"""The code duel's sampling through a server (`serving.mode: server`).

Covers: `sample_frozen` (Backend.sample's contract for the frozen answerer: publish its LoRA
artifact to the server as the next version of `answerer`, then sample through it with
`serving.concurrency` requests in flight; a base-model pointer samples the served base).
The server must already run (`sparring serve BASE`), on the same base model.

Does not cover: the phases (sparring.phases.generator calls this) or starting servers.
"""

from __future__ import annotations

import os
from typing import Any

from sparring.backends.base import read_meta
from sparring.errors import SparringError
from sparring.serving.client import sample_batch
from sparring.serving.engines import served_models
from sparring.serving.publisher import Publisher


def served_source(cfg: Any, source: str, role: str = "answerer") -> str | None:
    """The model name to request for artifact or name `source` (None: the served base),
    publishing a LoRA artifact first."""
    url = cfg.serving.url
    if not served_models(url):
        raise SparringError(
            f"serving.url: nothing answers at {url}; start `sparring serve` there or set "
            "serving.mode: in_process"
        )
    meta = read_meta(source) if source and os.path.isdir(source) else None
    if meta and meta.get("tuning_mode") == "lora":
        publisher = Publisher(url, cfg.serving.engine, keep=cfg.serving.max_staleness + 1)
        publisher.publish(role, source)
        return publisher.served_name(role)
    if meta and meta.get("tuning_mode") == "full":
        raise SparringError(
            f"serving.mode server: {source} is a full checkpoint; a server serves one base, so "
            "sample LoRA answerers through it (tuning_mode: lora) or use serving.mode: in_process"
        )
    return None


def sample_frozen(
    cfg: Any,
    source: str,
    messages_batch: list[list[dict[str, str]]],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    num_samples: int,
) -> list[list[str]]:
    """`num_samples` completions per conversation from `source` through `cfg.serving.url`."""
    model = served_source(cfg, source)
    return sample_batch(
        cfg.serving.url,
        messages_batch,
        model=model,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        num_samples=num_samples,
        concurrency=cfg.serving.concurrency,
        stop_at_fence=cfg.grpo.stop_at_fence,
    )
