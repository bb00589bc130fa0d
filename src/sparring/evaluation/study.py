"""The study of issue 62: what each answerer reward teaches, every arm from the base model.

Covers: the study's design as data (ARMS: each arm's `--set` overrides of configs/learn.yaml;
CONTRASTS; MEASURES), `check_runs` (every run started fresh from one model, all at one code
version from start to evaluation: ValueError naming the run), `measure_matrix` (per measure,
per arm, a runs x tasks matrix of final scores, a task's instances averaged first, and the
base row), `analyse` (the table: per arm and measure, base -> final with 95% intervals; the
contrasts: the difference of two arms' means with a stratified bootstrap interval resampling
seeds and tasks, and the probability of improvement, both computed by rliable, Agarwal et al.
2021, arXiv 2108.13264; beside each, the smallest contrast the design could see, from the
study's own seed spread: sparring.evaluation.sizing),
`table_text` and `contrast_lines` (what `sparring study` prints), `learn_values` (the
generators' held-out catch rate and the false-positive rate, read from a run's LEARN lines).
Does not cover: running the arms, the result file or the figure (sparring.study_runner); the
held-out file's format (sparring.evaluation.learning, whose helpers read it here); HumanEval,
which heldout.json does not hold per problem.
Pure: parsed heldout.json files in, plain data out; numpy and rliable, no model or MLflow.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparring.evaluation.intervals import check_comparable, task_table
from sparring.evaluation.heldout import Heldout, merged_tasks
from sparring.evaluation.sizing import seed_spread, smallest_contrast
from sparring.lineage import check_same_start

# Each arm: configs/learn.yaml with these overrides (and the run's name, training seed and
# storage.start_fresh=true, which the runner adds), in the order a study runs them.
ARMS: dict[str, tuple[str, ...]] = {
    "F": ("rewards.answerer=format_only", "phase_schedule=answerer", "data.given_tests=0"),
    "D": ("phase_schedule=answerer", "data.given_tests=0"),
    "G": ("phase_schedule=answerer",),
    "S": ("data.generator_samples=4",),
    "B": ("rewards.answerer=all_tests", "phase_schedule=answerer", "data.given_tests=0"),
}
# every arm's runs: HumanEval on 20 tasks, greedy (configs/learn.yaml evaluates 5, a smoke check)
COMMON: tuple[str, ...] = ("data.humaneval_limit=20",)
ARM_TEXT = {
    "F": "format-only reward, every test given, no generator",
    "D": "honest reward on every test, no generator (dense)",
    "G": "honest reward on 3 given tests, no generator (sparse)",
    "S": "self-play: G plus the generator phase and its bank (make learn as shipped)",
    "B": "binary all-tests reward on every test, no generator",
}
# (treatment, control, rank, question): the treatment's mean minus the control's
CONTRASTS = (
    ("D", "F", "primary", "does passing tests teach beyond format?"),
    ("S", "G", "primary", "do adversarial tests add to the given tests?"),
    ("G", "F", "secondary", "do 3 given tests teach beyond format?"),
    ("D", "S", "secondary", "every test given against self-play"),
    ("D", "B", "secondary", "the share of tests passed against all-or-nothing"),
)
# (label, held-out set, measure of heldout.json): measure "discriminating" is the file's `sets`,
# any other one of its `measures`
MEASURES = (
    ("new_tasks", "new_tasks", "discriminating"),
    ("new_tasks_strict", "new_tasks", "strict"),
    ("new_tasks_defining", "new_tasks", "defining"),
    ("new_families", "new_families", "discriminating"),
    ("bundled", "bundled", "discriminating"),
)
# measures whose problems differ between runs by design: the share among answers that define the
# asked-for function leaves out a problem with no such answer, before or after training
PARTIAL_MEASURES = ("defining",)
REPS = 10_000  # bootstrap resamples of each interval (rliable's default is 50,000)


@dataclass(frozen=True)
class StudyRun:
    """One finished run of the study: its name, arm, training seed, parsed heldout.json and
    LEARN lines."""

    name: str
    arm: str
    seed: int
    heldout: Mapping[str, Any]
    learn: tuple[str, ...] = field(default=())


def run_code(data: Mapping[str, Any]) -> str | None:
    """The code version a heldout.json names: its start record's (sparring.lineage)."""
    return (data.get("start") or {}).get("code") or data.get("code")


