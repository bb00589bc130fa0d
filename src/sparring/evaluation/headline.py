"""The headline metrics of a pipeline run: what its MLflow parent run carries, so the runs table
of several runs can be sorted, compared and charted without opening any child run.

Every name means the same thing in every run (the list is `KEYS`; per-round series are one key
logged at step = round). A value a run did not measure is absent, never a stand-in zero.

- `heldout.{discriminating,strict}.{base,champion}`: held-out pass rates (problems the run never
  trained on, one answer each) of the base model and of the champion (the snapshot select
  chose).
- `heldout.{discriminating,strict}.gain` and `.gain_lo` / `.gain_hi`: champion - base over
  `data.val_samples` sampled answers per problem, with its 95% paired-bootstrap interval over
  problems; only when both were sampled (`data.val_samples > 0`, and the champion is the last
  round, the snapshot evaluate samples). `.gain_n` is the number of problems; the interval is
  absent when it would rest on fewer than 5.
- `heldout.new_tasks.{before,after,delta,lo,hi,n}`: the LEARN line `heldout_new_tasks` (base ->
  final on the held-out new tasks, paired over tasks) and `heldout.new_tasks_vs_start.*` its
  `heldout_new_tasks_vs_start` (the run's own start -> final; for a run started from the base
  model the same numbers); `start.champion_version`: the registered version the answerer started
  from (absent for a start from the base model). Together they show a schedule's chain.
- `humaneval.pass_at_1.{base,champion}`, `bank.pass_rate.{base,champion}`: HumanEval pass@1 and
  the share of the adversarial bank's tests passed.
- `champion.{promoted,score,round}`: whether select registered a champion, its selection score.
- `generator.{break_rate,validity}` (step = round), `bank.size` (after the last round),
  `train.useful_group_share` (mean over GRPO phases), `train.completions` (completions that
  trained: in groups with an advantage, summed over GRPO phases).
- `wall_seconds.<phase kind>` (all rounds and attempts summed, e.g. `wall_seconds.train-answerer`)
  and `wall_seconds.pipeline` (parent run start to the headline).
- Games: `game.reward.<role>.{base,trained}`, `game.gain.<role>`, with `champion.*` and
  `wall_seconds.*` as above.

Pure: report dicts and (name, metrics, start, end) tuples in, `(key, value, step)` out; logging
them is `log_headline`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sparring import progress, tracking
from sparring.evaluation.intervals import MIN_PER_SIDE
from sparring.evaluation.learning import VS_START, stage_gain

Point = tuple[str, float, int]  # (metric key, value, step)

MEASURES = {"discriminating": "val_discriminating_fraction", "strict": "val_strict_pass_at_1"}

# the new tasks' gain over the base (the LEARN line) and over the run's own start (recurring)
LEARNING_STAGES = ("heldout_new_tasks", VS_START)
GAIN_FIELDS = ("before", "after", "delta", "lo", "hi", "n")

KEYS = (
    *(f"heldout.{m}.{f}" for m in MEASURES for f in ("base", "champion")),
    *(f"heldout.{m}.{f}" for m in MEASURES for f in ("gain", "gain_n", "gain_lo", "gain_hi")),
    *(f"heldout.{s.removeprefix('heldout_')}.{f}" for s in LEARNING_STAGES for f in GAIN_FIELDS),
    "start.champion_version",
    "humaneval.pass_at_1.base",
    "humaneval.pass_at_1.champion",
    "bank.pass_rate.base",
    "bank.pass_rate.champion",
    "bank.size",
    "champion.promoted",
    "champion.score",
    "champion.round",
    "generator.break_rate",
    "generator.validity",
    "train.useful_group_share",
    "train.completions",
    "wall_seconds.pipeline",
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _point(key: str, value: Any, step: int = 0) -> list[Point]:
    """[(key, value, step)] for a number, [] for a missing value (absent, not zero)."""
    number = _number(value)
    return [] if number is None else [(key, number, step)]


def _heldout(base: Mapping[str, Any], champion: Mapping[str, Any], seed: int) -> list[Point]:
    """Held-out rates of base and champion (one answer per problem: what every run measures),
    and when both were also sampled (`val_sampled`: evaluate samples the base and the last
    round) the gain over sampled answers with its paired-bootstrap interval."""
    out: list[Point] = []
    for measure, key in MEASURES.items():
        out += _point(f"heldout.{measure}.base", base.get(key))
        out += _point(f"heldout.{measure}.champion", champion.get(key))
        gain = stage_gain(base, champion, measure, seed) if champion else None
        if gain is not None:
            out += _point(f"heldout.{measure}.gain", gain["delta"])
            out += _point(f"heldout.{measure}.gain_n", gain["n"])
            if gain["n"] >= MIN_PER_SIDE:  # fewer problems: no interval worth the name
                out += _point(f"heldout.{measure}.gain_lo", gain["lo"])
                out += _point(f"heldout.{measure}.gain_hi", gain["hi"])
    return out


def from_report(
    report: Mapping[str, Any], selected: Mapping[str, Any], seed: int = 0
) -> list[Point]:
    """Base-vs-champion numbers from the evaluation report and what select decided
    (`selected`: its result, with `promoted`, `score` and, when promoted, `index`, `round`)."""
    base = report.get("baseline") or {}
    snapshots = list(report.get("snapshots") or [])
    index = selected.get("index")
    promoted = bool(selected.get("promoted")) and isinstance(index, int)
    champion = snapshots[index] if promoted and 0 <= index < len(snapshots) else {}
    out = _heldout(base, champion, seed)
    out += _learning(report.get("learning") or {})
    out += _point("humaneval.pass_at_1.base", base.get("humaneval_pass@1"))
    out += _point("humaneval.pass_at_1.champion", champion.get("humaneval_pass@1"))
    out += _point("bank.pass_rate.base", base.get("bank_pass_rate"))
    out += _point("bank.pass_rate.champion", champion.get("bank_pass_rate"))
    out += _point("champion.promoted", 1.0 if champion else 0.0)
    if champion:
        out += _point("champion.score", selected.get("score"))
        out += _point("champion.round", champion.get("round", selected.get("round")))
    return out


def _learning(summary: Mapping[str, Any]) -> list[Point]:
    """The new tasks' gains over the base and over the run's start, and the start's version."""
    gains = summary.get("gains") or {}
    out: list[Point] = []
    for stage in LEARNING_STAGES:
        d = (gains.get(stage) or {}).get("discriminating") or {}
        for field in GAIN_FIELDS:
            out += _point(f"heldout.{stage.removeprefix('heldout_')}.{field}", d.get(field))
    champion = (summary.get("start") or {}).get("champion") or {}
    if str(champion.get("version", "")).isdigit():
        out += _point("start.champion_version", int(champion["version"]))
    return out


