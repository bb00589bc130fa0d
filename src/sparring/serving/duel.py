"""The code duel's sampling through a server (`serving.mode: server`).

Covers: `ServedAnswerer` (sparring.backends.sampler's Answerer for the frozen answerer: publish its
LoRA
artifact to the server as the next version of `answerer`, then sample through it with
`serving.concurrency` requests in flight; a base-model name samples the served base; on mlx-lm
the adapter folder goes with each request).
The server must already run (`sparring serve BASE`), on the same base model.

Does not cover: the phases (sparring.phases.generator calls this) or starting servers.
"""

from __future__ import annotations

import os
import time
from typing import Any

from sparring.backends.base import Sampled, read_meta
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


class ServedAnswerer:
    """sparring.backends.sampler's Answerer for a model behind `cfg.serving.url`: `source` (a LoRA
    artifact, published to the server as the next version of `answerer` at the first request,
    or a base-model name, the served base) sampled with `serving.concurrency` requests in
    flight. `tokenizer` is the local one (it sizes completion budgets); the server's seed is
    its own."""

    def __init__(self, cfg: Any, source: str, tokenizer: Any = None) -> None:
        self.cfg, self.source, self.tokenizer = cfg, source, tokenizer
        self._request: dict[str, Any] | None = None

    def sample(
        self, messages_batch: list[list[dict[str, str]]], *, max_new_tokens: int,
        temperature: float, top_p: float, num_samples: int, seed: int = 0, bar: bool = False,
    ) -> Sampled:  # fmt: skip
        if self._request is None:
            self._request = served_source(self.cfg, self.source)
        start = time.perf_counter()
        texts = sample_batch(
            self.cfg.serving.url,
            messages_batch,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            num_samples=num_samples,
            concurrency=self.cfg.serving.concurrency,
            stop_at_fence=self.cfg.grpo.stop_at_fence,
            **self._request,
        )
        return Sampled(texts, seconds=time.perf_counter() - start)
