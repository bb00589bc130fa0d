"""What a game is written in: roles, model calls, episodes, rollouts, rubrics, training records.

Covers:
- `Role`: a participant (system prompt, sampling settings, token limit, trainable or frozen, the
  adapter it samples with);
- `Completion` and `ModelClient`: the one way an episode reaches a model (in process or an
  OpenAI-compatible server), each completion tagged with the policy version that wrote it;
- `Step` (one model call by one role), `EpisodeState` (what an episode accumulates while it
  plays), `EpisodeRequest` (play this episode on this artifact; `is_trainable=False` keeps the
  rollout, and every child it spawns, out of the training batch);
- `Rollout`: a played, scored episode: steps, rewards per role, extras, children, advantages;
- `Episode`: subclass it and write `rollout`; `get_extras` hands data to the rubric; `act` calls a
  role and records the step;
- `Rubric`: weighted reward functions, sync or async, each returning rewards per role;
- `TrainingRecord`: what a trainer consumes (prompt, completion, advantage, policy version; a
  server's sample also carries its token ids, the sampler's log-probabilities and its group).
Does not cover: advantages (sparring.engine.credit), scheduling calls (sparring.engine.arena) or
any model library. Pure: no heavy framework is imported.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Role:
    """A participant. Each role samples with its own adapter (named after the role, or `adapter`);
    the steps of trainable roles become training records, frozen roles' adapters never change."""

    id: str
    system_prompt: str = ""
    temperature: float = 0.9
    top_p: float = 1.0
    max_tokens: int = 128
    trainable: bool = True
    stop_at_fence: bool = False  # code roles: end at the first closed python block
    adapter: str | None = None  # sample with another role's adapter (a frozen copy of it)

    @property
    def sampling_adapter(self) -> str:
        return self.adapter or self.id


@dataclass(frozen=True)
class Completion:
    text: str
    policy_version: int = 0  # version of the weights that wrote it
    finish_reason: str = ""  # "stop" (ended by itself), "length" (hit max_tokens), "" unknown


class ModelClient(Protocol):
    """Samples chat completions. `model` names an adapter (None: the base model)."""

    async def complete(
        self,
        messages: Messages,
        *,
        model: str | None = None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 128,
        n: int = 1,
        stop_at_fence: bool = False,
    ) -> list[Completion]: ...


@dataclass
class Step:
    """One model call of one role: what it saw and what it wrote."""

    role: str
    messages: Messages
    completion: str
    policy_version: int = 0
    finish_reason: str = ""
    temperature: float = 1.0


@dataclass(frozen=True)
class EpisodeRequest:
    """Play episode `episode` on `artifact`. Requests with the same `group` are compared with
    each other by GRPO credit (default: same episode and artifact)."""

    episode: str
    artifact: Any = None
    is_trainable: bool = True
    group: Hashable | None = None


@dataclass
class EpisodeState:
    """What an episode builds while it plays: its steps, its child rollouts and free data."""

    steps: list[Step] = field(default_factory=list)
    children: list[Rollout] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Rollout:
    """A played and scored episode."""

    episode: str
    artifact: Any
    steps: list[Step]
    rewards: dict[str, float] = field(default_factory=dict)  # per role id
    extras: dict[str, Any] = field(default_factory=dict)
    children: list[Rollout] = field(default_factory=list)
    is_trainable: bool = True
    group: Hashable = None
    advantages: dict[str, float] = field(default_factory=dict)  # per role id, set by credit
    components: dict[str, dict[str, float]] = field(default_factory=dict)  # rubric term -> role

    def walk(self) -> list[Rollout]:
        """This rollout and every descendant, parents first."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out


@dataclass(frozen=True)
class TrainingRecord:
    """One trainable step with its credit: what a policy update consumes."""

    role: str
    messages: Messages
    completion: str
    advantage: float
    policy_version: int = 0
    reward: float = 0.0
    episode: str = ""
    finish_reason: str = ""
    temperature: float = 1.0
    # What a server reported about the sample (sparring.serving.rollouts), empty in process: the
    # sampled token ids (trained as they are, not re-tokenized from `completion`) and their
    # log-probabilities under the sampling policy, the "old" policy of an off-policy update.
    token_ids: tuple[int, ...] = ()
    sampler_logprobs: tuple[float, ...] = ()
    group: Hashable = None  # the GRPO group it was sampled in, when credit comes after sampling


class Arena(Protocol):
    """What an episode and a rubric may ask of the arena (sparring.engine.arena.Arena)."""

    async def call_role(self, role_id: str, messages: Messages) -> Step: ...

    async def call_model(
        self, messages: str | Messages, *, temperature: float = 0.3, max_tokens: int = 64
    ) -> Completion: ...

    async def generate_rollouts(self, requests: Sequence[EpisodeRequest]) -> list[Rollout]: ...


class Episode:
    """How roles interact. Subclass, set `rubric`, write `rollout`; see sparring.games."""

    rubric: Rubric

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        raise NotImplementedError

    def get_extras(self, state: EpisodeState) -> dict[str, Any]:
        """Data the rubric reads (a pass rate, a winner); `state.data` by default."""
        return dict(state.data)

    async def act(
        self, arena: Arena, state: EpisodeState, role_id: str, prompt: str | Messages
    ) -> str:
        """Call `role_id` on `prompt` (a user message or a conversation) and record the step."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        step = await arena.call_role(role_id, messages)
        state.steps.append(step)
        return step.completion


RoleRewards = dict[str, float | None]
RewardFn = Callable[[Rollout, Arena], "RoleRewards | Awaitable[RoleRewards]"]


@dataclass(frozen=True)
class Rubric:
    """Weighted reward functions; each returns rewards per role id (sync or async). A role's
    reward is the weighted sum of what the functions give it; a role no function names, or one
    that any function gives None (no signal), gets none and so no credit and no record."""

    terms: tuple[tuple[str, RewardFn, float], ...]

    @classmethod
    def of(cls, *fns: RewardFn, weights: Sequence[float] | None = None) -> Rubric:
        ws = list(weights) if weights is not None else [1.0] * len(fns)
        return cls(tuple((fn.__name__, fn, w) for fn, w in zip(fns, ws, strict=True)))

    async def score(self, rollout: Rollout, arena: Arena) -> dict[str, float]:
        total: dict[str, float] = {}
        voided: set[str] = set()
        for name, fn, weight in self.terms:
            value = fn(rollout, arena)
            if inspect.isawaitable(value):
                value = await value
            rollout.components[name] = dict(value)
            for role, reward in value.items():
                if reward is None:  # no signal (a sandbox failure): the role gets no reward
                    voided.add(role)
                else:
                    total[role] = total.get(role, 0.0) + weight * float(reward)
        rollout.rewards = {role: r for role, r in total.items() if role not in voided}
        return rollout.rewards