def code_changed(data: Mapping[str, Any]) -> str | None:
    """Why a run is of no one code version (the code it started at is not the code that
    evaluated it: the tree changed during the run), or None."""
    started, evaluated = (data.get("start") or {}).get("code"), data.get("code")
    if started and evaluated and started != evaluated:
        return f"started at code {started}, evaluated at code {evaluated}"
    return None


def check_runs(runs: Sequence[StudyRun]) -> None:
    """ValueError naming the run unless every run is of a known arm, each arm and seed once,
    every run started fresh from one and the same model (sparring.lineage.check_same_start) and
    all ran one code version, each from start to evaluation."""
    seen: dict[tuple[str, int], str] = {}
    for run in runs:
        if run.arm not in ARMS:
            raise ValueError(f"{run.name}: arm {run.arm!r} is not one of {', '.join(ARMS)}")
        if (run.arm, run.seed) in seen:
            raise ValueError(
                f"{run.name} and {seen[run.arm, run.seed]} are both arm {run.arm} at training "
                f"seed {run.seed}: keep one"
            )
        seen[run.arm, run.seed] = run.name
    check_same_start([(run.name, run.heldout) for run in runs])
    for run in runs:
        changed = code_changed(run.heldout)
        if changed:
            raise ValueError(f"{run.name}: {changed}: the code changed during it; run it again")
    codes = Counter(run_code(run.heldout) for run in runs)
    common = codes.most_common(1)[0][0] if codes else None
    for run in runs:
        code = run_code(run.heldout)
        if code != common:
            raise ValueError(
                f"{run.name}: code {code}, not the {common} of {codes[common]} other run(s): a "
                "study compares runs of one code version; run it again"
            )


class MeasureMissing(ValueError):
    """A measure that no run's heldout.json holds."""


def _holds(data: Mapping[str, Any], set_name: str, measure: str) -> bool:
    """Whether a heldout.json holds `set_name` per problem in `measure`."""
    if measure == data.get("measure", "discriminating"):
        sets = data.get("sets")
    else:
        sets = (data.get("measures") or {}).get(measure)
    return isinstance(sets, Mapping) and bool(sets.get(set_name))


def measure_matrix(runs: Sequence[StudyRun], set_name: str, measure: str) -> dict[str, Any]:
    """{"tasks": task keys, "base": the base model's score per task, "arms": {arm: {"seeds":
    [...], "final": [[score per task] per seed]}}} of one held-out set in one measure, a task's
    instances averaged first (sparring.evaluation.learning's task table). MeasureMissing when no
    run holds it; ValueError (naming the run) when some do and some do not, or when the runs did
    not measure the same problems with the same base scores."""
    lacking = [run.name for run in runs if not _holds(run.heldout, set_name, measure)]
    if len(lacking) == len(runs):
        raise MeasureMissing(f"{set_name} {measure}: not per problem in heldout.json")
    if lacking:
        raise ValueError(
            f"{lacking[0]}: no {set_name} {measure} in its heldout.json, which other runs of "
            "the study hold: were they run by one code version?"
        )
    pairs = [
        (run.name, Heldout.of(run.heldout, run.name).set_pairs(run.name, set_name, measure))
        for run in runs
    ]
    if measure in PARTIAL_MEASURES:  # only the problems every run holds
        common = set.intersection(*(set(p) for _, p in pairs))
        pairs = [(name, {pid: p[pid] for pid in common}) for name, p in pairs]
    check_comparable(pairs)
    tasks = merged_tasks([(run.name, Heldout.of(run.heldout, run.name)) for run in runs])
    base, final = task_table([p for _, p in pairs], tasks)
    keys = sorted({tasks.get(pid, pid) for pid in pairs[0][1]})
    by_arm: dict[str, dict[int, list[float]]] = {}
    for run, row in zip(runs, final, strict=True):
        by_arm.setdefault(run.arm, {})[run.seed] = row
    arms = {
        arm: {"seeds": sorted(rows), "final": [rows[s] for s in sorted(rows)]}
        for arm, rows in sorted(by_arm.items(), key=lambda kv: list(ARMS).index(kv[0]))
    }
    return {"tasks": keys, "base": base[0], "arms": arms}


