"""Debate: two debaters argue a proposition, an LLM judge picks the winner; zero-sum.

Covers: the `Debate` game: `debater_a` argues for, `debater_b` against, for `turns` speeches
each; the judge (an oracle call: the base model, or a frozen role's adapter, never trained)
reads the transcript twice, once in each order, and a side wins only when both readings agree
(a judge that always answers "A" gives ties, not a free win to one side). A speech that is
empty or mostly repeats the proposition forfeits. Reward: +1 winner, -1 loser, 0 both on a tie.
Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

import re
from typing import Any

from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
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
    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.rubric = Rubric.of(zero_sum)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        topic = str(artifact)
        speeches: list[tuple[str, str]] = []
        for _ in range(self.turns):
            for role, label in (("debater_a", "A"), ("debater_b", "B")):
                prompt = transcript(topic, speeches) + f"\nYour turn, debater {label}."
                speeches.append((label, await self.act(arena, state, role, prompt)))
        forfeit = {label for label, speech in speeches if forfeits(speech, topic)}
        verdicts = []
        if not forfeit:
            for order in (("A", "B"), ("B", "A")):
                shown = [(f"Debater {order.index(s) + 1}", t) for s, t in speeches]
                question = (
                    transcript(topic, shown)
                    + "\nWhich debater argued better? Answer with 1 or 2 only."
                )
                answer = (await arena.call_model(question, max_tokens=8)).text
                pick = re.search(r"[12]", answer)  # the first 1 or 2 the judge writes
                verdicts.append(order[int(pick.group()) - 1] if pick else None)
        state.data.update(topic=topic, speeches=speeches, forfeit=sorted(forfeit))
        state.data["verdicts"] = verdicts
        return state


def winner_of(extras: dict[str, Any]) -> str | None:
    """'A', 'B' or None (tie): forfeits first, then two agreeing verdicts."""
    forfeit = set(extras.get("forfeit", []))
    if forfeit:
        return None if len(forfeit) == 2 else ({"A", "B"} - forfeit).pop()
    verdicts = extras.get("verdicts", [])
    if len(verdicts) == 2 and verdicts[0] == verdicts[1] and verdicts[0] is not None:
        return verdicts[0]
    return None


def zero_sum(rollout: Rollout, arena: Arena) -> dict[str, float]:
    winner = winner_of(rollout.extras)
    if winner is None:
        return {"debater_a": 0.0, "debater_b": 0.0}
    a = 1.0 if winner == "A" else -1.0
    return {"debater_a": a, "debater_b": -a}


class Debate(Game):
    name = "debate"
    description = "two debaters argue a proposition; an LLM judge picks the winner (zero-sum)"
    roles = (
        Role("debater_a", FOR, temperature=0.9, max_tokens=64),
        Role("debater_b", AGAINST, temperature=0.9, max_tokens=64),
    )
    episode = "debate"
    uses_judge = True
    option_names = (("turns", 1.0),)

    def setup(self, arena: Arena) -> None:
        arena.add_episode(self.episode, DebateEpisode(int(self.option("turns"))))
        arena.store.extend(TRAIN_POOL, TOPICS[:-EVAL_TOPICS])
        arena.store.extend(EVAL_POOL, TOPICS[-EVAL_TOPICS:])

    def summarize(self, rollouts: list[Rollout]) -> dict[str, Any]:
        winners = [winner_of(r.extras) for r in rollouts]
        n = len(winners) or 1
        return {
            "win_rate/debater_a": round(winners.count("A") / n, 4),
            "tie_rate": round(winners.count(None) / n, 4),
        }
