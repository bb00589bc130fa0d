"""How small a difference a study can see: its seed spread and smallest contrast.

Covers: `seed_spread` (in docs/learning.md's model, "Sizing": a run's final on a task is a task
effect, plus a run offset, plus task noise; the run offsets' variance component sigma2_seed as
estimated, unclipped, so a negative estimate says so, with its 95% interval, the modified
large-sample interval for a difference of two mean squares (Ting, Burdick, Graybill and
Gui 1990), and sigma_task) and `smallest_contrast` (the difference of two arms' means seen
two-sided at 5% with 80% power; a study sizes it from the upper end of sigma2_seed's interval,
not from a point estimate clipped at 0). Does not cover: the intervals and contrasts themselves
(sparring.experiments.seed_intervals, sparring.experiments.study), sizing before the study from
older runs (scripts/study_sizing.py, which uses `smallest_contrast`). Pure: numpy, scipy's F and
chi-square quantiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

POWER_Z = 1.959964 + 0.841621  # a contrast seen two-sided at 5% with 80% power


def _mean_squares(finals: np.ndarray) -> tuple[float, float]:
    """(sum of squares between runs, residual sum of squares) of one arm's seeds x tasks."""
    n = finals.shape[1]
    run_means, task_means = finals.mean(axis=1), finals.mean(axis=0)
    grand = finals.mean()
    residual = finals - run_means[:, None] - task_means[None, :] + grand
    return n * float(((run_means - grand) ** 2).sum()), float((residual**2).sum())


def component_interval(
    ms_runs: float, df_runs: int, ms_noise: float, df_noise: int, n: int, level: float = 0.95
) -> tuple[float, float]:
    """The modified large-sample (MLS) interval of (ms_runs - ms_noise) / n, a variance
    component that is the difference of two independent mean squares (Ting, Burdick, Graybill
    and Gui 1990; Burdick and Graybill 1992, section 3.3); either end may be below 0.

    >>> [round(v, 5) for v in component_interval(0.08, 10, 0.05, 400, 20)]
    [-0.00059, 0.00981]
    """
    from scipy import stats

    a = (1 - level) / 2
    c = 1.0 / n
    estimate = c * (ms_runs - ms_noise)
    g1 = 1 - df_runs / stats.chi2.ppf(1 - a, df_runs)
    h1 = df_runs / stats.chi2.ppf(a, df_runs) - 1
    g2 = 1 - df_noise / stats.chi2.ppf(1 - a, df_noise)
    h2 = df_noise / stats.chi2.ppf(a, df_noise) - 1
    f_hi = stats.f.ppf(1 - a, df_runs, df_noise)
    f_lo = stats.f.ppf(a, df_runs, df_noise)
    g12 = ((f_hi - 1) ** 2 - g1**2 * f_hi**2 - h2**2) / f_hi
    h12 = ((1 - f_lo) ** 2 - h1**2 * f_lo**2 - g2**2) / f_lo
    lower = g1**2 * ms_runs**2 + h2**2 * ms_noise**2 + g12 * ms_runs * ms_noise
    upper = h1**2 * ms_runs**2 + g2**2 * ms_noise**2 + h12 * ms_runs * ms_noise
    return (
        float(estimate - c * np.sqrt(max(lower, 0.0))),
        float(estimate + c * np.sqrt(max(upper, 0.0))),
    )


def seed_spread(matrix: Mapping[str, Any]) -> dict[str, Any] | None:
    """The study's own spread, in docs/learning.md's model ("Sizing": a run's final on a task is
    a task effect, plus a run offset of variance sigma2_seed, plus task noise of SD sigma_task),
    from every arm that ran two seeds or more: each arm's seeds x tasks finals split two ways,
    the sums of squares pooled over arms. sigma_task^2 is the residual mean square;
    `sigma2_seed` is (the runs' mean square - the residual's) / n, unclipped: below 0 when the
    runs' means agree more than task noise alone predicts; `sigma2_seed_lo`, `_hi` its 95%
    interval (`component_interval`); `sigma_seed_hi` the square root of the upper end, what
    sizes the smallest contrast. `sigma_seed` is sqrt(max(0, sigma2_seed)), the point
    estimate clipped at 0 (kept for comparison, not for sizing). `arms`: each arm's own
    sigma2_seed. With two seeds this is the sizing script's pair arithmetic. None when no arm
    ran two seeds: one seed cannot measure it."""
    ss_runs = ss_noise = 0.0
    df_runs = df_noise = 0
    per_arm: dict[str, float] = {}
    n = len(matrix["tasks"])
    for arm, rows in matrix["arms"].items():
        finals = np.asarray(rows["final"], dtype=float)
        k, tasks = finals.shape
        if k < 2:
            continue
        runs, noise = _mean_squares(finals)
        if tasks > 1:  # one task leaves no residual to take out
            per_arm[arm] = (runs / (k - 1) - noise / ((k - 1) * (tasks - 1))) / tasks
        ss_runs, ss_noise = ss_runs + runs, ss_noise + noise
        df_runs, df_noise = df_runs + k - 1, df_noise + (k - 1) * (tasks - 1)
    if not df_runs or not df_noise:
        return None
    ms_runs, ms_noise = ss_runs / df_runs, ss_noise / df_noise
    sigma2 = (ms_runs - ms_noise) / n
    lo, hi = component_interval(ms_runs, df_runs, ms_noise, df_noise, n)
    return {
        "sigma2_seed": float(sigma2),
        "sigma2_seed_lo": lo,
        "sigma2_seed_hi": hi,
        "sigma_seed_hi": float(np.sqrt(max(0.0, hi))),
        "sigma_seed": float(np.sqrt(max(0.0, sigma2))),
        "sigma_task": float(np.sqrt(ms_noise)),
        "df_seeds": df_runs,
        "df_tasks": df_noise,
        "n": n,
        "arms": per_arm,
    }


def smallest_contrast(sigma_seed: float, sigma_task: float, seeds: int, tasks: int) -> float:
    """The smallest difference of two arms' means (each of `seeds` runs over `tasks` tasks) seen
    two-sided at 5% with 80% power: POWER_Z x sqrt(2 sigma_seed^2 / K + 2 sigma_task^2 / (K n)).

    >>> round(smallest_contrast(0.0, 0.2205, 3, 40), 3)
    0.08
    """
    se = np.sqrt(2 * sigma_seed**2 / seeds + 2 * sigma_task**2 / (seeds * tasks))
    return float(POWER_Z * se)
