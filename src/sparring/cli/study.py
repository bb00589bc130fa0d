"""`sparring study --study configs/study/<name>.yaml` (`make study STUDY=<name>`): a study's
arms x training seeds from the base model, resumable, then its table, contrasts, result file and
figure.

Covers: arguments, the design read and checked, the plan printed (`--dry-list` stops there),
the runs not yet done, and the report (`--report` alone: the finished runs, taken back from
`--filed` where missing, nothing run). Does not cover: the design's file
(sparring.experiments.study_design), planning, running and filing the runs
(sparring.experiments.study_runner) or the statistics (sparring.experiments.study); all are imported
inside
the handler, so `sparring --help` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sparring.errors import SparringError


def add_commands(sub) -> None:
    p = sub.add_parser(
        "study",
        help="a study from its file (configs/study/<name>.yaml): every arm x seed from the base "
        "model; table and contrasts",
        description="Run every arm x training seed of the study file not yet done (seed 1 of "
        "every arm first), each through `sparring run` on the study's base config from the base "
        "model, filed under --out; a finished run is kept when its code and config digest are "
        "today's. Then print the table and the contrasts (95% intervals resampling each arm's "
        "whole seeds and the tasks, a t-interval on the per-seed contrasts, the probability of "
        "improvement) and write the study's report file and figure.",
    )
    p.add_argument(
        "--study",
        required=True,
        metavar="FILE",
        help="the study's file, e.g. configs/study/2026-12-02.yaml",
    )
    p.add_argument("--arms", help="arms to run, comma-separated (default: all of the study's)")
    p.add_argument("--seeds", help="training seeds, comma-separated (default: the study's)")
    p.add_argument("--dry-list", action="store_true", help="print the plan, run nothing")
    p.add_argument(
        "--report", action="store_true", help="run nothing: report the finished runs as they are"
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
        help="keep a copy of every finished run here as <run>-<date>-<file> and take "
        "back from here a run missing under --out, so a fresh clone goes on from the committed "
        "runs (docs/results; '' for neither)",
    )
    p.add_argument("--results", help="the report file (default: the study's `report`)")
    p.add_argument("--image", help="the figure (default: the study's `figure`)")
    p.add_argument("--reps", type=int, default=10_000, help="bootstrap resamples per interval")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="runs at once, one torch thread each (default 1: one run, the machine's threads); "
        "fewer when the memory available does not hold N runs, by the largest phase peak "
        "the study's finished runs filed",
    )
    p.set_defaults(func=_study)


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise SparringError(f"--seeds {text}: training seeds are integers, e.g. 1,2,3") from None
    if not seeds or min(seeds) < 1:
        raise SparringError(f"--seeds {text}: give training seeds of 1 or more, e.g. 1,2,3")
    return seeds


def _jobs(asked: int, out: Path, design, todo: int) -> int:
    """Runs to start at once: `asked`, fewer when memory does not hold them, 1 for one run."""
    from sparring.experiments import filed_runs, study_jobs

    if asked < 1:
        raise SparringError(f"--jobs {asked}: give 1 or more runs at once")
    if asked == 1 or todo <= 1:
        return 1
    names = [design.run_name(a, s) for a in design.arms for s in design.seeds]
    records = [r for r in (filed_runs.read_record(out / n) for n in names) if r is not None]
    per_run, source = study_jobs.run_peak_mb(records)
    free = study_jobs.available_mb()
    jobs, why = study_jobs.fitting_jobs(asked, per_run, free) if free else (asked, "")
    jobs = min(jobs, todo)
    print(f"study: {jobs} runs at once, one torch thread each; a run needs up to "
          f"{per_run / 1024:.1f} GiB ({source})")  # fmt: skip
    if why:
        print(f"study: {why}")
    return jobs


def _study(args: argparse.Namespace) -> int:
    from sparring.backends import lineage
    from sparring.experiments import filed_runs, study, study_jobs, study_runner
    from sparring.experiments.study_design import load_design

    design = load_design(args.study)
    arms = study_runner.chosen_arms(
        design,
        [a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else list(design.arms),
    )
    seeds = _seeds(args.seeds) if args.seeds else list(design.seeds)
    out = Path(args.out)
    filed = Path(args.filed) if args.filed else None
    if filed is not None:
        names = [design.run_name(a, s) for s in seeds for a in arms]
        for line in filed_runs.restore(filed, out, names):
            print(line)
    if not args.report:
        items = study_runner.plan(
            out, design, arms, seeds, lineage.code_digest(),
            lambda sets: study_runner.config_digest(design.base, sets), args.overrides,
        )  # fmt: skip
        print("\n".join(study_runner.plan_lines(items)))
        if args.dry_list:
            return 0
        todo = [i for i in items if i.action == "run"]
        jobs = _jobs(args.jobs, out, design, len(todo))
        if jobs > 1:
            study_runner.prepare_store(design.base, todo[0].overrides)

        def run(item, threads, prefix):
            return study_runner.run_one(item, design.base, out, threads, prefix)

        def done(item, record):
            if record is not None and filed is not None:
                copies = filed_runs.file_run(out, item.name, filed)
                print(f"study: {item.name} filed as {', '.join(str(c) for c in copies)}")

        study_jobs.run_items(todo, jobs, run, done)
    runs = study_runner.finished_runs(out, design, arms, seeds)
    if design.analysis:
        print(f"study: {len(runs)} runs finished under {out}; no contrast between them is "
              f"planned: the study is compared by `{design.analysis}`")  # fmt: skip
        return 0
    if not runs:
        raise SparringError(f"no finished run of {args.study} under {out}: `make study` runs them")
    try:
        result = study.analyse([run for run, _ in runs], design, reps=args.reps)
    except ValueError as exc:
        raise SparringError(f"the study cannot be reported: {exc}") from None
    print()
    print(study.table_text(result))
    print("\n".join(study.contrast_lines(result)))
    image = Path(args.image or design.figure)
    path = study_runner.write_report(
        result, runs, design, Path(args.results) if args.results else None, image
    )
    print(f"study: wrote {path} and {image}")
    return 0
