"""Size the study of issue 62 from the clean runs there are (docs/learning.md, "Sizing"; the
arithmetic worked through in docs/learning-journal.md, "The study's sizing").

It reads per-problem held-out files from docs/results and prints the numbers those pages
quote, with the arithmetic; the smallest contrast is the study report's own formula
(sparring.experiments.sizing.smallest_contrast), which sizes the study from its own seeds after it.

Model (an assumption, said here and in the docs): a run's final score on held-out task t is
task effect + a run-level offset u (one per training run, SD sigma_seed) + task-level noise e
(independent across runs and tasks, SD sigma_task). Two runs of one configuration that differ
only in the training seed then differ, task by task, by (u1 - u0) + (e1 - e0): the per-task
SD of that difference estimates sqrt(2) x sigma_task, and its mean estimates u1 - u0, whose
square, less the task noise in it, estimates 2 x sigma_seed^2 (one pair: one degree of
freedom). Arms share the base model, the draw and the held-out tasks, so task effects cancel
in a contrast of final scores, and with K seeds per arm over n tasks

    SE(contrast) = sqrt(2 sigma_seed^2 / K + 2 sigma_task^2 / (K n))
    smallest contrast seen with 80% power, two-sided 5% = (1.960 + 0.842) x SE

An arm-by-task interaction (a reward that helps some tasks and hurts others) is ignored; a
task bootstrap would widen the interval by it.

    python scripts/study_sizing.py [--tasks 40] [--seeds 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from sparring.evaluation.heldout import Heldout
from sparring.experiments.sizing import POWER_Z, smallest_contrast

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
# The only two clean training seeds of one configuration (development split, 2026-11-30)
PAIR = (
    "learn-revisit-dev-t0-2026-11-30-heldout.json",
    "learn-revisit-dev-t1-2026-11-30-heldout.json",
)
# Clean runs of neighbouring configurations on the held-out split (held-out seed 1, training
# seed 0, fresh clones, 2026-11-30): they differ in configuration as well as in the draw, so
# their spread bounds the seed spread from above.
NEIGHBOURS = (
    "learn-heldout-2026-11-30-heldout.json",
    "learn-heldout-p224-2026-11-30-heldout.json",
    "learn-heldout-rows256-2026-11-30-heldout.json",
    "learn-heldout-revisit-2026-11-30-heldout.json",
)
Z = POWER_Z  # two-sided 5%, 80% power


def task_scores(path: Path, set_name: str = "new_tasks") -> dict[str, tuple[float, float]]:
    """{task key: (base, final)} with a task's instances averaged first."""
    data = Heldout.load(path)
    by_task: dict[str, list[tuple[float, float]]] = {}
    for problem, (base, final) in data.set_pairs(path.name, set_name).items():
        by_task.setdefault((data.tasks or {}).get(problem, problem), []).append((base, final))
    return {
        key: (statistics.fmean(b for b, _ in rows), statistics.fmean(f for _, f in rows))
        for key, rows in by_task.items()
    }


