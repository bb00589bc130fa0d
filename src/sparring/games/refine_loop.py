"""Refine loop: a generator drafts, a critic critiques, a reviser revises; an LLM judge scores.

Covers: the `RefineLoop` game on small writing tasks about code (bundled; the last ones held
out). The generator writes a draft; then `rounds` times the critic critiques the current text and
the reviser rewrites it. The judge (an oracle call: the base model, or a frozen role's adapter,
never trained) scores the draft and the final text from 1 to 10; the first number it writes is
the score, and an answer without a number in 1..10 is no score (that text's roles get no
reward, so no training signal, rather than a guessed one). A text that is empty or echoes the
task scores 0 without asking the judge; a final text equal to the draft shares its verdict.
Rewards: generator = draft score / 10 (its own text: an empty draft cannot ride on the
reviser's work), reviser = final score / 10, critic = (final - draft) / 10, except that a
critique that is empty, copies the draft or echoes the task earns at most 0: it can share the
blame for a worse text, never the credit for a better one.
Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
from sparring.rewards import jaccard

TASKS = (
    "Write a one-line docstring for this function:\ndef add(a, b):\n    return a + b",
    "Explain this code in two sentences:\nsquares = [x * x for x in range(10) if x % 2 == 0]",
    "Write a one-line docstring for this function:\ndef is_even(n):\n    return n % 2 == 0",
    "Explain in one sentence what this does:\nwith open(path) as f:\n    lines = f.readlines()",
    "Suggest a better name for this function and say why in one sentence:\ndef f(s):\n"
    "    return s[::-1]",
    "Write a commit message (one line) for a change that fixes an off-by-one error in a loop.",
    "Explain this code in two sentences:\nseen = set()\nunique = [x for x in xs if not (x in seen "
    "or seen.add(x))]",
    "Write a one-line docstring for this function:\ndef clamp(x, lo, hi):\n"
    "    return max(lo, min(x, hi))",
    "Explain in one sentence why this is a bug:\ndef append(x, items=[]):\n    items.append(x)\n"
    "    return items",
    "Write a one-line comment explaining this line:\ntotal = sum(p.price * p.qty for p in cart)",
    "Explain this code in two sentences:\ncounts = {}\nfor w in words:\n"
    "    counts[w] = counts.get(w, 0) + 1",
    "Write a one-line docstring for this function:\ndef first(xs, default=None):\n"
    "    return xs[0] if xs else default",
    "Explain in two sentences what a Python generator is, for a beginner.",
    "Write an error message (one sentence) for a config file that is missing the field 'name'.",
    "Explain this code in one sentence:\nkeys = sorted(d, key=d.get, reverse=True)[:3]",
    "Write a one-line docstring for this function:\ndef mean(xs):\n    return sum(xs) / len(xs)",
    "Explain in one sentence what this regular expression matches: ^[a-z]+@[a-z]+\\.com$",
    "Write a one-line docstring for this function:\ndef flatten(rows):\n"
    "    return [x for row in rows for x in row]",
    "Explain in two sentences what this does:\nimport functools\n@functools.lru_cache\n"
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "Write a commit message (one line) for a change that adds retries to a flaky network call.",
    "Explain in one sentence why this is slow:\nfor x in xs:\n    if x in big_list:\n"
    "        hits += 1",
    "Write a one-line docstring for this function:\ndef chunks(xs, n):\n"
    "    return [xs[i:i + n] for i in range(0, len(xs), n)]",
    "Explain this code in one sentence:\npairs = list(zip(names, ages))",
    "Write a one-line comment explaining this line:\nos.makedirs(out_dir, exist_ok=True)",
)
EVAL_TASKS = 6  # the last tasks are held out

WRITER = "You write short, precise technical text. Do exactly what the task asks; nothing else."
CRITIC = "You review a draft for a writing task: name its main flaw in one short sentence."
REVISER = "You revise a draft using the critique. Reply with the revised text only."


def echoes(text: str, source: str) -> bool:
    """Empty, or a copy of `source`: all of it inside, or mostly the same words."""
    flat, src = " ".join(text.split()), " ".join(source.split())
    return not flat or (bool(src) and (src in flat or jaccard(flat, src) > 0.8))


def parse_score(answer: str) -> float | None:
    """The judge's first number when it is in 1..10; None otherwise."""
    m = re.search(r"\d+(?:\.\d+)?", answer)
    return float(m.group()) if m and 1 <= float(m.group()) <= 10 else None


