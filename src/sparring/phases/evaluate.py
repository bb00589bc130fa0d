"""The evaluate phase: every snapshot of the manifest, the learning summary, the report.

Covers: `evaluate` (the rounds' snapshots through sparring.evaluation.snapshots, the labelled
warm-start snapshot judged like a round, held-out gains with intervals over tasks (the
`task:<key>` tags of val.jsonl), heldout.json (per set, per problem, base and final, with task
keys, reward, seed, config digest, the answerer's start record and the code version: what
`sparring eval control` and `sparring eval pool` read), the generators measured held out when
the run has a generator phase (the base generator and the manifest's final one, on the held-out
new tasks, against the base answerer's sampled answers: sparring.evaluation.generator_heldout),
the final answerer against its own start (`versus_start`) and, with
`selection.refuse_below_start`, the start gate's own sample of both (`start_gate_sample`), every
phase's per-step curves from MLflow, report.json and the report's files logged to the run) and
its flat metrics.
Does not cover: the measures (sparring.evaluation).
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sparring import progress, tracking
from sparring.backends import lineage
from sparring.config import Config, to_dict
from sparring.evaluation import arms, generator_heldout, intervals, learning
from sparring.evaluation import report as report_mod
from sparring.evaluation.hacking import hacking_signals
from sparring.evaluation.heldout import HELDOUT_FILE, STORED_MEASURES, new_heldout
from sparring.evaluation.learning import GATE, VS_START
from sparring.evaluation.selection import choose_best
from sparring.evaluation.snapshots import evaluate_snapshots, model_metrics, sampled_scores
from sparring.phases.schedule import plan_phases
from sparring.phases.snapshot import resolve_snapshots
from sparring.problems import Problem, heldout_sets, read_jsonl
from sparring.rewards.bank import BANK_FILE, bank_tests
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import trusted_limits

log = logging.getLogger(__name__)


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
    require_isolation(cfg)  # before six minutes of sampling, not after
    val, sets, tasks = heldout_problems(data_dir)
    base_pool: dict[str, list] = {}  # the base answerer's sampled held-out answers, labelled
    with tempfile.TemporaryDirectory() as cache:
        entries = resolve_snapshots(manifest_path, cache)
        report = score_snapshots(cfg, entries, data_dir, bank_path, out_dir, base_pool)
        if cfg.data.val_samples:  # the final models are read from the download cache
            learned = learning_report(cfg, report, entries, val, sets, tasks, base_pool)
            report["learning"] = learned
    if cfg.data.val_samples:
        file_heldout(cfg, report, sets, tasks, out_dir)
    write_reports(cfg, report, out_dir, parent_run_id)
    metrics = snapshot_metrics(report, entries)
    if report.get("learning"):
        metrics.update(learning.flat_metrics(report["learning"]))
    metrics["report_files"] = float(
        report_mod.log_to_mlflow(out_dir)
    )  # PNGs + report.md, this child run
    return metrics


def heldout_problems(data_dir: str) -> tuple[list[Problem], dict[str, list[str]], dict[str, str]]:
    """(val.jsonl's problems, the held-out sets' problem ids, each problem's task key: the
    instances of one task are one unit in every interval)."""
    val_file = Path(data_dir) / "val.jsonl"
    val = read_jsonl(val_file) if val_file.is_file() else []
    return val, heldout_sets(val), intervals.task_keys({p.id: p.tags for p in val})


def score_snapshots(
    cfg: Config,
    entries: list[dict],
    data_dir: str,
    bank_path: str,
    out_dir: str,
    base_pool: dict[str, list],
) -> dict:
    """The report of every round's answerer snapshot, the labelled ones (the warm start) judged
    like a round; `base_pool` gets the base answerer's sampled held-out answers."""
    rounds = [e for e in entries if not e.get("label")]
    # a writer-only run's answerer is the base model: scored once, as the base, for the
    # writers' held-out pool; no answerer snapshot
    answerers = [] if writer_only(cfg) else [e["answerer_path"] for e in rounds]
    report = evaluate_snapshots(
        cfg,
        data_dir,
        answerers,
        [e["tests_path"] for e in rounds],
        bank_path,
        out_dir,
        base_pool=base_pool,
    )
    if len(rounds) < len(entries):
        report = _add_labelled(cfg, report, entries, data_dir, bank_path, out_dir)
    return report


