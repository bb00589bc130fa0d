"""A study's numbers from its finished runs: the table, the contrasts and the seed spread.

The design (arms, contrasts, seeds, measures) is a file, configs/study/<name>.yaml
(sparring.experiments.study_design); this module reads it and the runs' typed records.
Covers: `check_runs` (every run of a planned arm, each arm and seed once, started fresh from
one model, all at one code version from start to evaluation: ValueError naming the run),
`measure_matrix` (per measure, per arm, a runs x tasks matrix of final scores, a task's
instances averaged first, and the base row), `analyse` (the table: per arm and measure, base ->
final, the 95% interval of the final and of the gain resampling whole seeds and tasks; the
contrasts: the difference of two arms' means with the seed-and-task interval, the t-interval on
the per-seed contrasts and each seed's contrast beside it (sparring.experiments.seed_intervals),
the probability of improvement, and the smallest contrast the design could see, sized from the
upper end of the seed spread's interval (sparring.experiments.sizing)), `run_values` (the
scalars a run's record.json keeps from its learning summary: the false-positive rate, the
generators' held-out catch rate, HumanEval pass@1), and `table_text` and `contrast_lines`
(what `sparring study` prints).
Does not cover: running the arms, reading the run files, the result file or the figure
(sparring.experiments.study_runner); heldout.json's format (sparring.evaluation.heldout); HumanEval
per
task, which heldout.json does not hold.
Pure: typed records in, plain data out; numpy and scipy, no model or MLflow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparring.backends.lineage import check_same_starts
from sparring.evaluation.heldout import Heldout, merged_tasks
from sparring.evaluation.intervals import check_comparable, task_table
from sparring.evaluation.learning import (
    BANK_COVER,
    BANK_COVER_SAMPLED,
    BANK_COVER_VALIDATION,
    TRAIN_CATCH,
)
from sparring.experiments import seed_intervals
from sparring.experiments.sizing import seed_spread, smallest_contrast
from sparring.experiments.study_design import StudyDesign
from sparring.problems.families import level_of_id

# measures whose problems differ between runs by design: the share among answers that define the
# asked-for function leaves out a problem with no such answer, before or after training
PARTIAL_MEASURES = ("defining",)
REPS = 10_000  # bootstrap resamples of each interval
# what a run's record.json keeps of its learning summary (`run_values`), as the LEARN lines
# print them: the answerer phases' false-positive rate, the generators' held-out catch rate
# and HumanEval pass@1 (heldout.json holds no per-task HumanEval scores: an arm's mean over
# seeds, with no interval)
VALUES = (
    "false_positive_rate", "generator_catch_heldout_base", "generator_catch_heldout_final",
    "humaneval_pass_at_1_base", "humaneval_pass_at_1_final", "completions_trained",
    "completions_sampled", "generator_catch_train_first", "generator_catch_train_last",
    *(f"bank_cover_{key}" for key in (*BANK_COVER_VALIDATION, "sampled_problems",
                                      *BANK_COVER_SAMPLED)),
)  # fmt: skip


@dataclass(frozen=True)
class StudyRun:
    """One finished run of a study: its name, arm, training seed, heldout.json (its typed
    record, or the parsed file), the scalars of its record.json (`VALUES`) and its LEARN lines
    (kept for the report file, never parsed here)."""

    name: str
    arm: str
    seed: int
    heldout: Heldout | Mapping[str, Any]
    values: Mapping[str, float] = field(default_factory=dict)
    learn: tuple[str, ...] = ()

    @property
    def record(self) -> Heldout:
        return Heldout.of(self.heldout, self.name)


def run_code(record: Heldout) -> str | None:
    """The code version a heldout.json names: its start record's (sparring.backends.lineage)."""
    return (record.start or {}).get("code") or record.code


def code_changed(record: Heldout) -> str | None:
    """Why a run is of no one code version (the code it started at is not the code that
    evaluated it: the tree changed during the run), or None."""
    started, evaluated = (record.start or {}).get("code"), record.code
    if started and evaluated and started != evaluated:
        return f"started at code {started}, evaluated at code {evaluated}"
    return None


