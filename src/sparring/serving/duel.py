"""The code duel's sampling through a server (`serving.mode: server`).

Covers: `sample_frozen` (Backend.sample's contract for the frozen answerer: publish its LoRA
artifact to the server as the next version of `answerer`, then sample through it with
`serving.concurrency` requests in flight; a base-model name samples the served base; on mlx-lm
the adapter folder goes with each request).
The server must already run (`sparring serve BASE`), on the same base model.

Does not cover: the phases (sparring.phases.generator calls this) or starting servers.
"""

from __future__ import annotations

import os
from typing import Any

from sparring.backends.base import read_meta
from sparring.errors import SparringError
from sparring.serving.client import sample_batch
from sparring.serving.engines import RUNTIME_LORA
from sparring.serving.publisher import Publisher


def require_server(url: str) -> None:
    """One clear error when nothing serves the OpenAI API at `url` (serving.mode: server)."""
    from sparring.serving.engines import http_get

    if http_get(f"{url}/v1/models", timeout=5.0)[0] != 200:
        raise SparringError(
            f"serving.url: nothing answers at {url}; start `sparring serve` there or set "
            "serving.mode: in_process"
        )


def served_source(cfg: Any, source: str, role: str = "answerer") -> dict[str, Any]:
    """How to request `source` (an artifact or a name) from `cfg.serving.url`: the keyword
    arguments of `sample_batch` (model name; for mlx-lm the adapter folder and the base the
    server loads it on), publishing a LoRA artifact first. A base-model name: the served base."""
    url = cfg.serving.url
    require_server(url)
    meta = read_meta(source) if source and os.path.isdir(source) else None
    if meta and meta.get("tuning_mode") == "lora":
        publisher = Publisher(url, cfg.serving.engine, keep=cfg.serving.max_staleness + 1)
        publisher.publish(role, source)
        model = publisher.served_name(role)
        if cfg.serving.engine in RUNTIME_LORA:
            return {"model": model}
        from sparring.serving.launch import resolve_source

        return {
            "model": model,
            "adapter_paths": publisher.adapter_paths(),
            "base_model": resolve_source(str(meta.get("base", ""))),
        }
    if meta and meta.get("tuning_mode") == "full":
        raise SparringError(
            f"serving.mode server: {source} is a full checkpoint; a server serves one base, so "
            "sample LoRA answerers through it (tuning_mode: lora) or use serving.mode: in_process"
        )
    return {"model": None}


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
    return sample_batch(
        cfg.serving.url,
        messages_batch,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        num_samples=num_samples,
        concurrency=cfg.serving.concurrency,
        stop_at_fence=cfg.grpo.stop_at_fence,
        **served_source(cfg, source),
    )
