"""Cross-play: every answerer snapshot against every generator round's tests, and Elo ratings.

Covers: the code a completion runs as (`solution_code`), the game matrix (`cross_play`,
`win_rates`), one Elo game (`elo_expected`, `elo_update`: the single update every rating here
uses, and the engine's elo_arena game too) and `elo_ratings` of answerers and generators from
cross-play games. Does not cover: which snapshots are evaluated (sparring.evaluation.snapshots),
reading the adversarial test bank (sparring.rewards.bank) or drawing the heatmap
(sparring.evaluation.report).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sparring.evaluation.humaneval import run_jobs
from sparring.problems.programs import complete_humaneval, extract_code

if TYPE_CHECKING:
    from sparring.problems import Problem


def solution_code(problem: Problem, completion: str) -> str:
    """The code the sandbox runs for a completion ('' when nothing parses: every test fails)."""
    if problem.prompt:
        return complete_humaneval(problem.prompt, completion, problem.entry_point)
    return extract_code(completion, problem.function_name) or ""


def cross_play(
    solutions: Sequence[Mapping[str, str]],
    round_tests: Sequence[Mapping[str, Sequence[str]]],
    limits: Any = None,
) -> list[list[list[bool]]]:
    """Game outcomes of every answerer snapshot (rows) against every round's tests (columns).

    `solutions[i]`: problem id -> code of snapshot i; `round_tests[j]`: problem id -> tests of
    round j. Entry [i][j] lists one bool per (problem, test) game: True when the answerer passes.
    A problem a snapshot has no solution for loses every game.
    """
    jobs, where = [], []
    for i, sols in enumerate(solutions):
        for j, tests in enumerate(round_tests):
            for pid, ts in sorted(tests.items()):
                if ts:
                    jobs.append((sols.get(pid, ""), list(ts)))
                    where.append((i, j))
    reports = run_jobs(jobs, limits)
    matrix: list[list[list[bool]]] = [[[] for _ in round_tests] for _ in solutions]
    for (i, j), report in zip(where, reports, strict=True):
        if report.infra_error is None:
            matrix[i][j].extend(r.passed for r in report.results)
    return matrix


def win_rates(matrix: Sequence[Sequence[Sequence[bool]]]) -> list[list[float | None]]:
    """Share of games won by the answerer per cell (None for a cell without games)."""
    return [[sum(cell) / len(cell) if cell else None for cell in row] for row in matrix]


def elo_expected(rating: float, opponent: float) -> float:
    """Elo's expected score of a player rated `rating` against one rated `opponent`.

    >>> elo_expected(1000, 1000), round(elo_expected(1400, 1000), 3)
    (0.5, 0.909)
    """
    return 1.0 / (1.0 + 10 ** ((opponent - rating) / 400.0))


def elo_update(rating: float, opponent: float, score: float, k: float = 16) -> tuple[float, float]:
    """Both ratings after one game in which the first player scored `score` (1 win, 0.5 draw, 0
    loss); the points one gains the other loses.

    >>> elo_update(1000, 1000, 1.0)
    (1008.0, 992.0)
    """
    delta = k * (score - elo_expected(rating, opponent))
    return rating + delta, opponent - delta


def elo_ratings(
    matrix: Sequence[Sequence[Any]], k: float = 16, passes: int = 20, base: float = 1000.0
) -> tuple[list[float], list[float]]:
    """Elo ratings of answerers (rows) and generators (columns) from cross-play games.

    A cell is a list of game outcomes (True/1 = the answerer passed the test) or a single number
    in [0, 1] (one game with that score); None or [] means no games. Ratings start at `base` and are
    updated game by game in a fixed order (rows, columns, games), `passes` times over: the result
    is deterministic.

    >>> a, g = elo_ratings([[[True, True]], [[False, False]]])
    >>> a[0] > 1000 > a[1]
    True
    """
    n_rows = len(matrix)
    n_cols = max((len(row) for row in matrix), default=0)
    ans = [base] * n_rows
    gen = [base] * n_cols
    games: list[tuple[int, int, float]] = []
    for i, row in enumerate(matrix):
        for j, cell in enumerate(row):
            if cell is None:
                continue
            outcomes = [cell] if isinstance(cell, (int, float)) else list(cell)
            games.extend((i, j, float(o)) for o in outcomes)
    for _ in range(passes if games else 0):
        for i, j, score in games:
            ans[i], gen[j] = elo_update(ans[i], gen[j], score, k)
    return [round(r, 2) for r in ans], [round(r, 2) for r in gen]
