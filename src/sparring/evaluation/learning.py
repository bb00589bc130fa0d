"""Did the run learn? The learning section of a run's report and its `LEARN` lines.

Why one module: the summary, the `LEARN` lines that print it and its reading back from the
phases' runs share its keys (GATE, TRAIN_CATCH, BANK_COVER, HELDOUT_LINES), and a dozen modules
(phases, experiments, the other evaluation modules) read them as `learning.<name>`.

Covers: the report's learning section (`learning_summary`: base -> warm start -> after
self-play on the held-out problems, sampled several times each), the `LEARN` lines one run
prints (`learn_lines`, `gain_line`), what a run's heldout.json stores per problem
(`heldout_per_problem`) and the phases' MLflow metrics read back into the summary
(`from_phase_runs`).
Does not cover: pairing and pooling runs of two arms (sparring.evaluation.arms), the bootstrap
intervals (sparring.evaluation.intervals), the generators' held-out numbers
(sparring.evaluation.generator_heldout) or heldout.json's format, its typed record, load and
save (sparring.evaluation.heldout).
Measures, all on problems the run never trained on: the discriminating share (the honest
reward's), every test passed, the raw share (shown, never used to claim a gain), the bank pass
rate and HumanEval pass@1; an interval counts tasks, not instances. Pure: plain Python data in
and out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparring.evaluation.intervals import (
    interval_text,
    paired_delta,
    sides_change,
    task_gain,
)

MEASURES = ("discriminating", "strict", "raw", "pass_at_n", "defines", "defining")


def answerer_step_rewards(step_curves: Sequence[Mapping[str, Any]]) -> list[float]:
    """Every answerer optimizer step's mean reward, in run order, from the phases' per-step
    curves (`sparring.tracking.step_curves`): what train_reward and the learning figure read.

    >>> answerer_step_rewards([{"phase": "train-answerer", "run": "r1-train-answerer",
    ...                         "curves": {"reward": [[1, 0.2], [2, 0.4]]}},
    ...                        {"phase": "train-generator", "run": "r1-train-generator",
    ...                         "curves": {"reward": [[1, 0.9]]}}])
    [0.2, 0.4]
    """
    return [
        value
        for curve in step_curves
        if str(curve.get("phase", "")).startswith("train-answerer")
        or "answerer" in str(curve.get("run", ""))
        for _, value in (curve.get("curves") or {}).get("reward", [])
    ]


def _per_problem(snapshot: Mapping[str, Any], measure: str) -> dict[str, float]:
    return dict((snapshot.get("val_sampled") or {}).get(measure) or {})


def stage_gain(
    before: Mapping[str, Any], after: Mapping[str, Any], measure: str, seed: int = 0
) -> dict[str, float] | None:
    """paired_delta of one measure between two evaluated snapshots, over the problems both
    were sampled on; None when either was not sampled."""
    b, a = _per_problem(before, measure), _per_problem(after, measure)
    ids = sorted(set(b) & set(a))
    if not ids:
        return None
    return paired_delta([b[i] for i in ids], [a[i] for i in ids], seed=seed)


def subset_gain(
    before: Mapping[str, Any], after: Mapping[str, Any], measure: str, ids: Sequence[str],
    seed: int = 0, tasks: Mapping[str, str] | None = None,
) -> dict[str, float] | None:  # fmt: skip
    """task_gain between two evaluated snapshots over the problems of `ids` (a held-out set)
    both were sampled on, instances of one task (`tasks`: {problem id: task key}) together;
    None when none was."""
    b, a = _per_problem(before, measure), _per_problem(after, measure)
    both = sorted(set(ids) & set(b) & set(a))
    if not both:
        return None
    return task_gain([{i: [b[i], a[i]] for i in both}], tasks, seed=seed)


def learning_summary(
    report: Mapping[str, Any], seed: int = 0, sets: Mapping[str, Sequence[str]] | None = None,
    tasks: Mapping[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Gains per stage: base -> warm start, warm start -> final (what self-play added), and
    base -> final, for every measure (paired over problems), and base -> final on each named
    held-out set (`heldout_<set>`: `sets` maps a set's name to its problem ids), paired over
    tasks (`tasks`: {problem id: task key}; a problem without one is its own task); the bank
    pass rate of the answerer the generator attacked first (warm start, else base) and of the
    final one; HumanEval pass@1 of base and final."""
    base = report.get("baseline") or {}
    snapshots = list(report.get("snapshots") or [])
    warm = next((s for s in snapshots if s.get("label") == "warm-start"), None)
    rounds = [s for s in snapshots if s is not warm]
    final = rounds[-1] if rounds else (warm or base)
    stages = {"base_to_final": (base, final)}
    if warm is not None:
        stages["base_to_warm_start"] = (base, warm)
        stages["warm_start_to_final"] = (warm, final)
    gains = {
        name: {m: stage_gain(b, a, m, seed) for m in MEASURES} for name, (b, a) in stages.items()
    }
    for set_name, ids in (sets or {}).items():
        gains[f"heldout_{set_name}"] = {
            m: subset_gain(base, final, m, ids, seed, tasks) for m in MEASURES
        }
    first = warm or base
    return {
        "gains": gains,
        "bank_pass_rate": {
            "before": first.get("bank_pass_rate"),
            "after": final.get("bank_pass_rate"),
        },
        "humaneval_pass_at_1": {
            "base": base.get("humaneval_pass@1"),
            "final": final.get("humaneval_pass@1"),
        },
        "trivial_share": {"base": base.get("trivial_share"), "final": final.get("trivial_share")},
        "final_model": final.get("model"),
    }


