"""Rollouts through a server, overlapped with training: sample step k+1 while step k trains.

Covers: `sample_rollouts` (one step's groups: `group_size` completions per conversation from
the latest published version, requested all at once; the client bounds concurrency; each
completion rewarded by `reward_fn(item, text)`), and `run` with `overlap` on or off:

- off: sample a step, train on it, publish, repeat (on-policy; generation and training take
  turns).
- on: a producer task samples step k+1 as soon as the trainer has taken step k, while the
  trainer, in a worker thread, trains on step k and publishes; so each step after the first
  was sampled one version behind (the trainer drops rollouts more than `max_staleness`
  behind: with 0, every overlapped step is dropped).

After every optimizer step the adapter is saved as `<work_dir>/v<k>` and published as version
k (`Publisher.publish`), so the next requests sample from it without a restart.

Does not cover: the trainer's loss (sparring.serving.offpolicy) or the engine
(sparring.serving.engines).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparring.serving.client import Messages, ModelClient
from sparring.serving.offpolicy import OffPolicyTrainer, Rollout
from sparring.serving.publisher import Publisher

RewardFn = Callable[[Any, str], float]


async def sample_rollouts(
    client: ModelClient,
    model: str | None,
    items: Sequence[Any],
    to_messages: Callable[[Any], Messages],
    reward_fn: RewardFn,
    *,
    group_size: int,
    max_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    first_group: int = 0,
) -> list[Rollout]:
    """`group_size` rewarded rollouts per item, sampled from `model` (None: the base)."""
    conversations = [to_messages(item) for item in items]
    groups = await asyncio.gather(
        *(
            client.complete(
                m,
                model=model,
                temperature=temperature,
                top_p=top_p,
                max_tokens=max_tokens,
                n=group_size,
            )
            for m in conversations
        )
    )
    out = []
    for g, (item, messages, completions) in enumerate(
        zip(items, conversations, groups, strict=True)
    ):
        for c in completions:
            out.append(Rollout(messages, c, float(reward_fn(item, c.text)), first_group + g))
    return out


async def run(
    trainer: OffPolicyTrainer,
    client: ModelClient,
    publisher: Publisher,
    batches: Sequence[Sequence[Any]],
    to_messages: Callable[[Any], Messages],
    reward_fn: RewardFn,
    *,
    name: str,
    base: str,
    work_dir: str,
    overlap: bool,
    group_size: int = 4,
    max_tokens: int = 64,
    temperature: float = 1.0,
) -> dict[str, Any]:
    """One training step per batch of items; returns per-step metrics and the wall time."""
    steps: list[dict[str, float]] = []

    async def sample(index: int) -> list[Rollout]:
        return await sample_rollouts(
            client,
            publisher.served_name(name),
            batches[index],
            to_messages,
            reward_fn,
            group_size=group_size,
            max_tokens=max_tokens,
            temperature=temperature,
            first_group=index * 10_000,
        )

    def train_and_publish(rollouts: list[Rollout]) -> dict[str, float]:
        metrics = trainer.step(rollouts)
        folder = trainer.save_adapter(str(Path(work_dir) / f"v{trainer.version}"), base, name)
        published = publisher.publish(name, folder)
        if published != trainer.version:
            raise RuntimeError(
                f"published version {published} but the trainer is at {trainer.version}: "
                "start the trainer at publisher.current(name)"
            )
        return metrics

    start = time.perf_counter()
    if not overlap:
        for i in range(len(batches)):
            t0 = time.perf_counter()
            rollouts = await sample(i)
            sampled = time.perf_counter() - t0
            metrics = await asyncio.to_thread(train_and_publish, rollouts)
            steps.append({**metrics, "sample_s": sampled})
    else:
        queue: asyncio.Queue[tuple[list[Rollout], float]] = asyncio.Queue(maxsize=1)

        async def producer() -> None:
            for i in range(len(batches)):
                t0 = time.perf_counter()
                rollouts = await sample(i)
                await queue.put((rollouts, time.perf_counter() - t0))
                await queue.join()  # the next step is sampled while this one trains

        task = asyncio.create_task(producer())
        try:
            for _ in range(len(batches)):
                rollouts, sampled = await queue.get()
                queue.task_done()
                metrics = await asyncio.to_thread(train_and_publish, rollouts)
                steps.append({**metrics, "sample_s": sampled})
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return {"steps": steps, "seconds": time.perf_counter() - start}
