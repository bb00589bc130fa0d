"""`sparring train` (the plain-Python runner) and `sparring phase …` (one phase by hand).

Covers: arguments, the `--dry-run` config override, and the workdir layout of `sparring phase`
(PHASE_LAYOUT, which is also each phase's `--help` text). Does not cover: the phases themselves
(sparring.phases) or the runner with checkpoints and resume (sparring.plain_runner.loop).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sparring.cli.common import add_config_args, add_group, config_from_args, output_dir
from sparring.errors import SparringError

PHASES = ("materialize", "train-answerer", "train-generator", "validate")

# `sparring phase NAME --help` shows this text as is.
PHASE_LAYOUT = """\
`sparring train` (the plain-Python runner) and `sparring phase …` (one phase by hand).

Workdir layout of `sparring phase` (chosen so phases chain by hand):
  D/data/                    materialize: train/val/eval.jsonl, bank.jsonl, manifest.json
  D/round-N/answerer/        train-answerer: the model artifact (init: D/round-(N-1)/answerer)
  D/round-N/generator/       train-generator: model/, tests.jsonl, frozen_solutions.jsonl
                             (frozen answerer: D/round-N/answerer if present, else round N-1,
                             else the base model)
  D/round-N/bank.jsonl       validate: the bank after round N (input: round N-1's, else data's)
`sparring train` uses its own layout (see sparring.plain_runner.loop): D/data, D/rNN-pMM-KIND,
D/checkpoints, D/phases.log, D/summary.json.
"""


def add_commands(sub) -> None:
    p = sub.add_parser(
        "train",
        help="run every phase locally in plain Python, with checkpoints and resume",
        description="Run the whole self-play schedule in this process (no Kubeflow). "
        "Checkpoints after every phase go to WORKDIR/checkpoints; see the layout in "
        "`sparring.plain_runner.loop`.",
    )
    add_config_args(p, required=True)
    p.add_argument("--workdir", required=True, help="output folder of the run")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true", help="continue after the latest checkpoint")
    g.add_argument("--resume-from", metavar="PATH", help="continue after this checkpoint folder")
    p.add_argument("--dry-run", action="store_true", help="no GRPO updates (same as dry_run: true)")
    p.add_argument(
        "--mirror",
        metavar="URI",
        help="also copy the datasets and every checkpoint to this S3 prefix (or folder), each "
        "with a manifest written last; --resume continues from there when it holds a newer "
        "finished checkpoint than the workdir",
    )
    p.set_defaults(func=_train)

    grp = add_group(sub, "phase", "run one phase by hand (debugging); layout in --help")
    for name in PHASES:
        q = grp.add_parser(
            name,
            help=f"run the {name} phase",
            description=PHASE_LAYOUT,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_config_args(q, required=True)
        q.add_argument("--workdir", required=True, help="folder holding data/ and round-N/")
        q.add_argument("--round", type=int, default=1, help="round number (1-based)")
        q.add_argument("--dry-run", action="store_true", help="no model calls, no GRPO update")
        q.set_defaults(func=_phase, phase=name)


def _cfg(args: argparse.Namespace):
    cfg = config_from_args(args)
    if getattr(args, "dry_run", False):
        import dataclasses

        cfg = dataclasses.replace(cfg, dry_run=True)
    return cfg


def _train(args: argparse.Namespace) -> int:
    from sparring.plain_runner.loop import run_selfplay

    cfg = _cfg(args)
    output_dir(args.workdir, "--workdir")
    summary = run_selfplay(
        cfg, args.workdir, resume=args.resume, resume_from=args.resume_from, mirror=args.mirror
    )
    print(f"done: {len(summary['phases'])} phases run in {summary['seconds']:.1f}s")
    print(f"best checkpoint: {summary['best_checkpoint']} (score {summary['best_score']})")
    print(f"summary: {Path(args.workdir) / 'summary.json'}")
    return 0


def _existing(path: Path) -> str | None:
    return str(path) if path.exists() else None


def _phase(args: argparse.Namespace) -> int:
    from sparring.phases.table import outputs_in, run

    cfg = _cfg(args)
    d = output_dir(args.workdir, "--workdir")
    n = args.round
    if n < 1:
        raise SparringError("--round: rounds are numbered from 1")
    data = d / "data"
    if args.phase != "materialize" and not (data / "train.jsonl").is_file():
        raise SparringError(f"{data}: no datasets; run `sparring phase materialize` first")
    rd, prev = d / f"round-{n}", d / f"round-{n - 1}"
    rd.mkdir(parents=True, exist_ok=True)
    bank_prev = _existing(prev / "bank.jsonl") or str(data / "bank.jsonl")
    gen = rd / "generator"
    name = "validate-tests" if args.phase == "validate" else args.phase  # the table's name
    if name == "validate-tests" and not (gen / "tests.jsonl").is_file():
        raise SparringError(f"{gen}/tests.jsonl: missing; run train-generator --round {n}")
    frozen = _existing(rd / "answerer") or _existing(prev / "answerer")
    inputs = {  # PHASE_LAYOUT, by the phase table's names
        "data": str(data),
        "bank": _existing(rd / "bank.jsonl") or bank_prev,
        "bank_in": bank_prev,
        "init_model": _existing(prev / ("answerer" if args.phase == "train-answerer"
                                        else "generator/model")) or "",
        "frozen_answerer": frozen or cfg.model_for("answerer").name,
        "tests": str(gen / "tests.jsonl"),
        "frozen_solutions": str(gen / "frozen_solutions.jsonl"),
    }  # fmt: skip
    if args.phase == "materialize":
        inputs["bank_in"] = ""
    outputs = {
        "materialize": {"data": str(data)},
        "train-answerer": {"model": str(rd / "answerer")},
        "train-generator": outputs_in("train-generator", gen),
        "validate-tests": outputs_in("validate-tests", rd),
    }[name]
    metrics = run(name, cfg, n, inputs, outputs)
    print(json.dumps(metrics, indent=1, sort_keys=True))
    return 0
