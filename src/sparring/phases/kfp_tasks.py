"""What each row of the phase table does as a KFP task: its component's whole body.

Every function here is one row's `task` (sparring.phases.table.PHASES), called as
`task(row, args)` by `table.run_task` with the component's arguments (`kfp_io.TaskArgs`). It
opens the phase's MLflow child run (`tracking.phase_run`, under the run name and round the
tracking history reads), logs what the phase used, runs the phase (the row's `call` where the
plain runner, `sparring phase` and the TrainJob entry run it too, else the phase function) and
writes the task's KFP outputs: its metrics artifact, artifact metadata, its return value.

Covers: materialize (which makes the MLflow parent run), init-models, warm-start (which starts
the snapshot manifest), train-answerer and train-generator (in the task's pod, or as a Kubeflow
Trainer TrainJob), validate-tests (no MLflow: the sandbox pod has no credentials; the next
answerer task, or evaluate in a writer-only run, logs its metrics), the snapshots, evaluate,
select (which finishes the parent run), finalize (the exit handler) and the game DAG's
train-game, evaluate-game and select-game.
Does not cover: the phases' work (the modules beside this one), the DAG's wiring (pipelines/).
Each phase module is imported inside the task that runs it: the sandbox image that runs
validate-tests ships no ML stack, and a phase's module may load one.
"""

from __future__ import annotations

from typing import Any

from sparring import tracking
from sparring.config import Config
from sparring.errors import SparringError
from sparring.evaluation import headline
from sparring.phases import kfp_io
from sparring.phases.kfp_io import SETUP_ROUND, TaskArgs
from sparring.phases.schedule import label_of
from sparring.phases.snapshot import WARM_START_LABEL, add_snapshot
from sparring.phases.validate import validation_metrics
from sparring.problems import datasets
from sparring.rewards.bank import bank_file

# `row` below is the task's row of sparring.phases.table (a PhaseSpec: name, kind, inputs,
# outputs, call); it is passed in, not imported, as the table imports this module.


def materialize(row: Any, t: TaskArgs) -> str:
    """Returns the MLflow parent run id (the given one, or a new one tagged with kfp_run_id)."""
    from sparring.phases.materialize import materialize_carrying_bank

    cfg = kfp_io.config_from_yaml(t["config_yaml"])  # the run's own seed is drawn below
    run_id = kfp_io.ensure_parent_run(cfg, t["parent_run_id"], t["kfp_run_id"])
    with tracking.phase_run(cfg, run_id, "materialize", SETUP_ROUND) as run:
        cfg = kfp_io.for_parent_run(cfg, run_id, run)  # seed_per_run: every task's seed
        result = run.log(materialize_carrying_bank(cfg, t.path("data")))
        kfp_io.log_problem_sets(run, cfg, t.path("data"), datasets.SETS_ALL, parent_run_id=run_id)
    t.to_kfp_metrics(result)
    return run_id


def init_models(row: Any, t: TaskArgs) -> None:
    from sparring.phases.init_models import init_models as phase

    cfg = t.config()
    with tracking.phase_run(cfg, t["parent_run_id"], "init-models", SETUP_ROUND) as run:
        champion = t["use_champion"]
        result = run.log(phase(cfg, t.path("answerer"), t.path("generator"), champion))
    t.to_kfp_metrics(result)


def warm_start(row: Any, t: TaskArgs) -> None:
    """Also starts the snapshot manifest with the warm-started answerer (round 0, label
    "warm-start"), so evaluation reports base -> warm start -> rounds without a task of its own."""
    cfg = t.config()
    with tracking.phase_run(cfg, t["parent_run_id"], "warm-start", SETUP_ROUND) as run:
        kfp_io.log_problem_sets(run, cfg, t.path("data"), datasets.TRAINING)
        paths, outputs = t.paths(row.inputs), t.paths(row.outputs)
        result = run.log(row.call(cfg, SETUP_ROUND, paths, outputs, ""))
    add_snapshot(None, 0, t.uri("model"), "", t.path("snapshots"), label=WARM_START_LABEL)
    t.to_kfp_metrics(result)


def log_validation(cfg: Config, parent_run_id: str, bank_dir: str, round_index: int) -> None:
    """The metrics a validate-tests task left in its bank folder (validation.json: the sandbox
    task has no MLflow credentials), logged as that task's child run."""
    validation = validation_metrics(bank_dir)
    if validation is not None:
        with tracking.phase_run(cfg, parent_run_id, "validate-tests", round_index) as run:
            run.log(validation)


def train(row: Any, t: TaskArgs) -> None:
    """train-answerer and train-generator: `phase` names the planned phase (its steps and the
    seed of its draws); its MLflow run shows the phase's label (`train-answerer_final`)."""
    cfg, parent, round_index = t.config(), t["parent_run_id"], t["round_index"]
    label = label_of(cfg, t["phase"], row.kind, round_index)
    if row.kind == "answerer":  # the answerer task is the first after a validation
        log_validation(cfg, parent, t.path("bank"), round_index)
    with tracking.phase_run(cfg, parent, f"train-{label}", round_index) as run:
        kfp_io.log_problem_sets(run, cfg, t.path("data"), datasets.TRAINING)
        result = run.log(_trained(row, t, cfg))
    t.to_kfp_metrics(result)