# the generators measured held out (sparring.evaluation.generator_heldout): the catch rate
# paired over tasks, then validity and false alarms ({base, final})
GENERATOR_GROUPS = ("generator_catch_heldout", "generator_validity", "generator_false_alarms")


def flat_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """`learn.<stage>.<measure>.<field>` numbers for MLflow."""
    out: dict[str, float] = {}
    for stage, per in (summary.get("gains") or {}).items():
        for measure, d in per.items():
            for key, value in (d or {}).items():
                out[f"learn.{stage}.{measure}.{key}"] = float(value)
    for group in ("bank_pass_rate", "humaneval_pass_at_1", "trivial_share", *GENERATOR_GROUPS):
        for key, value in (summary.get(group) or {}).items():
            if isinstance(value, (int, float)):
                out[f"learn.{group}.{key}"] = float(value)
    for key, value in ((summary.get(GATE) or {}).get("discriminating") or {}).items():
        out[f"learn.start_gate.{key}"] = float(value)
    return out


def _f(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.3f}"


def _generator_lines(summary: Mapping[str, Any]) -> list[str]:
    """`LEARN generator_catch_heldout base=X final=Y ci95_delta=LO,HI n=TASKS skipped=K` (K:
    held-out problems without a wrong answer in the pool), `LEARN generator_validity base=X
    final=Y` and `LEARN generator_false_alarms base=X final=Y`; n/a where not measured."""
    catch = summary.get("generator_catch_heldout") or {}
    line = gain_line("generator_catch_heldout", catch if catch.get("n") else None)
    if "skipped" in catch:
        line += f" skipped={catch['skipped']:.0f}"
    lines = [line]
    for name in GENERATOR_GROUPS[1:]:
        d = summary.get(name) or {}
        lines.append(f"LEARN {name} base={_f(d.get('base'))} final={_f(d.get('final'))}")
    return lines


# the final answerer against the model it started from (recurring training: its champion)
VS_START = "heldout_new_tasks_vs_start"
# summary[GATE]: the start gate's own sample of both on the held-out new tasks (another seed)
GATE = "gate"
# the held-out sets, in order: fresh tasks of the trained families, those of them whose
# operation no training instance uses, families never trained, new instances of trained tasks,
# the bundled problems' held-out part
HELDOUT_LINES = ("new_tasks", "new_ops", "new_families", "trained_tasks", "bundled")


# the generator's catch in training (rewards.generator: catch): its first and last step
TRAIN_CATCH = "generator_catch_train"


def train_catch(phases: Sequence[Mapping[str, float]]) -> dict[str, float] | None:
    """The first generator phase's first step against the last phase's last step
    (`sparring.engine.credit.catch_step_metrics`, each phase's metrics in round
    order), through `intervals.sides_change`; None when no phase measured the catch.

    >>> side = {"generator_catch_first": 0.1, "generator_catch_first_se": 0.0,
    ...         "generator_catch_first_n": 8, "generator_catch_last": 0.3,
    ...         "generator_catch_last_se": 0.0, "generator_catch_last_n": 8,
    ...         "generator_catch_calls": 1}
    >>> train_catch([side])["same"], train_catch([side, side])["same"]
    (1.0, 0.0)
    """
    measured = [m for m in phases if "generator_catch_first" in m]
    if not measured:
        return None

    def side(m: Mapping[str, float], name: str) -> dict[str, float]:
        key = f"generator_catch_{name}"
        return {"mean": m[key], "se": m[f"{key}_se"], "n": m[f"{key}_n"]}

    one_step = len(measured) == 1 and measured[0].get("generator_catch_calls", 0) <= 1
    return sides_change(side(measured[0], "first"), side(measured[-1], "last"), same=one_step)


