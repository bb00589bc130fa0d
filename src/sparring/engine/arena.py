"""The Arena: registers roles and episodes, plays batches of episodes, builds the training batch.

Covers: `ArtifactStore` (named pools of artifacts with sampling weights: curriculum),
`Arena.call_role` (a role's model call: its system prompt, sampling settings and adapter),
`Arena.call_model` (an oracle's call, the LLM judge: no role, the base model, never training
data), `run_episode` / `generate_rollouts` (episodes played concurrently, bounded by a
semaphore; an episode may spawn children through `generate_rollouts`, and a non-trainable
request makes its whole subtree non-trainable), and `records` (the steps of trainable roles in
trainable rollouts, each with its role's advantage).
Does not cover: sampling (a ModelClient does it: sparring.engine.local in process, or a server)
or updating weights (sparring.phases.game_loop hands records to the backend's policy). Pure.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from sparring.engine.core import (
    Completion,
    Episode,
    EpisodeRequest,
    EpisodeState,
    Messages,
    ModelClient,
    Role,
    Rollout,
    Step,
    TrainingRecord,
)

# Whether the episode being played may produce training data; children inherit it.
_TRAINABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("trainable", default=True)
# Nesting depth of the episode being played: only top-level episodes take a concurrency slot,
# so a parent waiting on its children can never starve them of slots.
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("depth", default=0)


class ArtifactStore:
    """Named pools of artifacts (problems, topics, proposed questions), each with a weight;
    `sample` draws by weight, so raising an artifact's weight is a curriculum."""

    def __init__(self, seed: int = 0) -> None:
        self._pools: dict[str, list[list[Any]]] = {}
        self.rng = random.Random(seed)

    def add(self, pool: str, item: Any, weight: float = 1.0) -> None:
        self._pools.setdefault(pool, []).append([item, float(weight)])

    def extend(self, pool: str, items: Sequence[Any], weight: float = 1.0) -> None:
        for item in items:
            self.add(pool, item, weight)

    def items(self, pool: str) -> list[Any]:
        return [item for item, _ in self._pools.get(pool, [])]

    def size(self, pool: str) -> int:
        return len(self._pools.get(pool, []))

    def sample(self, pool: str, k: int) -> list[Any]:
        """`k` artifacts drawn with replacement, in proportion to their weights."""
        entries = self._pools.get(pool)
        if not entries:
            raise ValueError(f"artifact pool {pool!r} is empty")
        weights = [max(w, 0.0) for _, w in entries]
        if sum(weights) <= 0:
            weights = [1.0] * len(entries)
        return [e[0] for e in self.rng.choices(entries, weights=weights, k=k)]

    def reweight(self, pool: str, fn: Callable[[Any, float], float]) -> None:
        for entry in self._pools.get(pool, []):
            entry[1] = float(fn(entry[0], entry[1]))


def artifact_key(artifact: Any) -> Hashable:
    """A hashable identity of an artifact (dataclasses and dicts included)."""
    key = getattr(artifact, "id", None)
    if key is not None:
        return ("id", key)
    try:
        hash(artifact)
        return artifact
    except TypeError:
        return json.dumps(artifact, sort_keys=True, default=repr)


class Arena:
    """Roles, episodes and the artifact store, over one ModelClient."""

    def __init__(self, client: ModelClient, *, concurrency: int = 64, seed: int = 0) -> None:
        self.client = client
        self.roles: dict[str, Role] = {}
        self.episodes: dict[str, Episode] = {}
        self.store = ArtifactStore(seed)
        self.calls: Counter[str | None] = Counter()  # model calls per role (None: oracles)
        self.judge_adapter: str | None = None  # a frozen role's adapter the judge uses
        self._limit = asyncio.Semaphore(concurrency) if concurrency > 0 else None

    def add_role(self, role: Role) -> None:
        self.roles[role.id] = role

    def add_episode(self, name: str, episode: Episode) -> None:
        self.episodes[name] = episode

    def role(self, role_id: str) -> Role:
        try:
            return self.roles[role_id]
        except KeyError:
            raise KeyError(f"no role {role_id!r}; the arena has {sorted(self.roles)}") from None

    async def call_role(self, role_id: str, messages: Messages) -> Step:
        role = self.role(role_id)
        full = list(messages)
        if role.system_prompt and not (full and full[0].get("role") == "system"):
            full = [{"role": "system", "content": role.system_prompt}, *full]
        (completion,) = await self.client.complete(
            full,
            model=role.sampling_adapter,
            temperature=role.temperature,
            top_p=role.top_p,
            max_tokens=role.max_tokens,
            stop_at_fence=role.stop_at_fence,
        )
        self.calls[role_id] += 1
        return Step(
            role_id,
            full,
            completion.text,
            completion.policy_version,
            completion.finish_reason,
            role.temperature,
        )

    async def call_model(
        self, messages: str | Messages, *, temperature: float = 0.3, max_tokens: int = 64
    ) -> Completion:
        """An oracle's call (the LLM judge): no role, the base model (or `judge_adapter`, a
        frozen role's), never training data."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        (completion,) = await self.client.complete(
            messages, model=self.judge_adapter, temperature=temperature, max_tokens=max_tokens
        )
        self.calls[None] += 1
        return completion

    async def run_episode(self, request: EpisodeRequest) -> Rollout:
        episode = self.episodes.get(request.episode)
        if episode is None:
            raise KeyError(f"no episode {request.episode!r}; the arena has {sorted(self.episodes)}")
        trainable = _TRAINABLE.get() and request.is_trainable
        depth = _DEPTH.get()
        token, depth_token = _TRAINABLE.set(trainable), _DEPTH.set(depth + 1)
        try:
            if self._limit is not None and depth == 0:
                async with self._limit:
                    state = await episode.rollout(self, request.artifact, EpisodeState())
            else:
                state = await episode.rollout(self, request.artifact, EpisodeState())
        finally:
            _TRAINABLE.reset(token)
            _DEPTH.reset(depth_token)
        group = request.group
        if group is None:
            group = (request.episode, artifact_key(request.artifact))
        rollout = Rollout(
            episode=request.episode,
            artifact=request.artifact,
            steps=state.steps,
            extras=episode.get_extras(state),
            children=state.children,
            is_trainable=trainable,
            group=group,
        )
        await episode.rubric.score(rollout, self)
        return rollout

    async def generate_rollouts(self, requests: Sequence[EpisodeRequest]) -> list[Rollout]:
        """Play every request concurrently; results in request order."""
        return list(await asyncio.gather(*(self.run_episode(r) for r in requests)))

    def records(self, roots: Sequence[Rollout]) -> list[TrainingRecord]:
        """Training data: each step of a trainable role, in a trainable rollout whose rubric
        rewarded that role, with the role's advantage. Oracle calls were never steps."""
        out: list[TrainingRecord] = []
        for root in roots:
            for rollout in root.walk():
                if not rollout.is_trainable:
                    continue
                for step in rollout.steps:
                    role = self.roles.get(step.role)
                    if role is None or not role.trainable or step.role not in rollout.advantages:
                        continue
                    out.append(
                        TrainingRecord(
                            role=step.role,
                            messages=step.messages,
                            completion=step.completion,
                            advantage=rollout.advantages[step.role],
                            policy_version=step.policy_version,
                            reward=rollout.rewards.get(step.role, 0.0),
                            episode=rollout.episode,
                            finish_reason=step.finish_reason,
                            temperature=step.temperature,
                        )
                    )
        return out