def _trained(row: Any, t: TaskArgs, cfg: Config) -> dict:
    """The training phase's metrics: run in this task's pod (`launcher` "task"), or as a
    Kubeflow Trainer TrainJob ("trainjob": the cluster pipeline with kubernetes.trainer.nodes >
    1), which reads the inputs' URIs and leaves the outputs at the task's paths."""
    round_index, phase = t["round_index"], t["phase"]
    if t["launcher"] != "trainjob":
        return row.call(cfg, round_index, t.paths(row.inputs), t.paths(row.outputs), phase)
    if t.trainjob is None:
        raise SparringError(f"{row.name}: launcher trainjob, but its component handed no launcher")
    return t.trainjob(
        cfg, row.name, round_index, phase_name=phase, inputs=t.uris(row.inputs),
        outputs={in_folder: t.path(name) for name, in_folder in row.outputs.items()},
        output_uri=t.uri(next(iter(row.outputs))),
    )  # fmt: skip


def validate(row: Any, t: TaskArgs) -> None:
    cfg = kfp_io.config_from_yaml(t["config_yaml"])  # no parent run: no MLflow in the sandbox
    paths, outputs = t.paths(row.inputs), t.paths(row.outputs)
    t.to_kfp_metrics(row.call(cfg, t["round_index"], paths, outputs, ""))


def snapshot(row: Any, t: TaskArgs) -> None:
    """Append the round's answerer, tests and generator (by artifact URI) to the manifest
    evaluate reads: to the previous one (snapshot-next), or to none (snapshot-first)."""
    previous = t.path("previous") if "previous" in row.inputs else None
    add_snapshot(
        previous, t["round_index"], t.uri("answerer"), t.uri("tests"), t.path("snapshots"),
        generator_uri=t.uri("generator"),
    )  # fmt: skip


def evaluate(row: Any, t: TaskArgs) -> None:
    from sparring.phases import evaluate as phase

    cfg, parent = t.config(), t["parent_run_id"]
    if phase.writer_only(cfg):  # no answerer task follows the last validation to log it
        log_validation(cfg, parent, t.path("bank"), cfg.rounds)
    with tracking.phase_run(cfg, parent, "evaluate", kfp_io.final_round(cfg)) as run:
        kfp_io.log_problem_sets(run, cfg, t.path("data"), datasets.EVALUATION)
        result = run.log(
            phase.evaluate(
                cfg, t.path("data"), t.path("snapshots"), bank_file(t.path("bank")),
                t.path("report"), parent,
            )
        )  # fmt: skip
    t.to_kfp_metrics(result)


def select(row: Any, t: TaskArgs) -> str:
    """Returns the registered model version ("" when nothing was promotable)."""
    from sparring.phases import select as phase

    cfg, parent, report = t.config(), t["parent_run_id"], t.path("report")
    with tracking.phase_run(cfg, parent, "select", kfp_io.final_round(cfg)) as run:
        result = run.log(
            phase.select_and_register(
                cfg, report, t.path("snapshots"), bank_file(t.path("bank")), t.path("champion"),
                parent,
            )
        )  # fmt: skip
        run.log_params({"selection_reason": str(result.get("reason", ""))[:2000]})
        if parent:  # the last phase: the run's headline numbers onto the parent run
            headline.log_headline(cfg, run, parent, phase.headline(cfg, report, result))
    return _selected(cfg, t, result)


def _selected(cfg: Config, t: TaskArgs, result: dict) -> str:
    """What both selections do last: finish the parent run (the pipeline run is complete), write
    the KFP outputs, return the registered version ("" when nothing was promoted)."""
    if t["parent_run_id"]:
        tracking.finish_parent_run(cfg, t["parent_run_id"])
    t.to_kfp_metrics(result)
    t["champion"].metadata["reason"] = str(result.get("reason", ""))
    return str(result.get("version", ""))


def finalize(row: Any, t: TaskArgs) -> str:
    """The exit handler: it runs whether the run succeeded or not, and ends the MLflow parent run
    that a failure would otherwise leave RUNNING. Returns the id of the run it ended ("" when
    there was none open)."""
    cfg, status = t.config(), t["status"]
    failed = status.state != "SUCCEEDED"
    return tracking.close_parent_run(
        cfg, t["parent_run_id"], t["kfp_run_id"], failed, status.error_message or ""
    )


def train_game(row: Any, t: TaskArgs) -> str:
    """Returns the MLflow parent run id (the given one, or a new one tagged with kfp_run_id)."""
    from sparring.phases.game import train_game as phase

    cfg = t.config()
    run_id = kfp_io.ensure_parent_run(cfg, t["parent_run_id"], t["kfp_run_id"])
    name = f"train-{cfg.game.name}"
    with tracking.phase_run(cfg, run_id, name, kfp_io.GAME_TRAIN_ROUND) as run:
        result = run.log(phase(cfg, t.path("model")))
    t.to_kfp_metrics(result)
    t["model"].metadata["game"] = cfg.game.name
    return run_id


def evaluate_game(row: Any, t: TaskArgs) -> None:
    from sparring.phases.game import evaluate_game as phase

    cfg, parent = t.config(), t["parent_run_id"]
    with tracking.phase_run(cfg, parent, "evaluate", kfp_io.GAME_EVALUATE_ROUND) as run:
        result = run.log(phase(cfg, t.path("model"), t.path("report")))
    t.to_kfp_metrics(result)


def select_game(row: Any, t: TaskArgs) -> str:
    """Returns the registered model version ("" when nothing was promoted)."""
    from sparring.phases.game import game_headline
    from sparring.phases.game import select_game as phase

    cfg, parent, report = t.config(), t["parent_run_id"], t.path("report")
    with tracking.phase_run(cfg, parent, "select", kfp_io.GAME_SELECT_ROUND) as run:
        result = run.log(phase(cfg, t.path("model"), report, t.path("champion"), parent))
        if parent:  # the last phase: the run's headline numbers onto the parent run
            headline.log_headline(cfg, run, parent, game_headline(report, result))
    return _selected(cfg, t, result)