def mde(sigma_seed: float, sigma_task: float, seeds: int, tasks: int) -> tuple[float, float]:
    smallest = smallest_contrast(sigma_seed, sigma_task, seeds, tasks)
    return smallest / Z, smallest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40, help="held-out new tasks in the study")
    parser.add_argument("--seeds", type=int, default=3, help="training seeds per arm")
    args = parser.parse_args()

    t0, t1 = (task_scores(RESULTS / name) for name in PAIR)
    shared = sorted(set(t0) & set(t1))
    assert shared, "the two seeds share no task"
    assert all(t0[k][0] == t1[k][0] for k in shared), "the two seeds differ in base scores"
    n = len(shared)
    final0 = statistics.fmean(t0[k][1] for k in shared)
    final1 = statistics.fmean(t1[k][1] for k in shared)
    diffs = [t1[k][1] - t0[k][1] for k in shared]
    mean_diff = statistics.fmean(diffs)
    sd_diff = statistics.stdev(diffs)
    sigma_task = sd_diff / math.sqrt(2)
    noise_in_mean = sd_diff**2 / n  # the task noise's part of mean_diff^2
    seed_var = max(0.0, (mean_diff**2 - noise_in_mean) / 2)
    sigma_seed = math.sqrt(seed_var)
    gains = [t[k][1] - t[k][0] for t in (t0, t1) for k in shared]

    print(f"pair: {PAIR[0]} and {PAIR[1]}")
    print(f"new tasks shared: n={n} (instances averaged within a task)")
    print(
        f"base {statistics.fmean(t0[k][0] for k in shared):.3f}; "
        f"final seed 0 {final0:.3f}, seed 1 {final1:.3f}"
    )
    print(f"seed 1 - seed 0: mean {mean_diff:+.4f}, per-task SD {sd_diff:.4f}")
    print(f"per-task SD of a run's gain (final - base), both seeds: {statistics.stdev(gains):.4f}")
    print(f"sigma_task = {sd_diff:.4f} / sqrt(2) = {sigma_task:.4f}")
    print(
        f"task noise in the mean difference: SD {math.sqrt(noise_in_mean):.4f} "
        f"(= {sd_diff:.4f} / sqrt({n}))"
    )
    print(
        f"sigma_seed^2 = max(0, ({mean_diff:+.4f}^2 - {sd_diff:.4f}^2/{n}) / 2) = {seed_var:.6f}"
        f" -> sigma_seed = {sigma_seed:.4f} (one pair: one degree of freedom)"
    )

    finals, sizes = [], []
    for name in NEIGHBOURS:
        scores = task_scores(RESULTS / name)
        finals.append(statistics.fmean(f for _, f in scores.values()))
        sizes.append(len(scores))
    spread = statistics.stdev(finals)
    n_nb = round(statistics.fmean(sizes))
    nb_seed = math.sqrt(max(0.0, spread**2 - sigma_task**2 / n_nb))
    print(
        f"neighbouring configurations, held-out split (n={n_nb} tasks each): finals "
        f"{', '.join(f'{f:.3f}' for f in finals)} -> SD {spread:.4f}"
    )
    print(
        f"  less its task noise: sqrt({spread:.4f}^2 - {sigma_task:.4f}^2/{n_nb}) = {nb_seed:.4f}"
        f" (run-level spread of seed and configuration together: an upper bound on sigma_seed)"
    )

    k, m = args.seeds, args.tasks
    print(f"\nstudy: K={k} seeds an arm, n={m} tasks, Z = 1.960 + 0.842 = {Z:.3f}")
    scenarios = [
        ("sigma_seed from the pair (point estimate)", sigma_seed),
        ("sigma_seed from the neighbours, task noise removed", nb_seed),
        ("sigma_seed = the neighbours' raw SD", spread),
    ]
    target_se = 0.10 / Z
    task_part = 2 * sigma_task**2 / (k * m)
    for label, s in scenarios:
        se, d = mde(s, sigma_task, k, m)
        need = math.ceil((2 * s**2 + 2 * sigma_task**2 / m) / target_se**2)
        print(
            f"  {label}: SE = sqrt(2 x {s:.4f}^2 / {k} + 2 x {sigma_task:.4f}^2 / ({k} x {m}))"
            f" = {se:.4f}; smallest contrast = {Z:.3f} x {se:.4f} = {d:.3f}"
            f" ({'reaches' if d <= 0.10 else 'does not reach'} 0.10;"
            f" seeds an arm for 0.10: {need})"
        )
    limit = math.sqrt(max(0.0, (target_se**2 - task_part) * k / 2))
    print(
        f"  0.10 is reached at K={k}, n={m} while sigma_seed <= {limit:.4f}"
        f" (SE <= 0.10 / {Z:.3f} = {target_se:.4f})"
    )


if __name__ == "__main__":
    main()