BANK_COVER = "bank_cover"
# the last validation's bank over the training problems (sparring.rewards.bank.coverage and
# sparring.phases.validate.room_metrics), as the LEARN bank_cover line names them
BANK_COVER_VALIDATION = {
    "training": "bank_coverage",
    "per_covered_max": "bank_tests_per_covered_max",
    "per_covered_mean": "bank_tests_per_covered_mean",
    "room_problems": "bank_room_problems",
    "room_caught": "bank_room_caught",
}
# the answerer phases' sampled problems (sparring.rewards.bank.sampled_cover), weighted by them
BANK_COVER_SAMPLED = {
    "sampled": "sampled_bank_coverage",
    "banked_per_sampled": "sampled_banked_tests",
    "reward_tests_per_sampled": "sampled_reward_tests",
}


def bank_cover(
    answerer_phases: Sequence[Mapping[str, float]], validation: Mapping[str, float]
) -> dict[str, float]:
    """What the bank covered: the last validation's metrics (`BANK_COVER_VALIDATION`) and the
    answerer phases' sampled problems (`sampled_problems`, summed) with their coverage and tests
    (`BANK_COVER_SAMPLED`, weighted by each phase's sampled problems); a value no phase logged is
    left out ({} for a run of neither).

    >>> bank_cover([{"sampled_problems": 3, "sampled_bank_coverage": 1.0},
    ...             {"sampled_problems": 1, "sampled_bank_coverage": 0.0}],
    ...            {"bank_coverage": 0.9})
    {'training': 0.9, 'sampled_problems': 4.0, 'sampled': 0.75}
    """
    out = {k: float(validation[m]) for k, m in BANK_COVER_VALIDATION.items() if m in validation}
    weights = [float(p["sampled_problems"]) for p in answerer_phases]
    if sum(weights):
        out["sampled_problems"] = sum(weights)
        for key, metric in BANK_COVER_SAMPLED.items():
            if all(metric in p for p in answerer_phases):
                total = sum(
                    w * float(p[metric]) for w, p in zip(weights, answerer_phases, strict=True)
                )
                out[key] = total / sum(weights)
    return out


def bank_cover_line(d: Mapping[str, float]) -> str:
    """`LEARN bank_cover training=X sampled=Y sampled_problems=N ...`: what the bank covered of
    the training problems and of those the answerer sampled, and the reward's tests a sampled
    problem (`bank_cover`); n/a for what the run did not measure.

    >>> bank_cover_line({"training": 0.9, "sampled_problems": 4.0, "sampled": 0.75})
    'LEARN bank_cover training=0.900 sampled=0.750 sampled_problems=4 banked_per_sampled=n/a \
reward_tests_per_sampled=n/a per_covered_max=n/a room_problems=n/a room_caught=n/a'
    """
    parts = []
    for key in (
        "training",
        "sampled",
        "sampled_problems",
        "banked_per_sampled",
        "reward_tests_per_sampled",
        "per_covered_max",
        "room_problems",
        "room_caught",
    ):
        value = d.get(key)
        counted = key in ("sampled_problems", "per_covered_max", "room_problems")
        text = "n/a" if value is None else f"{value:.0f}" if counted else f"{value:.3f}"
        parts.append(f"{key}={text}")
    return f"LEARN {BANK_COVER} " + " ".join(parts)  # fmt: skip


def train_catch_line(d: Mapping[str, float]) -> str:
    """`LEARN generator_catch_train first=X last=Y ci95_delta=LO,HI n=PROBLEMS`: the mean catch
    over the problems of the generator's first and last training step (n: the smaller step's
    problem count); one step alone has no interval.

    >>> train_catch_line({"first": 0.25, "last": 0.25, "delta": 0.0, "lo": 0.0, "hi": 0.0,
    ...                   "per_side": 8.0, "same": 1.0})
    'LEARN generator_catch_train first=0.250 last=0.250 ci95_delta=n/a (one step) n=8'
    """
    head = f"LEARN {TRAIN_CATCH} first={d['first']:.3f} last={d['last']:.3f}"
    if d.get("same"):
        return f"{head} ci95_delta=n/a (one step) n={d['per_side']:.0f}"
    return f"{head} {interval_text(d, 'per_side')}"


