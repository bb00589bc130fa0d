"""The order of phases (pure): phase schedule, staged step counts, and the reasoning curriculum.

Covers:
- `plan_phases(cfg)`: every phase of a self-play run in order (materialize, the answerer's
  warm start (round 0, SFT, only when `warm_start.steps > 0`), then per round the
  phases of `cfg.phase_schedule`, each generator phase followed by a validation phase, then
  `cfg.steps.alternating` extra (answerer 1 step, generator 1 step + validation) pairs), with its
  GRPO step count and the answerer's reasoning stages;
- `reasoning_stages(cfg, round)`: with `reasoning.curriculum`, the five-stage curriculum grows by
  one stage per round (round 1: code only; round 2: informal, code; ... round 5+: informal,
  structured, pseudocode, constraints, code); without it, `reasoning.stages` as configured;
- a phase's identity: `Phase.name` (round, index, kind) is the label every runner (the plain
  runner, the KFP DAG unrolled from this plan, a TrainJob) passes to the phase functions, which
  seed their draws with it (`sparring.phases.common.derived_seed`); `planned_phase(cfg, name,
  ...)` finds it back in the plan (its step count included); `phase_label` is how task and MLflow
  run names show it to people.

Does not cover: running phases (sparring.plain_runner.loop, pipelines.selfplay) or what a phase does
(sparring.phases).
No I/O, no heavy imports: unit-tested in milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sparring.config import REASONING_STAGES, Config
from sparring.errors import SparringError

KINDS = ("materialize", "warm_start", "answerer", "generator", "validate")
PLANNED_NAME = re.compile(r"r(\d+)-p(\d+)-([a-z_]+)")  # `Phase.name`; any other label is free


@dataclass(frozen=True)
class Phase:
    """One phase of the run. `index` is its position in the whole run (0 = materialize)."""

    index: int
    round: int
    kind: str
    steps: int = 0
    stages: list[str] = field(default_factory=list)
    alternating: bool = False

    @property
    def name(self) -> str:
        """Stable folder and checkpoint name, e.g. `r01-p03-generator`; also the phase label that
        seeds its draws in every runner, so no two phases of a run share a seed."""
        return f"r{self.round:02d}-p{self.index:02d}-{self.kind}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "name": self.name}


def reasoning_stages(cfg: Config, round_index: int) -> list[str]:
    """The answerer's reasoning stages in a round (1-based); always ends with `code`."""
    if not cfg.reasoning.curriculum:
        return list(cfg.reasoning.stages)
    extra = [s for s in REASONING_STAGES if s != "code"]
    n = max(0, min(len(extra), round_index - 1))
    return [*extra[:n], "code"]


def round_phases(cfg: Config) -> list[str]:
    """Kinds of the main phases of one round (validation follows each generator phase)."""
    if cfg.phase_schedule == "answerer_generator_answerer":
        order = ["answerer", "generator", "answerer"]
    elif cfg.phase_schedule == "answerer":  # the given tests alone: no generator, no bank
        order = ["answerer"]
    elif cfg.phase_schedule == "generator":  # the writer alone, against the base answerer
        order = ["generator"]
    else:
        order = ["generator", "answerer"]
    out: list[str] = []
    for kind in order:
        out.append(kind)
        if kind == "generator":
            out.append("validate")
    return out


def plan_phases(cfg: Config) -> list[Phase]:
    """Every phase of the run, in execution order."""
    phases = [Phase(0, 0, "materialize")]

    def add(round_index: int, kind: str, steps: int, alternating: bool = False) -> None:
        stages = reasoning_stages(cfg, round_index) if kind == "answerer" else []
        phases.append(Phase(len(phases), round_index, kind, steps, stages, alternating))

    if cfg.warm_start.steps > 0:
        phases.append(Phase(len(phases), 0, "warm_start", cfg.warm_start.steps, ["code"]))
    for r in range(1, cfg.rounds + 1):
        for kind in round_phases(cfg):
            steps = {"answerer": cfg.steps.answerer, "generator": cfg.steps.generator}.get(kind, 0)
            add(r, kind, steps)
        for _ in range(cfg.steps.alternating):
            add(r, "answerer", 1, True)
            add(r, "generator", 1, True)
            add(r, "validate", 0, True)
    return phases


def total_steps(phases: list[Phase]) -> dict[str, int]:
    """GRPO steps per role over the run (the warm start's SFT steps are not counted)."""
    out = {"answerer": 0, "generator": 0}
    for p in phases:
        if p.kind in out:
            out[p.kind] += p.steps
    return out


def planned_phase(cfg: Config, label: str, kind: str, round_index: int) -> Phase | None:
    """The phase of `cfg`'s plan that `label` names (a `Phase.name`), checked to be a `kind` phase
    of round `round_index`; None for a free label (a phase run by hand, `sparring phase`, tests),
    which runs with the config's step count. A planned-looking label that this plan lacks is an
    error: the task or checkpoint that passed it was built from another config."""
    if not PLANNED_NAME.fullmatch(label):
        return None
    found = next((p for p in plan_phases(cfg) if p.name == label), None)
    if found is None or found.kind != kind or found.round != round_index:
        raise SparringError(
            f"phase {label}: not a {kind} phase of round {round_index} in the plan of config "
            f"{cfg.name} ({len(plan_phases(cfg))} phases); was the pipeline compiled from "
            "another config (rounds, phase_schedule, steps.alternating, warm_start.steps)?"
        )
    return found


def phase_label(cfg: Config, phase: Phase) -> str:
    """How task and MLflow run names show a phase: its kind; `answerer_final` for the second
    answerer of an answerer_generator_answerer round; `<kind>-alt` for the alternating pairs."""
    if phase.alternating:
        return f"{phase.kind}-alt"
    if phase.kind == "answerer" and cfg.phase_schedule == "answerer_generator_answerer":
        main = [
            p.index
            for p in plan_phases(cfg)
            if p.round == phase.round and p.kind == "answerer" and not p.alternating
        ]
        if len(main) > 1 and phase.index == main[-1]:
            return "answerer_final"
    return phase.kind


def label_of(cfg: Config, label: str, kind: str, round_index: int) -> str:
    """`phase_label` of the planned phase that `label` names; a free label as it is."""
    planned = planned_phase(cfg, label, kind, round_index)
    return phase_label(cfg, planned) if planned is not None else label
