"""Intervals for a study's arms that treat a training run (a seed) as one unit.

A run's final score on a task is a task effect, plus the run's own offset, plus task noise
(docs/learning.md, "Sizing"). An interval that resamples a run index separately for every task
(rliable's stratified bootstrap) averages a run's offset away over the tasks and is too narrow
whenever runs differ as wholes. Here:

- `seed_task_interval`: the two-level bootstrap. Each resample draws each arm's seeds with
  replacement (whole rows) and the tasks with replacement, the same task draw for every arm,
  and takes the statistic (an arm's mean, or the difference of two arms' means); the 95%
  interval is the 2.5th and 97.5th percentile. With K seeds the draws over seeds are few (10
  distinct for K = 3) and, as any bootstrap of K units, about sqrt((K - 1) / K) too narrow.
- `per_seed_t_interval`: each training seed both arms ran gives one contrast (the treatment's
  run minus the control's run of that seed, averaged over tasks); a t-interval on those (K - 1
  degrees of freedom) is the other view, wide at K = 3 and exact under normal offsets.
- `tasks_only_interval`: the tasks resampled and the runs held fixed (what a single seed's
  interval is), the baseline the tests compare the two-level one against.
- `probability_of_improvement`: P(X > Y) of Agarwal et al. 2021 (arXiv 2108.13264): per task,
  the share of (run of X, run of Y) pairs where X's run scores higher, ties counted half,
  averaged over tasks, computed directly.

Does not cover: which runs form an arm or which contrasts a study plans
(sparring.experiments.study), the seed spread and the smallest visible contrast
(sparring.experiments.sizing). Pure: numpy and scipy's t quantile.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LEVEL = 0.95


def _weights(rng: np.random.Generator, reps: int, k: int) -> np.ndarray:
    """reps x k: how often each of k units is drawn in each resample, over k (sums to 1)."""
    return rng.multinomial(k, np.full(k, 1.0 / k), size=reps) / k


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - LEVEL) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def seed_task_draws(arms: Sequence[np.ndarray], reps: int, seed: int) -> list[np.ndarray]:
    """Per arm (a seeds x tasks array, every arm over the same tasks), its mean in each of
    `reps` resamples: the arm's seeds drawn with replacement, each arm on its own, and the tasks
    drawn with replacement, one draw for all arms."""
    rng = np.random.default_rng(seed)
    n = arms[0].shape[1]
    tasks = _weights(rng, reps, n)
    means = []
    for rows in arms:
        seeds = _weights(rng, reps, rows.shape[0])
        means.append(np.einsum("rk,kn,rn->r", seeds, rows, tasks))
    return means


def seed_task_interval(
    x: np.ndarray, y: np.ndarray | None = None, reps: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """The 95% interval of x's mean (seeds x tasks), or of x's mean minus y's, over resamples
    of whole seeds within each arm and of tasks paired across arms (`seed_task_draws`).

    >>> x = np.array([[0.5, 0.6, 0.7], [0.5, 0.6, 0.7]])
    >>> [round(v, 9) + 0.0 for v in seed_task_interval(x, x)]  # two seeds alike: no spread
    [0.0, 0.0]
    """
    arms = [np.asarray(x, dtype=float)] + ([] if y is None else [np.asarray(y, dtype=float)])
    draws = seed_task_draws(arms, reps, seed)
    return _percentiles(draws[0] if y is None else draws[0] - draws[1])


def tasks_only_interval(
    x: np.ndarray, y: np.ndarray, reps: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """The 95% interval of x's mean minus y's with the tasks resampled and every run kept."""
    rng = np.random.default_rng(seed)
    diff = np.asarray(x, dtype=float).mean(axis=0) - np.asarray(y, dtype=float).mean(axis=0)
    return _percentiles(_weights(rng, reps, diff.shape[0]) @ diff)


def per_seed_contrasts(
    x: np.ndarray, x_seeds: Sequence[int], y: np.ndarray, y_seeds: Sequence[int]
) -> dict[int, float]:
    """{training seed: x's run of that seed minus y's, averaged over tasks} for every seed both
    arms ran."""
    mine = dict(zip(x_seeds, np.asarray(x, dtype=float).mean(axis=1), strict=True))
    theirs = dict(zip(y_seeds, np.asarray(y, dtype=float).mean(axis=1), strict=True))
    return {s: float(mine[s] - theirs[s]) for s in sorted(set(mine) & set(theirs))}


def per_seed_t_interval(contrasts: Sequence[float]) -> tuple[float, float] | None:
    """The 95% t-interval of the mean of per-seed contrasts (len - 1 degrees of freedom);
    None with fewer than two.

    >>> [round(v, 3) for v in per_seed_t_interval([0.130, 0.106, 0.108])]
    [0.082, 0.148]
    """
    values = np.asarray(contrasts, dtype=float)
    if values.size < 2:
        return None
    from scipy import stats

    half = stats.t.ppf(1 - (1 - LEVEL) / 2, values.size - 1) * values.std(ddof=1)
    half /= np.sqrt(values.size)
    return float(values.mean() - half), float(values.mean() + half)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y), Agarwal et al. 2021: per task, over every pair of a run of X (rows of x,
    seeds x tasks) and a run of Y, the share where X's run scores higher, a tie counting half;
    averaged over tasks.

    >>> probability_of_improvement(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0], [1.0, 0.5]]))
    0.5
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    pairs_x, pairs_y = x[:, None, :], y[None, :, :]
    wins = (pairs_x > pairs_y).mean(axis=(0, 1)) + 0.5 * (pairs_x == pairs_y).mean(axis=(0, 1))
    return float(wins.mean())
