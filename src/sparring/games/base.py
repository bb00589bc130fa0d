"""Core self-play abstractions, kept small: Role, Rollout, Rubric, Game and credit assignment.

Covers: what a role is (id, prompt builder, sampling settings, trainable or frozen), a scored
rollout that may carry child rollouts (a proposer whose reward is the pass rate of several solver
attempts), a Rubric of weighted reward functions, and group-relative advantages computed per
level so a child is compared only with its siblings.

Does not cover: generation or training (sparring.training) or running code (sparring.sandbox).
The code duel (sparring.games.code_duel) is the first Game. There is no plugin registry on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sparring.engine.credit import group_advantages


@dataclass(frozen=True)
class Role:
    """A participant: how it is prompted and sampled, and whether it learns in this phase."""

    id: str
    build_prompt: Callable[..., list[dict[str, str]]]
    temperature: float = 0.9
    top_p: float = 1.0
    max_tokens: int = 128
    trainable: bool = True


@dataclass
class Rollout:
    """One completion of one role, with its reward, components and any child rollouts."""

    role: str
    prompt_id: str
    completion: str
    reward: float | None = None
    components: dict[str, float | None] = field(default_factory=dict)
    children: list[Rollout] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


RewardFn = Callable[[Rollout], float | None]


@dataclass(frozen=True)
class Rubric:
    """Weighted sum of named reward functions. A None from any function voids the total."""

    terms: tuple[tuple[str, RewardFn, float], ...]

    def score(self, rollout: Rollout) -> float | None:
        total = 0.0
        voided = False
        for name, fn, weight in self.terms:
            value = fn(rollout)
            rollout.components[name] = value
            if value is None:
                voided = True
            else:
                total += weight * value
        rollout.reward = None if voided else total
        return rollout.reward


class Game(Protocol):
    """How roles interact to produce scored rollouts for one batch of prompts."""

    roles: dict[str, Role]

    def play(self, prompts: Sequence[Any], completions: Sequence[str]) -> list[Rollout]: ...


def tree_advantages(roots: Sequence[Rollout], scale: bool = True) -> None:
    """Assign `info['advantage']` through a rollout tree: roots are grouped by prompt, and each
    rollout's children only with their siblings (hierarchical credit)."""
    level = list(roots)
    keys: list[Hashable] = [("root", r.prompt_id) for r in level]
    while level:
        advantages = group_advantages([r.reward for r in level], keys, scale)
        for rollout, adv in zip(level, advantages, strict=True):
            rollout.info["advantage"] = adv
        next_level, next_keys = [], []
        for parent_index, rollout in enumerate(level):
            for child in rollout.children:
                next_level.append(child)
                next_keys.append((id(level), parent_index))
        level, keys = next_level, next_keys