def gain_line(name: str, d: Mapping[str, float] | None) -> str:
    if not d:
        return f"LEARN {name} base=n/a final=n/a {interval_text(None)}"
    return f"LEARN {name} base={d['before']:.3f} final={d['after']:.3f} {interval_text(d)}"


def learn_lines(
    summary: Mapping[str, Any],
    break_rates: Sequence[float],
    useful_group_share: float | None,
    completions_trained: float | None = None,
    train_reward: Mapping[str, float] | None = None,
) -> list[str]:
    """The lines `make learn` ends with (format fixed by the learning issues). Every interval
    carries its n (a held-out set's: its tasks), and one resting on fewer than MIN_PER_SIDE
    values per side is n/a. `LEARN task_overlap K`: the held-out instances whose task is also a
    training task (summary["task_overlap"]; n/a when unknown). `sampled=` counts the answerer
    completions sampled (summary["completions_sampled"]), `LEARN false_positive_rate` the
    answerer phases' false-positive rate (n/a without withheld tests: data.given_tests). The
    generator lines (`_generator_lines`): the base and final generators' tests on the held-out
    new tasks, n counting tasks."""
    gains = summary.get("gains") or {}
    return [
        *_training_lines(summary, completions_trained, train_reward),
        *_heldout_set_lines(gains, summary.get("task_overlap")),
        *_definition_lines(gains),
        *_base_to_final_lines(gains),
        *_generator_training_lines(summary, break_rates),
        *_generator_lines(summary),
        *_answerer_lines(summary, useful_group_share),
    ]


def _training_lines(
    summary: Mapping[str, Any],
    completions_trained: float | None,
    train_reward: Mapping[str, float] | None,
) -> list[str]:
    """`LEARN completions_trained`, `LEARN train_reward` and `LEARN base_zone_share`."""
    trained = "n/a" if completions_trained is None else f"{completions_trained:.0f}"
    sampled = summary.get("completions_sampled")
    sampled_text = "n/a" if sampled is None else f"{sampled:.0f}"
    lines = [f"LEARN completions_trained {trained} sampled={sampled_text}"]
    if train_reward:
        lines.append(
            f"LEARN train_reward first={train_reward['first']:.3f} "
            f"last={train_reward['last']:.3f} "
            f"{interval_text(train_reward, 'per_side')}"
        )
    else:
        lines.append(f"LEARN train_reward first=n/a last=n/a {interval_text(None)}")
    lines.append(f"LEARN base_zone_share {_f(summary.get('base_zone_share'))}")
    return lines


def _heldout_set_lines(gains: Mapping[str, Any], overlap: float | None) -> list[str]:
    """A `LEARN heldout_<set>` line per held-out set (`HELDOUT_LINES`), then `LEARN
    task_overlap`."""
    lines = []
    for set_name in HELDOUT_LINES:
        d = (gains.get(f"heldout_{set_name}") or {}).get("discriminating")
        lines.append(gain_line(f"heldout_{set_name}", d))
    lines.append(f"LEARN task_overlap {'n/a' if overlap is None else f'{overlap:.0f}'}")
    return lines


def _definition_lines(gains: Mapping[str, Any]) -> list[str]:
    """`LEARN definition_rate`, then the new tasks scored over the defining answers and by
    every test passed."""
    defines = (gains.get("base_to_final") or {}).get("defines")
    lines = [
        "LEARN definition_rate "
        + (f"base={defines['before']:.3f} final={defines['after']:.3f}" if defines
           else "base=n/a final=n/a")
    ]  # fmt: skip
    # the new tasks scored over the answers that define the asked-for function only: a gain
    # here is not the format-only reward's `def` line (a task with no such answer is left out)
    d = (gains.get("heldout_new_tasks") or {}).get("defining")
    lines.append(gain_line("heldout_new_tasks_defining", d))
    # the new tasks' share of answers passing every test: at family level 2 the answers that
    # also honour the stated empty-input value, which three typical given tests never check
    d = (gains.get("heldout_new_tasks") or {}).get("strict")
    lines.append(gain_line("heldout_new_tasks_strict", d))
    return lines


