"""Running a config's pipeline on this machine through kfp.local, and what it leaves behind.

Covers: `run_local` (the same DAG as on the cluster, through kfp.local's SubprocessRunner with
use_venv=False), its state and resume logic, the console filtering and log file, the one-line
error for a failed task, and the summaries of a finished run (`child_summary`, `learn_lines`).
The DAG's builder comes from the caller (the CLI imports the repository's pipelines/): the
library never imports the KFP shells above it.

Local runs: `prepare_local_run` creates the MLflow parent run before the DAG starts, and
`run_local` passes its id and a local run id as pipeline parameters (kfp.local has no server-side
run id worth tagging, and a fresh id per attempt would defeat caching). State lives in
`<pipeline_root>/.sparring/<name>/`: `state.json` (parent run id, local run id, config digest,
the package's code digest) and `cache/` (kfp.local's cache). `resume=True` reuses both, so
finished tasks are cache hits and are not repeated (kfp.local keys the cache on component, image,
command and arguments, and treats an entry as a miss when an artifact it points to was deleted),
unless the config or the code changed since (lineage.resume_refusal); otherwise the cache is cleared
first. A new run (without --resume) ends the earlier run's parent run if it is still open, and a
failed run ends its own as FAILED (or says it could not: MLflow down), so no parent run is left
RUNNING once MLflow answers. kfp and mlflow are imported inside the functions that need them.

Does not cover: the `sparring run` command line (sparring.cli.pipeline: arguments, choosing the
pipeline root, printing the summary) or cluster runs (submit/schedule, sparring.cli.pipeline).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.backends import lineage
from sparring.errors import SparringError

if TYPE_CHECKING:
    from sparring.evaluation.heldout import Heldout


def _state_dir(root: Path, cfg) -> Path:
    return root / ".sparring" / cfg.name


def read_state(root: Path, cfg) -> dict | None:
    """The state of the last local run of `cfg` under `root`, if there was one."""
    state_file = _state_dir(root, cfg) / "state.json"
    return json.loads(state_file.read_text()) if state_file.is_file() else None


def prepare_local_run(cfg, root: Path, resume: bool) -> dict:
    """Parent run and local run id for a local run; reused from state.json with --resume."""
    from sparring import storage, tracking

    state_dir = _state_dir(root, cfg)
    state_file = state_dir / "state.json"
    cache_dir = state_dir / "cache"
    if resume:
        state = read_state(root, cfg)
        why = lineage.resume_refusal(state, cfg.digest())
        if not why:
            return {**state, "resumed": True}
        print(f"{why}: starting a new run", file=sys.stderr)
    if state_file.is_file():  # a run that is not continued must not stay RUNNING
        _close_abandoned(cfg, json.loads(state_file.read_text()))
    shutil.rmtree(cache_dir, ignore_errors=True)
    kfp_run_id = f"local-{cfg.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    state = {
        "kfp_run_id": kfp_run_id,
        "parent_run_id": tracking.start_parent_run(cfg, kfp_run_id),
        "digest": cfg.digest(),
        "code": lineage.code_digest(),
        "resumed": False,
    }
    storage.write_text(str(state_file), json.dumps(state, indent=1))
    return state


def _close_abandoned(cfg, old_state: dict) -> None:
    """End the parent run of an earlier local run that a new one replaces, if it is still open
    (killed, or ended while MLflow was down): FAILED, tagged with why."""
    from sparring import tracking

    run_id = old_state.get("parent_run_id", "")
    if not run_id:
        return
    try:
        closed = tracking.close_parent_run(
            cfg, run_id, "", failed=True, error="abandoned: a new run started without --resume"
        )
    except SparringError as exc:
        print(f"could not end the earlier parent run {run_id}: {exc}", file=sys.stderr)
        return
    if closed:
        print(f"ended the earlier run's MLflow parent run {run_id} as FAILED", file=sys.stderr)


@contextlib.contextmanager
def _quiet_console(log_path: Path):
    """kfp.local prints each task's executor input (the whole config) and logs; send all of
    it to `log_path` and let only Sparring's progress lines through (SPARRING_VERBOSE=1: all)."""
    from sparring.progress import ConsoleFilter

    if os.environ.get("SPARRING_VERBOSE"):
        yield
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as log, warnings.catch_warnings():
        # kfp.local warns on every task that our base image is not a python image: it is.
        warnings.filterwarnings("ignore", message=".*non-Python base image.*")
        # ...and that resource limits mean nothing locally, once per task: we know.
        warnings.filterwarnings("ignore", message=".*have no effect in the current local runner.*")
        real = sys.stdout
        sys.stdout = ConsoleFilter(real, log)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stdout = real