def check_runs(runs: Sequence[StudyRun], design: StudyDesign) -> None:
    """ValueError naming the run unless every run is of an arm of `design`, each arm and seed
    once, every run started fresh from one and the same model
    (sparring.backends.lineage.check_same_starts) and all ran one code version, each from start to
    evaluation."""
    seen: dict[tuple[str, int], str] = {}
    for run in runs:
        if run.arm not in design.arms:
            raise ValueError(f"{run.name}: arm {run.arm!r} is not one of {', '.join(design.arms)}")
        if (run.arm, run.seed) in seen:
            raise ValueError(
                f"{run.name} and {seen[run.arm, run.seed]} are both arm {run.arm} at training "
                f"seed {run.seed}: keep one"
            )
        seen[run.arm, run.seed] = run.name
    records = [(run.name, run.record) for run in runs]
    check_same_starts([(name, record.start) for name, record in records])
    for name, record in records:
        changed = code_changed(record)
        if changed:
            raise ValueError(f"{name}: {changed}: the code changed during it; run it again")
    codes = Counter(run_code(record) for _, record in records)
    common = codes.most_common(1)[0][0] if codes else None
    for name, record in records:
        code = run_code(record)
        if code != common:
            raise ValueError(
                f"{name}: code {code}, not the {common} of {codes[common]} other run(s): a "
                "study compares runs of one code version; run it again"
            )


class MeasureMissing(ValueError):
    """A measure that no run's heldout.json holds."""


def measure_matrix(
    runs: Sequence[StudyRun],
    set_name: str,
    measure: str,
    arms: Sequence[str] = (),
    level: int | None = None,
) -> dict[str, Any]:
    """{"tasks": task keys, "base": the base model's score per task, "arms": {arm: {"seeds":
    [...], "final": [[score per task] per seed]}}} of one held-out set in one measure, a task's
    instances averaged first (sparring.evaluation.intervals.task_table), arms in the order of
    `arms` (then any other by name). MeasureMissing when no run holds it; ValueError (naming
    the run) when some do and some do not, or when the runs did not measure the same problems
    with the same base scores. With a `level`, only the family instances of that level
    (sparring.problems.families.level_of_id); MeasureMissing when the set holds none."""
    records = [(run.name, run.record) for run in runs]
    lacking = [name for name, record in records if not record.holds(set_name, measure)]
    if len(lacking) == len(runs):
        raise MeasureMissing(f"{set_name} {measure}: not per problem in heldout.json")
    if lacking:
        raise ValueError(
            f"{lacking[0]}: no {set_name} {measure} in its heldout.json, which other runs of "
            "the study hold: were they run by one code version?"
        )
    pairs = [(name, record.set_pairs(name, set_name, measure)) for name, record in records]
    if level is not None:
        pairs = [
            (name, {pid: v for pid, v in p.items() if level_of_id(pid) == level})
            for name, p in pairs
        ]
        if not pairs[0][1]:
            raise MeasureMissing(f"{set_name} {measure}: no problem of level {level}")
    if measure in PARTIAL_MEASURES:  # only the problems every run holds
        common = set.intersection(*(set(p) for _, p in pairs))
        pairs = [(name, {pid: p[pid] for pid in common}) for name, p in pairs]
    check_comparable(pairs)
    tasks = merged_tasks(records)
    base, final = task_table([p for _, p in pairs], tasks)
    keys = sorted({tasks.get(pid, pid) for pid in pairs[0][1]})
    by_arm: dict[str, dict[int, list[float]]] = {}
    for run, row in zip(runs, final, strict=True):
        by_arm.setdefault(run.arm, {})[run.seed] = row
    order = {arm: i for i, arm in enumerate(arms)}
    return {
        "tasks": keys,
        "base": base[0],
        "arms": {
            arm: {"seeds": sorted(rows), "final": [rows[s] for s in sorted(rows)]}
            for arm, rows in sorted(by_arm.items(), key=lambda kv: (order.get(kv[0], 1e9), kv[0]))
        },
    }


