"""A Game: the roles, episodes and artifacts of one kind of self-play, and what a step plays.

Covers: `Game`, the base every module of sparring.games subclasses: its `roles` (defaults a
config may override), `setup` (register episodes and fill the artifact store, training and
held-out pools), `requests` (a training step: `episodes_per_step` artifacts drawn by weight,
each played `group_size` times as one GRPO group) and `eval_requests` (held-out artifacts, not
trainable), `summarize` (extra numbers or tables for the report, e.g. Elo ratings); and
`configured_roles`, the roles after the config's overrides.
Does not cover: running the loop (sparring.phases.game_loop) or the list of games (sparring.games).
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sparring.engine.arena import Arena
from sparring.engine.core import EpisodeRequest, Role, Rollout

TRAIN_POOL = "train"
EVAL_POOL = "eval"


class Game:
    """Subclass: set `name`, `description`, `roles`, `episode` (the top-level episode's name),
    and write `setup`. Options come from the config's `game.options` (numbers)."""

    name: str = ""
    description: str = ""
    roles: tuple[Role, ...] = ()
    episode: str = ""
    uses_judge: bool = False  # an LLM judge scores episodes (an oracle call, never trained)
    needs_sandbox: bool = False  # the runner then sets `sandbox` (sparring.sandbox.Sandbox)
    sandbox: Any = None
    option_names: tuple[tuple[str, float], ...] = ()  # (option, default)

    def __init__(self, options: Mapping[str, float] | None = None, seed: int = 0) -> None:
        self.options = {**dict(self.option_names), **(options or {})}
        self.seed = seed

    def option(self, key: str) -> float:
        return float(self.options[key])

    def setup(self, arena: Arena) -> None:
        raise NotImplementedError

    def requests(self, arena: Arena, episodes: int, group_size: int) -> list[EpisodeRequest]:
        artifacts = arena.store.sample(TRAIN_POOL, episodes)
        return [
            EpisodeRequest(self.episode, artifact, group=(i, self.episode))
            for i, artifact in enumerate(artifacts)
            for _ in range(group_size)
        ]

    def eval_requests(self, arena: Arena, episodes: int) -> list[EpisodeRequest]:
        pool = EVAL_POOL if arena.store.size(EVAL_POOL) else TRAIN_POOL
        items = arena.store.items(pool)[:episodes]
        return [EpisodeRequest(self.episode, a, is_trainable=False) for a in items]

    def summarize(self, rollouts: Sequence[Rollout]) -> dict[str, Any]:
        return {}


def configured_roles(game: Game, game_cfg: Any) -> list[Role]:
    """The game's roles with the config's overrides: `trainable` (the listed roles learn, the
    others are frozen), `temperature`, `max_tokens`, and `judge` (a frozen role the judge uses)."""
    trainable = set(game_cfg.trainable) if game_cfg.trainable else None
    out = []
    for role in game.roles:
        changes: dict[str, Any] = {}
        if trainable is not None:
            changes["trainable"] = role.id in trainable
        if game_cfg.temperature > 0:
            changes["temperature"] = game_cfg.temperature
        if game_cfg.max_tokens > 0:
            changes["max_tokens"] = game_cfg.max_tokens
        out.append(replace(role, **changes))
    return out
