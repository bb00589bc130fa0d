"""`make study` (issue 62): every arm x training seed run once from the base model, resumable,
then the table, the contrasts, the result file and the figure.

Covers: `plan` (the runs in study order, seed 1 of every arm first, so an interrupted study has
something of every arm; a finished run is kept only when its record's code and config digest
match today's, else it is run again, and the plan says why), `run_one` (one run through
`sparring run --config ... --set ...`, the entry point `make learn` uses, with
`storage.start_fresh=true` set explicitly; then its heldout.json, fetched from the MLflow run of
its evaluate phase where every pairing line finds it, checked to have started fresh, its LEARN
lines (the run's stdout) and record.json written to local_outputs/study/<run name>/),
`finished_runs`, `write_report` (docs/results/study-<date>.json and docs/img/study.png), and
the filed copies (`file_run`, `restore`): every finished run's three files kept in a folder
under git (docs/results, as study-<run>-<date>-<file>), so a fresh clone goes on from them.
Does not cover: the statistics (sparring.evaluation.study), the pipeline (sparring.local_run,
sparring.cli.pipeline), the command line (sparring.cli.study).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring import lineage
from sparring.atomic import write_file
from sparring.errors import SparringError
from sparring.evaluation.study import ARMS, COMMON, StudyRun, code_changed

CONFIG = "configs/learn.yaml"
OUT = Path("local_outputs") / "study"
RECORD = "record.json"  # written last: a run folder with it is a finished run
HELDOUT = "heldout.json"
LEARN = "learn.txt"
# a run's files in the order they are copied: record.json last, so a torn copy is unfinished
FILED = (HELDOUT, LEARN, RECORD)
# what the runner sets on every run itself: --set may not move them
RUNNER_FIELDS = ("name", "training_seed", "storage.start_fresh", "tracking.experiment")
# the study's runs in an MLflow experiment of their own: the arms pair and pool each other
# there, not with other runs of configs/learn.yaml
EXPERIMENT = "sparring-study"


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


def run_name(arm: str, seed: int) -> str:
    return f"study-{arm}-t{seed}"


def overrides(arm: str, seed: int, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The `--set` overrides of one run: its name and training seed, a fresh start from the
    base model (whatever the config says), the study's MLflow experiment, what every arm
    shares (`COMMON`), the arm's fields, then `extra`."""
    for text in extra:
        key = text.partition("=")[0].strip()
        if key in RUNNER_FIELDS:
            raise SparringError(f"--set {text}: the study sets {key} of every run itself")
    return (
        f"name={run_name(arm, seed)}",
        f"training_seed={seed}",
        "storage.start_fresh=true",
        f"tracking.experiment={EXPERIMENT}",
        *COMMON,
        *ARMS[arm],
        *extra,
    )


def config_digest(config: str, sets: Sequence[str]) -> str:
    """`Config.digest()` of the config file with `sets` applied, as `sparring run` resolves it."""
    from sparring.config import load_config

    return load_config(config, list(sets)).digest()


def read_record(folder: Path) -> dict[str, Any] | None:
    return read_record_file(folder / RECORD)


