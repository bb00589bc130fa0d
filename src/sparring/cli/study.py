"""`sparring study`: the study of issue 62 (`make study`), every arm x training seed from the
base model, resumable, then its table, contrasts, result file and figure.

Covers: arguments, the plan printed (`--dry-list` stops there), the runs not yet done, and the
report (`--report` alone: the finished runs, nothing run). Does not cover: planning, running
and filing the runs (sparring.study_runner) or the statistics (sparring.evaluation.study);
both are imported inside the handler, so `sparring --help` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sparring.errors import SparringError

ARM_NAMES = "F,D,G,S,B"  # sparring.evaluation.study.ARMS, without importing numpy here


def add_commands(sub) -> None:
    p = sub.add_parser(
        "study",
        help="the study (issue 62): every arm x seed from the base model; table and contrasts",
        description="Run every arm x training seed of the study not yet done (seed 1 of every "
        "arm first), each through `sparring run` from the base model, filed under --out; a "
        "finished run is kept when its code and config digest are today's. Then print the "
        "table and the contrasts (rliable: stratified bootstrap over seeds and tasks, "
        "probability of improvement) and write docs/results/study-<date>.json and "
        "docs/img/study.png.",
    )
    p.add_argument("--arms", default=ARM_NAMES, help=f"arms to run, comma-separated ({ARM_NAMES})")
    p.add_argument("--seeds", default="1,2,3", help="training seeds, comma-separated (1,2,3)")
    p.add_argument("--dry-list", action="store_true", help="print the plan, run nothing")
    p.add_argument(
        "--report", action="store_true", help="run nothing: report the finished runs as they are"
    )
    p.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        default="configs/learn.yaml",
        help="experiment YAML every arm is on (default configs/learn.yaml)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="a further override of every run (its config digest follows it)",
    )
    p.add_argument("--out", default="local_outputs/study", help="where the runs are filed")
    p.add_argument(
        "--filed",
        default="docs/results",
        help="keep a copy of every finished run here as study-<run>-<date>-<file> and take "
        "back from here a run missing under --out, so a fresh clone goes on from the committed "
        "runs (docs/results; '' for neither)",
    )
    p.add_argument("--results-dir", default="docs/results", help="where study-<date>.json goes")
    p.add_argument("--image", default="docs/img/study.png", help="the figure")
    p.add_argument("--reps", type=int, default=10_000, help="bootstrap resamples per interval")
    p.set_defaults(func=_study)


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise SparringError(f"--seeds {text}: training seeds are integers, e.g. 1,2,3") from None
    if not seeds or min(seeds) < 1:
        raise SparringError(f"--seeds {text}: give training seeds of 1 or more, e.g. 1,2,3")
    return seeds


def _study(args: argparse.Namespace) -> int:
    from sparring import lineage, study_runner
    from sparring.evaluation import study

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    seeds = _seeds(args.seeds)
    out = Path(args.out)
    filed = Path(args.filed) if args.filed else None
    if filed is not None:
        names = [study_runner.run_name(a, s) for s in seeds for a in arms]
        for line in study_runner.restore(filed, out, names):
            print(line)
    if not args.report:
        items = study_runner.plan(
            out, arms, seeds, lineage.code_digest(),
            lambda sets: study_runner.config_digest(args.config, sets), args.overrides,
        )  # fmt: skip
        print("\n".join(study_runner.plan_lines(items)))
        if args.dry_list:
            return 0
        for item in (i for i in items if i.action == "run"):
            record = study_runner.run_one(item, args.config, out)
            if record is not None and filed is not None:
                copies = study_runner.file_run(out, item.name, filed)
                print(f"study: {item.name} filed as {', '.join(str(c) for c in copies)}")
    runs = study_runner.finished_runs(out, arms, seeds)
    if not runs:
        raise SparringError(f"no finished study run under {out}: `make study` runs them")
    try:
        result = study.analyse([run for run, _ in runs], reps=args.reps)
    except ValueError as exc:
        raise SparringError(f"the study cannot be reported: {exc}") from None
    print()
    print(study.table_text(result))
    print("\n".join(study.contrast_lines(result)))
    path = study_runner.write_report(result, runs, Path(args.results_dir), Path(args.image))
    print(f"study: wrote {path} and {args.image}")
    return 0