def _pipeline_failure(exc: Exception, log_path: Path) -> SparringError:
    """One error naming the failed task and its error. A Sparring error inside a task is a
    message for the user; anything else is a bug, so its traceback is printed too."""
    from sparring.progress import failure_excerpt

    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    task, error, trace = failure_excerpt(text)
    if not task:
        return SparringError(f"the pipeline failed ({exc}); its whole output: {log_path}")
    if trace and not error.startswith("sparring."):
        print("\n".join([f"--- task {task}, from {log_path}", *trace, "---"]), file=sys.stderr)
    message = error.split(": ", 1)[1] if error.startswith("sparring.") else error
    where = f"--resume continues after fixing it; the whole output: {log_path}"
    return SparringError(f"task {task} failed: {message or 'see its log'}; {where}")


def run_local(cfg, root: Path, build_pipeline: Callable[..., Any], resume: bool = False) -> dict:
    """Run the pipeline of a config through kfp.local; returns the state and a summary.
    `build_pipeline(cfg, local=True)` gives the DAG (pipelines.selfplay.build_pipeline)."""
    from kfp import local

    from sparring import storage, tracking

    storage.configure(cfg)
    # Tasks are subprocesses: they inherit the (absolute) tracking URI and the S3 endpoint.
    os.environ["MLFLOW_TRACKING_URI"] = tracking.tracking_uri(cfg)
    if cfg.storage.s3_endpoint:
        os.environ.setdefault("AWS_ENDPOINT_URL", cfg.storage.s3_endpoint)
    state = prepare_local_run(cfg, root, resume)
    os.environ[lineage.RUN_CODE_ENV] = state["code"]  # each phase's process checks it (table)
    local.init(
        runner=local.SubprocessRunner(use_venv=False),
        pipeline_root=str(root),
        enable_caching=True,
        cache_root=str(_state_dir(root, cfg) / "cache"),
    )
    pipeline = build_pipeline(cfg, local=True)
    log_path = root / f"run-{state['kfp_run_id']}.log"
    print(f"Running {cfg.name} through kfp.local; every task's full output: {log_path}")
    t0 = time.perf_counter()
    try:
        with _quiet_console(log_path):
            pipeline(parent_run_id=state["parent_run_id"], kfp_run_id=state["kfp_run_id"])
    except Exception as exc:
        failure = _pipeline_failure(exc, log_path)
        try:
            tracking.finish_parent_run(cfg, state["parent_run_id"], status="FAILED")
        except SparringError as tracking_error:
            raise SparringError(
                f"{failure}; the MLflow parent run {state['parent_run_id']} stays RUNNING until "
                f"--resume or the next run ends it ({tracking_error})"
            ) from None
        raise failure from None
    state["seconds"] = time.perf_counter() - t0
    try:
        state["children"] = child_summary(cfg, state["parent_run_id"])
    except SparringError as exc:  # the run is done; only its summary is missing
        print(f"no per-task summary: {exc}", file=sys.stderr)
        state["children"] = []
    return state


def child_summary(cfg, parent_run_id: str) -> list[dict]:
    """One entry per MLflow child run of the parent: name, status, seconds, metric count."""
    from sparring import tracking

    runs = tracking.child_runs(cfg, parent_run_id)
    out: dict[str, dict] = {}  # the last attempt per task; retries and resumes are counted
    for r in runs:
        end = r.info.end_time or r.info.start_time
        attempts = out.get(r.info.run_name, {}).get("attempts", 0) + 1
        out.pop(r.info.run_name, None)
        out[r.info.run_name] = {
            "name": r.info.run_name,
            "status": r.info.status,
            "seconds": (end - r.info.start_time) / 1000.0,
            "metrics": len(r.data.metrics),
            "attempts": attempts,
        }
    return list(out.values())