def read_record_file(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None  # a torn or foreign file: the run counts as not finished
    return record if isinstance(record, dict) else None


def plan(
    out: Path,
    arms: Sequence[str],
    seeds: Sequence[int],
    code: str,
    digest_of: Callable[[Sequence[str]], str],
    extra: Sequence[str] = (),
) -> list[Planned]:
    """Every arm x seed in study order (seed by seed, arms in ARMS order within one), each to
    keep (its record.json and heldout.json are there, at today's `code` and config digest,
    `digest_of(overrides)`) or to run, with why. A config that does not load (say an arm's
    reward not in this code) is a SparringError naming the arm."""
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SparringError(f"--arms {','.join(unknown)}: the study's arms are {','.join(ARMS)}")
    ordered = [a for a in ARMS if a in arms]
    out_plan = []
    for seed in sorted(set(seeds)):
        for arm in ordered:
            name = run_name(arm, seed)
            sets = overrides(arm, seed, extra)
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
    flags = [part for text in sets for part in ("--set", text)]
    return [sys.executable, "-m", "sparring.cli.main", "run", "--config", config, *flags]


def _stream(cmd: list[str]) -> tuple[int, list[str]]:
    """Run `cmd`, its stdout passed through line by line; (exit code, its LEARN lines)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    learn: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if line.startswith("LEARN "):
                learn.append(line.rstrip("\n"))
    return proc.returncode, learn


def fetch_heldout(config: str, sets: Sequence[str]) -> tuple[dict[str, Any], str]:
    """(the run's heldout.json, its MLflow parent run id): the parent run of the last local run
    of this config (`<pipeline_root>/.sparring/<name>/state.json`, sparring.local_run) and the
    file its evaluate phase logged as `learning/heldout.json`."""
    import mlflow

    from sparring import tracking
    from sparring.config import load_config

    cfg = load_config(config, list(sets))
    state_file = Path(cfg.storage.pipeline_root).resolve() / ".sparring" / cfg.name / "state.json"
    if not state_file.is_file():
        raise SparringError(f"{cfg.name}: no {state_file}: did the run start?")
    parent = json.loads(state_file.read_text())["parent_run_id"]
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    runs = tracking.child_runs(cfg, parent)  # connects to the config's tracking store first
    client = mlflow.MlflowClient()
    for run in reversed(runs):
        if not run.info.run_name.endswith("-evaluate"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run.info.run_id, f"learning/{HELDOUT}", tmp)
            return json.loads(Path(path).read_text()), parent
    raise SparringError(f"{cfg.name}: its MLflow run {parent} has no evaluate phase with {HELDOUT}")


def _write_json(path: Path, data: Any) -> None:
    write_file(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def run_one(item: Planned, config: str, out: Path) -> dict[str, Any] | None:
    """Run one planned run from the base model and file it under `out`/<name>/: heldout.json,
    learn.txt, then record.json (arm, seed, overrides, code, config digest, minutes, finished).
    SparringError (naming the run) when it fails or did not start fresh; None, and nothing
    filed, when the code changed during the run (the next `make study` runs it again)."""
    cmd = _command(config, item.overrides)
    (out / item.name / RECORD).unlink(missing_ok=True)  # an earlier run's: no longer finished
    print(f"\n== study: {item.name} ({item.why}): sparring run --config {config} "
          + " ".join(f"--set {s}" for s in item.overrides), flush=True)  # fmt: skip
    start = time.perf_counter()
    code, learn = _stream(cmd)
    minutes = (time.perf_counter() - start) / 60
    if code:
        raise SparringError(
            f"{item.name}: sparring run exited {code} after {minutes:.0f} min; "
            "make study runs it again"
        )
    heldout, parent = fetch_heldout(config, item.overrides)
    try:
        start_record = lineage.check_fresh(item.name, heldout)
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
    if heldout.get("config_digest") != item.config_digest:
        print(
            f"study: {item.name}: its heldout.json names config {heldout.get('config_digest')}, "
            f"the study planned {item.config_digest}",
            file=sys.stderr,
        )
    folder = out / item.name
    _write_json(folder / HELDOUT, heldout)
    write_file(folder / LEARN, ("\n".join(learn) + "\n").encode())
    record = {
        "name": item.name,
        "arm": item.arm,
        "seed": item.seed,
        "overrides": list(item.overrides),
        # the code that ran it (the run's own lineage.code_digest(), in its start record)
        "code": start_record.get("code"),
        "config_digest": item.config_digest,
        "mlflow_parent_run": parent,
        "minutes": round(minutes, 2),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    _write_json(folder / RECORD, record)
    return record


def _copy_run(source: Path, source_prefix: str, target: Path, target_prefix: str) -> list[Path]:
    """Copy a run's files (`FILED`, record.json last) from `source` to `target`, each name
    prefixed; the copies' paths."""
    target.mkdir(parents=True, exist_ok=True)
    return [
        Path(shutil.copyfile(source / f"{source_prefix}{part}", target / f"{target_prefix}{part}"))
        for part in FILED
        if (source / f"{source_prefix}{part}").is_file()
    ]


def file_run(out: Path, name: str, filed: Path) -> list[Path]:
    """Copy the finished run `out`/`name` to `filed` as `<name>-<day it finished>-<file>`;
    the copies' paths (none when the run has not finished)."""
    record = read_record(out / name)
    if record is None or not (out / name / HELDOUT).is_file():
        return []
    day = str(record.get("finished", ""))[:10] or datetime.date.today().isoformat()
    return _copy_run(out / name, "", filed, f"{name}-{day}-")


def restore(filed: Path, out: Path, names: Sequence[str]) -> list[str]:
    """Copy back to `out`/<name>/ the latest filed run of each of `names` that has no finished
    run under `out` (a fresh clone, a lost local_outputs); one line per run restored. Whatever
    its code: the plan reruns a run of other code, as it does one that ran here."""
    lines = []
    for name in names:
        if read_record(out / name) is not None:
            continue  # a run here is never replaced by a copy
        for record_path in sorted(filed.glob(f"{name}-????-??-??-{RECORD}"), reverse=True):
            prefix = record_path.name[: -len(RECORD)]
            record = read_record_file(record_path)
            if record and record.get("name") == name and (filed / f"{prefix}{HELDOUT}").is_file():
                _copy_run(filed, prefix, out / name, "")
                lines.append(f"study: {name} restored from {filed / prefix}*")
                break
    return lines


def finished_runs(
    out: Path, arms: Sequence[str], seeds: Sequence[int]
) -> list[tuple[StudyRun, dict[str, Any]]]:
    """(run, its record) of every finished run of the chosen arms and seeds under `out`."""
    found = []
    for seed in sorted(set(seeds)):
        for arm in (a for a in ARMS if a in arms):
            folder = out / run_name(arm, seed)
            record = read_record(folder)
            if record is None or not (folder / HELDOUT).is_file():
                continue
            heldout = json.loads((folder / HELDOUT).read_text())
            learn_file = folder / LEARN
            learn = tuple(learn_file.read_text().splitlines()) if learn_file.is_file() else ()
            found.append((StudyRun(folder.name, arm, seed, heldout, learn), record))
    return found


def study_file(
    result: Mapping[str, Any], runs: Sequence[tuple[StudyRun, Mapping[str, Any]]]
) -> dict[str, Any]:
    """What docs/results/study-<date>.json holds: the design, every run's start record,
    overrides and digests, the per-task matrices, the table and the contrasts."""
    from sparring.evaluation.study import ARM_TEXT, CONTRASTS

    return {
        "issue": 62,
        "arms": {
            arm: {"overrides": list(sets), "what": ARM_TEXT[arm]} for arm, sets in ARMS.items()
        },
        "contrasts_planned": [
            {"contrast": f"{t}-{c}", "rank": rank, "question": q} for t, c, rank, q in CONTRASTS
        ],
        "humaneval": "pass@1 on 20 tasks, greedy, base and final of every run from its LEARN "
        "lines (learn.<arm>.humaneval_pass_at_1_*): an arm's mean over seeds, no interval, as "
        "heldout.json holds no per-task HumanEval scores",
        "runs": [
            {
                **dict(record),
                "start": run.heldout.get("start"),
                "learn": list(run.learn),
                "heldout_config_digest": run.heldout.get("config_digest"),
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
    right.axvline(0.0, color="gray", linewidth=0.8)
    right.set_yticks(
        range(len(contrasts)),
        [f"{c['contrast']} (P(imp) {c['probability_of_improvement']:.2f}, seeds "
         f"{len(c['seeds'])})" for c in contrasts],
    )  # fmt: skip
    right.invert_yaxis()
    right.set_xlabel("difference of arm means (95% interval over seeds and tasks)")
    right.set_title(f"contrasts on the new tasks (n={len(matrix['tasks'])}; primary in blue)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(
    result: Mapping[str, Any],
    runs: Sequence[tuple[StudyRun, Mapping[str, Any]]],
    results_dir: Path = Path("docs/results"),
    image: Path = Path("docs/img/study.png"),
    date: datetime.date | None = None,
) -> Path:
    """Write the study file (`study_file`) as `results_dir`/study-<date>.json and the figure;
    returns the file's path."""
    day = (date or datetime.date.today()).isoformat()
    path = results_dir / f"study-{day}.json"
    _write_json(path, study_file(result, runs))
    figure(result, image)
    return path
