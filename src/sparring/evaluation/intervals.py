"""Gains with bootstrap intervals, over problems, tasks and training runs: the statistics every
LEARN line prints.

Covers: `paired_delta` (a paired gain over problems), task identity from tags (`task_keys`,
TASK_TAG), the check that runs evaluated alike (`check_comparable`: the same problems, the same
base scores), the [run][task] table (`task_table`: a task's instances averaged first),
`task_gain` (one config's gain, tasks and runs resampled), `train_reward_change` (the
training reward's first quarter of steps against its last), `sides_change` (two sides, each a
mean over problems with its standard error, sparring.engine.credit.side_summary, compared: the
generator's training catch, `rewards.generator: catch`), `control_gain` (a treatment's gain
over its control's) and `control_gain_by_start` (pooled over starting models, each weighed
equally), and how an interval is printed (`interval_text`, MIN_PER_SIDE).
Does not cover: what a run's report or heldout.json holds, or which runs may be paired
(sparring.evaluation.learning). Pure: plain Python data in and out.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


def paired_delta(
    before: Sequence[float], after: Sequence[float], n_boot: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Mean of after - before over paired items (problems), with a 95% percentile bootstrap
    interval (resampling problems).

    >>> d = paired_delta([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    >>> d["delta"], d["lo"], d["hi"]
    (1.0, 1.0, 1.0)
    >>> paired_delta([], [])["n"]
    0
    """
    if len(before) != len(after):
        raise ValueError(f"{len(before)} items before, {len(after)} after")
    n = len(before)
    if n == 0:
        return {"n": 0, "before": 0.0, "after": 0.0, "delta": 0.0, "lo": 0.0, "hi": 0.0}
    deltas = [a - b for a, b in zip(after, before, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(deltas, k=n)) / n for _ in range(n_boot))
    return {
        "n": n,
        "before": sum(before) / n,
        "after": sum(after) / n,
        "delta": sum(deltas) / n,
        "lo": means[int(0.025 * (n_boot - 1))],
        "hi": means[int(0.975 * (n_boot - 1))],
    }


Pairs = Mapping[str, Sequence[float]]  # {problem id: [base, final]} of one run
TASK_TAG = "task:"  # + the task's key: every generated instance of one task carries the same
BASE_TOLERANCE = 1e-9  # base scores further apart than this were not sampled alike