def learn_lines(cfg, parent_run_id: str) -> list[str]:
    """The LEARN lines of a finished run, from its phases' MLflow runs; also logged to the
    parent run as learn.txt."""
    import mlflow

    from sparring import recurring, tracking
    from sparring.evaluation import arms, intervals, learning

    runs = tracking.child_runs(cfg, parent_run_id)
    summary, breaks, useful, trained = learning.from_phase_runs(
        [(r.info.run_name, r.data.metrics) for r in runs]
    )
    step_rewards = learning.answerer_step_rewards(
        tracking.step_curves(cfg, parent_run_id, keys=("reward",))
    )
    change = intervals.train_reward_change(step_rewards, seed=cfg.seed)
    lines = learning.learn_lines(summary, breaks, useful, trained, change)
    named = [(r.info.run_name, r.data.metrics) for r in runs]
    selects = [r for r in runs if r.info.run_name.endswith("-select")]
    reason = selects[-1].data.params.get("selection_reason", "") if selects else ""
    lines += [
        recurring.vs_start_line(summary),
        recurring.bank_line(named),
        recurring.champion_line(named, cfg.selection.registered_model, reason),
    ]
    client = mlflow.MlflowClient()
    for name, field in arms.ARMS:
        lines += _arm_lines(cfg, client, runs, name, field)
    lines += _pooled_lines(cfg, client, runs, parent_run_id)
    client.log_text(parent_run_id, "\n".join(lines) + "\n", "learn.txt")
    return lines


def _heldout_of(client, runs) -> Heldout | None:
    """The per-problem held-out file the evaluate phase logged (sparring.phases.evaluate)."""
    from sparring.evaluation.heldout import HELDOUT_FILE, Heldout

    # one small JSON a run: MLflow's progress bar would print three lines for each
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    for run in reversed(runs):
        if not run.info.run_name.endswith("-evaluate"):
            continue
        try:
            path = client.download_artifacts(run.info.run_id, f"learning/{HELDOUT_FILE}")
        except Exception:  # an evaluate run without it (no val_samples)
            continue
        return Heldout.load(path)
    return None


def _pooled_lines(cfg, client, runs, parent_run_id: str) -> list[str]:
    """The held-out lines pooled over training seeds (`seeds=K`): this run and, per other
    `training_seed`, the latest finished run in the same MLflow experiment whose config differs
    from this one's in training_seed alone (and name, tracking, storage); [] for them until a
    second seed exists (`make learn SEEDS=3` runs three). Beside them each arm's line
    (arms.ARMS: reward_vs_control, selfplay_vs_given, selfplay_vs_dense, bank_vs_screening)
    pooled over both arms' seeds, the other arm being the runs that differ in the arm's field
    (one value of it, the latest run's) and training_seed alone, once more than one pair of runs
    is there."""
    from sparring import tracking
    from sparring.config import to_dict
    from sparring.evaluation.arms import (
        ARM_FIELDS,
        ARM_MEASURES,
        ARMS,
        control_differences,
        pool_lines,
        pooled_arm_line,
    )
    from sparring.evaluation.study_pairs import pairing_refusal, same_arm

    mine = _heldout_of(client, runs)
    experiment = runs[0].info.experiment_id if runs else None
    if not mine or experiment is None:
        return []
    my_params = tracking.flatten(to_dict(cfg))
    defaults = _default_params()  # once: the loop below reads up to 200 runs
    treated = {cfg.training_seed: (f"training_seed={cfg.training_seed}", mine)}
    others: dict[str, tuple[str, dict[int, tuple[str, Heldout]]]] = {}  # field: (value, seeds)
    for parent in client.search_runs(
        [experiment],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=200,
    ):
        if parent.data.tags.get("mlflow.parentRunId") or parent.info.run_id == parent_run_id:
            continue
        params = {k: v for k, v in parent.data.params.items() if not k.startswith("version.")}
        differences = [
            k
            for k in control_differences(my_params, params, defaults, arm_field="")
            if k != "training_seed"
        ]
        if len(differences) > 1:
            continue
        seed = int(params.get("training_seed", 0))
        if differences:
            field = differences[0]
            if field not in ARM_FIELDS or pairing_refusal(my_params, params, ""):
                continue  # not an arm; or a contrast its study never planned (_arm_lines says)
            value = params.get(field, defaults.get(field))
            arm_value, chosen = others.setdefault(field, (value, {}))
            if value != arm_value:
                continue  # another value of the field: not this arm
        elif same_arm(my_params, params):
            chosen = treated
        else:
            continue  # this config run as another study's arm, or outside the study
        if seed in chosen:
            continue  # a later run of that seed is already in
        data = _heldout_of(client, tracking.child_runs(cfg, parent.info.run_id))
        if data:
            chosen[seed] = (f"training_seed={seed} ({parent.info.run_id[:8]})", data)
    lines = []
    if len(treated) >= 2:
        try:
            lines += pool_lines(list(treated.values()), seed=cfg.seed)
        except ValueError as exc:
            print(f"pooled over training seeds: {exc}", file=sys.stderr)
    for (name, field), (measure, suffix) in itertools.product(ARMS, ARM_MEASURES):
        value, arm = others.get(field, (None, {}))
        if not arm or len(treated) + len(arm) <= 2:
            continue  # a single pair: _arm_lines' lines say it
        try:
            lines.append(
                pooled_arm_line(
                    name + suffix, field, list(treated.values()), my_params[field],
                    list(arm.values()), value, seed=cfg.seed, measure=measure,
                )
            )  # fmt: skip
        except ValueError as exc:
            print(f"{name}{suffix} pooled over training seeds: {exc}", file=sys.stderr)
    return lines


