"""Elo arena: N players answer the same questions in round-robin matches; an LLM judge picks the
better answer; Elo ratings track the players, and a player's reward is its relative skill.

Covers: the `EloArena` game, roles player_0..player_{N-1} (option `players`; each samples with
its own adapter). A tournament, the top-level episode, takes one question and plays every pair of
players once as a child `match` episode: both answer the question, the judge (an oracle call,
never trained) votes in both presentation orders (sparring.games.judging), and the first
player's score is its share of the votes (a judge that always picks the first answer gives
draws, 0.5; Elo takes graded scores). An empty answer, or one that
mostly repeats the question, forfeits; when both forfeit, both lose. A player's reward in a
match: its score (1 win, 0.5 draw, 0 loss) minus its Elo-expected score against that opponent,
from the running ratings as they stood when the tournament started. A training tournament then
moves the running ratings by its games (sparring.evaluation.crossplay's Elo update); held-out
tournaments never move them, and `summarize` rates the players from the held-out games alone.

Credit: the answers are steps of the matches; the tournament has no steps and no reward. So
credit lives on the match level, where the engine groups a match with its siblings: GRPO
compares each player's answers within one tournament (one question, different opponents; the
Elo expectation is what makes a draw against a strong player worth more than one against a weak
player), and RAE takes the reward against a running mean (near 0 once ratings are calibrated).
Does not cover: anything outside the episodes (sparring.engine). Pure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from sparring.config import ConfigError
from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeRequest, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
from sparring.evaluation.crossplay import elo_expected, elo_update
from sparring.games.debate import forfeits
from sparring.games.judging import preference

QUESTIONS = (
    "What is the difference between a list and a tuple in Python?",
    "Why do hash tables give constant-time lookups on average?",
    "When should you use a generator instead of a list?",
    "What does a race condition mean in concurrent code?",
    "Why is it a bad idea to catch every exception silently?",
    "What is the purpose of a virtual environment in Python?",
    "How does binary search find an item, and what does it need?",
    "What is the difference between a process and a thread?",
    "Why are unit tests useful when refactoring code?",
    "What does idempotent mean for an HTTP request?",
    "When is recursion a poor choice compared to a loop?",
    "What problem does a database index solve, and at what cost?",
    "Why should secrets not be committed to a git repository?",
    "What is the difference between == and is in Python?",
    "What does Big-O notation describe?",
    "Why can floating point numbers not represent 0.1 exactly?",
    "What is a deadlock, and how can it be avoided?",
    "What does a code review catch that tests do not?",
    "What is the difference between a shallow copy and a deep copy?",
    "Why do APIs use pagination?",
    "What is memoization?",
    "Why is mutable global state hard to test?",
    "What does a linter do?",
    "What is the difference between authentication and authorization?",
)
EVAL_QUESTIONS = 6  # the last questions are held out
PLAYER = "Answer the question correctly and concisely, in one to three sentences."
BASE_RATING = 1000.0


@dataclass(frozen=True)
class Pairing:
    question: str
    players: tuple[str, str]
    expected: float  # the first player's Elo-expected score when the tournament started


def judge_prompt(question: str, answers: tuple[str, str], order: tuple[int, int]) -> str:
    shown = (answers[order[0]], answers[order[1]])
    return (
        f"Question: {question}\nAnswer 1: {shown[0].strip()}\nAnswer 2: {shown[1].strip()}\n"
        "Which answer is better (correct, clear, concise)? Answer with 1 or 2 only."
    )


class MatchEpisode(Episode):
    def __init__(self, judge_samples: int) -> None:
        self.judge_samples = judge_samples
        self.rubric = Rubric.of(relative_score)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        pairing: Pairing = artifact
        q = pairing.question
        answers = tuple(
            await asyncio.gather(*(self.act(arena, state, p, q) for p in pairing.players))
        )
        forfeit = [forfeits(answer, q) for answer in answers]
        if all(forfeit):
            score = None  # both lose; no information about who is better
        elif any(forfeit):
            score = 0.0 if forfeit[0] else 1.0
        else:  # the first player's share of the judge's votes: a graded Elo score
            share = await preference(
                arena, lambda order: judge_prompt(q, answers, order), self.judge_samples
            )
            score = 0.5 if share is None else share
        state.data.update(answers=answers, forfeit=forfeit, score=score)
        return state


def relative_score(rollout: Rollout, arena: Arena) -> dict[str, float]:
    """Actual minus expected score for both players (a double forfeit scores 0 for both)."""
    (a, b), expected = rollout.artifact.players, rollout.artifact.expected
    score = rollout.extras["score"]
    actual = (0.0, 0.0) if score is None else (score, 1.0 - score)
    return {a: round(actual[0] - expected, 6), b: round(actual[1] - (1.0 - expected), 6)}


def play_games(
    ratings: Mapping[str, float], games: list[tuple[tuple[str, str], float]]
) -> dict[str, float]:
    """Ratings after `games` ((first player, second player), the first's score), in order."""
    out = dict(ratings)
    for (a, b), score in games:
        out[a], out[b] = elo_update(out[a], out[b], score)
    return out


def rated_games(tournaments: list[Rollout]) -> list[tuple[tuple[str, str], float]]:
    """The matches of `tournaments` that say who is better (not a double forfeit)."""
    matches = [m for t in tournaments for m in t.children]
    return [
        (m.artifact.players, m.extras["score"]) for m in matches if m.extras["score"] is not None
    ]


class TournamentEpisode(Episode):
    def __init__(self, game: EloArena) -> None:
        self.game = game
        self.rubric = Rubric.of(self.update_ratings)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        ratings = dict(self.game.ratings)  # every match of the tournament sees the same ratings
        pairs = combinations([r.id for r in self.game.roles], 2)
        requests = [
            EpisodeRequest(
                "match", Pairing(str(artifact), (a, b), elo_expected(ratings[a], ratings[b]))
            )
            for a, b in pairs
        ]
        state.children = await arena.generate_rollouts(requests)
        return state

    def update_ratings(self, rollout: Rollout, arena: Arena) -> dict[str, float]:
        """No reward (the tournament has no steps); a training tournament moves the ratings."""
        if rollout.is_trainable:
            self.game.ratings = play_games(self.game.ratings, rated_games([rollout]))
        return {}


class EloArena(Game):
    name = "elo_arena"
    description = "N players answer questions in round-robin matches an LLM judges; Elo ratings"
    episode = "tournament"
    uses_judge = True
    option_names = (("players", 3.0), ("judge_samples", 4.0))

    def __init__(self, options: Mapping[str, float] | None = None, seed: int = 0) -> None:
        super().__init__(options, seed)
        n = int(self.option("players"))
        if n < 2:
            raise ConfigError(f"game.options.players: {n}; an arena needs at least 2 players")
        self.roles = tuple(
            Role(f"player_{i}", PLAYER, temperature=0.9, max_tokens=64) for i in range(n)
        )
        self.ratings = {role.id: BASE_RATING for role in self.roles}  # running, training only

    def setup(self, arena: Arena) -> None:
        arena.add_episode(self.episode, TournamentEpisode(self))
        arena.add_episode("match", MatchEpisode(int(self.option("judge_samples"))))
        arena.store.extend(TRAIN_POOL, QUESTIONS[:-EVAL_QUESTIONS])
        arena.store.extend(EVAL_POOL, QUESTIONS[-EVAL_QUESTIONS:])

    def summarize(self, rollouts: list[Rollout]) -> dict[str, Any]:
        """Ratings from these (held-out) games alone, replayed 20 times in a fixed order like
        crossplay.elo_ratings; the running training ratings; draw and forfeit rates."""
        games = rated_games(rollouts)
        ratings = {role.id: BASE_RATING for role in self.roles}
        for _ in range(20):
            ratings = play_games(ratings, games)
        matches = [m for t in rollouts for m in t.children]
        n = len(matches) or 1
        out = {f"elo/{p}": round(r, 2) for p, r in ratings.items()}
        out.update({f"elo_train/{p}": round(r, 2) for p, r in self.ratings.items()})
        out["draw_rate"] = round(sum(m.extras["score"] == 0.5 for m in matches) / n, 4)
        out["forfeit_rate"] = round(sum(any(m.extras["forfeit"]) for m in matches) / n, 4)
        return out
