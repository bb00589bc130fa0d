"""How small a difference the study of issue 62 can see: its seed spread and smallest contrast.

Covers: `seed_spread` (sigma_seed and sigma_task from the arms' replicate seeds, in
docs/learning.md's model, "Sizing": a run's final on a task is a task effect, plus a run offset,
plus task noise) and `smallest_contrast` (the difference of two arms' means seen two-sided at 5%
with 80% power). Does not cover: the intervals and contrasts themselves (rliable, in
sparring.evaluation.study), sizing before the study from older runs (scripts/study_sizing.py,
which uses `smallest_contrast`). Pure: numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

POWER_Z = 1.959964 + 0.841621  # a contrast seen two-sided at 5% with 80% power


def seed_spread(matrix: Mapping[str, Any]) -> dict[str, float] | None:
    """The study's own spread, in docs/learning.md's model ("Sizing": a run's final on a task is
    a task effect, plus a run offset of SD sigma_seed, plus task noise of SD sigma_task), from
    every arm that ran two seeds or more: each arm's seeds x tasks finals split two ways, the
    sums of squares pooled over arms. sigma_task^2 is the residual mean square; sigma_seed^2 is
    max(0, (the runs' mean square - the residual's) / n). With two seeds this is the sizing
    script's pair arithmetic. None when no arm ran two seeds: one seed cannot measure it."""
    ss_runs = ss_noise = 0.0
    df_runs = df_noise = 0
    for arm in matrix["arms"].values():
        finals = np.asarray(arm["final"], dtype=float)
        k, n = finals.shape
        if k < 2:
            continue
        run_means, task_means = finals.mean(axis=1), finals.mean(axis=0)
        grand = finals.mean()
        ss_runs += n * float(((run_means - grand) ** 2).sum())
        residual = finals - run_means[:, None] - task_means[None, :] + grand
        ss_noise += float((residual**2).sum())
        df_runs, df_noise = df_runs + k - 1, df_noise + (k - 1) * (n - 1)
    if not df_runs or not df_noise:
        return None
    n = len(matrix["tasks"])
    noise = ss_noise / df_noise
    return {
        "sigma_seed": float(np.sqrt(max(0.0, (ss_runs / df_runs - noise) / n))),
        "sigma_task": float(np.sqrt(noise)),
        "df_seeds": df_runs,
        "df_tasks": df_noise,
        "n": n,
    }


def smallest_contrast(sigma_seed: float, sigma_task: float, seeds: int, tasks: int) -> float:
    """The smallest difference of two arms' means (each of `seeds` runs over `tasks` tasks) seen
    two-sided at 5% with 80% power: POWER_Z x sqrt(2 sigma_seed^2 / K + 2 sigma_task^2 / (K n)).

    >>> round(smallest_contrast(0.0, 0.2205, 3, 40), 3)
    0.08
    """
    se = np.sqrt(2 * sigma_seed**2 / seeds + 2 * sigma_task**2 / (seeds * tasks))
    return float(POWER_Z * se)