def _default_params() -> dict[str, str]:
    """Every config param at its default, flattened as a run logs them."""
    from sparring import tracking
    from sparring.config import from_dict, to_dict

    return tracking.flatten(to_dict(from_dict({})))


def _arm_lines(cfg, client, runs, name: str, field: str) -> list[str]:
    """`LEARN <name>` (sparring.evaluation.arms.ARMS): the treatment's gain on the held-out
    new tasks against the other arm's, where the other arm is the latest finished run in the
    same MLflow experiment whose config differs from this one's in `field` alone (honest against
    format_only: arms S and C of configs/study/2026-11-29-canary-arms.yaml find each other
    there; self-play against given tests alone: its arm G; sparse against dense tests: arm D),
    paired over tasks (`arms.heldout_pair`), in each measure both files hold
    (arms.ARM_MEASURES: `LEARN <name>` on the per-test share, `LEARN <name>_strict` on
    every test passed), each line ending `treatment=<name>:<run id> control=<name>:<run id>`
    (the two MLflow parent runs). [] until both exist; a run that differs in
    `field` and elsewhere too (say lora.top_layers), or whose heldout.json cannot be paired with
    this one's (other problems, other base scores, no reward named), is skipped, and said so.
    A study's run (tracking.study) pairs only with a run of the same study whose arm forms a
    contrast the study planned (sparring.evaluation.study_pairs); any other is skipped, and
    said so."""
    from sparring import tracking
    from sparring.config import to_dict
    from sparring.evaluation.arms import (
        ARM_MEASURES,
        control_differences,
        heldout_pair,
        is_treatment,
        reward_vs_control,
    )
    from sparring.evaluation.study_pairs import pairing_refusal

    mine = _heldout_of(client, runs)
    if not (mine and mine.sets.get("new_tasks")):
        return []
    experiment = runs[0].info.experiment_id if runs else None
    if experiment is None:
        return []
    defaults = _default_params()
    my_params = tracking.flatten(to_dict(cfg))
    my_value = my_params[field]
    candidates = client.search_runs(
        [experiment],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=200,
    )
    for parent in candidates:
        if parent.data.tags.get("mlflow.parentRunId"):
            continue  # a phase's run, not a pipeline run
        their_params = {k: v for k, v in parent.data.params.items() if not k.startswith("version.")}
        their_value = their_params.get(field, defaults.get(field))
        if their_value == my_value:
            continue
        differences = control_differences(my_params, their_params, defaults, field)
        if differences:
            if len(differences) <= 3:  # a near miss is worth saying; another study is not
                shown = ", ".join(
                    f"{k}={their_params.get(k, '(unset)')} there, "
                    f"{my_params.get(k, '(unset)')} here"
                    for k in differences
                )
                print(
                    f"{name}: run {parent.info.run_id} ({field}={their_value}) is not the "
                    f"other arm of this one: its config differs in {shown}; run it with the "
                    "same --set",
                    file=sys.stderr,
                )
            continue
        refusal = pairing_refusal(my_params, their_params, f"run {parent.info.run_id}")
        if refusal:
            print(f"{name}: {refusal}", file=sys.stderr)
            continue
        theirs = _heldout_of(client, tracking.child_runs(cfg, parent.info.run_id))
        if not theirs:
            continue
        mine_first = is_treatment(field, my_value, their_value)
        treatment, control = (mine, theirs) if mine_first else (theirs, mine)
        me = f"{cfg.name}:{runs[0].data.tags.get('mlflow.parentRunId', '')}"
        them = f"{their_params.get('name', '')}:{parent.info.run_id}"
        named = f"treatment={me} control={them}" if mine_first else f"treatment={them} control={me}"
        lines = []
        for measure, suffix in ARM_MEASURES:
            try:
                pairs = heldout_pair(treatment, control, "new_tasks", field, measure)
            except ValueError as exc:
                print(f"{name}{suffix}: run {parent.info.run_id}: {exc}", file=sys.stderr)
                continue
            line = reward_vs_control(*pairs, seed=cfg.seed, name=name + suffix)
            lines.append(f"{line} {named}")
        if lines:
            return lines
    return []
