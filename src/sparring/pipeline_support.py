"""Library functions behind the KFP components that are neither training nor evaluation.

Covers: parsing the config a component receives as YAML, the MLflow parent run (created by the
CLI for local runs, by the materialize task on the cluster), "pointer" model folders for the
initial answerer and generator (or the downloaded champion for recurring training), the adversarial
test bank persisted at `storage.bank_uri`, the snapshot manifest that feeds evaluation, and
selection + registration of the champion.

Snapshot manifest: KFP v2 cannot pass a compile-time list of artifacts to one task (dsl.Collected
only gathers ParallelFor outputs), so after each round a tiny `snapshot` task appends
`{round, answerer: <artifact uri>, tests: <artifact uri>}` to a JSON manifest (a chain of small
artifacts; weights are never copied). Evaluation resolves each URI: a local path under kfp.local,
an `s3://` (or `minio://`) URI on the cluster, downloaded with boto3. A warm-started answerer
(`warm_start.steps > 0`) heads the manifest as `{round: 0, label: "warm-start", answerer: <uri>,
tests: ""}`: it has no generator round, so evaluation scores it apart from the rounds and puts it
in the report between the base model and round 1 (see `evaluate`).

Does not cover: GRPO phases (sparring.phases) and metrics/selection rules (sparring.evaluation).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from sparring import storage, tracking
from sparring.config import Config, from_dict
from sparring.errors import SparringError

log = logging.getLogger(__name__)

POINTER_FILE = "sparring_model.json"


def config_from_yaml(text: str) -> Config:
    """The Config a component receives as a YAML string parameter."""
    cfg = from_dict(yaml.safe_load(text))
    storage.configure(cfg)
    return cfg


def ensure_parent_run(cfg: Config, parent_run_id: str, kfp_run_id: str) -> str:
    """The given parent run id, or a new parent run tagged with the KFP run id (cluster runs)."""
    if parent_run_id:
        return parent_run_id
    return tracking.start_parent_run(cfg, kfp_run_id or "unknown")


def write_pointer(cfg: Config, role: str, out_dir: str) -> dict[str, Any]:
    """A model folder holding only `sparring_model.json`: "start from this base model"."""
    # tuning_mode "base" is what sparring.models reads as "load the base model named here" (a
    # "lora"/"full" value would make it look for adapter or weight files); the run's own mode is
    # kept as `run_tuning_mode`.
    info = {
        "base": cfg.model_for(role).name,
        "pointer": True,
        "role": role,
        "tuning_mode": "base",
        "run_tuning_mode": cfg.tuning_mode,
    }
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / POINTER_FILE).write_text(json.dumps(info, indent=1, sort_keys=True))
    return info


def init_models(cfg: Config, out_answerer: str, out_generator: str, champion: bool) -> dict:
    """Initial model folders. With `champion` (recurring training) the answerer starts from the
    registered champion when there is one; otherwise both are pointers to the base models."""
    write_pointer(cfg, "generator", out_generator)
    from_champion = False
    if champion and not cfg.storage.start_fresh:
        try:
            from_champion = tracking.download_champion(cfg, out_answerer)
        except Exception as exc:  # an unreachable registry must not block a fresh start
            log.warning("could not download the champion (%s); starting from the base model", exc)
            from_champion = False
    if not from_champion:
        write_pointer(cfg, "answerer", out_answerer)
    return {"answerer_from_champion": 1.0 if from_champion else 0.0}


def load_bank(cfg: Config, out_path: str) -> int:
    """Copy the persisted test bank to out_path (an empty file when none); return its line count."""
    text = ""
    uri = cfg.storage.bank_uri
    if uri and not cfg.storage.start_fresh and storage.exists(uri):
        text = storage.read_text(uri)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(text)
    return sum(1 for line in text.splitlines() if line.strip())


def save_bank(cfg: Config, bank_path: str) -> bool:
    """Persist the bank file at `storage.bank_uri`; False when no URI is configured."""
    if not cfg.storage.bank_uri:
        return False
    p = Path(bank_path)
    if p.is_dir():
        p = p / "bank.jsonl"
    storage.write_text(cfg.storage.bank_uri, p.read_text() if p.is_file() else "")
    return True


# --------------------------------------------------------------------------- snapshots


WARM_START_LABEL = "warm-start"


def add_snapshot(
    previous_manifest: str | None,
    round_index: int,
    answerer_uri: str,
    tests_uri: str,
    out: str,
    label: str = "",
) -> list[dict]:
    """Append one round's answerer and generated tests (by URI) to the snapshot manifest.
    A `label` marks an answerer without a generator round (the warm start: tests_uri "")."""
    entries = json.loads(Path(previous_manifest).read_text()) if previous_manifest else []
    entry = {"round": round_index, "answerer": answerer_uri, "tests": tests_uri}
    if label:
        entry["label"] = label
    entries.append(entry)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(entries, indent=1))
    return entries


def _localize(uri: str, cache: Path) -> str:
    """A local path for an artifact URI (downloads s3:// and minio:// into cache)."""
    if uri.startswith("minio://"):
        uri = "s3://" + uri[len("minio://") :]
    if not storage.is_s3(uri):
        path = uri[len("file://") :] if uri.startswith("file://") else uri
        if not Path(path).exists():
            raise SparringError(f"{uri}: snapshot artifact does not exist")
        return path
    target = cache / storage.split_s3(uri)[1].strip("/")
    if storage.exists(uri):  # a single object (a file artifact)
        target.parent.mkdir(parents=True, exist_ok=True)
        storage.write_bytes(str(target), storage.read_bytes(uri))
    else:
        storage.download_dir(uri, target)
    return str(target)


def resolve_snapshots(manifest_path: str, cache_dir: str) -> list[dict]:
    """Manifest entries with local `answerer_path` and `tests_path`."""
    entries = json.loads(Path(manifest_path).read_text())
    cache = Path(cache_dir)
    for e in entries:
        e["answerer_path"] = _localize(e["answerer"], cache)
        e["tests_path"] = _localize(e["tests"], cache) if e["tests"] else ""
    return entries


def evaluate(
    cfg: Config,
    data_dir: str,
    manifest_path: str,
    bank_path: str,
    out_dir: str,
    parent_run_id: str = "",
) -> dict[str, float]:
    """Evaluate every answerer snapshot; report.json in out_dir; flat metrics for MLflow/KFP.
    With a parent run, the report also holds every phase's per-step curves from MLflow."""
    from sparring.evaluation.snapshots import evaluate_snapshots

    with tempfile.TemporaryDirectory() as cache:
        entries = resolve_snapshots(manifest_path, cache)
        rounds = [e for e in entries if not e.get("label")]
        report = evaluate_snapshots(
            cfg,
            data_dir,
            [e["answerer_path"] for e in rounds],
            [e["tests_path"] for e in rounds],
            bank_path,
            out_dir,
        )
        if len(rounds) < len(entries):
            report = _add_labelled(cfg, report, entries, data_dir, bank_path, out_dir)
    if cfg.data.val_samples:  # held-out gains per stage, with bootstrap intervals
        from sparring.evaluation import learning

        report["learning"] = learning.learning_summary(report, cfg.seed)
    if parent_run_id:
        try:
            report["step_curves"] = tracking.step_curves(cfg, parent_run_id)
        except Exception as exc:  # a figure is not worth failing the evaluation for
            log.warning("per-step training curves unavailable: %s", exc)
    if report.get("learning") or report.get("step_curves"):
        from sparring.evaluation import report as reports

        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "report.json").write_text(json.dumps(report, indent=1, default=str))
        reports.write_report(report, out_dir)
    report_file = Path(out_dir) / "report.json"
    if not report_file.exists():
        report_file.write_text(json.dumps(report, indent=1, default=str))
    from sparring.evaluation.report import log_to_mlflow

    metrics = snapshot_metrics(report, entries)
    if report.get("learning"):
        from sparring.evaluation import learning

        metrics.update(learning.flat_metrics(report["learning"]))
    metrics["report_files"] = float(log_to_mlflow(out_dir))  # PNGs + report.md, this child run
    return metrics