def learning_report(
    cfg: Config,
    report: dict,
    entries: list[dict],
    val: list[Problem],
    sets: dict[str, list[str]],
    tasks: dict[str, str],
    base_pool: dict[str, list],
) -> dict:
    """report["learning"]: held-out gains per stage and per set with bootstrap intervals, the
    generators measured held out, the answerer's start record, and the measures against that
    start (which `start_measures` adds to the report)."""
    generators: dict = {}
    try:
        generators = _generators_heldout(cfg, entries, val, sets, tasks, base_pool)
    except Exception as exc:  # an added measure: the answerer's measures still stand
        log.warning("generators not measured held out: %s", exc, exc_info=True)
    report["learning"] = learning.learning_summary(report, cfg.seed, sets, tasks)
    report["learning"].update(generators)
    start = lineage.start_of(entries[-1]["answerer_path"] if entries else None)
    report["learning"]["start"] = start
    rounds = [e for e in entries if not e.get("label")]
    final = rounds[-1]["answerer_path"] if rounds else ""
    start_measures(cfg, start, final, val, sets, tasks, report, gate_seed(cfg, start))
    return report["learning"]


def file_heldout(
    cfg: Config, report: dict, sets: dict[str, list[str]], tasks: dict[str, str], out_dir: str
) -> None:
    """heldout.json in out_dir (per set, per problem, base and final, with task keys, reward,
    seed, config digest, the answerer's start record and the code version), logged to the
    phase's run under learning/, where a control run and a study find it."""
    per_problem = learning.heldout_per_problem(report, sets)
    report["learning"]["per_problem"] = per_problem
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    heldout_file = Path(out_dir) / HELDOUT_FILE
    params = tracking.flatten(to_dict(cfg))
    record = new_heldout(
        per_problem, tasks, reward=cfg.rewards.answerer, seed=cfg.seed,
        config_digest=cfg.digest(), arm={f: params[f] for f in arms.ARM_FIELDS},
        start=report["learning"]["start"],
        code=lineage.code_digest(),
        measures={m: learning.heldout_per_problem(report, sets, m) for m in STORED_MEASURES},
    )  # fmt: skip
    record.save(heldout_file)
    tracking.log_artifacts([heldout_file], "learning")  # where a control run finds it


def write_reports(cfg: Config, report: dict, out_dir: str, parent_run_id: str) -> None:
    """report.json, and with learning or step curves (read from MLflow when the run has a
    parent) the report's markdown and figures, in out_dir."""
    if parent_run_id:
        try:
            report["step_curves"] = tracking.step_curves(cfg, parent_run_id)
        except Exception as exc:  # a figure is not worth failing the evaluation for
            log.warning("per-step training curves unavailable: %s", exc)
    if report.get("learning") or report.get("step_curves"):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        report_mod.write_json(report, out_dir)
        report_mod.write_report(report, out_dir)
    if not (Path(out_dir) / "report.json").exists():
        report_mod.write_json(report, out_dir)


def start_measures(
    cfg: Config,
    start: dict[str, Any] | None,
    final_model: str,
    val: list[Problem],
    sets: dict[str, list[str]],
    tasks: dict[str, str],
    report: dict[str, Any],
    seed: int,
) -> None:
    """The final answerer against its own start, into report["learning"]: the reported gain
    (gains[VS_START], `versus_start`) and, with `selection.refuse_below_start`, the start gate's
    own sample (learning[GATE], `start_gate_sample`, drawn with `seed`), after which the
    selection is made again. The start is fetched once for both, and not at all without held-out
    new tasks."""
    gains, gate_on = report["learning"]["gains"], cfg.selection.refuse_below_start
    if not set(sets.get("new_tasks") or []) & {p.id for p in val}:
        gains[VS_START] = versus_start(cfg, start, val, sets, tasks, report)  # fetches nothing
        gate = {"why": "no held-out new task in val.jsonl"}
    else:
        with start_model(cfg, start) as (model, why):
            gains[VS_START] = versus_start(cfg, start, val, sets, tasks, report, model, why)
            if gate_on:
                gate = start_gate_sample(cfg, model, why, final_model, val, sets, tasks, seed)
    if gate_on:
        report["learning"][GATE] = gate
        best, score, reason = choose_best(cfg, report)
        report["selection"] = {"index": best, "score": score, "reason": reason}


