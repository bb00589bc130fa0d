"""Sparse given tests: the part of a problem's tests a training reward is allowed to see.

Real problem sets come with few tests (MBPP: 3), typical inputs rather than edge cases, so a
reward on them lets an answer that misses the empty list or a tie earn full credit. With
`data.given_tests: K`, each training problem keeps K of its tests as `baseline_tests`, typical
inputs first (a family instance marks the tests it built from edge inputs with the
`edge_tests:` tag; a problem file's tests count as typical in file order), and the rest as
`withheld_tests`, which no reward reads: only the false-positive measure runs them (the share
of training answers that pass every test the reward saw and fail a withheld one). Only tests no
trivial solution passes are withheld, when the problem's trivial record is known: a test that
`return None` or an echo passes carries no credit in any honest reward (sparring.problems.trivial),
so
failing it overpays nothing, and counting it would report false positives no test could fix.
A K at least as large as a problem's tests keeps them all, typical first, so a dense arm shows
the prompt a sparse arm shows (the prompt's examples are the first tests). Held-out problems
keep all tests.

Does not cover: running tests (sparring.rewards.code_duel), choosing a family's tests
(sparring.problems.families). Pure.
"""

from __future__ import annotations

from dataclasses import replace

from sparring.problems import Problem

EDGE_TAG = "edge_tests:"


def edge_tag(indices: list[int]) -> str:
    """The tag naming which of a problem's tests were built from edge inputs."""
    return EDGE_TAG + ",".join(str(i) for i in sorted(indices))


def edge_indices(problem: Problem) -> set[int]:
    """Indices of `problem.baseline_tests` built from edge inputs ({} without the tag)."""
    tag = next((t for t in problem.tags if t.startswith(EDGE_TAG)), EDGE_TAG)
    return {int(i) for i in tag[len(EDGE_TAG) :].split(",") if i}


def typical_first(problem: Problem) -> list[str]:
    """The problem's tests, typical inputs first (each group in its own order)."""
    edges = edge_indices(problem)
    tests = problem.baseline_tests
    return [t for i, t in enumerate(tests) if i not in edges] + [
        t for i, t in enumerate(tests) if i in edges
    ]


def given_view(problem: Problem, k: int) -> Problem:
    """`problem` as a training reward sees it with K given tests: the first K of its tests,
    typical first, as `baseline_tests`; the others withheld, except those some trivial solution
    passes (per `problem.trivial_passes`, when computed). The edge tag is re-indexed to the
    given tests, and so is `trivial_passes` (a trivial solution passes a test whatever tests
    stand beside it)."""
    if k < 1:
        raise ValueError(f"given tests: k must be >= 1, got {k}")
    ordered = typical_first(problem)
    passed_trivially = {
        problem.baseline_tests[i] for hits in problem.trivial_passes.values() for i in hits
    }
    given = ordered[:k]
    withheld = [t for t in ordered[k:] if t not in passed_trivially]
    edge_tests = {problem.baseline_tests[i] for i in edge_indices(problem)}
    tags = [t for t in problem.tags if not t.startswith(EDGE_TAG)]
    if any(t.startswith(EDGE_TAG) for t in problem.tags):
        tags.append(edge_tag([i for i, t in enumerate(given) if t in edge_tests]))
    trivial = {}
    for name, passed in problem.trivial_passes.items():
        passed_tests = {problem.baseline_tests[i] for i in passed}
        if hits := [j for j, t in enumerate(given) if t in passed_tests]:
            trivial[name] = hits
    return replace(
        problem, baseline_tests=given, withheld_tests=withheld, tags=tags, trivial_passes=trivial
    )
