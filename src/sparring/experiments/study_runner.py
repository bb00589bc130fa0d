"""`make study STUDY=<name>`: a study's file (configs/study/<name>.yaml) run, every arm x
training seed once from the base model, resumable, then its table, contrasts, result file and
figure.

Covers: `plan` (the runs in study order, seed 1 of every arm first, so an interrupted study has
something of every arm; a finished run is kept only when its record's code and config digest
match today's, else it is run again, and the plan says why), `run_one` (one run through
`sparring run --resume --config <base> --set ...`, the entry point `make learn` uses, with
`storage.start_fresh=true` set explicitly: a run killed part-way goes on from its last finished
phase when its config and code are unchanged; then its heldout.json, fetched from the MLflow run
of its evaluate phase where every pairing line finds it, checked to have started fresh, its
LEARN lines (the run's stdout), its final bank with the answers each test alone caught
(sparring.experiments.run_outputs) and record.json, which keeps the scalars the study reads
(sparring.experiments.study.run_values) and where its outputs are, written to
local_outputs/study/<run name>/), `finished_runs` (each run read back from its files) and
`write_report` (the design's report file and figure).
Does not cover: a run folder's files and their filed copies (sparring.experiments.filed_runs),
the design's file (sparring.experiments.study_design), the statistics
(sparring.experiments.study), the pipeline (sparring.local_run, sparring.cli.pipeline), the
command line (sparring.cli.study).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.atomic import write_file
from sparring.backends import lineage
from sparring.errors import SparringError
from sparring.evaluation.heldout import Heldout
from sparring.experiments.filed_runs import (
    BANK,
    HELDOUT,
    LEARN,
    RECORD,
    read_record,
    read_run,
)
from sparring.experiments.run_outputs import bank_with_catches, run_outputs
from sparring.experiments.study import StudyRun, code_changed, run_values
from sparring.experiments.study_design import StudyDesign
from sparring.tracking import resources

OUT = Path("local_outputs") / "study"


@dataclass(frozen=True)
class Planned:
    """One run of the study: keep it (`action` "keep") or run it ("run"), and why."""

    name: str
    arm: str
    seed: int
    overrides: tuple[str, ...]
    config_digest: str
    action: str
    why: str


def config_digest(config: str, sets: Sequence[str]) -> str:
    """`Config.digest()` of the config file with `sets` applied, as `sparring run` resolves it;
    a SparringError when a run of it could not be filed (no held-out samples: no heldout.json)."""
    from sparring.config import load_config

    cfg = load_config(config, list(sets))
    if not cfg.data.val_samples:
        raise SparringError(
            f"data.val_samples is 0, so its evaluate phase files no {HELDOUT} and the study "
            "could not file the run; give data.val_samples=1 or more"
        )
    return cfg.digest()


def prepare_store(config: str, sets: Sequence[str]) -> str:
    """Create the tracking store and the study's experiment of the run `sets` describes, once,
    before runs start at once: two runs creating a fresh sqlite store together race on its
    schema migration (one dies with alembic's "expected to match one row"), and two creating
    one experiment on the name. Returns the experiment's id."""
    import mlflow

    from sparring import tracking
    from sparring.config import load_config

    cfg = load_config(config, list(sets))
    tracking.connect(cfg)
    return tracking.ensure_experiment(mlflow.MlflowClient(), cfg.tracking.experiment)


def chosen_arms(design: StudyDesign, arms: Sequence[str]) -> list[str]:
    """`arms` in the design's order; a SparringError naming any that is not one of its arms."""
    unknown = [a for a in arms if a not in design.arms]
    if unknown:
        raise SparringError(
            f"--arms {','.join(unknown)}: the arms of {design.path} are {','.join(design.arms)}"
        )
    return [a for a in design.arms if a in arms]


def plan(
    out: Path,
    design: StudyDesign,
    arms: Sequence[str],
    seeds: Sequence[int],
    code: str,
    digest_of: Callable[[Sequence[str]], str],
    extra: Sequence[str] = (),
) -> list[Planned]:
    """Every arm x seed in study order (seed by seed, arms in the design's order within one),
    each to keep (its record.json and heldout.json are there, at today's `code` and config
    digest, `digest_of(overrides)`) or to run, with why. A config that does not load (say an
    arm's reward not in this code) is a SparringError naming the arm."""
    ordered = chosen_arms(design, arms)
    out_plan = []
    for seed in sorted(set(seeds)):
        for arm in (a for a in ordered if design.runs_seed(a, seed)):
            name = design.run_name(arm, seed)
            sets = design.overrides(arm, seed, list(extra))
            try:
                digest = digest_of(sets)
            except SparringError as exc:
                raise SparringError(
                    f"arm {arm} ({name}): {exc}; leave it out with --arms"
                ) from None
            record = read_record(out / name)
            if record is None:
                action, why = "run", "not run yet"
            elif not (out / name / HELDOUT).is_file():
                action, why = "run", f"its {HELDOUT} is missing"
            elif record.get("code") != code:
                action, why = "run", f"ran at code {record.get('code')}, the code is {code} now"
            elif record.get("config_digest") != digest:
                action, why = (
                    "run",
                    f"ran config {record.get('config_digest')}, the config is {digest} now",
                )
            else:
                action, why = "keep", f"finished {record.get('finished')} at code {code}"
            out_plan.append(Planned(name, arm, seed, sets, digest, action, why))
    return out_plan


def plan_lines(items: Sequence[Planned]) -> list[str]:
    todo = sum(i.action == "run" for i in items)
    lines = [f"study: {len(items)} runs, {todo} to run, {len(items) - todo} kept"]
    lines += [f"  {i.action:4s} {i.name:14s} {i.why}" for i in items]
    return lines


def _command(config: str, sets: Sequence[str]) -> list[str]:
    # --resume: a run killed part-way (a machine that stops, a closed laptop) goes on from its
    # last finished phase when its config and code are unchanged, instead of from the start
    flags = [part for text in sets for part in ("--set", text)]
    return [
        sys.executable,
        "-m",
        "sparring.cli.main",
        "run",
        "--resume",
        "--config",
        config,
        *flags,
    ]


def _stream(
    cmd: list[str], env: Mapping[str, str] | None = None, prefix: str = ""
) -> tuple[int, list[str]]:
    """Run `cmd` (in `env`, else this environment), its stdout passed through line by line,
    each after `prefix`; (exit code, its LEARN lines)."""
    env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    learn: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(prefix + line)
            sys.stdout.flush()
            if line.startswith("LEARN "):
                learn.append(line.rstrip("\n"))
    return proc.returncode, learn


def _state_file(cfg: Any) -> Path:
    """The state file of the last local run of `cfg` (sparring.local_run)."""
    return Path(cfg.storage.pipeline_root).resolve() / ".sparring" / cfg.name / "state.json"


def fetch_run(
    config: str, sets: Sequence[str]
) -> tuple[Heldout, str, dict[str, float], dict[str, dict[str, float]]]:
    """(the run's heldout.json, its MLflow parent run id, its `run_values`, each phase's peak
    memory, CPU and wall seconds by phase run name: sparring.tracking.resources): the parent run of
    the last local run of this config (`<pipeline_root>/.sparring/<name>/state.json`,
    sparring.local_run), the file its evaluate phase logged as `learning/heldout.json`, and the
    scalars of the learning summary its LEARN lines print, from its phases' metrics."""
    import mlflow

    from sparring import tracking
    from sparring.config import load_config
    from sparring.evaluation.learning import from_phase_runs

    cfg = load_config(config, list(sets))
    state_file = _state_file(cfg)
    if not state_file.is_file():
        raise SparringError(f"{cfg.name}: no {state_file}: did the run start?")
    parent = json.loads(state_file.read_text())["parent_run_id"]
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    runs = tracking.child_runs(cfg, parent)  # connects to the config's tracking store first
    client = mlflow.MlflowClient()
    summary, _, _, trained = from_phase_runs([(r.info.run_name, r.data.metrics) for r in runs])
    for run in reversed(runs):
        if not run.info.run_name.endswith("-evaluate"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run.info.run_id, f"learning/{HELDOUT}", tmp)
            try:
                heldout = Heldout.load(path)
            except ValueError as exc:
                raise SparringError(f"{cfg.name}: {exc}") from None
            costs = resources.phase_costs((r.info.run_name, r.data.metrics) for r in runs)
            return heldout, parent, run_values(summary, trained), costs
    raise SparringError(f"{cfg.name}: its MLflow run {parent} has no evaluate phase with {HELDOUT}")


def _write_json(path: Path, data: Any) -> None:
    write_file(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


# fetching a finished run from MLflow and filing it: one run at a time (`--jobs`)
_FILING = threading.Lock()


def run_one(
    item: Planned, config: str, out: Path, threads: int | None = None, prefix: str = ""
) -> dict[str, Any] | None:
    """Run one planned run from the base model and file it under `out`/<name>/: heldout.json,
    learn.txt, then record.json (arm, seed, overrides, code, config digest, minutes, finished,
    `values`: sparring.experiments.study.run_values, and each phase's cost). `threads`: torch's
    thread count for the run (None: this environment's); `prefix` goes before each output line.
    SparringError (naming the run) when it fails or did not start fresh; None, and nothing
    filed, when the code changed during the run (the next `make study` runs it again)."""
    from sparring.config import load_config

    cmd = _command(config, item.overrides)
    (out / item.name / RECORD).unlink(missing_ok=True)  # an earlier run's: no longer finished
    cfg = load_config(config, list(item.overrides))
    state_file = _state_file(cfg)
    state = json.loads(state_file.read_text()) if state_file.is_file() else None
    resumed = not lineage.resume_refusal(state, cfg.digest())
    print(f"\n== study: {item.name} ({item.why}): sparring run --config {config} "
          + " ".join(f"--set {s}" for s in item.overrides), flush=True)  # fmt: skip
    env = lineage.threads_env(os.environ, threads) if threads else dict(os.environ)
    start = time.perf_counter()
    code, learn = _stream(cmd, env, prefix)
    minutes = (time.perf_counter() - start) / 60
    if code:
        raise SparringError(
            f"{item.name}: sparring run exited {code} after {minutes:.0f} min; "
            "make study runs it again"
        )
    with _FILING:  # one finished run at a time reads MLflow and files
        return _file_finished(item, config, out, learn, minutes, resumed, threads)


def _file_finished(
    item: Planned,
    config: str,
    out: Path,
    learn: list[str],
    minutes: float,
    resumed: bool,
    threads: int | None,
) -> dict[str, Any] | None:
    from sparring.config import load_config

    cfg = load_config(config, list(item.overrides))
    heldout, parent, values, costs = fetch_run(config, item.overrides)
    try:
        start_record = lineage.check_start(item.name, heldout.start)
    except ValueError as exc:
        raise SparringError(str(exc)) from None
    changed = code_changed(heldout)
    if changed:
        print(f"study: {item.name}: {changed}: not filed; make study runs it again", flush=True)
        return None
    if start_record.get("code") != lineage.code_digest():
        print(
            f"study: {item.name} ran at code {start_record.get('code')}, the study started at "
            f"{lineage.code_digest()}: the code changed in between",
            file=sys.stderr,
        )
    if heldout.config_digest != item.config_digest:
        print(
            f"study: {item.name}: its heldout.json names config {heldout.config_digest}, "
            f"the study planned {item.config_digest}",
            file=sys.stderr,
        )
    folder = out / item.name
    heldout.save(folder / HELDOUT, indent=1)
    write_file(folder / LEARN, ("\n".join(learn) + "\n").encode())
    outputs = run_outputs(Path(cfg.storage.pipeline_root).resolve(), cfg.name)
    bank = bank_with_catches(outputs) if outputs else None
    (folder / BANK).unlink(missing_ok=True)
    if bank is not None:
        text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in bank)
        write_file(folder / BANK, text.encode())
    record = {
        "name": item.name,
        "arm": item.arm,
        "seed": item.seed,
        "overrides": list(item.overrides),
        # the code that ran it (the run's own lineage.code_digest(), in its start record)
        "code": start_record.get("code"),
        "config_digest": item.config_digest,
        "mlflow_parent_run": parent,
        "minutes": round(minutes, 2),  # this attempt's: a resumed run's earlier phases not in it
        "resumed": resumed,
        # the CPU threads its processes computed with (they inherit this environment): sampled
        # completions depend on it, and `sparring rerun` runs with the same count
        "torch_threads": threads or lineage.torch_threads(),
        # the CPU's vector instruction set torch computed with: it can change samples too
        "cpu_capability": lineage.cpu_capability(),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "values": values,
        # each phase's peak resident memory (MiB), CPU and wall seconds, by its MLflow run name
        "phases": costs,
        # where its models are (not filed: the trained generator's catch on a fixed pool is
        # measured from there after the run)
        "outputs": str(outputs) if outputs else None,
    }
    _write_json(folder / RECORD, record)
    return record


def finished_runs(
    out: Path, design: StudyDesign, arms: Sequence[str], seeds: Sequence[int]
) -> list[tuple[StudyRun, dict[str, Any]]]:
    """(run, its record) of every finished run of the chosen arms and seeds under `out`."""
    found = []
    for seed in sorted(set(seeds)):
        for arm in (a for a in chosen_arms(design, arms) if design.runs_seed(a, seed)):
            run = read_run(out / design.run_name(arm, seed), arm, seed)
            if run is not None:
                found.append(run)
    return found


def study_file(
    result: Mapping[str, Any],
    runs: Sequence[tuple[StudyRun, Mapping[str, Any]]],
    design: StudyDesign,
) -> dict[str, Any]:
    """What the design's report file holds: the design, every run's start record, overrides
    and digests, the per-task matrices, the table and the contrasts."""
    return {
        "issue": design.issue,
        "design": design.path,
        "base": design.base,
        "arms": {
            arm: {"overrides": [*design.common, *a.overrides], "what": a.what}
            for arm, a in design.arms.items()
        },
        "contrasts_planned": [
            {"contrast": c.label, "rank": c.rank, "question": c.question} for c in design.contrasts
        ],
        "intervals": "table and ci95 (lo, hi): 95% percentile bootstrap resampling each arm's "
        "whole runs (seeds) with replacement and the tasks with replacement, one task draw for "
        "both arms of a contrast; t_lo, t_hi: 95% t-interval on the per-seed contrasts (seeds "
        "both arms ran, paired by training seed); spread: the seed variance component "
        "unclipped with its 95% modified large-sample interval; smallest: sized from that "
        "interval's upper end",
        "humaneval": "pass@1 on 20 tasks, greedy, base and final of every run (learn.<arm>."
        "humaneval_pass_at_1_*): an arm's mean over seeds, no interval, as heldout.json holds "
        "no per-task HumanEval scores; from record.json's values, or for runs filed before it "
        "kept them, from their learn.txt",
        "runs": [
            {
                **dict(record),
                "start": run.record.start,
                "learn": list(run.learn),
                "values": dict(run.values),
                "heldout_config_digest": run.record.config_digest,
            }
            for run, record in runs
        ],
        **dict(result),
    }


def figure(result: Mapping[str, Any], path: Path) -> None:
    """docs/img/study.png: left, each seed's new-task final by arm, the base model as a line;
    right, the contrasts on the new tasks with their 95% intervals and P(improvement)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matrix = result["matrices"].get("new_tasks")
    if not matrix:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    arms = list(matrix["arms"])
    for i, arm in enumerate(arms):
        finals = [sum(row) / len(row) for row in matrix["arms"][arm]["final"]]
        left.scatter([i] * len(finals), finals, s=36, zorder=3)
        for seed, value in zip(matrix["arms"][arm]["seeds"], finals, strict=True):
            left.annotate(f"t{seed}", (i, value), xytext=(6, -3), textcoords="offset points",
                          fontsize=7)  # fmt: skip
    base = sum(matrix["base"]) / len(matrix["base"])
    left.axhline(base, color="gray", linestyle="--", label=f"base model {base:.3f}")
    left.set_xticks(range(len(arms)), arms)
    left.set_ylabel("held-out new tasks, final (mean over tasks)")
    left.set_title(f"each training seed by arm (n={len(matrix['tasks'])} tasks)")
    left.legend(loc="best", fontsize=8)
    contrasts = [c for c in result["contrasts"] if c["measure"] == "new_tasks"]
    for y, c in enumerate(contrasts):
        color = "C0" if c["rank"] == "primary" else "C7"
        right.errorbar(c["delta"], y, xerr=[[c["delta"] - c["lo"]], [c["hi"] - c["delta"]]],
                       fmt="o", color=color, capsize=4)  # fmt: skip
        if c.get("t_lo") is not None:  # the t-interval on the per-seed contrasts, below it
            right.plot([c["t_lo"], c["t_hi"]], [y + 0.25] * 2, color=color, linestyle=":")
        per_seed = list((c.get("per_seed") or {}).values())
        right.scatter(per_seed, [y - 0.25] * len(per_seed), marker="x", s=18, color=color)
    right.axvline(0.0, color="gray", linewidth=0.8)
    right.set_yticks(
        range(len(contrasts)),
        [f"{c['contrast']} (P(imp) {c['probability_of_improvement']:.2f}, seeds "
         f"{len(c['seeds'])})" for c in contrasts],
    )  # fmt: skip
    right.invert_yaxis()
    right.set_xlabel(
        "difference of arm means: 95% interval over whole seeds and tasks (bars),\n"
        "t-interval on the per-seed contrasts (dotted), each seed's contrast (x)",
        fontsize=8,
    )
    right.set_title(f"contrasts on the new tasks (n={len(matrix['tasks'])}; primary in blue)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(
    result: Mapping[str, Any],
    runs: Sequence[tuple[StudyRun, Mapping[str, Any]]],
    design: StudyDesign,
    report: Path | None = None,
    image: Path | None = None,
) -> Path:
    """Write the study file (`study_file`) to `report` (default: the design's) and the figure
    to `image` (default: the design's); returns the file's path."""
    path = report or Path(design.report)
    _write_json(path, study_file(result, runs, design))
    figure(result, image or Path(design.figure))
    return path