def gate_seed(cfg: Config, start: dict[str, Any] | None = None) -> int:
    """The sampling seed of the start gate's own sample, from what the run is given: its seeds
    and its start (the champion version it starts from, or the base model). Never the
    evaluation's (cfg.seed + 1), so the reported gain over the start is not the number the gate
    chose on; a run from a new champion draws afresh rather than rereading the lucky answers
    that promoted it; and a run repeated with the same config, seed and start draws the same
    (a run id would make a repeat differ: issue 76). A schedule's runs draw their own training
    seeds (seed_per_run), and so their own gate draws."""
    champion = (start or {}).get("champion") or {}
    began = f"{champion.get('name')}@{champion.get('version')}" if champion else "base"
    text = f"start-gate:{cfg.seed}:{cfg.training_seed}:{began}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


@contextmanager
def start_model(cfg: Config, start: dict[str, Any] | None) -> Iterator[tuple[str, str]]:
    """(the model a run started from, as the sampler loads it; "" and why when it cannot be):
    the configured base model, or the registered champion version the start record names,
    downloaded by number and checked to hold the weights the record names (the folder lives
    while the context does)."""
    champion = (start or {}).get("champion")
    if not champion:
        yield cfg.model_for("answerer").name, ""
        return
    name, version = champion["name"], champion["version"]
    with tempfile.TemporaryDirectory() as folder:
        try:
            tracking.download_version(cfg, name, version, folder)
        except Exception as exc:  # an added measure: the run's own measures still stand
            yield "", f"{name} version {version} not downloaded ({exc})"
            return
        if lineage.weights_digest(folder) != start.get("weights"):
            changed = (
                f"{name} version {version} holds other weights than this run started from "
                "(the registry changed under it)"
            )
            yield "", changed
            return
        yield folder, ""


def versus_start(
    cfg: Config,
    start: dict[str, Any] | None,
    val: list[Problem],
    sets: dict[str, list[str]],
    tasks: dict[str, str],
    report: dict[str, Any],
    model: str | None = None,
    why: str = "",
) -> dict[str, Any]:
    """{measure: gain} of the final answerer over its own start on the held-out new tasks,
    paired over tasks. A run that started from its base model: the base-to-final gain. A run
    that started from a registered champion (recurring training): that version (`model`, else
    fetched by `start_model`), sampled on the held-out problems like the final one (free when
    the run before evaluated it: the completion cache). {} (the LEARN line n/a, a line saying
    why) when it cannot be."""
    gains = report["learning"]["gains"]
    champion = (start or {}).get("champion")
    if not champion:
        return dict(gains.get("heldout_new_tasks") or {})
    ids = sets.get("new_tasks") or []
    rounds = [s for s in report.get("snapshots") or [] if not s.get("label")]
    if not set(ids) & {p.id for p in val} or not rounds:
        return {}
    if model is None:
        with start_model(cfg, start) as (fetched, why):
            return versus_start(cfg, start, val, sets, tasks, report, fetched, why)
    if not model:
        progress.say(f"evaluate: {why}: vs start n/a")
        return {}
    name, version = champion["name"], champion["version"]
    # every held-out problem, as the run before sampled its final snapshot: the same
    # call, so a start that was that snapshot is read from the completion cache
    scores = sampled_scores(cfg, model, val, f"start ({name} v{version})", cache=True)
    before = {"val_sampled": scores}
    return {
        m: learning.subset_gain(before, rounds[-1], m, ids, cfg.seed, tasks)
        for m in ("discriminating", "strict")
    }


