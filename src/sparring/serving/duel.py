"""The code duel's frozen answerer sampled once over a pool, in process or through a server
(`serving.mode: server`).

Covers: `sample_frozen_pool` (the frozen answerer loaded and sampled on a pool, each training
process sampling a share; the generator phase's frozen answers and the answerer phase's screen),
`sample_frozen_solutions` (one share's samples, through the completion cache when it is on), and
`ServedAnswerer` (sparring.backends.sampler's Answerer for the frozen answerer behind a server:
publish its LoRA artifact to the server as the next version of `answerer`, then sample through
it with `serving.concurrency` requests in flight; a base-model name samples the served base; on
mlx-lm the adapter folder goes with each request). The server must already run (`sparring serve
BASE`), on the same base model.

Does not cover: the phases, which say what is sampled and with which reasoning stages and seed
(sparring.phases.generator, sparring.phases.screen), or starting servers.
"""

from __future__ import annotations

import os
import time
from typing import Any

from sparring import progress as lines
from sparring.backends import sampler
from sparring.backends.base import Sampled, read_meta
from sparring.backends.budget import completion_tokens
from sparring.distributed import ranks
from sparring.errors import SparringError
from sparring.evaluation.completion_cache import identity_if_enabled, loaded_on, through_cache
from sparring.problems import Problem, programs, prompts
from sparring.serving.client import sample_batch
from sparring.serving.engines import RUNTIME_LORA, http_get
from sparring.serving.publisher import Publisher


def require_server(url: str) -> None:
    """One clear error when nothing serves the OpenAI API at `url` (serving.mode: server)."""
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


def sample_frozen_solutions(
    cfg: Any,
    answerer: Any,
    problems: list[Problem],
    stages: list[str],
    seed: int,
    progress: bool = True,
    cached_as: str | None = None,
) -> tuple[list[dict[str, Any]], Sampled]:
    """`steps.frozen_samples` solutions per problem, sampled once ("" when unparseable), and
    what sampling them took; `answerer` is the frozen snapshot loaded in process or, with
    `serving.mode: server`, behind the server. The phase gives the reasoning `stages` its prompts
    hold and the sampling's `seed`. With `cached_as` (the model's name or folder) and the
    completion cache on, the completions come from, or go to, the cache under that model's
    identity: the arms of a study that start from one base model with one seed sample its pool
    once (a hit reports no sampling time)."""
    cache_model = identity_if_enabled(cached_as) if cached_as else None
    settings = {
        "max_new_tokens": completion_tokens(cfg, answerer.tokenizer, problems),
        "temperature": cfg.grpo.temperature, "top_p": cfg.grpo.top_p,
        "num_samples": cfg.steps.frozen_samples, "seed": seed,
    }  # fmt: skip
    fresh: list[Sampled] = []

    def sample() -> list[list[str]]:
        fresh.append(
            sampler.sample_answers(answerer, problems, stages=stages, bar=progress, **settings)
        )
        return fresh[-1].texts

    if cache_model and problems:
        messages = [prompts.answerer_messages(p, stages) for p in problems]
        mc = cfg.model_for("answerer")  # what else decides the tokens: how the model is loaded
        loaded = {"topology": cfg.topology, "configured": [mc.device, mc.dtype],
                  **loaded_on(answerer), "rows": getattr(answerer, "rows", None)}  # fmt: skip
        key = {**settings, **loaded, "purpose": "frozen pool"}
        texts = through_cache(cache_model, messages, key, settings["num_samples"], sample)
        sampled = fresh[0] if fresh else Sampled(texts)
    else:
        sample()
        sampled = fresh[0]
    rows = [
        {
            "problem_id": p.id,
            "solutions": [programs.extract_code(t, p.function_name) or "" for t in samples],
        }
        for p, samples in zip(problems, sampled.texts, strict=True)
    ]
    return rows, sampled


def sample_frozen_pool(
    cfg: Any,
    backend: Any,
    model: str,
    problems: list[Problem],
    stages: list[str],
    seed: int,
    label: str,
) -> tuple[list[dict[str, Any]], Any, Any, dict[str, float]]:
    """`sample_frozen_solutions` of `model` on `problems` (with the reasoning `stages` and the
    `seed` the phase gives), each training process sampling a share and all getting every row;
    in process, or behind the server with `serving.mode: server`. Returns (rows, the loaded
    model, its tokenizer, {"seconds", "tokens_per_s"}); the model is loaded either way (the
    tokenizer sizes budgets; the proposer mode solves with it). One line says what was
    sampled; `label` names the phase in it."""
    start = time.perf_counter()
    frozen, tok = backend.load_frozen(cfg, model)
    served = cfg.serving.mode == "server"
    answerer: Any
    if served:
        answerer = ServedAnswerer(cfg, model, tok)
    else:
        # steps.frozen_rows, else a training rollout's rows: on a CPU a wider decode step costs
        # little more (docs/training.md), and the frozen samples are most of this phase's time
        answerer = sampler.LoadedAnswerer(backend, frozen, tok, cfg.sampling_rows())
    stats: list[Sampled] = []
    cached = None if served else model  # served answers are the server's to reproduce

    def sample_share(part: list[Problem]) -> list[dict[str, Any]]:
        rows, sampled = sample_frozen_solutions(cfg, answerer, part, stages, seed, cached_as=cached)
        stats.append(sampled)
        return rows

    rows = ranks.shard_and_gather(problems, sample_share)
    seconds = time.perf_counter() - start
    if ranks.world().main:
        lines.say(
            f"{lines.LABEL or label} frozen answerer: "
            f"{len(problems) * cfg.steps.frozen_samples} solutions on {len(problems)} problems "
            f"sampled in {lines.fmt_seconds(seconds)}"
        )
    tokens_per_s = stats[0].tokens_per_s if stats else 0.0
    return rows, frozen, tok, {"seconds": seconds, "tokens_per_s": tokens_per_s}
