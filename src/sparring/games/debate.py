"""Debate: two debaters argue a proposition, an LLM judge picks the winner; zero-sum.

Covers: the `Debate` game: `debater_a` argues for, `debater_b` against, for `turns` speeches
each; the judge (an oracle call: the base model, or a frozen role's adapter, never trained)
votes `judge_samples` times in each presentation order (sparring.games.judging: a judge that
always answers "1" gives a tie, not a free win to one side). A speech that is empty or mostly
repeats the proposition forfeits. Reward, zero-sum: A gets 2 x (its vote share) - 1 (so +1 for a
unanimous judge, and a graded margin from a weak one), B the negative; +-1 on a forfeit.
Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

from typing import Any

from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
from sparring.games.judging import preference
from sparring.rewards import jaccard

TOPICS = (
    "Python should be taught before C in a first programming course.",
    "Unit tests are more valuable than code comments.",
    "Static typing reduces bugs in large codebases.",
    "Recursion should be avoided in production code.",
    "Every function should have exactly one return statement.",
    "Code review is more effective than pair programming.",
    "Global variables are always a design mistake.",
    "Premature optimization is the root of all evil.",
    "Open source software is more secure than closed source software.",
    "Tabs are better than spaces for indentation.",
    "Monorepos are better than many small repositories.",
    "Exceptions are better than error codes.",
    "Functional programming leads to fewer bugs than object-oriented programming.",
    "Documentation should live next to the code it describes.",
    "Test coverage above 90 percent is worth its cost.",
    "Short variable names make code harder to read.",
    "Every team should use continuous deployment.",
    "Interpreted languages are fast enough for most software.",
    "Regular expressions should be avoided when simpler code works.",
    "Code generators save more time than they cost.",
    "Mutable default arguments should be banned in Python.",
    "Integration tests matter more than unit tests.",
    "Comments that explain why are more useful than comments that explain what.",
    "A function longer than fifty lines should be split.",
)
EVAL_TOPICS = 6  # the last topics are held out

FOR = "You argue FOR the proposition. Be concise and convincing: two or three sentences."
AGAINST = "You argue AGAINST the proposition. Be concise and convincing: two or three sentences."


def forfeits(speech: str, topic: str) -> bool:
    """An empty speech, or one that mostly repeats the proposition, loses by forfeit."""
    text = speech.strip()
    return not text or jaccard(text, topic) > 0.8


def transcript(topic: str, speeches: list[tuple[str, str]]) -> str:
    lines = [f"Proposition: {topic}"]
    lines += [f"{speaker}: {speech.strip()}" for speaker, speech in speeches]
    return "\n".join(lines)


class DebateEpisode(Episode):
    def __init__(self, turns: int, judge_samples: int) -> None:
        self.turns = turns
        self.judge_samples = judge_samples
        self.rubric = Rubric.of(zero_sum)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        topic = str(artifact)
        speeches: list[tuple[str, str]] = []
        for _ in range(self.turns):
            for role, label in (("debater_a", "A"), ("debater_b", "B")):
                prompt = transcript(topic, speeches) + f"\nYour turn, debater {label}."
                speeches.append((label, await self.act(arena, state, role, prompt)))
        forfeit = {label for label, speech in speeches if forfeits(speech, topic)}
        share = None
        if not forfeit:

            def render(order: tuple[int, int]) -> str:
                number = {"AB"[order[0]]: "1", "AB"[order[1]]: "2"}
                shown = [(f"Debater {number[s]}", t) for s, t in speeches]
                return transcript(topic, shown) + (
                    "\nWhich debater argued better? Answer with 1 or 2 only."
                )

            share = await preference(arena, render, self.judge_samples)
        state.data.update(topic=topic, speeches=speeches, forfeit=sorted(forfeit))
        state.data["share_a"] = share  # judge votes for A, both orders averaged
        return state


def margin_of(extras: dict[str, Any]) -> float:
    """A's margin in [-1, 1]: +-1 on a forfeit, else 2 x (A's vote share) - 1; 0 on no verdict."""
    forfeit = set(extras.get("forfeit", []))
    if forfeit:
        return 0.0 if len(forfeit) == 2 else (1.0 if forfeit == {"B"} else -1.0)
    share = extras.get("share_a")
    return 0.0 if share is None else round(2 * share - 1, 6)


def winner_of(extras: dict[str, Any]) -> str | None:
    """'A', 'B' or None (tie)."""
    margin = margin_of(extras)
    return None if margin == 0 else ("A" if margin > 0 else "B")


def zero_sum(rollout: Rollout, arena: Arena) -> dict[str, float]:
    margin = margin_of(rollout.extras)
    return {"debater_a": margin, "debater_b": -margin}


class Debate(Game):
    name = "debate"
    description = "two debaters argue a proposition; an LLM judge picks the winner (zero-sum)"
    roles = (
        Role("debater_a", FOR, temperature=0.9, max_tokens=64),
        Role("debater_b", AGAINST, temperature=0.9, max_tokens=64),
    )
    episode = "debate"
    uses_judge = True
    option_names = (("turns", 1.0), ("judge_samples", 4.0))

    def setup(self, arena: Arena) -> None:
        turns, samples = int(self.option("turns")), int(self.option("judge_samples"))
        arena.add_episode(self.episode, DebateEpisode(turns, samples))
        arena.store.extend(TRAIN_POOL, TOPICS[:-EVAL_TOPICS])
        arena.store.extend(EVAL_POOL, TOPICS[-EVAL_TOPICS:])

    def summarize(self, rollouts: list[Rollout]) -> dict[str, Any]:
        winners = [winner_of(r.extras) for r in rollouts]
        n = len(winners) or 1
        return {
            "win_rate/debater_a": round(winners.count("A") / n, 4),
            "tie_rate": round(winners.count(None) / n, 4),
        }
