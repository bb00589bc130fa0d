"""Which problems the trained generator writes its final tests for, and with which prompt rows:
its draw (`tested_rows`: with a screen, the problems whose frozen answers differed), or with
`steps.final_tests_all` every training problem (`final_problems`, `final_rows`).

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
    rest of the training pool in pool order (`final_rows` says why)."""
    if not cfg.steps.final_tests_all:
        return problems
    drawn = {p.id for p in problems}
    return problems + [p for p in pool if p.id not in drawn]


def final_rows(
    cfg: Config,
    rows: list[dict[str, Any]],
    zone: dict[str, dict[str, float]],
    problems: list[Problem],
    pool: list[Problem],
) -> list[dict[str, Any]]:
    """The prompt rows the trained generator writes its final tests for: `tested_rows` of its
    draw's `rows`, or with `steps.final_tests_all` a row for every training problem (`rows`,
    then the rest of `pool`). Every one, because the next answerer phase may sample any: it
    draws (`draw_in_zone`) by the zone that validation writes after banking these tests (a
    problem whose frozen answers all pass the given tests joins the zone when a banked test
    fails one), among the problems at its coach's levels, which only its init model's record
    holds; a generated test changes the answerer's reward only on a problem it covers."""
    if not cfg.steps.final_tests_all:
        return tested_rows(rows, zone)
    asked = (cfg.steps.generator_tests, cfg.steps.generator_stated_cases)
    rest = final_problems(cfg, problems, pool)[len(problems) :]
    return rows + [
        {"prompt": prompts.generator_messages(p, *asked), "problem_id": p.id} for p in rest
    ]


def tested_rows(rows: list[dict[str, Any]], zone: dict[str, dict[str, float]]) -> list[dict]:
    """The rows whose problems the trained generator writes its final tests for: with a screen
    (`zone` not empty) the problems where the frozen answers differed, since the answerer samples
    the ones seen flat only when nothing else is left and a test there is seldom used; without
    one, every row.

    >>> rows = [{"problem_id": i} for i in "abc"]
    >>> [r["problem_id"] for r in tested_rows(rows, {"a": {"spread": 0.5}, "b": {"spread": 0.0}})]
    ['a']
    >>> len(tested_rows(rows, {}))
    3
    """
    if not zone:
        return rows
    return [r for r in rows if in_zone(zone.get(r["problem_id"]))]