def _table_row(
    arm: str, label: str, matrix: Mapping[str, Any], reps: int, seed: int
) -> dict[str, Any]:
    """One arm's row of one measure: the means and their 95% intervals over resamples of the
    arm's whole seeds and of the tasks."""
    base = np.asarray(matrix["base"], dtype=float)
    final = np.asarray(matrix["arms"][arm]["final"], dtype=float)
    final_lo, final_hi = seed_intervals.seed_task_interval(final, reps=reps, seed=seed)
    gain_lo, gain_hi = seed_intervals.seed_task_interval(final - base, reps=reps, seed=seed)
    return {
        "arm": arm,
        "measure": label,
        "n": int(final.shape[1]),
        "seeds": list(matrix["arms"][arm]["seeds"]),
        "base": float(base.mean()),
        "final": float(final.mean()),
        "final_lo": final_lo,
        "final_hi": final_hi,
        "gain": float(final.mean() - base.mean()),
        "gain_lo": gain_lo,
        "gain_hi": gain_hi,
    }


def _excludes_zero(lo: float, hi: float) -> bool:
    return lo > 0.0 or hi < 0.0


def _contrast(
    treated: str, control: str, label: str, matrix: Mapping[str, Any], reps: int, seed: int
) -> dict[str, Any] | None:
    """One contrast on the seeds both arms ran; None when they share none. `lo`, `hi`: the
    seed-and-task interval; `per_seed`: each common seed's contrast; `t_lo`, `t_hi`: the
    t-interval on them (None with one seed)."""
    arms = matrix["arms"]
    seeds = sorted(set(arms[treated]["seeds"]) & set(arms[control]["seeds"]))
    if not seeds:
        return None

    def rows(arm: str) -> np.ndarray:
        chosen = dict(zip(arms[arm]["seeds"], arms[arm]["final"], strict=True))
        return np.asarray([chosen[s] for s in seeds], dtype=float)

    x, y = rows(treated), rows(control)
    lo, hi = seed_intervals.seed_task_interval(x, y, reps=reps, seed=seed)
    per_seed = seed_intervals.per_seed_contrasts(x, seeds, y, seeds)
    t_interval = seed_intervals.per_seed_t_interval(list(per_seed.values()))
    return {
        "contrast": f"{treated}-{control}",
        "measure": label,
        "n": int(x.shape[1]),
        "seeds": seeds,
        "delta": float(x.mean() - y.mean()),
        "lo": lo,
        "hi": hi,
        "per_seed": {str(s): d for s, d in per_seed.items()},
        "t_lo": None if t_interval is None else t_interval[0],
        "t_hi": None if t_interval is None else t_interval[1],
        "probability_of_improvement": seed_intervals.probability_of_improvement(x, y),
    }


def analyse(
    runs: Sequence[StudyRun], design: StudyDesign, reps: int = REPS, seed: int = 0
) -> dict[str, Any]:
    """The study's numbers from its finished runs (`check_runs` first): per measure of the
    design its matrices (`measure_matrix`), the table (per arm and measure: base, final and
    gain, with the 95% interval of the final mean and of the gain over whole seeds and tasks),
    the contrasts (the design's: delta, the seed-and-task interval, the per-seed contrasts and
    their t-interval, the probability of improvement, on the seeds both arms ran; `shown` when
    it rests on two seeds or more and both intervals exclude 0 on one side (one seed's
    interval resamples tasks alone, blind to how far training seeds spread), and `smallest`,
    the smallest contrast its seeds and tasks could see with the seed spread at the upper end
    of its interval, once some arm ran two seeds), per measure the seed spread (`spread`:
    `seed_spread`), the measures no file holds (`missing`), and per arm the mean of its runs'
    `values` (`learn`). Every interval names its n (tasks) and seeds."""
    if not runs:
        raise ValueError("no finished study run to analyse")
    check_runs(runs, design)
    out: dict[str, Any] = {"study": design.name, "reps": reps, "seed": seed, "matrices": {},
                           "table": [], "contrasts": [], "missing": [], "skipped": [],
                           "spread": {}}  # fmt: skip
    for m in design.measures:
        try:
            matrix = measure_matrix(runs, m.set_name, m.measure, list(design.arms), m.level)
        except MeasureMissing as exc:
            out["missing"].append({"measure": m.label, "why": str(exc)})
            continue
        out["matrices"][m.label] = matrix
        spread = out["spread"][m.label] = seed_spread(matrix)
        for arm in matrix["arms"]:
            out["table"].append(_table_row(arm, m.label, matrix, reps, seed))
        for c in design.contrasts:
            if c.treatment not in matrix["arms"] or c.control not in matrix["arms"]:
                out["skipped"].append({"contrast": c.label, "measure": m.label,
                                       "why": "arm not run"})  # fmt: skip
                continue
            result = _contrast(c.treatment, c.control, m.label, matrix, reps, seed)
            if result is None:
                out["skipped"].append({"contrast": c.label, "measure": m.label,
                                       "why": "no common seed"})  # fmt: skip
                continue
            if spread is not None:
                result["smallest"] = smallest_contrast(
                    spread["sigma_seed_hi"], spread["sigma_task"], len(result["seeds"]),
                    result["n"],
                )  # fmt: skip
            both = _excludes_zero(result["lo"], result["hi"]) and (
                result["t_lo"] is not None
                and _excludes_zero(result["t_lo"], result["t_hi"])
                and (result["lo"] > 0) == (result["t_lo"] > 0)
            )
            result["shown"] = both and len(result["seeds"]) >= 2
            out["contrasts"].append({**result, "rank": c.rank, "question": c.question})
    out["learn"] = learn_by_arm(runs, list(design.arms))
    return out