def task_keys(tags_by_id: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """{problem id: task key} from the problems' tags: the `task:<key>` tag, else the problem's
    own id (a bundled or HumanEval problem is a task of its own).

    >>> task_keys({"a": ["heldout:new_tasks", "task:f1"], "b": ["task:f1"], "h": []})
    {'a': 'f1', 'b': 'f1', 'h': 'h'}
    """
    out = {}
    for pid, tags in tags_by_id.items():
        keys = [t[len(TASK_TAG) :] for t in tags if t.startswith(TASK_TAG)]
        out[pid] = keys[0] if keys else pid
    return out


def check_comparable(runs: Sequence[tuple[str, Pairs]]) -> None:
    """ValueError unless every named run measured the same problems with the same base scores:
    one base model sampled with one seed on one problem set scores the same, so runs that differ
    there did not evaluate alike and their gains cannot be paired or pooled."""
    if not runs:
        return
    first_name, first = runs[0]
    for name, run in runs[1:]:
        if set(run) != set(first):
            only_here, only_there = sorted(set(run) - set(first)), sorted(set(first) - set(run))
            example = (only_here or only_there)[0]
            raise ValueError(
                f"{name} and {first_name} measured different problems ({len(only_here)} only in "
                f"{name}, {len(only_there)} only in {first_name}, e.g. {example!r}): "
                "were they run on the same config?"
            )
        for pid in sorted(run):
            here, there = float(run[pid][0]), float(first[pid][0])
            if abs(here - there) > BASE_TOLERANCE:
                raise ValueError(
                    f"{name} and {first_name} differ in the base model's score on problem "
                    f"{pid!r} ({here:.3f} against {there:.3f}): the same base model sampled with "
                    "the same seed scores the same, so they did not evaluate alike"
                )


def task_table(
    runs: Sequence[Pairs], tasks: Mapping[str, str]
) -> tuple[list[list[float]], list[list[float]]]:
    """(base, final), each [run][task]: the mean over each task's instances, tasks in key
    order. A problem missing from `tasks` is a task of its own."""
    keys = sorted({tasks.get(pid, pid) for run in runs for pid in run})
    column = {key: i for i, key in enumerate(keys)}
    base, final = [], []
    for run in runs:
        sums = [[0.0, 0.0, 0] for _ in keys]
        for pid, (b, f) in run.items():
            cell = sums[column[tasks.get(pid, pid)]]
            cell[0], cell[1], cell[2] = cell[0] + b, cell[1] + f, cell[2] + 1
        base.append([b / n for b, _, n in sums])
        final.append([f / n for _, f, n in sums])
    return base, final


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _grand_mean(table: Sequence[Sequence[float]]) -> float:
    """The mean of a [run][task] table: over tasks of the mean over runs."""
    return _mean([_mean(row) for row in table])


def _bootstrap(
    arms: Sequence[tuple[float, Sequence[Sequence[float]]]], n_boot: int, seed: int
) -> tuple[float, float, float]:
    """(delta, lo, hi) of the mean over tasks of the sum over arms of sign x (the arm's mean
    over its runs of gain[run][task]), arms given as (sign, gain[run][task]); the 95%
    percentile interval resamples tasks, then each arm's runs (when it has several), with
    replacement. One arm of one run draws exactly what `paired_delta` draws."""
    n_tasks = len(arms[0][1][0])
    rng = random.Random(seed)

    def per_task(run_draws: Sequence[Sequence[int]]) -> list[float]:
        total = [0.0] * n_tasks
        for (sign, gains), draw in zip(arms, run_draws, strict=True):
            rows = [gains[r] for r in draw]
            column = (
                rows[0] if len(rows) == 1 else [sum(c) / len(rows) for c in zip(*rows, strict=True)]
            )
            total = [t + sign * g for t, g in zip(total, column, strict=True)]
        return total

    every_run = [range(len(gains)) for _, gains in arms]
    fixed = per_task(every_run)  # what every draw sees when no arm has runs to resample
    resample_runs = any(len(runs) > 1 for runs in every_run)
    draws = []
    for _ in range(n_boot):
        if not resample_runs:
            draws.append(sum(rng.choices(fixed, k=n_tasks)) / n_tasks)
            continue
        task_draw = rng.choices(range(n_tasks), k=n_tasks)
        run_draws = [
            rng.choices(runs, k=len(runs)) if len(runs) > 1 else runs for runs in every_run
        ]
        values = per_task(run_draws)
        draws.append(sum([values[t] for t in task_draw]) / n_tasks)
    draws.sort()
    point = sum(fixed) / n_tasks
    return point, draws[int(0.025 * (n_boot - 1))], draws[int(0.975 * (n_boot - 1))]


def _gains(base: Sequence[Sequence[float]], final: Sequence[Sequence[float]]) -> list[list[float]]:
    return [
        [f - b for b, f in zip(bs, fs, strict=True)] for bs, fs in zip(base, final, strict=True)
    ]


def task_gain(
    runs: Sequence[Pairs], tasks: Mapping[str, str] | None = None, n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """Mean final - base over *tasks*, from one or several training runs (seeds) of one config
    ({problem id: [base, final]} each, over the same problems with the same base scores:
    ValueError otherwise), with a 95% bootstrap interval that resamples runs and distinct tasks
    with replacement (a task's instances, `tasks`: {problem id: task key}, averaged and drawn
    together). `n` counts tasks, `seeds` runs.

    >>> ten = {f"t{i}": [0.0, 1.0] for i in range(10)}  # ten instances of one task
    >>> d = task_gain([ten], {pid: "one" for pid in ten})
    >>> d["n"], d["seeds"], d["delta"], d["lo"], d["hi"]
    (1, 1, 1.0, 1.0, 1.0)
    """
    check_comparable([(f"run {i + 1}", run) for i, run in enumerate(runs)])
    if not runs or not runs[0]:
        empty = {"before": 0.0, "after": 0.0, "delta": 0.0, "lo": 0.0, "hi": 0.0}
        return {"n": 0, "seeds": len(runs), **empty}
    base, final = task_table(runs, tasks or {})
    delta, lo, hi = _bootstrap([(1.0, _gains(base, final))], n_boot, seed)
    return {
        "n": len(base[0]),
        "seeds": len(runs),
        "before": _grand_mean(base),
        "after": _grand_mean(final),
        "delta": delta,
        "lo": lo,
        "hi": hi,
    }


def control_gain(
    treatments: Sequence[Pairs], controls: Sequence[Pairs], tasks: Mapping[str, str] | None = None,
    n_boot: int = 2000, seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """The treatment runs' mean held-out gain (final - base) minus the control runs', over
    tasks, with a 95% bootstrap interval resampling tasks (instances together) and each side's
    runs with replacement. Every run must hold the same problems with the same base scores
    (ValueError otherwise). `before`: the control's gain, `after`: the treatment's; `n` counts
    tasks, `seeds` treatment runs, `control_seeds` control runs."""
    if not treatments or not controls or not treatments[0]:
        named = [(f"treatment run {i + 1}", run) for i, run in enumerate(treatments)]
        check_comparable(named + [(f"control run {i + 1}", r) for i, r in enumerate(controls)])
        out = {"seeds": len(treatments), "control_seeds": len(controls)}
        return {**out, "n": 0, "before": 0.0, "after": 0.0, "delta": 0.0, "lo": 0.0, "hi": 0.0}
    gain = control_gain_by_start([(treatments, controls)], tasks, n_boot, seed)
    del gain["starts"]
    return gain


def control_gain_by_start(
    starts: Sequence[tuple[Sequence[Pairs], Sequence[Pairs]]],
    tasks: Mapping[str, str] | None = None, n_boot: int = 2000, seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """`control_gain` over arms run from several starting models: `starts` holds, per start,
    (treatment runs, control runs), each start's runs measured alike (one base model: same
    problems, same base scores; ValueError otherwise) and every start on the same problems.
    The delta weighs each start's treatment-minus-control gain equally; the 95% interval
    resamples tasks (shared by every start) and, within each start and arm, its runs, so runs
    of one start never stand in for another's. `starts` counts them.

    >>> a = ({"p": [0.0, 0.5]}, {"p": [0.0, 0.1]})  # start A: treatment run, control run
    >>> b = ({"p": [0.4, 0.6]}, {"p": [0.4, 0.6]})  # start B, another base score
    >>> d = control_gain_by_start([([a[0]], [a[1]]), ([b[0]], [b[1]])])
    >>> d["starts"], round(d["delta"], 3), d["n"]
    (2, 0.2, 1)
    """
    if not starts:
        raise ValueError("no starts: give each start's (treatment runs, control runs)")
    problems = None
    arms: list[tuple[float, list[list[float]]]] = []
    before = after = 0.0
    weight = 1.0 / len(starts)
    for i, (treatments, controls) in enumerate(starts, 1):
        if not treatments or not controls:
            raise ValueError(f"start {i} has no treatment or no control run: pair every start")
        where = f"start {i} " if len(starts) > 1 else ""  # one start: control_gain's names
        named = [(f"{where}treatment run {j + 1}", run) for j, run in enumerate(treatments)]
        named += [(f"{where}control run {j + 1}", run) for j, run in enumerate(controls)]
        check_comparable(named)
        if problems is None:
            problems = set(treatments[0])
        elif set(treatments[0]) != problems:
            raise ValueError(f"start {i} measured other problems than start 1: not one split")
        treated = _gains(*task_table(treatments, tasks or {}))
        control = _gains(*task_table(controls, tasks or {}))
        arms += [(weight, treated), (-weight, control)]
        before += weight * _grand_mean(control)
        after += weight * _grand_mean(treated)
    delta, lo, hi = _bootstrap(arms, n_boot, seed)
    return {
        "starts": len(starts),
        "seeds": sum(len(t) for t, _ in starts),
        "control_seeds": sum(len(c) for _, c in starts),
        "n": len(arms[0][1][0]),
        "before": before,
        "after": after,
        "delta": delta,
        "lo": lo,
        "hi": hi,
    }


MIN_PER_SIDE = 5  # an interval resting on fewer values per side is printed as n/a, not a number


def interval_text(d: Mapping[str, float] | None, n_key: str = "n") -> str:
    """`ci95_delta=LO,HI n=N` for a gain, or `ci95_delta=n/a (n=K)` when it rests on fewer
    than MIN_PER_SIDE values per side (problems or tasks, or steps per quarter); ` seeds=K`
    after it when the gain pools K > 1 training runs.

    >>> interval_text({"lo": -0.01, "hi": 0.05, "n": 40})
    'ci95_delta=-0.010,0.050 n=40'
    >>> interval_text({"lo": -0.01, "hi": 0.05, "n": 40, "seeds": 3})
    'ci95_delta=-0.010,0.050 n=40 seeds=3'
    >>> interval_text({"lo": 0.6, "hi": 0.6, "n": 1})
    'ci95_delta=n/a (n=1)'
    >>> interval_text(None)
    'ci95_delta=n/a (n=0)'
    """
    n = int((d or {}).get(n_key, 0))
    seeds = int((d or {}).get("seeds", 1))
    runs = f" seeds={seeds}" if seeds > 1 else ""
    if not d or n < MIN_PER_SIDE:
        return f"ci95_delta=n/a (n={n}){runs}"
    return f"ci95_delta={d['lo']:.3f},{d['hi']:.3f} n={n}{runs}"


def train_reward_change(
    step_rewards: Sequence[float], n_boot: int = 2000, seed: int = 0
) -> dict[str, float] | None:
    """Mean training reward of the first quarter of optimizer steps against the last quarter
    (the run's own training problems), with a 95% bootstrap interval of last - first
    (resampling steps within each quarter: different steps draw different problems, so the
    step is the unit). None with fewer than 4 steps.

    >>> d = train_reward_change([0.1, 0.1, 0.3, 0.3, 0.5, 0.5, 0.5, 0.5])
    >>> d["first"], d["last"], round(d["delta"], 3), d["lo"] > 0, d["steps"]
    (0.1, 0.5, 0.4, True, 8.0)
    >>> train_reward_change([0.2, 0.3, 0.4]) is None
    True
    """
    n = len(step_rewards)
    if n < 4:
        return None
    q = n // 4
    first, last = list(step_rewards[:q]), list(step_rewards[-q:])
    rng = random.Random(seed)
    deltas = sorted(
        sum(rng.choices(last, k=q)) / q - sum(rng.choices(first, k=q)) / q for _ in range(n_boot)
    )
    mean_first, mean_last = sum(first) / q, sum(last) / q
    return {
        "steps": float(n),
        "per_side": float(q),
        "first": mean_first,
        "last": mean_last,
        "delta": mean_last - mean_first,
        "lo": deltas[int(0.025 * (n_boot - 1))],
        "hi": deltas[int(0.975 * (n_boot - 1))],
    }


def sides_change(
    first: Mapping[str, float], last: Mapping[str, float], same: bool = False
) -> dict[str, float]:
    """last - first of two independent sides (`side_summary`'s), with a 95% normal interval
    (delta +- 1.96 * sqrt(se_first^2 + se_last^2)); `per_side` the smaller side's n, which
    `interval_text` reads. `same`: both sides are one step's values (one scoring call), not
    independent: the result says so (`same` 1) and its interval is not to be printed.

    >>> d = sides_change({"mean": 0.2, "se": 0.03, "n": 8}, {"mean": 0.5, "se": 0.04, "n": 6})
    >>> round(d["delta"], 3), round(d["lo"], 3), round(d["hi"], 3), d["per_side"]
    (0.3, 0.202, 0.398, 6.0)
    """
    delta = last["mean"] - first["mean"]
    half = 1.96 * (first["se"] ** 2 + last["se"] ** 2) ** 0.5
    return {
        "first": first["mean"],
        "last": last["mean"],
        "delta": delta,
        "lo": delta - half,
        "hi": delta + half,
        "per_side": float(min(first["n"], last["n"])),
        "same": float(same),
    }