def snapshot_metrics(report: dict, entries: list[dict]) -> dict[str, float]:
    """`r{round}.{metric}` for every numeric metric of every snapshot (r0: the base model;
    `{label}.{metric}` for a labelled snapshot, e.g. `warm-start.answerer_reward`)."""
    out: dict[str, float] = {}
    for key, value in (report.get("baseline") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "round":
            out[f"r0.{key}"] = float(value)
    for i, snap in enumerate(report.get("snapshots", [])):
        rnd = snap.get("round", entries[i]["round"] if i < len(entries) else i + 1)
        prefix = snap.get("label") or f"r{rnd}"
        for key, value in snap.items():
            if isinstance(value, (int, float)) and key != "round":
                out[f"{prefix}.{key}"] = float(value)
    return out


def labelled_snapshot(
    cfg: Config,
    data_dir: str,
    model_path: str,
    bank_path: str,
    entry: dict,
    base_trivial_share: float | None = None,
) -> dict[str, Any]:
    """Metrics of an answerer with no generator round of its own (the warm start), on the
    problems evaluate_snapshots uses (capped eval set, val, banked problems); no cross-play."""
    from sparring.evaluation.crossplay import group_by_problem, read_bank
    from sparring.evaluation.hacking import hacking_signals
    from sparring.evaluation.humaneval import sandbox_limits
    from sparring.evaluation.snapshots import _snapshot_metrics
    from sparring.problems import read_jsonl

    data = Path(data_dir)

    def problems_of(name: str) -> list:
        return read_jsonl(data / name) if (data / name).is_file() else []

    eval_problems = problems_of("eval.jsonl")
    if cfg.data.humaneval_limit:
        eval_problems = eval_problems[: cfg.data.humaneval_limit]
    val = problems_of("val.jsonl")
    known = {p.id: p for p in [*problems_of("train.jsonl"), *val]}
    bank = group_by_problem(read_bank(bank_path or data / "bank.jsonl"))
    solve = {p.id: p for p in val}
    solve.update({pid: known[pid] for pid in sorted(bank) if pid in known})
    metrics, _ = _snapshot_metrics(
        cfg, model_path, eval_problems, val, solve, bank, sandbox_limits(cfg)
    )
    # judged like a round's snapshot: against the base model's trivial share
    history = [
        {"trivial_share": base_trivial_share},
        {k: metrics.get(k) for k in ("special_case_share", "trivial_share")},
    ]
    hacking = hacking_signals(history, cfg.selection)
    metrics.update(
        round=entry["round"],
        label=entry["label"],
        test_validity=None,
        duplicate_rate=None,
        hacking=hacking,
        promotable=not hacking["tripped"] and metrics.get("answerer_reward") is not None,
    )
    return metrics


def _add_labelled(
    cfg: Config, report: dict, entries: list[dict], data_dir: str, bank_path: str, out_dir: str
) -> dict:
    """Insert the labelled snapshots into report["snapshots"] in manifest order (so a
    selection index still points at its manifest entry), choose again, rewrite the report."""
    from sparring.evaluation import report as reports
    from sparring.evaluation.snapshots import choose_best

    rest = iter(report.get("snapshots", []))
    merged = []
    for e in entries:
        if e.get("label"):
            log.info("evaluating the %s snapshot: %s", e["label"], e["answerer_path"])
            base_trivial = (report.get("baseline") or {}).get("trivial_share")
            path = e["answerer_path"]
            merged.append(labelled_snapshot(cfg, data_dir, path, bank_path, e, base_trivial))
        else:
            merged.append(next(rest))
    report["snapshots"] = merged
    best, score, reason = choose_best(cfg, report)
    report["selection"] = {"index": best, "score": score, "reason": reason}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "report.json").write_text(json.dumps(report, indent=1, default=str))
    reports.write_report(report, out_dir)
    return report