def run_values(
    summary: Mapping[str, Any], completions_trained: float | None = None
) -> dict[str, float]:
    """`VALUES` of a run's learning summary (sparring.evaluation.learning.from_phase_runs, which
    returns `completions_trained` beside it), as its LEARN lines print them: the held-out catch
    rate only when measured on some task, the training catch (rewards.generator: catch) and what
    the bank covered (`bank_cover_*`) when the run had them; n/a left out.

    >>> run_values({"false_positive_rate": 0.012, "humaneval_pass_at_1": {"base": 0.05,
    ...             "final": None}, "generator_catch_heldout": {"before": 0.5, "after": 0.4,
    ...             "n": 0}})
    {'false_positive_rate': 0.012, 'humaneval_pass_at_1_base': 0.05}
    """
    out: dict[str, float] = {}
    if summary.get("false_positive_rate") is not None:
        out["false_positive_rate"] = float(summary["false_positive_rate"])
    catch = summary.get("generator_catch_heldout") or {}
    if catch.get("n"):
        for key, name in (("before", "base"), ("after", "final")):
            if catch.get(key) is not None:
                out[f"generator_catch_heldout_{name}"] = float(catch[key])
    he = summary.get("humaneval_pass_at_1") or {}
    for key in ("base", "final"):
        if he.get(key) is not None:
            out[f"humaneval_pass_at_1_{key}"] = float(he[key])
    if completions_trained is not None:
        out["completions_trained"] = float(completions_trained)
    if summary.get("completions_sampled") is not None:
        out["completions_sampled"] = float(summary["completions_sampled"])
    for side in ("first", "last"):
        value = (summary.get(TRAIN_CATCH) or {}).get(side)
        if value is not None:
            out[f"{TRAIN_CATCH}_{side}"] = float(value)
    for key, value in (summary.get(BANK_COVER) or {}).items():
        out[f"{BANK_COVER}_{key}"] = float(value)
    return out


def learn_by_arm(
    runs: Sequence[StudyRun], arms: Sequence[str] = ()
) -> dict[str, dict[str, dict[str, Any]]]:
    """{arm: {value: {"mean", "seeds"}}} of the runs' `values`, arms in the order of `arms`."""
    values: dict[str, dict[str, dict[int, float]]] = {}
    for run in sorted(runs, key=lambda r: list(arms).index(r.arm) if r.arm in arms else 1e9):
        for key in VALUES:
            if key in run.values:
                values.setdefault(run.arm, {}).setdefault(key, {})[run.seed] = run.values[key]
    return {
        arm: {key: {"mean": sum(v.values()) / len(v), "seeds": sorted(v)} for key, v in per.items()}
        for arm, per in values.items()
    }


def _seeds_text(seeds: Sequence[int]) -> str:
    return f"seeds={len(seeds)}" + (f" ({','.join(map(str, seeds))})" if seeds else "")


def table_text(result: Mapping[str, Any]) -> str:
    """The table `sparring study` prints (Markdown): per arm (its seeds) and measure (its n
    tasks), base -> final mean and, in brackets, the 95% interval of the gain (final - base)
    resampling whole seeds and tasks."""
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
    for arm, by_measure in rows.items():
        seeds = next(iter(by_measure.values()))["seeds"]
        cells = [arm, ",".join(map(str, seeds))]
        for label in labels:
            r = by_measure.get(label)
            cells.append(
                f"{r['base']:.3f} -> {r['final']:.3f} [{r['gain_lo']:+.3f}, {r['gain_hi']:+.3f}]"
                if r else "n/a"
            )  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "base -> final mean; [95% interval of the gain, each arm's whole seeds and the tasks "
        f"resampled, {result['reps']} resamples]; n counts tasks"
    )
    return "\n".join(lines)