def start_gate_sample(
    cfg: Config,
    start_model_ref: str,
    why: str,
    final_model: str,
    val: list[Problem],
    sets: dict[str, list[str]],
    tasks: dict[str, str],
    seed: int,
) -> dict[str, Any]:
    """The start gate's own measure: the start (`start_model_ref`) and the final answerer
    (`final_model`) sampled again on the held-out new tasks alone, data.val_samples answers a
    problem drawn with `seed`, and the gain paired over tasks: {"discriminating": gain, "seed",
    "problems"}, or {"why": ...} when it cannot be measured (the gate then refuses). Apart from
    the reported gain (VS_START), which the gate does not read: a run is not promoted on the
    very numbers it reports."""
    ids = set(sets.get("new_tasks") or [])
    problems = [p for p in val if p.id in ids]
    if not problems:
        return {"why": "no held-out new task in val.jsonl"}
    if not final_model:
        return {"why": "no final round to measure"}
    if not start_model_ref:
        return {"why": why}
    progress.say(
        f"evaluate: the start gate samples its start and the final answerer on {len(problems)} "
        f"held-out new tasks, seed {seed}"
    )
    before = sampled_scores(cfg, start_model_ref, problems, "start gate: start", True, seed)
    after = sampled_scores(cfg, final_model, problems, "start gate: final", True, seed)
    gain = learning.subset_gain(
        {"val_sampled": before}, {"val_sampled": after}, "discriminating",
        [p.id for p in problems], cfg.seed, tasks,
    )  # fmt: skip
    if not gain:
        return {"why": "no held-out new task was scored"}
    return {"discriminating": gain, "seed": seed, "problems": len(problems)}


def writer_only(cfg: Config) -> bool:
    """Whether the run trains the test writer alone (phase_schedule: generator)."""
    return cfg.phase_schedule == "generator"


def has_generator_phase(cfg: Config) -> bool:
    """Whether the run trains its generator (phase_schedule answerer does not: its final
    generator is the base one)."""
    return any(p.kind == "generator" for p in plan_phases(cfg))


def _generators_heldout(
    cfg: Config,
    entries: list[dict],
    val: list[Problem],
    sets: dict[str, list[str]],
    tasks: dict[str, str],
    pool: dict[str, list],
) -> dict:
    """The base and the final generator measured on the held-out new tasks against the base
    answerer's sampled answers (generator_heldout.heldout_generators); {} when there is nothing
    to compare: no generator samples asked, a run without a generator phase or that proposes
    problems, a manifest without a generator (older code), no held-out new task."""
    final = next((e["generator_path"] for e in reversed(entries) if e.get("generator_path")), "")
    ids = set(sets.get(generator_heldout.HELDOUT_SET, []))
    problems = [p for p in val if p.id in ids]
    why_not = (
        "data.generator_samples is 0" if not cfg.data.generator_samples
        else "the generator proposes problems" if cfg.generator_mode == "problems"
        else "the generator does not learn (generator_mode fuzz)"
        if cfg.generator_mode == "fuzz"
        else "no generator phase: the final generator is the base one"
        if not has_generator_phase(cfg)
        else "the snapshot manifest names no generator" if not final
        else f"no held-out {generator_heldout.HELDOUT_SET} problem" if not problems
        else ""
    )  # fmt: skip
    if why_not:
        log.info("generators not measured held out: %s", why_not)
        return {}
    models = {"base": cfg.model_for("generator").name, "final": final}
    out = generator_heldout.heldout_generators(cfg, problems, pool, models, tasks)
    catch = out["generator_catch_heldout"]
    progress.say(
        f"generators held out on {len(problems)} problems ({catch['skipped']:.0f} without a wrong "
        f"answer): catch rate base={catch['before']:.3g} final={catch['after']:.3g}"
    )
    return out


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

    data = Path(data_dir)

    def problems_of(name: str) -> list:
        return read_jsonl(data / name) if (data / name).is_file() else []

    eval_problems = problems_of("eval.jsonl")
    if cfg.data.humaneval_limit:
        eval_problems = eval_problems[: cfg.data.humaneval_limit]
    val = problems_of("val.jsonl")
    known = {p.id: p for p in [*problems_of("train.jsonl"), *val]}
    bank = bank_tests(bank_path or data / BANK_FILE)
    solve = {p.id: p for p in val}
    solve.update({pid: known[pid] for pid in sorted(bank) if pid in known})
    metrics, _ = model_metrics(
        cfg, model_path, eval_problems, val, solve, bank, trusted_limits(cfg)
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
    report_mod.write_json(report, out_dir)
    report_mod.write_report(report, out_dir)
    return report