# --------------------------------------------------------------------------- selection


def select_and_register(
    cfg: Config,
    report_dir: str,
    manifest_path: str,
    bank_path: str,
    out_champion: str,
    parent_run_id: str,
) -> dict[str, Any]:
    """Choose the best snapshot, copy it to out_champion, register it under the alias, save the
    bank. Returns what was decided (for metrics and logs)."""
    from sparring.evaluation.snapshots import choose_best

    report = json.loads((Path(report_dir) / "report.json").read_text())
    index, score, reason = choose_best(cfg, report)
    result: dict[str, Any] = {"promoted": 0.0, "score": float(score), "reason": reason}
    Path(out_champion).mkdir(parents=True, exist_ok=True)
    if index is not None:
        entries = json.loads(Path(manifest_path).read_text())
        snap = report["snapshots"][index]
        with tempfile.TemporaryDirectory() as cache:
            uri = entries[index]["answerer"] if index < len(entries) else snap["model"]
            src = _localize(uri, Path(cache))
            shutil.copytree(src, out_champion, dirs_exist_ok=True)
        version = tracking.register_champion(cfg, out_champion, parent_run_id, float(score))
        result.update(
            promoted=1.0, version=version, round=snap.get("round", index + 1), index=index
        )
    else:
        (Path(out_champion) / "NOT_PROMOTED.txt").write_text(reason + "\n")
    result["bank_saved"] = 1.0 if save_bank(cfg, bank_path) else 0.0
    return result