def _base_to_final_lines(gains: Mapping[str, Any]) -> list[str]:
    """The val problems' gains base -> final per measure, then each stage's delta (`LEARN
    stage`) where the run had a warm start."""
    lines = []
    for name, measure in (
        ("validation_pass_rate", "discriminating"),
        ("strict_pass_rate", "strict"),
        ("pass_at_n", "pass_at_n"),
    ):
        lines.append(gain_line(name, (gains.get("base_to_final") or {}).get(measure)))
    for stage in ("base_to_warm_start", "warm_start_to_final"):
        d = (gains.get(stage) or {}).get("discriminating")
        if d:
            lines.append(f"LEARN stage {stage} delta={d['delta']:.3f} {interval_text(d)}")
    return lines


def _generator_training_lines(
    summary: Mapping[str, Any], break_rates: Sequence[float]
) -> list[str]:
    """`LEARN generator_break_rate` (first and last round), the training catch and the bank's
    cover where the run measured them."""
    first = break_rates[0] if break_rates else None
    last = break_rates[-1] if break_rates else None
    lines = [f"LEARN generator_break_rate first={_f(first)} last={_f(last)}"]
    if summary.get(TRAIN_CATCH):  # rewards.generator: catch only
        lines.append(train_catch_line(summary[TRAIN_CATCH]))
    if summary.get(BANK_COVER):
        lines.append(bank_cover_line(summary[BANK_COVER]))
    return lines


def _answerer_lines(summary: Mapping[str, Any], useful_group_share: float | None) -> list[str]:
    """`LEARN bank_pass_rate`, `LEARN humaneval_pass_at_1`, `LEARN useful_group_share` and
    `LEARN false_positive_rate`."""
    bank = summary.get("bank_pass_rate") or {}
    he = summary.get("humaneval_pass_at_1") or {}
    return [
        f"LEARN bank_pass_rate before={_f(bank.get('before'))} after={_f(bank.get('after'))}",
        f"LEARN humaneval_pass_at_1 base={_f(he.get('base'))} final={_f(he.get('final'))}",
        f"LEARN useful_group_share {_f(useful_group_share)}",
        # answers passing every test the reward saw and failing a withheld one (data.given_tests)
        f"LEARN false_positive_rate {_f(summary.get('false_positive_rate'))}",
    ]


def heldout_per_problem(
    report: Mapping[str, Any], sets: Mapping[str, Sequence[str]], measure: str = "discriminating"
) -> dict[str, dict[str, list[float]]]:
    """{set: {problem id: [base, final]}}: what a control run is compared on, problem by
    problem (`reward_vs_control`)."""
    base = _per_problem(report.get("baseline") or {}, measure)
    snapshots = [s for s in report.get("snapshots") or [] if s.get("label") != "warm-start"]
    final = _per_problem(snapshots[-1], measure) if snapshots else {}
    return {
        name: {i: [base[i], final[i]] for i in ids if i in base and i in final}
        for name, ids in sets.items()
    }


def summary_from_metrics(flat: Mapping[str, float]) -> dict[str, Any]:
    """The inverse of `flat_metrics` (what an MLflow run holds back to a summary).

    >>> s = summary_from_metrics({"learn.base_to_final.strict.delta": 0.1,
    ...                           "learn.bank_pass_rate.after": 0.3})
    >>> s["gains"]["base_to_final"]["strict"]["delta"], s["bank_pass_rate"]["after"]
    (0.1, 0.3)
    """
    summary: dict[str, Any] = {"gains": {}}
    for key, value in flat.items():
        parts = key.split(".")
        if parts[0] != "learn":
            continue
        if len(parts) == 4:
            _, stage, measure, field = parts
            summary["gains"].setdefault(stage, {}).setdefault(measure, {})[field] = value
        elif len(parts) == 3:
            summary.setdefault(parts[1], {})[parts[2]] = value
    return summary