@functools.cache
def _rliable() -> tuple[Any, Any]:
    """rliable's `library` and `metrics` modules. rliable 1.2.0 needs arch < 8 (arch 8 dropped
    the `random_state` argument rliable passes its bootstrap); arch 7.2.0, the last before it,
    decorates one ARCH model method with pandas' private `deprecate_kwarg`, whose first argument
    pandas 3 made the warning class. While rliable imports arch, that decorator is given its
    pandas 2 calling form; nothing of arch's bootstrap uses it."""
    import inspect
    import logging

    import pandas.util._decorators as decorators

    # rliable logs one INFO line per interval ("Calculating estimates for ...") through absl
    logging.getLogger("absl").setLevel(logging.WARNING)

    original = decorators.deprecate_kwarg
    if next(iter(inspect.signature(original).parameters)) != "klass":  # pandas 2: as arch wants
        from rliable import library, metrics

        return library, metrics

    def pandas2_form(*args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], str):  # deprecate_kwarg(old, new): pandas 2's form
            return original(FutureWarning, *args, **kwargs)
        return original(*args, **kwargs)

    decorators.deprecate_kwarg = pandas2_form
    try:
        from rliable import library, metrics
    finally:
        decorators.deprecate_kwarg = original
    return library, metrics


@contextlib.contextmanager
def _numpy_seed(seed: int) -> Iterator[None]:
    """rliable's stratified bootstrap draws from numpy's global generator: seed it for the
    call, and give the caller's state back after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def _means(scores: np.ndarray) -> np.ndarray:
    """The mean over runs and tasks of each slice of the last axis (runs x tasks x k)."""
    return scores.mean(axis=(0, 1))


def _difference(scores: np.ndarray) -> np.ndarray:
    """The first slice's mean minus the second's (runs x tasks x 2)."""
    means = _means(scores)
    return np.array([means[0] - means[1]])


def _intervals(
    key: str, stacked: np.ndarray, func: Any, reps: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """rliable's point estimates and 95% percentile intervals of `func` over a runs x tasks x
    k score array: the stratified bootstrap resamples each task's runs (each slice of the last
    axis on its own) and, with task_bootstrap, the tasks (the same tasks for every slice)."""
    library, _ = _rliable()
    with _numpy_seed(seed):
        points, intervals = library.get_interval_estimates(
            {key: stacked}, func, task_bootstrap=True, reps=reps
        )
    return points[key], intervals[key]


def _table_row(
    arm: str, label: str, matrix: Mapping[str, Any], reps: int, seed: int
) -> dict[str, Any]:
    base = np.asarray(matrix["base"], dtype=float)
    final = np.asarray(matrix["arms"][arm]["final"], dtype=float)
    stacked = np.stack([final, final - base], axis=-1)
    point, interval = _intervals(f"{arm} {label}", stacked, _means, reps, seed)
    return {
        "arm": arm,
        "measure": label,
        "n": int(final.shape[1]),
        "seeds": list(matrix["arms"][arm]["seeds"]),
        "base": float(base.mean()),
        "final": float(point[0]),
        "final_lo": float(interval[0][0]),
        "final_hi": float(interval[1][0]),
        "gain": float(point[1]),
        "gain_lo": float(interval[0][1]),
        "gain_hi": float(interval[1][1]),
    }


def _contrast(
    treated: str, control: str, label: str, matrix: Mapping[str, Any], reps: int, seed: int
) -> dict[str, Any] | None:
    """One contrast on the seeds both arms ran (rliable stacks equal run counts); None when
    they share none."""
    arms = matrix["arms"]
    seeds = sorted(set(arms[treated]["seeds"]) & set(arms[control]["seeds"]))
    if not seeds:
        return None

    def rows(arm: str) -> np.ndarray:
        chosen = dict(zip(arms[arm]["seeds"], arms[arm]["final"], strict=True))
        return np.asarray([chosen[s] for s in seeds], dtype=float)

    x, y = rows(treated), rows(control)
    point, interval = _intervals(
        f"{treated}-{control} {label}", np.stack([x, y], axis=-1), _difference, reps, seed
    )
    _, metrics = _rliable()
    return {
        "contrast": f"{treated}-{control}",
        "measure": label,
        "n": int(x.shape[1]),
        "seeds": seeds,
        "delta": float(point[0]),
        "lo": float(interval[0][0]),
        "hi": float(interval[1][0]),
        "probability_of_improvement": float(metrics.probability_of_improvement(x, y)),
    }


def analyse(runs: Sequence[StudyRun], reps: int = REPS, seed: int = 0) -> dict[str, Any]:
    """The study's numbers from its finished runs (`check_runs` first): per measure its
    matrices (`measure_matrix`), the table (per arm and measure: base, final and gain, with the
    95% interval of the final mean and of the gain over seeds and tasks), the contrasts
    (CONTRASTS: delta, interval, probability of improvement, on the seeds both arms ran;
    `shown` when the interval excludes 0 and rests on two seeds or more (one seed's interval
    resamples tasks alone, blind to how far training seeds spread), and `smallest`, the
    smallest contrast its seeds and tasks could see, once some arm ran two seeds), per measure
    the seed spread that sizes it (`spread`: `seed_spread`), the measures no file holds
    (`missing`), and per arm the generator and false-positive numbers of its LEARN lines
    (`learn`). Every interval names its n (tasks) and seeds."""
    if not runs:
        raise ValueError("no finished study run to analyse")
    check_runs(runs)
    out: dict[str, Any] = {"reps": reps, "seed": seed, "matrices": {}, "table": [],
                           "contrasts": [], "missing": [], "skipped": [],
                           "spread": {}}  # fmt: skip
    for label, set_name, measure in MEASURES:
        try:
            matrix = measure_matrix(runs, set_name, measure)
        except MeasureMissing as exc:
            out["missing"].append({"measure": label, "why": str(exc)})
            continue
        out["matrices"][label] = matrix
        spread = out["spread"][label] = seed_spread(matrix)
        for arm in matrix["arms"]:
            out["table"].append(_table_row(arm, label, matrix, reps, seed))
        for treated, control, rank, question in CONTRASTS:
            if treated not in matrix["arms"] or control not in matrix["arms"]:
                out["skipped"].append(
                    {"contrast": f"{treated}-{control}", "measure": label, "why": "arm not run"}
                )
                continue
            result = _contrast(treated, control, label, matrix, reps, seed)
            if result is None:
                out["skipped"].append(
                    {"contrast": f"{treated}-{control}", "measure": label, "why": "no common seed"}
                )
                continue
            if spread is not None:
                result["smallest"] = smallest_contrast(
                    spread["sigma_seed"], spread["sigma_task"], len(result["seeds"]), result["n"]
                )
            excludes_zero = result["lo"] > 0.0 or result["hi"] < 0.0
            result["shown"] = excludes_zero and len(result["seeds"]) >= 2
            out["contrasts"].append({**result, "rank": rank, "question": question})
    out["learn"] = learn_by_arm(runs)
    return out


LEARN_VALUES = {
    "false_positive_rate": re.compile(r"^LEARN false_positive_rate (\S+)"),
    "generator_catch_heldout": re.compile(r"^LEARN generator_catch_heldout base=(\S+) final=(\S+)"),
    "humaneval_pass_at_1": re.compile(r"^LEARN humaneval_pass_at_1 base=(\S+) final=(\S+)"),
}


def learn_values(lines: Sequence[str]) -> dict[str, float]:
    """The numbers the study reads from a run's LEARN lines: `false_positive_rate` (the answerer
    phases' answers passing every test the reward saw and failing a withheld one) and the
    generators' held-out catch rate (`generator_catch_heldout_base`, `_final`) and HumanEval
    pass@1 (`humaneval_pass_at_1_base`, `_final`: heldout.json holds no per-task HumanEval
    scores, so it is an arm's mean over seeds, with no interval); n/a left out.

    >>> learn_values(["LEARN false_positive_rate 0.120",
    ...               "LEARN generator_catch_heldout base=0.300 final=n/a ci95_delta=n/a (n=0)",
    ...               "LEARN humaneval_pass_at_1 base=0.050 final=0.100"])
    {'false_positive_rate': 0.12, 'generator_catch_heldout_base': 0.3, \
'humaneval_pass_at_1_base': 0.05, 'humaneval_pass_at_1_final': 0.1}
    """
    out: dict[str, float] = {}
    for line in lines:
        for name, pattern in LEARN_VALUES.items():
            match = pattern.match(line.strip())
            if not match:
                continue
            values = match.groups()
            keys = [name] if len(values) == 1 else [f"{name}_base", f"{name}_final"]
            for key, value in zip(keys, values, strict=True):
                with contextlib.suppress(ValueError):
                    out[key] = float(value)
    return out


def learn_by_arm(runs: Sequence[StudyRun]) -> dict[str, dict[str, dict[str, Any]]]:
    """{arm: {value: {"mean", "seeds"}}} of `learn_values` over each arm's runs."""
    values: dict[str, dict[str, dict[int, float]]] = {}
    for run in runs:
        for key, value in learn_values(run.learn).items():
            values.setdefault(run.arm, {}).setdefault(key, {})[run.seed] = value
    return {
        arm: {key: {"mean": sum(v.values()) / len(v), "seeds": sorted(v)} for key, v in per.items()}
        for arm, per in values.items()
    }


def _seeds_text(seeds: Sequence[int]) -> str:
    return f"seeds={len(seeds)}" + (f" ({','.join(map(str, seeds))})" if seeds else "")


def table_text(result: Mapping[str, Any]) -> str:
    """The table `sparring study` prints (Markdown): per arm (its seeds) and measure (its n
    tasks), base -> final mean and, in brackets, the 95% interval of the gain (final - base)
    resampling seeds and tasks."""
    labels = list(result["matrices"])
    if not labels:
        return "(no measure to show)"
    rows: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in result["table"]:
        rows.setdefault(row["arm"], {})[row["measure"]] = row
    header = ["arm", "seeds"] + [
        f"{label} (n={len(result['matrices'][label]['tasks'])})" for label in labels
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm in (a for a in ARMS if a in rows):
        seeds = next(iter(rows[arm].values()))["seeds"]
        cells = [arm, ",".join(map(str, seeds))]
        for label in labels:
            r = rows[arm].get(label)
            cells.append(
                f"{r['base']:.3f} -> {r['final']:.3f} [{r['gain_lo']:+.3f}, {r['gain_hi']:+.3f}]"
                if r else "n/a"
            )  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "base -> final mean; [95% interval of the gain over seeds and tasks, rliable's "
        f"stratified bootstrap, {result['reps']} resamples]; n counts tasks"
    )
    return "\n".join(lines)


def _verdict(contrast: Mapping[str, Any]) -> str:
    if contrast["shown"]:
        return "shown"
    return "not shown: one seed" if len(contrast["seeds"]) < 2 else "not shown"


def _smallest_text(contrast: Mapping[str, Any]) -> str:
    return f"{contrast['smallest']:.3f}" if "smallest" in contrast else "n/a"


def contrast_lines(result: Mapping[str, Any]) -> list[str]:
    """`STUDY <T>-<C> <measure> delta=X ci95_delta=LO,HI poi=P n=N seeds=K smallest=M shown|not
    shown[: one seed] (...)` per contrast and measure, primary first (smallest=n/a while no arm
    ran two seeds); then each measure's seed spread, the measures no file holds and the per-arm
    LEARN values."""
    lines = []
    for rank in ("primary", "secondary"):
        for c in (c for c in result["contrasts"] if c["rank"] == rank):
            lines.append(
                f"STUDY {c['contrast']} {c['measure']} delta={c['delta']:+.3f} "
                f"ci95_delta={c['lo']:+.3f},{c['hi']:+.3f} "
                f"poi={c['probability_of_improvement']:.3f} n={c['n']} "
                f"{_seeds_text(c['seeds'])} smallest={_smallest_text(c)} "
                f"{_verdict(c)} ({rank}: {c['question']})"
            )
    for label, spread in (result.get("spread") or {}).items():
        lines.append(
            f"STUDY spread {label} sigma_seed={spread['sigma_seed']:.3f} "
            f"sigma_task={spread['sigma_task']:.3f} df={spread['df_seeds']},{spread['df_tasks']} "
            f"n={spread['n']}"
            if spread else f"STUDY spread {label} n/a: no arm ran two seeds"
        )  # fmt: skip
    for s in result.get("skipped", []):
        if s["measure"] == MEASURES[0][0]:
            lines.append(f"STUDY {s['contrast']} n/a: {s['why']}")
    for m in result.get("missing", []):
        lines.append(f"STUDY {m['measure']} missing: {m['why']}")
    for arm, values in (result.get("learn") or {}).items():
        for key, v in values.items():
            lines.append(f"STUDY {arm} {key} mean={v['mean']:.3f} {_seeds_text(v['seeds'])}")
    return lines