async def judge_score(arena: Arena, task: str, text: str) -> float | None:
    if echoes(text, task):
        return 0.0  # a degenerate text costs no judge call and earns less than any judged one
    question = (
        f"Task:\n{task}\n\nAnswer:\n{text.strip()}\n\nRate how well the answer does the task, "
        "from 1 (useless) to 10 (perfect). Reply with the number only."
    )
    return parse_score((await arena.call_model(question, max_tokens=8)).text)


class RefineEpisode(Episode):
    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.rubric = Rubric.of(refine_rewards)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        task = str(artifact)
        draft = text = await self.act(arena, state, "generator", f"Task:\n{task}")
        lazy_critique = False
        for _ in range(self.rounds):
            shown = f"Task:\n{task}\n\nDraft:\n{text.strip()}"
            critique = await self.act(arena, state, "critic", shown + "\n\nWhat should change?")
            # quoting the draft is fine, copying it (or the task) is no critique
            lazy_critique |= echoes(critique, task) or jaccard(critique, text) > 0.8
            revise = f"{shown}\n\nCritique:\n{critique.strip()}\n\nWrite the revised text."
            text = await self.act(arena, state, "reviser", revise)
        if text.strip() == draft.strip():  # unchanged: one verdict, so judge noise is no gain
            draft_score = final_score = await judge_score(arena, task, draft)
        else:
            draft_score, final_score = await asyncio.gather(
                judge_score(arena, task, draft), judge_score(arena, task, text)
            )
        state.data.update(
            draft_score=draft_score, final_score=final_score, lazy_critique=lazy_critique
        )
        return state


def refine_rewards(rollout: Rollout, arena: Arena) -> dict[str, float]:
    draft, final = rollout.extras["draft_score"], rollout.extras["final_score"]
    out = {}
    if draft is not None:
        out["generator"] = draft / 10
    if final is not None:
        out["reviser"] = final / 10
    if draft is not None and final is not None:
        gain = (final - draft) / 10
        out["critic"] = min(gain, 0.0) if rollout.extras["lazy_critique"] else gain
    return out


class RefineLoop(Game):
    name = "refine_loop"
    description = "generator drafts, critic critiques, reviser revises; an LLM judge scores"
    roles = (
        Role("generator", WRITER, temperature=0.9, max_tokens=96),
        Role("critic", CRITIC, temperature=0.8, max_tokens=48),
        Role("reviser", REVISER, temperature=0.7, max_tokens=96),
    )
    episode = "refine"
    uses_judge = True
    option_names = (("rounds", 1.0),)

    def setup(self, arena: Arena) -> None:
        arena.add_episode(self.episode, RefineEpisode(int(self.option("rounds"))))
        arena.store.extend(TRAIN_POOL, TASKS[:-EVAL_TASKS])
        arena.store.extend(EVAL_POOL, TASKS[-EVAL_TASKS:])

    def summarize(self, rollouts: list[Rollout]) -> dict[str, Any]:
        pairs = [(r.extras["draft_score"], r.extras["final_score"]) for r in rollouts]
        judged = [(d, f) for d, f in pairs if d is not None and f is not None]
        n = len(judged) or 1
        return {
            "judged_share": round(len(judged) / (len(pairs) or 1), 4),
            "score/draft": round(sum(d for d, _ in judged) / n, 4),
            "score/final": round(sum(f for _, f in judged) / n, 4),
            "improved_share": round(sum(f > d for d, f in judged) / n, 4),
        }
