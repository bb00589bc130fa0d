"""Pairwise LLM judging without position bias, with a signal even from a weak judge.

Covers: `preference`, the share of judge votes for candidate 0 over two candidates, asked
`samples` times in each presentation order (candidate 0 shown first, then second) and averaged
per order, so a judge that always answers "1" scores exactly 0.5 (no preference) rather than
handing one side a win. A judge slightly better than chance then gives a graded preference
(e.g. 0.625), where demanding two agreeing verdicts gave a 135M judge nothing but ties. The judge
is an oracle call (`arena.call_model`): never a role, never training data.
Does not cover: what the candidates are (the games: debate, elo_arena). Pure.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from sparring.engine.core import Arena

JUDGE_TEMPERATURE = 1.0  # votes must differ for a share to mean anything


async def preference(
    arena: Arena, render: Callable[[tuple[int, int]], str], samples: int = 4
) -> float | None:
    """Mean over both orders of the share of valid votes for candidate 0; None when an order
    got no vote that names 1 or 2 (position bias would not cancel). `render(order)` is the
    judge's prompt showing candidate order[0] as "1" and order[1] as "2"."""
    shares = []
    for order in ((0, 1), (1, 0)):
        prompt = render(order)
        answers = await asyncio.gather(
            *(
                arena.call_model(prompt, temperature=JUDGE_TEMPERATURE, max_tokens=8)
                for _ in range(samples)
            )
        )
        picks = [re.search(r"[12]", a.text) for a in answers]  # the first 1 or 2 written
        votes = [order[int(p.group()) - 1] for p in picks if p]
        if not votes:
            return None
        shares.append(votes.count(0) / len(votes))
    return round(sum(shares) / 2, 6)
