"""Negotiation: two players trade books, hats and balls; each values the items privately.

Covers: the `Negotiation` game. A scenario (seeded, generated) gives each player an inventory
(both inventories are public) and private per-item values (only in that player's prompt).
Players alternate moves, `player_a` first, for `turns` exchanges; a deterministic referee reads
the first line of each reply: `OFFER give books=1 get hats=2` (what the mover hands over, what it
receives; `nothing` for an empty side), `ACCEPT` (take the offer on the table) or `REJECT`. An
accepted offer is executed and ends the game. An invalid move (unparseable, an offer of items a
side does not hold, an ACCEPT with no offer on the table) clears the table and trades nothing,
so garbage can never earn a trade.
Reward of each player: the change of its inventory's value under its own values, divided by the
value of both inventories together (bounded in [-1, 1]; a player's own starting value can be 0).
No deal: 0 for both. Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game

ITEMS = ("books", "hats", "balls")
PLAYERS = ("player_a", "player_b")
Bundle = tuple[int, ...]  # a count per item, in ITEMS order

SYSTEM = (
    "You trade items to raise the value of your inventory under your private values. Reply with "
    "one move on one line: OFFER give <item>=<n> get <item>=<n> (what you hand over, what you "
    "receive), ACCEPT (take the other player's offer) or REJECT."
)


@dataclass(frozen=True)
class Scenario:
    id: str
    inventories: tuple[Bundle, Bundle]  # player_a's, player_b's
    values: tuple[Bundle, Bundle]  # private value of one item, per player


@dataclass(frozen=True)
class Offer:
    give: Bundle  # what the proposer hands over
    get: Bundle  # what the proposer receives


def worth(bundle: Bundle, values: Bundle) -> int:
    return sum(n * v for n, v in zip(bundle, values, strict=True))


def show(bundle: Bundle) -> str:
    return " ".join(f"{item}={n}" for item, n in zip(ITEMS, bundle, strict=True) if n) or "nothing"


def parse_bundle(text: str) -> Bundle | None:
    if text.strip().lower() == "nothing":
        return (0,) * len(ITEMS)
    counts: dict[str, int] = {}
    for part in re.split(r"[,\s]+", text.strip()):
        m = re.fullmatch(r"([a-z]+)=(\d{1,2})", part.lower())
        if not m or m.group(1) not in ITEMS or m.group(1) in counts:
            return None  # an unknown item, a malformed count, or an item named twice
        counts[m.group(1)] = int(m.group(2))
    return tuple(counts.get(item, 0) for item in ITEMS)


def parse_move(text: str) -> Offer | str | None:
    """'ACCEPT', 'REJECT', an Offer, or None (invalid) from the reply's first non-empty line."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "").rstrip(".")
    if line.upper() in ("ACCEPT", "REJECT"):
        return line.upper()
    m = re.fullmatch(r"offer\s+give\s+(.+?)\s+get\s+(.+)", line, re.IGNORECASE)
    give, get = (parse_bundle(m.group(1)), parse_bundle(m.group(2))) if m else (None, None)
    if give is None or get is None or not any(give + get):
        return None
    if any(g and r for g, r in zip(give, get, strict=True)):
        return None  # the same item on both sides: not a trade
    return Offer(give, get)


def affordable(scenario: Scenario, proposer: int, offer: Offer) -> bool:
    have, other = scenario.inventories[proposer], scenario.inventories[1 - proposer]
    return all(h >= n for h, n in zip(have + other, offer.give + offer.get, strict=True))


def after_trade(scenario: Scenario, deal: tuple[int, Offer] | None) -> tuple[Bundle, Bundle]:
    if deal is None:
        return scenario.inventories
    proposer, offer = deal
    net = [g - h for g, h in zip(offer.get, offer.give, strict=True)]  # the proposer's gain
    new = [list(inv) for inv in scenario.inventories]
    for i, d in enumerate(net):
        new[proposer][i] += d
        new[1 - proposer][i] -= d
    return tuple(new[0]), tuple(new[1])


def prompt_for(
    scenario: Scenario, me: int, moves: list[tuple[int, str]], table: Offer | None
) -> str:
    lines = [
        f"Your inventory: {show(scenario.inventories[me])}. "
        f"The other player's inventory: {show(scenario.inventories[1 - me])}.",
        "Your private values per item (the other player cannot see them): "
        + " ".join(f"{i}={v}" for i, v in zip(ITEMS, scenario.values[me], strict=True)),
        "Moves so far: "
        + ("; ".join(f"{'you' if p == me else 'other'}: {m}" for p, m in moves) or "none"),
    ]
    if table is not None:
        lines.append(
            f"The other player offers: you give {show(table.get)}, you get {show(table.give)}."
        )
    lines.append(
        f"Your move, one line (items: {', '.join(ITEMS)}): "
        "OFFER give <item>=<n> get <item>=<n>, ACCEPT or REJECT"
    )
    return "\n".join(lines)


