"""Which problems the trained generator writes its final tests for, and the test writer's prompt
rows: its draw (with a screen, the problems whose frozen answers differed: `tested_problems`),
or with `steps.final_tests_all` every training problem (`final_problems`), each asked by the
same prompt as its training rows (`writer_rows`).

Does not cover: sampling or parsing the tests (sparring.phases.generator), banking them
(sparring.phases.validate).
"""

from __future__ import annotations

from typing import Any

from sparring.config import Config
from sparring.phases.zone import in_zone
from sparring.problems import Problem, prompts


def final_problems(cfg: Config, problems: list[Problem], pool: list[Problem]) -> list[Problem]:
    """The problems the phase writes tests for: its draw, then with `steps.final_tests_all` the
    rest of the training pool in pool order (`writer_rows` says why)."""
    if not cfg.steps.final_tests_all:
        return problems
    drawn = {p.id for p in problems}
    return problems + [p for p in pool if p.id not in drawn]


def writer_rows(
    cfg: Config,
    problems: list[Problem],
    zone: dict[str, dict[str, float]],
    pool: list[Problem],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The test writer's prompt rows: one per drawn problem of `problems` (what it trains on),
    and those the trained generator writes its final tests for: `tested_problems` of its draw,
    or with `steps.final_tests_all` a row for every training problem (the draw's, then the rest
    of `pool`). Every one, because the next answerer phase may sample any: it draws
    (`draw_in_zone`) by the zone that validation writes after banking these tests (a problem
    whose frozen answers all pass the given tests joins the zone when a banked test fails one),
    among the problems at its coach's levels, which only its init model's record holds; a
    generated test changes the answerer's reward only on a problem it covers."""
    asked = (cfg.steps.generator_tests, cfg.steps.generator_stated_cases)
    every = final_problems(cfg, problems, pool)
    final = every if cfg.steps.final_tests_all else tested_problems(problems, zone)
    row = {p.id: {"prompt": prompts.generator_messages(p, *asked), "problem_id": p.id}
           for p in every}  # fmt: skip
    return [row[p.id] for p in problems], [row[p.id] for p in final]


def tested_problems(problems: list[Problem], zone: dict[str, dict[str, float]]) -> list[Problem]:
    """The problems of a draw the trained generator writes its final tests for: with a screen
    (`zone` not empty) those where the frozen answers differed, since the answerer samples the
    ones seen flat only when nothing else is left and a test there is seldom used; without one,
    every problem."""
    if not zone:
        return problems
    return [p for p in problems if in_zone(zone.get(p.id))]
