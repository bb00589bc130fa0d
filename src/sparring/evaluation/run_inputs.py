"""What an evaluation reads of a run: its problems, its rounds of tests, its models.

Covers: the data folder's problem sets (`problem_sets`: eval, val, and train and val by id),
the rounds of generator tests (`read_rounds`: round files, raw generator output validated
against the references as the validate phase does, else the bank's rows grouped by round, each
summarized), which model is the base and which are snapshots (`base_and_snapshots`) and the
problems every model answers (`problems_to_solve`).
Does not cover: answering or scoring them (sparring.evaluation.snapshots, answer_scores), a
round file's format and its summary (sparring.evaluation.rounds), the bank (sparring.rewards.bank).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.evaluation.rounds import (
    read_round_tests,
    round_metrics,
    summarize_round,
    validate_rows,
)
from sparring.problems import read_jsonl
from sparring.rewards.bank import rows_by_round, tests_by_problem

if TYPE_CHECKING:
    from sparring.problems import Problem


# a round: (its number, its valid tests per problem, its summary)
Round = tuple[int, dict[str, list[str]], dict[str, Any]]


def problem_sets(
    data: Path, humaneval_limit: int
) -> tuple[list[Problem], list[Problem], dict[str, Problem]]:
    """(the eval problems, capped at `humaneval_limit` when set; the val problems; the train and
    val problems by id) from the data folder; a missing file has none."""

    def problems_of(name: str) -> list[Problem]:
        p = data / name
        return read_jsonl(p) if p.is_file() else []

    eval_problems = problems_of("eval.jsonl")
    if humaneval_limit:
        eval_problems = eval_problems[:humaneval_limit]
    val_problems = problems_of("val.jsonl")
    known = {p.id: p for p in [*problems_of("train.jsonl"), *val_problems]}
    return eval_problems, val_problems, known


def read_rounds(
    round_tests: Sequence[str],
    bank_rows: list[dict[str, Any]],
    known: Mapping[str, Problem],
    untrusted: Any,
    expected: bool,
    sim: float,
) -> list[Round]:
    """The rounds, in order: each round file's (raw generator output validated against the
    references under the `untrusted` limits, as the validate phase does with `expected`), else
    the bank's rows grouped by round; each summarized with duplicates at similarity `sim`."""
    rounds: list[Round] = []
    for j, path in enumerate(round_tests):
        rows, raw = read_round_tests(path)
        if raw:
            rows = validate_rows(rows, known, untrusted, expected)
        number = next((r["round"] for r in rows if isinstance(r.get("round"), int)), j + 1)
        valid = [r for r in rows if r.get("valid", True)]
        rounds.append(
            (number, tests_by_problem(valid), summarize_round(rows, round_metrics(path), sim))
        )
    if not round_tests:
        for n, rows in rows_by_round(bank_rows).items():  # the bank's lineage
            rounds.append((n, tests_by_problem(rows), summarize_round(rows, None, sim)))
    return rounds


def base_and_snapshots(
    answerer_models: Sequence[str], n_rounds: int, config_base: str
) -> tuple[str, list[str]]:
    """(the base model, the snapshots): the first model when there is one more than rounds,
    else the config's base model `config_base`."""
    models = list(answerer_models)
    if len(models) == n_rounds + 1:
        return models[0], models[1:]
    return config_base, models


def problems_to_solve(
    val_problems: Sequence[Problem],
    known: Mapping[str, Problem],
    bank: Mapping[str, list[str]],
    rounds: Sequence[Round],
) -> dict[str, Problem]:
    """The problems each model answers, by id: the val problems first, then the known problems
    the bank and the rounds attacked, in id order."""
    attacked = {pid for t in [bank, *(r[1] for r in rounds)] for pid in t if pid in known}
    solve = {p.id: p for p in val_problems}
    solve.update({pid: known[pid] for pid in sorted(attacked)})
    return solve
