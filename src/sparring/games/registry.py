"""The games Sparring ships, by name, and the checks a game config must pass.

Covers: `GAMES` (name -> the module and class that implement it), `create` (a game object with
its options), `check` (a config's `game` section against the game: unknown game, a trainable or
judge role the game does not have, a judge that is also a trainable role: one-line ConfigErrors)
and `describe` (what `sparring game list --json` prints). A new game is one module of
sparring.games and one line in GAMES, or any importable `module:Class` named in `game.name`.
Does not cover: playing or training (sparring.phases.game_loop). Pure: a game module is imported
only when it is asked for.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from sparring.config import ConfigError
from sparring.engine.game import Game

GAMES: dict[str, str] = {
    "proposer_solver": "sparring.games.proposer_solver:ProposerSolver",
    "debate": "sparring.games.debate:Debate",
    "negotiation": "sparring.games.negotiation:Negotiation",
    "red_blue": "sparring.games.red_blue:RedBlue",
    "refine_loop": "sparring.games.refine_loop:RefineLoop",
    "elo_arena": "sparring.games.elo_arena:EloArena",
    "dataset_rl": "sparring.games.dataset_rl:DatasetRL",
}


def game_class(name: str) -> type[Game]:
    """A shipped game by name, or your own as `module:Class` (importable, a Game subclass)."""
    if name not in GAMES and ":" not in name:
        known = ", ".join(sorted(GAMES))
        raise ConfigError(
            f"game.name: unknown game {name!r}; choose one of {known}, or name your own as "
            "module:Class"
        )
    module, _, cls = GAMES.get(name, name).partition(":")
    if name not in GAMES and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `sparring game run mygame:MyGame` from its folder
    try:
        found = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"game.name: cannot import {name!r} ({exc})") from None
    if not (isinstance(found, type) and issubclass(found, Game)):
        raise ConfigError(f"game.name: {name!r} is not a subclass of sparring.engine.game.Game")
    return found


def create(name: str, options: dict[str, float] | None = None, seed: int = 0) -> Game:
    return game_class(name)(options, seed)


def check(cfg: Any) -> Game:
    """The configured game, or a one-line ConfigError naming the field and the fix."""
    g = cfg.game
    if not g.name:
        raise ConfigError(
            "game.name: empty; name a game (sparring game list), e.g. --set game.name=debate"
        )
    game = create(g.name, g.options, cfg.seed)
    role_ids = [r.id for r in game.roles]
    for role in g.trainable:
        if role not in role_ids:
            roles = ", ".join(role_ids)
            raise ConfigError(f"game.trainable: {g.name} has no role {role!r}; its roles: {roles}")
    trainable = set(g.trainable) if g.trainable else {r.id for r in game.roles if r.trainable}
    if not trainable and g.steps:
        raise ConfigError(f"game.trainable: no role of {g.name} learns; list one of {role_ids}")
    if g.judge:
        if not game.uses_judge:
            raise ConfigError(f"game.judge: {g.name} has no judge; remove game.judge")
        if g.judge not in role_ids:
            raise ConfigError(
                f"game.judge: {g.name} has no role {g.judge!r}; its roles are {', '.join(role_ids)}"
            )
        if g.judge in trainable:
            raise ConfigError(
                f"game.judge: {g.judge!r} is a trainable role; a judge must not learn from its own "
                "verdicts: leave game.judge empty (the base model judges) or freeze that role"
            )
    known = dict(game.option_names)
    unknown = sorted(set(g.options) - set(known))
    if unknown:
        raise ConfigError(
            f"game.options.{unknown[0]}: {g.name} has no such option; it takes "
            f"{', '.join(known) or 'none'}"
        )
    return game


def describe() -> list[dict[str, Any]]:
    """Every game with its roles, for `sparring game list`."""
    out = []
    for name in GAMES:
        game = create(name)
        out.append(
            {
                "name": name,
                "description": game.description,
                "roles": [{"id": r.id, "trainable": r.trainable} for r in game.roles],
                "judge": game.uses_judge,
                "sandbox": game.needs_sandbox,
                "options": dict(game.option_names),
            }
        )
    return out