# --------------------------------------------------------------------------- component bodies
# Each KFP component parses its config and calls exactly one of these; they open the MLflow child
# run `r{round}-{phase}` in the component's own process and return the metrics it logged.

SETUP_ROUND = 0


def final_round(cfg: Config) -> int:
    """The round number under which evaluate and select log (after the last round)."""
    return cfg.rounds + 1


def bank_file(path: str) -> str:
    """A bank artifact is a folder holding bank.jsonl (materialize data, validate output)."""
    p = Path(path)
    return str(p / "bank.jsonl") if p.is_dir() else str(p)


def run_phase(cfg: Config, parent_run_id: str, name: str, round_index: int, fn, /, *args, **kw):
    """Call fn inside the child run `r{round}-{name}` and log the numeric entries it returns;
    a progress line when it starts and when it is done."""
    from sparring import progress

    progress.LABEL = f"r{round_index} {name}"
    progress.say(f"{progress.LABEL}: start")
    start = time.perf_counter()
    with tracking.child_run(cfg, parent_run_id, name, round_index):
        result = fn(*args, **kw) or {}
        tracking.log_metrics(result)
    seconds = time.perf_counter() - start
    progress.say(f"{progress.LABEL}: done in {seconds:.0f}s {progress.brief(result)}")
    return result


def run_materialize(
    cfg: Config, parent_run_id: str, kfp_run_id: str, out_dir: str
) -> tuple[str, dict]:
    """Parent run (if not given), persisted bank, then phases.materialize into out_dir."""
    from sparring import phases

    run_id = ensure_parent_run(cfg, parent_run_id, kfp_run_id)

    def body() -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            bank = str(Path(tmp) / "bank.jsonl")
            n = load_bank(cfg, bank)
            result = dict(phases.materialize(cfg, out_dir, bank_in=bank if n else None))
        result["bank_loaded"] = float(n)
        return result

    return run_id, run_phase(cfg, run_id, "materialize", SETUP_ROUND, body)


def run_init_models(
    cfg: Config, parent_run_id: str, out_answerer: str, out_generator: str, champion: bool
) -> dict:
    return run_phase(
        cfg, parent_run_id, "init-models", SETUP_ROUND, init_models, cfg, out_answerer,
        out_generator, champion,
    )  # fmt: skip