RUN_NAME = re.compile(r"r(\d+)-(.+)")


def from_phase_runs(
    runs: Sequence[tuple[str, Mapping[str, float], float, float]], now: float, start: float
) -> list[Point]:
    """Per-round and per-phase numbers from the child runs, given in start order as (run name
    `r{round}-{phase}`, latest metrics, start and end time in seconds); `start`/`now` bound the
    pipeline's wall time. A retried phase counts its last attempt's numbers, every attempt's
    time."""
    latest: dict[str, Mapping[str, float]] = {}
    wall: dict[str, float] = {}
    for name, metrics, began, ended in runs:
        match = RUN_NAME.fullmatch(name)
        if not match:
            continue
        kind = match.group(2)
        wall[kind] = wall.get(kind, 0.0) + max(0.0, (ended or now) - began)
        latest[name] = metrics
    out: list[Point] = []
    useful: list[float] = []
    completions: list[float] = []
    bank_size: tuple[int, float] | None = None
    for name, metrics in latest.items():
        match = RUN_NAME.fullmatch(name)
        assert match is not None  # only matching names were kept
        round_index, kind = int(match.group(1)), match.group(2)
        if kind == "validate-tests":
            out += _point("generator.break_rate", metrics.get("break_rate"), round_index)
            out += _point("generator.validity", metrics.get("validity"), round_index)
            if "bank_size" in metrics and (bank_size is None or round_index >= bank_size[0]):
                bank_size = (round_index, float(metrics["bank_size"]))
        elif kind.startswith("train-"):
            if _number(metrics.get("useful_group_share")) is not None:
                useful.append(float(metrics["useful_group_share"]))
            if _number(metrics.get("completions_trained")) is not None:
                completions.append(float(metrics["completions_trained"]))
    if bank_size is not None:
        out += _point("bank.size", bank_size[1])
    if useful:
        out += _point("train.useful_group_share", sum(useful) / len(useful))
    if completions:
        out += _point("train.completions", sum(completions))
    out += [(f"wall_seconds.{kind}", seconds, 0) for kind, seconds in sorted(wall.items())]
    out += _point("wall_seconds.pipeline", max(0.0, now - start))
    return out


def from_game_report(report: Mapping[str, Any], selected: Mapping[str, Any]) -> list[Point]:
    """A game's equivalents: held-out reward per role of the base and of the trained adapters,
    the gain, and what select decided."""
    out: list[Point] = []
    for label, name in (("base", "base"), ("trained", "trained")):
        for key, value in sorted((report.get(label) or {}).items()):
            if key.startswith("reward/"):
                out += _point(f"game.reward.{key[len('reward/') :]}.{name}", value)
    for role, gain in sorted((report.get("gain") or {}).items()):
        out += _point(f"game.gain.{role}", gain)
    if "promoted" in selected:  # a pipeline's select decided (`sparring game run` has none)
        promoted = bool(selected["promoted"])
        out += _point("champion.promoted", 1.0 if promoted else 0.0)
        if promoted:
            out += _point("champion.score", selected.get("score"))
    return out


def log_headline(cfg, run, parent_run_id: str, points: list[tuple[str, float, int]]) -> int:
    """Queue the run's headline metrics for the parent run through `run`'s buffer (a
    sparring.tracking PhaseRun): `points` (what the calling phase knows: the report, its
    decision) plus those read from the parent's child runs (per round, per phase kind, wall
    times). Returns how many were queued. When MLflow cannot list the child runs (after the
    usual wait), only `points` go, and one line says so: the headline never fails a phase."""
    points = list(points)
    try:
        children, started = tracking.phase_rows(cfg, parent_run_id)
        points += from_phase_runs(children, time.time(), started)
    except tracking.TrackingUnavailable as exc:
        progress.say(f"headline: per-round and per-phase numbers not copied to the parent ({exc})")
    return tracking.log_to_parent(run, parent_run_id, points)
