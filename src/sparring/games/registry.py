"""The games Sparring ships, by name, and the checks a game config must pass.

Covers: `GAMES` (name -> the module and class that implement it), `create` (a game object with
its options), `check` (a config's `game` section against the game: unknown game, a trainable or
judge role the game does not have, a judge that is also a trainable role: one-line ConfigErrors)
and `describe` (what `sparring game list --json` prints). A new game is one module of
sparring.games and one line here.
Does not cover: playing or training (sparring.engine.runner). Pure: a game module is imported
only when it is asked for.
"""

from __future__ import annotations

import importlib
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
    if name not in GAMES:
        known = ", ".join(sorted(GAMES))
        raise ConfigError(f"game.name: unknown game {name!r}; choose one of {known}")
    module, _, cls = GAMES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


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
