"""The phase table: every phase of both DAGs declared once, with its function, inputs and outputs.

Covers: `PhaseSpec` (a row: the phase's task and command name, the plan kind it runs, its named
inputs, its named outputs with the file or folder each is called in a phase folder, its KFP
task, its call on local paths, whether a Kubeflow Trainer TrainJob can run it), `PHASES` (the
table), `run` (call a phase with named local paths; the argument order of each phase function is
written here and nowhere else), `outputs_in` (a phase's outputs laid out in one folder: what the
plain runner, `sparring phase` and the TrainJob entry write) and `run_task` (run a row as its
KFP component, the one thing every component in components/ does). A phase's random draws are
seeded by its `phase` name (sparring.phases.schedule's `Phase.name`), passed through `run`
unchanged in every runner.

The rows: the code duel's DAG (pipelines.selfplay) materialize, init-models, warm-start,
train-answerer, train-generator, validate-tests, snapshot-first, snapshot-next, evaluate, select;
the game DAG's (pipelines.game) train-game, evaluate-game, select-game; and finalize, both DAGs'
exit handler. A row's name is its DAG task's name, its component's function with `-` for `_`.
Each row's `task` (sparring.phases.kfp_tasks) is its component's body: the MLflow run, logging
and KFP outputs around the phase. Rows with a `call` also run without KFP: the plain runner
(sparring.plain_runner.loop: materialize, warm-start and the GRPO and validation phases, by
their plan kind), `sparring phase` (sparring.cli.train) and the TrainJob entry
(sparring.cluster.entry; its inputs and outputs, sparring.cluster.trainjob.PHASE_INPUTS /
PHASE_OUTPUTS, are read from this table). A phase with no row cannot run: `run_task` refuses
its name, and tests/unit/test_phase_table.py fails a component or a compiled DAG task that has
no row.
Does not cover: the phases themselves, the order they run in (sparring.phases.schedule
.plan_phases), the DAG's wiring and Kubernetes settings (pipelines/). Pure: a phase's module is
imported when it runs (the sandbox image that runs validate-tests ships no ML stack).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.backends import lineage
from sparring.config import Config
from sparring.errors import SparringError
from sparring.phases import kfp_tasks
from sparring.phases.kfp_io import TaskArgs

Paths = Mapping[str, str]
Call = Callable[[Config, int, Paths, Paths, str], dict[str, float]]
Task = Callable[["PhaseSpec", TaskArgs], Any]


@dataclass(frozen=True)
class PhaseSpec:
    name: str  # the DAG task and command name: train-answerer (component train_answerer)
    kind: str  # the plan's kind (sparring.phases.schedule.Phase.kind); "" for a DAG-only task
    inputs: tuple[str, ...]  # named inputs; an empty path means "none" (e.g. the base model)
    outputs: Mapping[str, str]  # output name -> its name in a phase folder ("" = the folder)
    task: Task | None = None  # its KFP component's body (sparring.phases.kfp_tasks); None: no
    # DAG task runs it
    call: Call | None = None  # the phase on local paths, for every runner; None: DAG-only
    trainjob: bool = False  # a Kubeflow Trainer TrainJob can run it (kubernetes.trainer.nodes)


def _materialize(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.materialize import materialize

    return materialize(cfg, o["data"], i.get("bank_in") or None)


def _warm_start(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.warm_start import warm_start

    return warm_start(cfg, i["data"], i.get("init_model") or None, o["model"])


def _train_answerer(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.answerer import train_answerer
    from sparring.rewards.bank import bank_file

    if cfg.filtered_sft.samples:  # the answerer's other mode: SFT on its own filtered answers
        from sparring.phases.filtered_sft import filtered_sft

        return filtered_sft(
            cfg, round_index, i["data"], i.get("init_model") or None, o["model"],
            phase or "answerer",
        )  # fmt: skip
    return train_answerer(
        cfg, round_index, i["data"], bank_file(i["bank"]), i.get("init_model") or None,
        o["model"], phase=phase or "answerer",
    )  # fmt: skip


def _train_generator(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    if cfg.generator_mode == "fuzz":  # the generator that does not learn: drawn tests instead
        from sparring.phases.fuzz import fuzz_generator

        return fuzz_generator(
            cfg, round_index, i["data"], i.get("init_model") or None, o["model"], o["tests"],
            o["frozen_solutions"], phase or "generator",
        )  # fmt: skip
    if cfg.generator_mode == "problems":  # the proposer: whole problems instead of tests
        from sparring.phases.proposer import propose_problems as train
    else:
        from sparring.phases.generator import train_generator as train
    return train(
        cfg, round_index, i["data"], i.get("frozen_answerer") or "", i.get("init_model") or None,
        o["model"], o["tests"], o["frozen_solutions"], phase=phase or "generator",
    )  # fmt: skip


def _validate_tests(cfg: Config, round_index: int, i: Paths, o: Paths, phase: str):
    from sparring.phases.validate import validate_into

    return validate_into(
        cfg, round_index, i["data"], i["tests"], i["frozen_solutions"], i["bank_in"], o["bank"]
    )


# A DAG-only row's inputs and outputs are its component's artifacts, each in its own folder.
PHASES: dict[str, PhaseSpec] = {
    spec.name: spec
    for spec in (
        PhaseSpec("materialize", "materialize", ("bank_in",), {"data": ""},
                  kfp_tasks.materialize, _materialize),
        PhaseSpec("init-models", "", (), {"answerer": "answerer", "generator": "generator"},
                  kfp_tasks.init_models),
        PhaseSpec("warm-start", "warm_start", ("data", "init_model"), {"model": "model"},
                  kfp_tasks.warm_start, _warm_start),
        PhaseSpec(
            "train-answerer", "answerer", ("data", "bank", "init_model"), {"model": "model"},
            kfp_tasks.train, _train_answerer, trainjob=True,
        ),
        PhaseSpec(
            "train-generator", "generator", ("data", "frozen_answerer", "init_model"),
            {"model": "model", "tests": "tests.jsonl",
             "frozen_solutions": "frozen_solutions.jsonl"},
            kfp_tasks.train, _train_generator, trainjob=True,
        ),
        PhaseSpec(
            "validate-tests", "validate", ("data", "tests", "frozen_solutions", "bank_in"),
            {"bank": ""}, kfp_tasks.validate, _validate_tests,
        ),
        PhaseSpec("snapshot-first", "", ("answerer", "tests", "generator"),
                  {"snapshots": "snapshots"}, kfp_tasks.snapshot),
        PhaseSpec("snapshot-next", "", ("previous", "answerer", "tests", "generator"),
                  {"snapshots": "snapshots"}, kfp_tasks.snapshot),
        PhaseSpec("evaluate", "", ("data", "snapshots", "bank"), {"report": "report"},
                  kfp_tasks.evaluate),
        PhaseSpec("select", "", ("report", "snapshots", "bank"), {"champion": "champion"},
                  kfp_tasks.select),
        PhaseSpec("finalize", "", (), {}, kfp_tasks.finalize),  # the exit handler
        PhaseSpec("train-game", "", (), {"model": "model"}, kfp_tasks.train_game),
        PhaseSpec("evaluate-game", "", ("model",), {"report": "report"},
                  kfp_tasks.evaluate_game),
        PhaseSpec("select-game", "", ("model", "report"), {"champion": "champion"},
                  kfp_tasks.select_game),
    )
}  # fmt: skip
BY_KIND = {spec.kind: spec for spec in PHASES.values() if spec.kind}  # what the plan runs


def outputs_in(name: str, folder: str | Path) -> dict[str, str]:
    """Phase `name`'s outputs laid out in `folder` (the folder itself for a "" output)."""
    return {key: str(Path(folder) / rel) for key, rel in PHASES[name].outputs.items()}


def run(
    name: str, cfg: Config, round_index: int, inputs: Paths, outputs: Paths, phase: str = ""
) -> dict[str, float]:
    """Run phase `name` on named local `inputs` into named `outputs`; `phase` is its name in
    the plan (its steps and the seed of its draws; "" for a free run of the phase's kind)."""
    call = PHASES[name].call
    if call is None:
        raise SparringError(f"{name}: runs only as a task of the KFP DAG (no call on paths)")
    return call(cfg, round_index, inputs, outputs, phase)


def run_task(name: str, args: Mapping[str, Any], trainjob: Callable[..., Any] | None = None):
    """Run row `name` as its KFP component: `args` are the component's arguments by name (its
    `locals()`), `trainjob` the TrainJob launcher a training component hands down. Returns what
    the component returns (None for a component without an output parameter)."""
    drift = lineage.code_drift()
    if drift:
        raise SparringError(f"{name}: {drift}")
    spec = PHASES.get(name)
    if spec is None or spec.task is None:
        raise SparringError(
            f"{name}: no row of the phase table (sparring.phases.table.PHASES) with a KFP task; "
            "a component runs only a row's task"
        )
    return spec.task(spec, TaskArgs(args, trainjob))
