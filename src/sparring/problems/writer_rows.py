"""The test writer's rows: the prompts it trains on and writes its final tests for, and the rows
of tests it wrote.

Covers: `writer_rows` (a prompt row per drawn problem and per problem it is asked final tests
for) and `written_tests`: a row per problem the phase writes tests for, of the tests written
while training and parsed from the final completions (the phase's tests.jsonl). The answerer's
rows (with the coach's reserve) are sparring.rewards.answerer_rows'.

Does not cover: which problems get final tests (sparring.phases.generator.final_problems,
sparring.phases.zone.tested_problems), sampling the tests
(sparring.backends.sampler.sample_final_tests), scoring them (sparring.rewards.generator_scoring),
banking them (sparring.phases.validate).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparring.problems import Problem, prompts


def writer_rows(
    problems: list[Problem], asked: list[Problem], n_tests: int, n_stated: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The test writer's prompt rows: one per drawn problem of `problems` (what it trains on),
    and one per problem of `asked` (those the trained writer writes its final tests for), each
    asking for `n_tests` tests and `n_stated` stated cases (`steps.generator_tests`,
    `steps.generator_stated_cases`)."""
    row = {p.id: {"prompt": prompts.generator_messages(p, n_tests, n_stated), "problem_id": p.id}
           for p in [*problems, *asked]}  # fmt: skip
    return [row[p.id] for p in problems], [row[p.id] for p in asked]


def written_tests(
    tested: list[Problem],
    generated: Mapping[str, list[str]],
    asked_rows: list[dict[str, Any]],
    final: list[list[str]],
    round_index: int,
) -> list[dict[str, Any]]:
    """A row per problem of `tested`: the tests written while training (`generated`), then the
    new ones parsed from its final completions (`final`, a list per row of `asked_rows`)."""
    written = {r["problem_id"]: texts for r, texts in zip(asked_rows, final, strict=True)}
    out_rows = []
    for p in tested:
        tests = list(generated.get(p.id, []))
        for text in written.get(p.id, ()):
            for t in prompts.extract_tests(text, p.function_name):
                if t not in tests:
                    tests.append(t)
        out_rows.append({"problem_id": p.id, "tests": tests, "round": round_index})
    return out_rows
