"""What every benchmark's `BENCH` line is made of, so that they all read alike.

A `BENCH` line is one figure from at least `MIN_REPS` repetitions of each arm, the arms run
interleaved (A B A B A B: a drift of the shared machine's load lands on both), each repetition
of both arms on the same problems with the same budgets:

  BENCH <name> median=<X> min=<Y> max=<Z> n=<N>

For a ratio of two arms, the figure of repetition i is arm A's measurement over arm B's in that
same repetition (a paired ratio); X, Y and Z are the median, smallest and largest of the N
paired ratios. Imports nothing but the standard library.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence

MIN_REPS = 3


def add_reps_argument(parser: argparse.ArgumentParser, default: int = MIN_REPS) -> None:
    """`--reps`: repetitions per arm (at least MIN_REPS, checked by `checked_reps`)."""
    parser.add_argument(
        "--reps",
        type=int,
        default=default,
        help=f"repetitions per arm, interleaved A B A B ... (at least {MIN_REPS})",
    )


def checked_reps(parser: argparse.ArgumentParser, reps: int) -> int:
    """`reps`, or the parser's usage error when it is below MIN_REPS."""
    if reps < MIN_REPS:
        parser.error(f"--reps {reps}: a BENCH line needs at least {MIN_REPS} repetitions per arm")
    return reps


def interleaved(arms: Sequence[str], reps: int) -> list[tuple[int, str]]:
    """(repetition, arm) in the order to run them: every arm once per repetition, in turn.

    >>> interleaved(["a", "b"], 3)
    [(0, 'a'), (0, 'b'), (1, 'a'), (1, 'b'), (2, 'a'), (2, 'b')]
    """
    return [(rep, arm) for rep in range(reps) for arm in arms]


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """numerators[i] / denominators[i] per repetition.

    >>> paired_ratios([4.0, 6.0], [2.0, 2.0])
    [2.0, 3.0]
    """
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} against {len(denominators)} repetitions")
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


def spread(values: Sequence[float], digits: int = 2) -> str:
    """`median=X min=Y max=Z n=N` of `values`.

    >>> spread([1.0, 3.0, 2.0])
    'median=2.00 min=1.00 max=3.00 n=3'
    """
    if not values:
        raise ValueError("no values")
    f = f".{digits}f"
    return (
        f"median={statistics.median(values):{f}} min={min(values):{f}} "
        f"max={max(values):{f}} n={len(values)}"
    )


def bench_line(name: str, values: Sequence[float], digits: int = 2) -> str:
    """The `BENCH` line of `values`, one per repetition (refused below MIN_REPS).

    >>> bench_line("x_speedup", [2.0, 2.5, 1.5])
    'BENCH x_speedup median=2.00 min=1.50 max=2.50 n=3'
    """
    if len(values) < MIN_REPS:
        raise ValueError(f"BENCH {name}: {len(values)} repetitions, at least {MIN_REPS} needed")
    return f"BENCH {name} {spread(values, digits)}"
