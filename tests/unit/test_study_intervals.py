"""Intervals that treat a training seed as one unit (issue 73, item 6): a planted whole-run
offset widens a contrast's interval past 0, where resampling a run per (task, arm) cell would
not; the t-interval and each seed's contrast sit beside it; the probability of improvement is
Agarwal et al.'s, counted by hand on a tiny example; a negative seed variance estimate is said
to be negative and the smallest contrast is sized from the upper end of its interval."""

from __future__ import annotations

import numpy as np
import pytest

from sparring.experiments import seed_intervals, sizing, study
from sparring.experiments.study import StudyRun
from sparring.experiments.study_design import design_from_dict

TASKS = 40
OFFSETS = (0.30, -0.25, 0.20)  # the treatment's three runs: large whole-run offsets, mean +0.083
REPS = 4000


def planted(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(base, treatment, control) seeds x tasks: a task effect plus, in the treatment, each
    run's own offset, plus a little task noise."""
    rng = np.random.default_rng(seed)
    effects = rng.uniform(0.2, 0.6, TASKS)
    treated = np.array([effects + u + rng.normal(0, 0.02, TASKS) for u in OFFSETS])
    control = np.array([effects + rng.normal(0, 0.02, TASKS) for _ in OFFSETS])
    return effects, treated, control


def per_cell_interval(x: np.ndarray, y: np.ndarray, reps: int, seed: int) -> tuple[float, float]:
    """What the study must not do (rliable's stratified bootstrap): the tasks resampled and,
    in every (task, arm) cell on its own, the runs: a run's offset is averaged over tasks."""
    rng = np.random.default_rng(seed)
    k, n = x.shape
    deltas = np.empty(reps)
    for r in range(reps):
        tasks = rng.integers(0, n, n)
        rx, ry = rng.integers(0, k, (k, n)), rng.integers(0, k, (k, n))
        deltas[r] = x[rx, tasks].mean() - y[ry, tasks].mean()
    lo, hi = np.percentile(deltas, [2.5, 97.5])
    return float(lo), float(hi)


def test_a_planted_seed_offset_widens_the_interval_past_zero():
    _, x, y = planted()
    delta = x.mean() - y.mean()
    assert delta == pytest.approx(np.mean(OFFSETS), abs=0.01)
    cell_lo, cell_hi = per_cell_interval(x, y, 2000, seed=1)
    assert cell_lo > 0.0, "the planted data must fool a per-cell bootstrap, else it tests nothing"
    tasks_lo, tasks_hi = seed_intervals.tasks_only_interval(x, y, reps=REPS)
    assert tasks_lo > 0.0
    lo, hi = seed_intervals.seed_task_interval(x, y, reps=REPS)
    assert lo < 0.0 < hi, (lo, hi)  # one run of three is 0.25 below: the mean may be too
    assert hi - lo > 3 * (tasks_hi - tasks_lo)
    assert hi - lo > 3 * (cell_hi - cell_lo)
    # the t-interval on the per-seed contrasts, beside it, agrees: nothing shown
    per_seed = seed_intervals.per_seed_contrasts(x, [1, 2, 3], y, [1, 2, 3])
    assert list(per_seed) == [1, 2, 3]
    assert [round(d, 1) for d in per_seed.values()] == [0.3, -0.2, 0.2]
    t_lo, t_hi = seed_intervals.per_seed_t_interval(list(per_seed.values()))
    assert t_lo < 0.0 < t_hi
    assert np.mean(list(per_seed.values())) == pytest.approx(delta)


def _heldout(base: np.ndarray, final: np.ndarray, seed: int) -> dict:
    start = {"configured": "m", "model": "m", "champion": None, "base_weights": "w",
             "training_seed": seed, "code": "c1"}  # fmt: skip
    pairs = {
        f"p{t}": [float(b), float(f)] for t, (b, f) in enumerate(zip(base, final, strict=True))
    }
    return {"format": 3, "reward": "honest", "sets": {"new_tasks": pairs}, "start": start,
            "code": "c1", "tasks": {}}  # fmt: skip


DESIGN = design_from_dict(
    {
        "name": "planted",
        "base": "configs/learn.yaml",
        "seeds": [1, 2, 3],
        "arms": {"T": {"set": ["data.generator_samples=4"]}, "C": {"set": []}},
        "contrasts": [{"treatment": "T", "control": "C", "rank": "primary", "question": "q?"}],
        "measures": [{"label": "new_tasks", "set": "new_tasks", "measure": "discriminating"}],
    }
)


def test_the_study_resamples_whole_seeds_and_prints_each_seed():
    base, x, y = planted()
    runs = [
        StudyRun(f"{arm}{s}", arm, s, _heldout(base, rows[s - 1], s))
        for arm, rows in (("T", x), ("C", y))
        for s in (1, 2, 3)
    ]
    result = study.analyse(runs, DESIGN, reps=REPS)
    (c,) = result["contrasts"]
    assert c["delta"] == pytest.approx(x.mean() - y.mean())
    assert c["lo"] < 0.0 < c["hi"] and not c["shown"], c
    assert c["per_seed"] == pytest.approx(
        {
            str(s): d
            for s, d in seed_intervals.per_seed_contrasts(x, [1, 2, 3], y, [1, 2, 3]).items()
        }
    )
    line = next(s for s in study.contrast_lines(result) if s.startswith("STUDY T-C new_tasks "))
    assert f"ci95_delta={c['lo']:+.3f},{c['hi']:+.3f}" in line
    assert f"t95_delta={c['t_lo']:+.3f},{c['t_hi']:+.3f}" in line
    assert "per_seed=t1:+0.3" in line and ",t2:-0.2" in line
    assert line.endswith("not shown (primary: q?)")
    (row,) = [r for r in result["table"] if r["arm"] == "T"]
    assert row["gain_lo"] < 0.0 < row["gain_hi"]  # an arm's own interval resamples its seeds too


def test_the_probability_of_improvement_counted_by_hand():
    """Per task, every (run of X, run of Y) pair: X higher 1, a tie 1/2, lower 0.
    Task 1: X {1.0, 0.0} against Y {0.5, 0.5}: 1, 1, 0, 0 -> 0.5. Task 2: X {0, 0} against Y
    {0, 1}: 1/2, 0, 1/2, 0 -> 0.25. Task 3: X {0.5, 0.7} against Y {0.5, 0.9}: 1/2, 0, 1, 0 ->
    0.375. Averaged over tasks: 0.375."""
    x = np.array([[1.0, 0.0, 0.5], [0.0, 0.0, 0.7]])
    y = np.array([[0.5, 0.0, 0.5], [0.5, 1.0, 0.9]])
    assert seed_intervals.probability_of_improvement(x, y) == pytest.approx(0.375)
    assert seed_intervals.probability_of_improvement(y, x) == pytest.approx(0.625)
    assert seed_intervals.probability_of_improvement(x, x) == pytest.approx(0.5)


def test_a_negative_seed_variance_is_said_and_the_smallest_contrast_uses_its_upper_bound():
    """Runs whose means agree more than task noise predicts: the estimate is below 0, shown as
    such, and the smallest contrast is sized from the upper end of its interval, not from 0."""
    rng = np.random.default_rng(5)
    effects = rng.uniform(0, 1, 30)
    noise = rng.normal(0, 0.2, (3, 30))
    # the runs' means closer than task noise alone puts them: no run offset to see
    noise -= 0.5 * noise.mean(axis=1, keepdims=True)
    matrix = {"tasks": list(range(30)), "arms": {"A": {"final": (effects + noise).tolist()}}}
    spread = sizing.seed_spread(matrix)
    assert spread["sigma2_seed"] < 0.0 and spread["sigma_seed"] == 0.0
    assert spread["sigma2_seed_lo"] < spread["sigma2_seed"] < 0.0 < spread["sigma2_seed_hi"]
    line = study.spread_line("new_tasks", spread)
    assert f"sigma2_seed={spread['sigma2_seed']:+.5f} (negative: seeds agree more" in line
    clipped = sizing.smallest_contrast(0.0, spread["sigma_task"], 3, 30)
    upper = sizing.smallest_contrast(spread["sigma_seed_hi"], spread["sigma_task"], 3, 30)
    assert upper > clipped