def from_phase_runs(
    runs: Sequence[tuple[str, Mapping[str, float]]],
) -> tuple[dict[str, Any], list[float], float | None, float | None]:
    """(learning summary, generator break rate per round, useful group share of the answerer's
    phases, answerer completions trained) from the phases' MLflow runs, given as (run name
    `r{round}-{phase}`, latest metrics). The summary's `base_zone_share` is the first
    validation's share of problems whose frozen (base) samples differed in reward; its
    `task_overlap` the held-out instances whose task is also a training task (materialize's
    `heldout_task_overlap`); its `completions_sampled` the answerer phases' sum,
    `false_positive_rate` their mean; with the catch reward its `generator_catch_train` the
    generator phases' training catch (`train_catch`)."""
    figures = _PhaseFigures()
    for name, metrics in runs:
        match = re.match(r"r(\d+)-(.*)", name)
        if match:
            figures.add(int(match.group(1)), match.group(2), metrics)
    share = sum(figures.useful) / len(figures.useful) if figures.useful else None
    total = sum(figures.trained) if figures.trained else None
    return _phase_summary(figures), [b for _, b in sorted(figures.breaks)], share, total


@dataclass
class _PhaseFigures:
    """What `from_phase_runs` gathers from the phases' runs, each list in run order (a round
    index beside a value where the round orders it later)."""

    breaks: list[tuple[int, float]] = field(default_factory=list)
    useful: list[float] = field(default_factory=list)
    trained: list[float] = field(default_factory=list)
    sampled: list[float] = field(default_factory=list)
    false_positive: list[float] = field(default_factory=list)
    zones: list[tuple[int, float]] = field(default_factory=list)
    catches: list[tuple[int, Mapping[str, float]]] = field(default_factory=list)
    covers: list[Mapping[str, float]] = field(default_factory=list)
    banks: list[tuple[int, Mapping[str, float]]] = field(default_factory=list)
    flat: dict[str, float] = field(default_factory=dict)
    overlap: float | None = None

    def add(self, round_index: int, phase: str, metrics: Mapping[str, float]) -> None:
        """One phase run's metrics: phase `phase` of round `round_index`."""
        if phase == "validate-tests" and "break_rate" in metrics:
            self.breaks.append((round_index, float(metrics["break_rate"])))
        if phase.startswith("train-generator") and "generator_catch_first" in metrics:
            self.catches.append((round_index, metrics))
        if phase == "validate-tests" and "bank_coverage" in metrics:
            self.banks.append((round_index, metrics))
        if phase.startswith("train-answerer") and metrics.get("sampled_problems"):
            self.covers.append(metrics)
        if phase == "validate-tests" and metrics.get("zone_estimated"):
            self.zones.append((round_index, metrics["zone_problems"] / metrics["zone_estimated"]))
        elif phase.startswith("train-answerer") and "useful_group_share" in metrics:
            # the answerer's phases only: a generator step of a few groups is nearly always
            # useful and would hide how much of the answerer's sampling trained
            self.useful.append(float(metrics["useful_group_share"]))
            if "completions_trained" in metrics:
                self.trained.append(float(metrics["completions_trained"]))
                if "completions_sampled" in metrics:
                    self.sampled.append(float(metrics["completions_sampled"]))
            if phase.startswith("train-answerer") and "false_positive_rate" in metrics:
                self.false_positive.append(float(metrics["false_positive_rate"]))
        elif phase == "evaluate":
            self.flat.update({k: float(v) for k, v in metrics.items() if k.startswith("learn.")})
        elif phase == "materialize" and "heldout_task_overlap" in metrics:
            self.overlap = float(metrics["heldout_task_overlap"])


def _phase_summary(figures: _PhaseFigures) -> dict[str, Any]:
    """`from_phase_runs`'s learning summary: the evaluate phase's `learn.` metrics back as a
    summary, with what the other phases measured."""
    summary = summary_from_metrics(figures.flat)
    # the first round's frozen answerer is the base model (no warm start): its zone share
    summary["base_zone_share"] = min(figures.zones)[1] if figures.zones else None
    summary["task_overlap"] = figures.overlap
    if figures.catches:  # rewards.generator: catch
        ordered = sorted(figures.catches, key=lambda c: c[0])
        summary[TRAIN_CATCH] = train_catch([m for _, m in ordered])
    banks = figures.banks
    summary[BANK_COVER] = bank_cover(
        figures.covers, max(banks, key=lambda b: b[0])[1] if banks else {}
    )
    summary["completions_sampled"] = sum(figures.sampled) if figures.sampled else None
    summary["false_positive_rate"] = (
        sum(figures.false_positive) / len(figures.false_positive)
        if figures.false_positive
        else None
    )
    return summary
