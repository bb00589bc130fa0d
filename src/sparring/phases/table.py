"""The phase table: each code-duel phase declared once, with its function, inputs and outputs.

Covers: `PhaseSpec` (a phase's command name, the plan kind it runs, its named inputs, its named
outputs with the file or folder each is called in a phase folder, whether a Kubeflow Trainer
TrainJob can run it), `PHASES` (the table), `run` (call a phase with named local paths; the
argument order of each phase function is written here and nowhere else) and `outputs_in` (a
phase's outputs laid out in one folder: what the plain runner, `sparring phase` and the TrainJob
entry write). A phase's random draws are seeded by its `phase` name (sparring.phases.schedule's
`Phase.name`), passed through `run` unchanged in every runner.

Dispatch from here: the KFP components, the plain runner (sparring.plain_runner.loop), `sparring
phase` (sparring.cli.train) and the TrainJob entry (sparring.cluster.entry; its inputs and
outputs, sparring.cluster.trainjob.PHASE_INPUTS / PHASE_OUTPUTS, are read from this table).
Does not cover: the phases themselves, the order they run in (sparring.phases.schedule.plan_phases),
or the phases only the pipeline runs (warm start, snapshot, evaluate, select). Pure: a phase's
module is imported when it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparring.config import Config

Paths = Mapping[str, str]
Call = Callable[["Config", int, Paths, Paths, str], dict[str, float]]


@dataclass(frozen=True)
class PhaseSpec:
    name: str  # the command and task name: train-answerer
    kind: str  # the plan's kind (sparring.phases.schedule.Phase.kind)
    inputs: tuple[str, ...]  # named inputs; an empty path means "none" (e.g. the base model)
    outputs: Mapping[str, str]  # output name -> its name in a phase folder ("" = the folder)
    call: Call
    trainjob: bool = False  # a Kubeflow Trainer TrainJob can run it (kubernetes.trainer.nodes)


def _materialize(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.materialize import materialize

    return materialize(cfg, o["data"], i.get("bank_in") or None)


def _train_answerer(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.answerer import train_answerer
    from sparring.rewards.bank import bank_file

    return train_answerer(
        cfg, round_index, i["data"], bank_file(i["bank"]), i.get("init_model") or None,
        o["model"], phase=phase or "answerer",
    )  # fmt: skip


def _train_generator(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.generator import train_generator

    return train_generator(
        cfg, round_index, i["data"], i.get("frozen_answerer") or "", i.get("init_model") or None,
        o["model"], o["tests"], o["frozen_solutions"], phase=phase or "generator",
    )  # fmt: skip


def _validate_tests(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.validate import validate_into

    return validate_into(
        cfg, round_index, i["data"], i["tests"], i["frozen_solutions"], i["bank_in"], o["bank"]
    )


PHASES: dict[str, PhaseSpec] = {
    spec.name: spec
    for spec in (
        PhaseSpec("materialize", "materialize", ("bank_in",), {"data": ""}, _materialize),
        PhaseSpec(
            "train-answerer", "answerer", ("data", "bank", "init_model"), {"model": "model"},
            _train_answerer, trainjob=True,
        ),
        PhaseSpec(
            "train-generator", "generator", ("data", "frozen_answerer", "init_model"),
            {"model": "model", "tests": "tests.jsonl",
             "frozen_solutions": "frozen_solutions.jsonl"},
            _train_generator, trainjob=True,
        ),
        PhaseSpec(
            "validate-tests", "validate", ("data", "tests", "frozen_solutions", "bank_in"),
            {"bank": ""}, _validate_tests,
        ),
    )
}  # fmt: skip
BY_KIND = {spec.kind: spec for spec in PHASES.values()}


def outputs_in(name: str, folder: str | Path) -> dict[str, str]:
    """Phase `name`'s outputs laid out in `folder` (the folder itself for a "" output)."""
    return {key: str(Path(folder) / rel) for key, rel in PHASES[name].outputs.items()}


def run(
    name: str, cfg: Config, round_index: int, inputs: Paths, outputs: Paths, phase: str = ""
) -> dict[str, float]:
    """Run phase `name` on named local `inputs` into named `outputs`; `phase` is its name in
    the plan (its steps and the seed of its draws; "" for a free run of the phase's kind)."""
    return PHASES[name].call(cfg, round_index, inputs, outputs, phase)
