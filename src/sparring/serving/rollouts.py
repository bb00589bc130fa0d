"""Single-role GRPO through a server, sampling overlapped with training: sample step k+1 while
step k trains.

Covers:
- `served_record`: a server's sample as the engine's `TrainingRecord`, carrying the sampled
  token ids, the sampler's log-probabilities and its group (the advantage is set at the step);
- `sample_records`: one step's groups, `group_size` completions per conversation from the
  latest published version, requested all at once (the client bounds concurrency), each
  completion rewarded by `reward_fn(item, text)`;
- `train_step`: what the trainer does with one step's records: drop the ones more than
  `max_staleness` versions behind the latest published version (`versions.split_stale`) and
  the ones without token log-probabilities, give the rest GRPO advantages within their group
  (`sparring.engine.credit.group_advantages`), leave out the zero ones (no signal), and take the
  policy's one update on them (`Policy.train`; on torch the ratio is pi_now / pi_sampler from
  the records' sampler log-probabilities, PPO-clipped: sparring.backends.torch.policy); then
  the step's metrics (dropped, trained, mean staleness, loss, clipped share, mean truncated
  importance weight, step time);
- `run` with `overlap` on or off:
  - off: sample a step, train on it, publish, repeat (on-policy; generation and training take
    turns).
  - on: a producer task samples step k+1 as soon as the trainer has taken step k, while the
    trainer, in a worker thread, trains on step k and publishes; so each step after the first
    was sampled one version behind (dropped when `max_staleness` is 0).

After every step the policy's adapter is saved as `<work_dir>/v<k>/<name>` and published as
version k (`Publisher.publish`), so the next requests sample from it without a restart.

Why not the engine's server mode (sparring.serving.game, `serving.mode: server`): that plays a
game's episodes through the Arena, play-then-train, and its client asks for no token
log-probabilities; this loop overlaps sampling with the update, which the engine's runner does
not, and is what `make bench-serving` times. Both train with the same policy step.

Does not cover: the loss (sparring.backends.torch.policy), the server (sparring.serving.engines),
the engine's games (sparring.serving.game).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparring.engine.core import TrainingRecord
from sparring.engine.credit import group_advantages
from sparring.serving.client import Messages, ModelClient, ServerCompletion
from sparring.serving.publisher import Publisher
from sparring.serving.versions import split_stale

RewardFn = Callable[[Any, str], float]


def served_record(
    role: str, messages: Messages, completion: ServerCompletion, reward: float, group: int
) -> TrainingRecord:
    """A server's sample as a training record (advantage 0 until `train_step` credits it).
    Temperature 1: vLLM reports the log-probabilities of the model's raw distribution, before
    the sampling temperature, so the trainer scores the tokens the same way."""
    return TrainingRecord(
        role=role,
        messages=messages,
        completion=completion.text,
        advantage=0.0,
        policy_version=completion.policy_version,
        reward=float(reward),
        finish_reason=completion.finish_reason,
        temperature=1.0,
        token_ids=tuple(getattr(completion, "token_ids", ()) or ()),
        sampler_logprobs=tuple(getattr(completion, "logprobs", ()) or ()),
        group=group,
    )


async def sample_records(
    client: ModelClient,
    model: str | None,
    items: Sequence[Any],
    to_messages: Callable[[Any], Messages],
    reward_fn: RewardFn,
    *,
    role: str,
    group_size: int,
    max_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    first_group: int = 0,
) -> list[TrainingRecord]:
    """`group_size` rewarded records of `role` per item, sampled from `model` (None: the base)."""
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
            out.append(served_record(role, messages, c, reward_fn(item, c.text), first_group + g))
    return out


def credit(records: Sequence[TrainingRecord]) -> list[TrainingRecord]:
    """The records worth a gradient: those with the sampler's token log-probabilities, with
    GRPO advantages within their group, the zero ones (a flat group) left out."""
    usable = [r for r in records if r.token_ids and r.sampler_logprobs]
    advantages = group_advantages([r.reward for r in usable], [r.group for r in usable])
    return [
        dataclasses.replace(r, advantage=a)
        for r, a in zip(usable, advantages, strict=True)
        if a != 0.0
    ]


def train_step(
    policy: Any, records: Sequence[TrainingRecord], *, version: int, max_staleness: int
) -> dict[str, float]:
    """Drop the records more than `max_staleness` versions behind `version` (the latest
    published, i.e. the policy's weights), then one update of `policy` on the rest; metrics.
    The step makes version + 1 even when nothing was left to train on."""
    start = time.perf_counter()
    kept, dropped = split_stale(records, version, max_staleness)
    trained = credit(kept)
    metrics = {
        "rollouts": float(len(records)),
        "dropped_stale": float(len(dropped)),
        "trained": float(len([r for r in kept if r.token_ids and r.sampler_logprobs])),
        "loss": 0.0,
        "mean_staleness": (
            sum(version - r.policy_version for r in kept) / len(kept) if kept else 0.0
        ),
    }
    update = policy.train(trained)  # no records: no optimizer step, the version still moves
    for role in {r.role for r in trained}:
        metrics["loss"] = update.get(f"loss/{role}", 0.0)
        # Only an update that used the sampler's log-probabilities measures these; a default
        # here would read as "on-policy" when nothing was measured.
        if f"is_weight/{role}" in update:
            metrics["clipped_share"] = update[f"clipped_share/{role}"]
            metrics["mean_is_weight"] = update[f"is_weight/{role}"]  # truncated at 2
    metrics["version"] = float(version + 1)
    metrics["step_s"] = time.perf_counter() - start
    return metrics


async def run(
    policy: Any,
    client: ModelClient,
    publisher: Publisher,
    batches: Sequence[Sequence[Any]],
    to_messages: Callable[[Any], Messages],
    reward_fn: RewardFn,
    *,
    name: str,
    work_dir: str,
    overlap: bool,
    max_staleness: int = 1,
    group_size: int = 4,
    max_tokens: int = 64,
    temperature: float = 1.0,
) -> dict[str, Any]:
    """One training step of `policy`'s adapter `name` per batch of items, each published as
    `name`'s next version; returns per-step metrics and the wall time."""
    if name not in getattr(policy, "roles", [name]):
        raise ValueError(f"the policy has no adapter {name!r} (its roles: {policy.roles})")
    steps: list[dict[str, float]] = []

    async def sample(index: int) -> list[TrainingRecord]:
        return await sample_records(
            client,
            publisher.served_name(name),
            batches[index],
            to_messages,
            reward_fn,
            role=name,
            group_size=group_size,
            max_tokens=max_tokens,
            temperature=temperature,
            first_group=index * 10_000,
        )

    def train_and_publish(records: list[TrainingRecord]) -> dict[str, float]:
        version = publisher.current(name)
        metrics = train_step(policy, records, version=version, max_staleness=max_staleness)
        folder = Path(work_dir) / f"v{version + 1}"
        policy.save(str(folder), {"version": version + 1})
        published = publisher.publish(name, folder / name)
        if published != version + 1:
            raise RuntimeError(f"published version {published} of {name}, expected {version + 1}")
        return metrics

    start = time.perf_counter()
    if not overlap:
        for i in range(len(batches)):
            t0 = time.perf_counter()
            records = await sample(i)
            sampled = time.perf_counter() - t0
            metrics = await asyncio.to_thread(train_and_publish, records)
            steps.append({**metrics, "sample_s": sampled})
    else:
        queue: asyncio.Queue[tuple[list[TrainingRecord], float]] = asyncio.Queue(maxsize=1)

        async def producer() -> None:
            for i in range(len(batches)):
                t0 = time.perf_counter()
                records = await sample(i)
                await queue.put((records, time.perf_counter() - t0))
                await queue.join()  # the next step is sampled while this one trains

        task = asyncio.create_task(producer())
        try:
            for _ in range(len(batches)):
                records, sampled = await queue.get()
                queue.task_done()
                metrics = await asyncio.to_thread(train_and_publish, records)
                steps.append({**metrics, "sample_s": sampled})
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return {"steps": steps, "seconds": time.perf_counter() - start}