def canonical(move: Offer | str | None) -> str:
    if isinstance(move, Offer):
        return f"OFFER give {show(move.give)} get {show(move.get)}"
    return move or "INVALID"


class NegotiationEpisode(Episode):
    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.rubric = Rubric.of(value_gain)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        scenario: Scenario = artifact
        moves: list[tuple[int, str]] = []
        table: Offer | None = None  # always the previous mover's offer: every move replaces it
        deal, invalid = None, 0
        for k in range(2 * self.turns):
            me = k % 2
            reply = await self.act(
                arena, state, PLAYERS[me], prompt_for(scenario, me, moves, table)
            )
            move = parse_move(reply)
            # inventories change only with the deal, which ends the game: an offer both sides
            # can afford when it is made is affordable when it is accepted
            if isinstance(move, Offer) and not affordable(scenario, me, move):
                move = None  # offering what a side does not hold
            if move == "ACCEPT" and table is not None:
                deal = (1 - me, table)
                moves.append((me, "ACCEPT"))
                break
            if move == "ACCEPT":
                move = None  # no offer of the other player's on the table
            table = move if isinstance(move, Offer) else None
            invalid += move is None
            moves.append((me, canonical(move)))
        state.data.update(moves=moves, deal=deal, invalid_moves=invalid, plays=len(moves))
        return state


def value_gain(rollout: Rollout, arena: Arena) -> dict[str, float]:
    scenario: Scenario = rollout.artifact
    after = after_trade(scenario, rollout.extras.get("deal"))
    out = {}
    for i, role in enumerate(PLAYERS):
        values = scenario.values[i]
        pool = worth(scenario.inventories[0], values) + worth(scenario.inventories[1], values)
        gain = worth(after[i], values) - worth(scenario.inventories[i], values)
        out[role] = round(gain / pool, 6)
    return out


def make_scenarios(rng: random.Random, prefix: str, count: int) -> list[Scenario]:
    """Scenarios where some one-for-one swap helps both players, so honest play can gain."""
    out: list[Scenario] = []
    while len(out) < count:
        inv = tuple(tuple(rng.randint(0, 3) for _ in ITEMS) for _ in PLAYERS)
        val = tuple(tuple(rng.randint(0, 5) for _ in ITEMS) for _ in PLAYERS)
        (va, vb), (ia, ib) = val, inv
        # a's item x for b's item y; it also makes both pools worth something to their players
        swaps = [(x, y) for x in range(len(ITEMS)) for y in range(len(ITEMS)) if ia[x] and ib[y]]
        if any(va[y] > va[x] and vb[x] > vb[y] for x, y in swaps):
            out.append(Scenario(f"{prefix}-{len(out)}", inv, val))
    return out


class Negotiation(Game):
    name = "negotiation"
    description = "two players with private values trade items; reward = own value gained"
    roles = (
        Role("player_a", SYSTEM, temperature=0.9, max_tokens=32),
        Role("player_b", SYSTEM, temperature=0.9, max_tokens=32),
    )
    episode = "negotiation"
    option_names = (("turns", 2.0), ("scenarios", 64.0), ("eval_scenarios", 16.0))

    def setup(self, arena: Arena) -> None:
        arena.add_episode(self.episode, NegotiationEpisode(int(self.option("turns"))))
        rng = random.Random(f"negotiation-{self.seed}")
        arena.store.extend(TRAIN_POOL, make_scenarios(rng, "train", int(self.option("scenarios"))))
        arena.store.extend(
            EVAL_POOL, make_scenarios(rng, "eval", int(self.option("eval_scenarios")))
        )

    def summarize(self, rollouts: list[Rollout]) -> dict[str, Any]:
        n = len(rollouts) or 1
        moves = sum(r.extras.get("plays", 0) for r in rollouts) or 1
        return {
            "deal_rate": round(sum(r.extras.get("deal") is not None for r in rollouts) / n, 4),
            "invalid_move_rate": round(
                sum(r.extras.get("invalid_moves", 0) for r in rollouts) / moves, 4
            ),
            "joint_gain": round(sum(sum(r.rewards.values()) for r in rollouts) / n, 4),
        }