def _verdict(contrast: Mapping[str, Any]) -> str:
    if contrast["shown"]:
        return "shown"
    return "not shown: one seed" if len(contrast["seeds"]) < 2 else "not shown"


def _smallest_text(contrast: Mapping[str, Any]) -> str:
    return f"{contrast['smallest']:.3f}" if "smallest" in contrast else "n/a"


def _t_text(contrast: Mapping[str, Any]) -> str:
    if contrast.get("t_lo") is None:
        return "t95_delta=n/a"
    return f"t95_delta={contrast['t_lo']:+.3f},{contrast['t_hi']:+.3f}"


def _per_seed_text(contrast: Mapping[str, Any]) -> str:
    seeds = contrast.get("per_seed") or {}
    return "per_seed=" + ",".join(f"t{s}:{d:+.3f}" for s, d in seeds.items())


def spread_line(label: str, spread: Mapping[str, Any] | None) -> str:
    """`STUDY spread <measure> sigma2_seed=X (...) ci95=LO,HI sigma_seed_hi=U sigma_task=T
    df=K,D n=N`: the seed variance component unclipped, a negative one said to be one."""
    if not spread:
        return f"STUDY spread {label} n/a: no arm ran two seeds"
    sigma2 = spread["sigma2_seed"]
    why = " (negative: seeds agree more than tasks predict)" if sigma2 < 0 else ""
    return (
        f"STUDY spread {label} sigma2_seed={sigma2:+.5f}{why} "
        f"ci95={spread['sigma2_seed_lo']:+.5f},{spread['sigma2_seed_hi']:+.5f} "
        f"sigma_seed_hi={spread['sigma_seed_hi']:.3f} sigma_task={spread['sigma_task']:.3f} "
        f"df={spread['df_seeds']},{spread['df_tasks']} n={spread['n']}"
    )


def contrast_lines(result: Mapping[str, Any]) -> list[str]:
    """`STUDY <T>-<C> <measure> delta=X ci95_delta=LO,HI t95_delta=LO,HI per_seed=t1:D1,...
    poi=P n=N seeds=K smallest=M shown|not shown[: one seed] (...)` per contrast and measure,
    primary first (ci95_delta: whole seeds and tasks resampled; t95_delta: a t-interval on the
    per-seed contrasts; smallest=n/a while no arm ran two seeds); then each measure's seed
    spread (`spread_line`; the first measure's per arm too), the measures no file holds and the
    per-arm values of the runs' record files."""
    lines = []
    for rank in ("primary", "secondary"):
        for c in (c for c in result["contrasts"] if c["rank"] == rank):
            lines.append(
                f"STUDY {c['contrast']} {c['measure']} delta={c['delta']:+.3f} "
                f"ci95_delta={c['lo']:+.3f},{c['hi']:+.3f} {_t_text(c)} {_per_seed_text(c)} "
                f"poi={c['probability_of_improvement']:.3f} n={c['n']} "
                f"{_seeds_text(c['seeds'])} smallest={_smallest_text(c)} "
                f"{_verdict(c)} ({rank}: {c['question']})"
            )
    spreads = result.get("spread") or {}
    for label, spread in spreads.items():
        lines.append(spread_line(label, spread))
    first = next(iter(result.get("matrices") or {}), None)
    if first and spreads.get(first):
        per_arm = " ".join(f"{a}={v:+.5f}" for a, v in spreads[first]["arms"].items())
        lines.append(f"STUDY spread {first} per arm sigma2_seed {per_arm}")
    for s in result.get("skipped", []):
        if s["measure"] == first:
            lines.append(f"STUDY {s['contrast']} n/a: {s['why']}")
    for m in result.get("missing", []):
        lines.append(f"STUDY {m['measure']} missing: {m['why']}")
    for arm, values in (result.get("learn") or {}).items():
        for key, v in values.items():
            lines.append(f"STUDY {arm} {key} mean={v['mean']:.3f} {_seeds_text(v['seeds'])}")
    return lines