def run_warm_start(
    cfg: Config, parent_run_id: str, data_dir: str, init_model: str, out_model: str
) -> dict:
    """The warm start (SFT of the answerer on train reference solutions): child run
    `r0-warm-start`, like the other setup phases."""
    from sparring.training.warm_start import warm_start

    return run_phase(
        cfg, parent_run_id, "warm-start", SETUP_ROUND, warm_start, cfg, data_dir, init_model,
        out_model,
    )  # fmt: skip


def run_train_answerer(
    cfg: Config,
    parent_run_id: str,
    round_index: int,
    phase: str,
    data_dir: str,
    bank: str,
    init_model: str,
    out_model: str,
) -> dict:
    """One answerer phase. Also logs the metrics of the validation that produced `bank` (the
    sandbox task has no MLflow credentials, so its numbers travel in the bank folder)."""
    from sparring import phases

    validation = Path(bank) / VALIDATION_FILE
    if validation.is_file():
        metrics = json.loads(validation.read_text())
        run_phase(cfg, parent_run_id, "validate-tests", round_index, lambda: metrics)
    return run_phase(
        cfg, parent_run_id, f"train-{phase}", round_index, phases.train_answerer, cfg,
        round_index, data_dir, bank_file(bank), init_model, out_model, phase=phase,
    )  # fmt: skip


def run_train_generator(
    cfg: Config,
    parent_run_id: str,
    round_index: int,
    data_dir: str,
    frozen_answerer: str,
    init_model: str,
    out_model: str,
    out_tests: str,
    out_frozen_solutions: str,
) -> dict:
    from sparring import phases

    return run_phase(
        cfg, parent_run_id, "train-generator", round_index, phases.train_generator, cfg,
        round_index, data_dir, frozen_answerer, init_model, out_model, out_tests,
        out_frozen_solutions,
    )  # fmt: skip


VALIDATION_FILE = "validation.json"


def run_validate_tests(
    cfg: Config,
    round_index: int,
    data_dir: str,
    generated_tests: str,
    frozen_solutions: str,
    bank_in: str,
    out_dir: str,
) -> dict:
    """Validation in the sandbox pod: no MLflow here (no credentials); the metrics are written
    next to the new bank (out_dir/bank.jsonl, out_dir/validation.json)."""
    from sparring import phases

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    result = phases.validate_tests(
        cfg, round_index, data_dir, generated_tests, frozen_solutions, bank_file(bank_in),
        str(Path(out_dir) / "bank.jsonl"),
    )  # fmt: skip
    numeric = {k: float(v) for k, v in (result or {}).items() if isinstance(v, (int, float))}
    (Path(out_dir) / VALIDATION_FILE).write_text(json.dumps(numeric, sort_keys=True))
    return numeric


def run_evaluate(
    cfg: Config, parent_run_id: str, data_dir: str, manifest: str, bank: str, out_dir: str
) -> dict:
    return run_phase(
        cfg, parent_run_id, "evaluate", final_round(cfg), evaluate, cfg, data_dir, manifest,
        bank_file(bank), out_dir, parent_run_id,
    )  # fmt: skip


def run_select(
    cfg: Config, parent_run_id: str, report_dir: str, manifest: str, bank: str, out_champion: str
) -> dict:
    def body() -> dict:
        return select_and_register(
            cfg, report_dir, manifest, bank_file(bank), out_champion, parent_run_id
        )

    result = run_phase(cfg, parent_run_id, "select", final_round(cfg), body)
    if parent_run_id:
        tracking.finish_parent_run(cfg, parent_run_id)  # the pipeline run is complete
    return result


def to_kfp_metrics(artifact, result: dict) -> None:
    """Numeric entries -> a KFP Metrics artifact (metadata) and a JSON file at its path.

    The file matters for kfp.local: its cache treats an entry whose output artifact path does not
    exist as a miss, and `log_metric` alone writes nothing to disk."""
    numeric = {
        str(k): float(v)
        for k, v in (result or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    for key, value in numeric.items():
        artifact.log_metric(key, value)
    Path(artifact.path).parent.mkdir(parents=True, exist_ok=True)
    Path(artifact.path).write_text(json.dumps(numeric, indent=1, sort_keys=True))
