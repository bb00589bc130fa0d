"""`sparring precheck`: before a study, does a level leave the base model room for adversarial
tests, and do the test writers reach it (issue 73, item 1)?
Why one module: the pre-check, its subcommands and pool-catch read one set of arguments (the
instances, the writers) and the pre-check's files; apart, each would import the others' parts.

Covers: the command's arguments, the sizing line it prints before sampling, the table and the
PRECHECK lines, and its files (`--out DIR`: precheck.json, pool.jsonl, answers.jsonl: one row
of flags per sampled answer); `sparring precheck size-n --rows answers.jsonl`, the answers a
task the oracle needs to reach a target, printed per level from those rows alone; and `sparring
pool-catch`, the test writers' catch on that pool afterwards (a study's trained generators
against the base one and the fuzzer); `sparring precheck select` (held-out new tasks, N
answers a task and each test source's tests and verdicts, as choose rows: rows.jsonl; `--reuse`
adds sources to an earlier file's answers; `select-join` joins the parts of one select split by
families) and `sparring precheck select-report --rows FILE...`
(every rule and `--contrast` re-scored from those rows, with intervals, the room check and the
plan's verdicts; `--out` files it as JSON). Does not cover: the sampling, judging and statistics
(sparring.experiments.precheck, sparring.experiments.pool_catch,
sparring.experiments.sizing_oracle, sparring.experiments.selection_tasks,
sparring.experiments.selection_rows, sparring.experiments.selection_join,
sparring.experiments.selection_report,
sparring.evaluation.choose).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sparring.cli.calibrate import int_list
from sparring.cli.common import (
    add_config_args,
    config_from_args,
    output_dir,
    output_file,
    write_output,
)
from sparring.errors import SparringError

DEFAULT_CONFIG = "configs/learn.yaml"
POOL_NEEDED = 100  # wrong-but-passing answers the study's generator comparison needs


def add_commands(sub) -> None:
    p = sub.add_parser(
        "precheck",
        help="the study's pre-check: the base model's room for adversarial tests per level",
        description=(
            "Samples the base answerer (the config's, or --model) on family instances of a "
            "development seed at --levels and prints per family and level, and per level: "
            "room (the share of answers that pass the --given-tests K typical tests and fail a "
            "withheld credited test, with a 95% interval resampling tasks), the share of "
            "answers passing the stated-case test and whether any does, the pool of those "
            "wrong-but-passing answers, and how many of them the non-learning fuzzer's tests "
            "and the base generator's tests catch (k valid tests a problem each). Prints how "
            "many answers it will sample before starting."
        ),
    )
    _add_instance_args(p, "the fewest giving 800 answers a level")
    p.add_argument(
        "--samples-per-instance",
        dest="samples",
        type=int,
        default=8,
        metavar="N",
        help="answers sampled per instance (default 8)",
    )
    _add_writer_args(p, "base generator completions per pool problem (default 4)")
    p.add_argument(
        "--generator-model", default="", help="generator to sample (default: the config's)"
    )
    p.add_argument(
        "--out",
        default="",
        metavar="DIR",
        help="write precheck.json, pool.jsonl and answers.jsonl (each answer's flags)",
    )
    p.set_defaults(func=_precheck)
    sub_of_precheck = p.add_subparsers(dest="precheck_command", metavar="SUBCOMMAND")
    _add_size_n(sub_of_precheck)
    _add_select(sub_of_precheck)
    _add_select_report(sub_of_precheck)
    _add_select_join(sub_of_precheck)

    p = sub.add_parser(
        "pool-catch",
        help="the test writers' catch on a pre-check's pool of wrong answers",
        description=(
            "Reads a pre-check's pool.jsonl (answers that pass the given tests and fail a "
            "withheld one), has the fuzzer and each --writer NAME=MODEL (a generator model name "
            "or folder, e.g. a study run's train-generator/model; 'base' is the config's "
            "generator unless given) keep at most k valid tests a pool problem, and prints per "
            "level and pooled each writer's catch (the share of the pool its tests fail, a 95% "
            "interval resampling tasks) and each writer minus the base generator and minus the "
            "fuzzer, paired over the same answers. With the pre-check's --seed, --generator-"
            "samples and k, the base and fuzz numbers repeat the pre-check's."
        ),
    )
    add_config_args(p, without=f"{DEFAULT_CONFIG} is used")
    p.add_argument("--pool", required=True, metavar="FILE", help="a pre-check's pool.jsonl")
    p.add_argument(
        "--writer",
        action="append",
        default=[],
        metavar="NAME=MODEL",
        help="a generator to measure (repeatable); base=<the config's generator> is always in",
    )
    p.add_argument("--seed", type=int, default=2, help="the pre-check's seed (default 2)")
    _add_writer_args(p, "completions per pool problem and generator (default 4, the pre-check's)")
    p.add_argument("--out", default="", metavar="FILE", help="write the result as JSON")
    p.set_defaults(func=_pool_catch)


def _add_size_n(sub) -> None:
    """`sparring precheck size-n`: N sized from a filed pre-check's answers.jsonl, no model."""
    from sparring.experiments.sizing_oracle import MAX_N, TARGET

    text = (
        "Reads a pre-check's answers.jsonl (each sampled answer's flags) and prints per level: "
        "tasks, the mean per-task every-test pass rate, the oracle (some of N answers a task "
        "passes every test; per task 1 - (1 - p)^N, answers drawn with replacement at the "
        "task's pass rate p, instances of a task averaged first, 95% intervals resampling "
        "tasks), a uniform pick among the answers passing the given tests and the room (the "
        "N answers hold a right and a wrong one among those passing the given tests), at N = 1, 8, "
        "16, 32, 64; the same three counted at the answers sampled, without extrapolating "
        "(with as many answers a task as the study samples, its values at that N); and the "
        "smallest N whose oracle reaches --target, or that --max-n does not. Samples nothing."
    )
    p = sub.add_parser(
        "size-n", help="answers a task the oracle needs, from a pre-check's answers.jsonl",
        description=text,
    )  # fmt: skip
    p.add_argument("--rows", required=True, metavar="FILE", help="a pre-check's answers.jsonl")
    p.add_argument(
        "--target", type=float, default=TARGET, help=f"oracle to reach (default {TARGET})"
    )
    p.add_argument(
        "--max-n", type=int, default=MAX_N, metavar="N", help=f"largest N tried (default {MAX_N})"
    )
    p.set_defaults(func=_size_n)


def _size_n(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring.experiments import sizing_oracle

    if args.max_n < 1:
        raise SparringError(f"--max-n {args.max_n}: use N >= 1")
    if not 0 < args.target <= 1:
        raise SparringError(f"--target {args.target}: use a share in (0, 1]")
    if not Path(args.rows).is_file():
        raise SparringError(f"--rows {args.rows}: no such file (a pre-check's answers.jsonl)")
    try:
        rows = sizing_oracle.read_rows(args.rows)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SparringError(f"--rows: {exc}") from None
    sized = sizing_oracle.size_n(rows, args.target, args.max_n)
    print(
        f"SIZEN plan: {args.rows}: {len(rows)} answers; oracle target {args.target:.3f}, N up "
        f"to {args.max_n}; per task 1 - (1 - p)^N (N answers drawn with replacement at the "
        "task's every-test pass rate p, its instances averaged first); intervals resample "
        "tasks"
    )
    print("\n".join(sizing_oracle.format_lines(sized)))
    return 0


def _add_select(sub) -> None:
    """`sparring precheck select`: N answers a task and each source's tests, as choose rows."""
    p = sub.add_parser(
        "select",
        help="N answers a task, judged, with each test source's tests and verdicts (rows.jsonl)",
        description=(
            "Draws held-out new tasks at --seed (the study's: 1) as the materialize phase draws "
            "its new_tasks set: family instances at --levels, less every one whose function a "
            "training problem of the config computes (compared by outputs on shared inputs; "
            "the training problems: data.families at its seed, levels and per_family) or "
            "whose prompt one shows; prints per level what was dropped and kept. Samples --n "
            "answers a problem of the answerer (the config's, or --model) as the pre-check "
            "samples them; judges each (passes the --given-tests K given tests; passes every "
            "test, the stated case included); has each --source write at most --k valid tests "
            "a problem as the reward sees it (the tests failing the reference are kept too, "
            "marked invalid, so they are counted and never choose) and runs every answer on "
            "every test. With --reuse FILE the answers and every source FILE holds are taken "
            "from it (nothing sampled again) and only the sources it lacks write tests. Writes "
            "DIR/rows.jsonl (one choose row a task: every answer's flags, code and verdicts; "
            "`precheck select-report` re-scores any rule from it) and DIR/select.json (the "
            "settings and the drops), then prints the report."
        ),
    )
    _add_instance_args(p, "the fewest keeping 100 tasks a level after the drops")
    p.add_argument("--n", type=int, required=True, metavar="N", help="answers sampled a problem")
    p.add_argument("--k", type=int, default=0, metavar="k",
                   help="valid tests a source keeps a problem (0: steps.fuzz_tests)")  # fmt: skip
    p.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="SPEC",
        help="a test source (repeatable): fuzz, base (the config's generator) or writer:PATH "
        "(a generator model or folder), named fuzz, base, writer; NAME=SPEC names it",
    )
    p.add_argument("--generator-samples", type=int, default=4, metavar="N",
                   help="completions a problem a generator samples (default 4)")  # fmt: skip
    p.add_argument(
        "--reuse",
        default="",
        metavar="FILE",
        help="an earlier select's rows.jsonl (select.json beside it): keep its answers and "
        "sources, sample none again; only the --source sources it lacks write tests",
    )
    p.add_argument(
        "--no-heldout-filter",
        dest="heldout_filter",
        action="store_false",
        help="keep instances whose function a training problem computes (default: dropped)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="write rows.jsonl and select.json")
    p.set_defaults(func=_select)


def _add_select_join(sub) -> None:
    """`sparring precheck select-join`: the parts of one select split by families, as one."""
    p = sub.add_parser(
        "select-join",
        help="join the parts of one select run split by --families into one rows file",
        description=(
            "A select samples at one torch thread a process, so on several cores it can be split "
            "by families: the same command in several processes, each with its --families and "
            "the same --per-family "
            "(the full run's, printed by a run without it). This joins their folders into one "
            "DIR/rows.jsonl and DIR/select.json, as one command over every family: `--reuse` "
            "and `select-report` read it. Refuses parts whose settings differ (apart from their "
            "families) or that share a family or an instance. Samples and runs nothing."
        ),
    )
    p.add_argument("--part", action="append", required=True, metavar="DIR",
                   help="a select --out folder (repeatable: two or more)")  # fmt: skip
    p.add_argument("--out", required=True, metavar="DIR", help="write rows.jsonl and select.json")
    p.set_defaults(func=_select_join)


def _select_join(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring.evaluation.choose import rows_jsonl
    from sparring.experiments.selection_join import join_parts

    out = output_dir(args.out, "--out")
    if any(out.resolve() == Path(d).resolve() for d in args.part):
        raise SparringError(f"--out {args.out}: is a part; write the joined rows elsewhere")
    records, rows = [], []
    for part in args.part:
        record, part_rows = _reused(str(Path(part) / "rows.jsonl"), "--part")
        records.append(record)
        rows.append(part_rows)
    try:
        record, joined = join_parts(records, rows, args.part)
    except ValueError as exc:
        raise SparringError(f"--part {exc}") from None
    write_output(out / "rows.jsonl", rows_jsonl(joined), "--out")
    write_output(out / "select.json", json.dumps(record, indent=1), "--out")
    print(
        f"SELECT join: {len(joined)} tasks of {len(record['settings']['families'])} families "
        f"from {len(args.part)} parts in {out / 'rows.jsonl'}"
    )
    return 0


def _add_select_report(sub) -> None:
    """`sparring precheck select-report`: every rule re-scored from filed rows, no model."""
    from sparring.experiments.selection_report import BOOTSTRAP

    p = sub.add_parser(
        "select-report",
        help="each rule's score, the oracle, the room check and contrasts, from select's rows",
        description=(
            "Reads rows.jsonl files of `precheck select` and prints per level and pooled: the "
            "oracle (some answer passes every test), the room check (the share of tasks whose "
            "answers passing the given tests include a right and a wrong one; under 0.05 a "
            "level's contrasts cannot see a difference), the fallback (no answer passes the "
            "given tests), each rule's score (the share of tasks whose chosen answer passes "
            "every test, ties scored exactly; its tests kept and dropped per task; the share "
            "of right answers its tests reject) with a 95% percentile bootstrap interval, and "
            "each --contrast A-B: its value, the bootstrap interval, each file's value, a 95% "
            "t-interval on those, the smallest difference the design could see and the "
            "plan's verdict (helps / hurts when both intervals lie above / below 0). Several "
            "--rows files are several writer seeds over the same answers: each resample draws "
            "whole files, then tasks (a task with all its instances). Samples and runs "
            "nothing; --out files the report as JSON, and the printed lines come from it."
        ),
    )
    p.add_argument("--rows", action="append", required=True, metavar="FILE",
                   help="a select rows.jsonl (repeatable: one a writer seed)")  # fmt: skip
    p.add_argument(
        "--sources",
        default="",
        help="comma-separated rules, e.g. none,fuzz,writer,fuzz+writer (default: none and "
        "every source of the first row)",
    )
    p.add_argument(
        "--contrast",
        action="append",
        default=[],
        metavar="A-B",
        help="a contrast of two rules (repeatable), e.g. writer-none, writer-fuzz, "
        "fuzz+writer-fuzz, writer-base (the plan's); default: every rule minus none",
    )
    p.add_argument("--bootstrap", type=int, default=BOOTSTRAP, metavar="N",
                   help=f"resamples per interval (default {BOOTSTRAP})")  # fmt: skip
    p.add_argument("--bootstrap-seed", type=int, default=0, help="the resamples' seed (default 0)")
    p.add_argument("--out", default="", metavar="FILE", help="write the report as JSON")
    p.set_defaults(func=_select_report)


def _select(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring.evaluation.choose import NONE, rows_jsonl
    from sparring.experiments import selection_rows
    from sparring.experiments.selection_report import BOOTSTRAP, format_report

    if args.n < 1:
        raise SparringError(f"--n {args.n}: use N >= 1 answers a problem")
    if args.k < 0 or args.generator_samples < 1:
        raise SparringError("--k: use k >= 1 (0: steps.fuzz_tests); --generator-samples: >= 1")
    levels = _levels(args)
    out = output_dir(args.out, "--out")  # before the sampling
    cfg, families = _config_and_families(args)
    try:
        sources = selection_rows.parse_sources(args.source, cfg.model_for("generator").name)
    except ValueError as exc:
        raise SparringError(f"--source: {exc}") from None
    if args.reuse and out.resolve() == Path(args.reuse).resolve().parent:
        raise SparringError(
            f"--out {args.out}: holds the --reuse file; write the new rows elsewhere"
        )
    reused = _reused(args.reuse) if args.reuse else None
    k = args.k or cfg.steps.fuzz_tests
    problems, heldout, per_family = _select_problems(args, cfg, families, levels)
    settings = {
        "config": args.config, "model": args.model or cfg.model_for("answerer").name,
        "seed": args.seed, "levels": levels, "families": families, "per_family": per_family,
        "given_tests": args.given_tests, "n": args.n, "k": k,
        "generator_samples": args.generator_samples,
        "sources": {s.name: s.spec for s in sources}, "heldout": heldout,
    }  # fmt: skip
    new = sources
    if reused is not None:
        filed, rows = reused[0]["settings"], reused[1]
        why = selection_rows.reuse_error(filed, settings, rows, problems, sources)
        if why:
            raise SparringError(f"--reuse {args.reuse}: {why}")
        new = [s for s in sources if s.name not in rows[0]["tests"]]
        settings["sources"] = {**filed.get("sources", {}), **settings["sources"]}
        settings["reused"] = {"rows": args.reuse, "sources": list(rows[0]["tests"])}
    print(
        f"SELECT plan: {len(problems)} problems ({len(families)} families x {per_family} "
        f"instances x levels {','.join(map(str, levels))}, seed {args.seed}) x {args.n} answers; "
        f"K={args.given_tests} given tests; sources "
        f"{', '.join(s.name for s in sources) or '(none)'}, k={k} tests each, "
        f"{args.generator_samples} completions a problem a generator"
        + (
            f"; reusing {args.reuse}: no answer sampled, new sources "
            f"{', '.join(s.name for s in new) or '(none)'}"
            if reused is not None
            else ""
        ),
        flush=True,
    )
    result = selection_rows.run_selection(
        cfg, problems, args.model, args.n, k, new, args.seed, args.given_tests,
        args.generator_samples, None if reused is None else reused[1],
    )  # fmt: skip
    rows = result["rows"]
    write_output(out / "rows.jsonl", rows_jsonl(rows), "--out")
    record = {"settings": settings, "timing": result["timing"]}
    write_output(out / "select.json", json.dumps(record, indent=1), "--out")
    print(f"SELECT rows: {len(rows)} tasks in {out / 'rows.jsonl'}")
    report = _report([rows], [NONE, *rows[0]["tests"]], [], BOOTSTRAP, labels=[args.out])
    print("\n".join(format_report(json.loads(json.dumps(report)))))
    return 0


def _select_problems(
    args: argparse.Namespace, cfg: Any, families: list[str], levels: list[int]
) -> tuple[list[Any], dict[str, Any], int]:
    """(the problems, the held-out filter's record, instances a family and level): held-out
    new tasks (sparring.experiments.selection_tasks), or with --no-heldout-filter every
    instance drawn, as the pre-check draws them. Prints the drops per level."""
    from sparring.evaluation.calibration import calibration_problems
    from sparring.experiments import precheck, selection_tasks
    from sparring.problems.families.sets import trained_families

    if not args.heldout_filter:
        per_family = args.per_family or precheck.per_family_for(
            len(families), 1, selection_tasks.MIN_TASKS
        )
        problems = calibration_problems(cfg, args.seed, per_family, families, levels)
        print(f"SELECT held-out: no filter (--no-heldout-filter): {len(problems)} instances")
        return problems, {"filter": False}, per_family
    fam = cfg.data.families
    try:
        drawn = selection_tasks.sized_new_tasks(fam, args.seed, families, levels, args.per_family)
    except ValueError as exc:
        raise SparringError(str(exc)) from None
    for level, c in drawn.levels.items():
        print(
            f"SELECT held-out: level {level}: {c['drawn']} instances drawn at seed {args.seed}, "
            f"{c['dropped']} dropped (a training problem computes their function or shows "
            f"their prompt), {c['kept']} kept ({c['tasks']} tasks)"
        )
    if short := drawn.short():
        print(
            f"SELECT held-out: under {selection_tasks.MIN_TASKS} tasks at level(s) "
            f"{', '.join(short)} with {drawn.per_family} instances a family and level"
        )
    record = {
        "filter": True,
        "training": {"seed": fam.seed, "per_family": fam.per_family, "levels": list(fam.levels),
                     "families": trained_families(fam)},
        "levels": drawn.levels,
    }  # fmt: skip
    problems = selection_tasks.with_trivial_passes(cfg, drawn.problems)
    return problems, record, drawn.per_family


def _reused(path: str, flag: str = "--reuse") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(select.json beside `path`: {"settings", "timing", ...}, its rows), or a one-line
    refusal."""
    from pathlib import Path

    from sparring.evaluation.choose import read_rows

    rows_file = Path(path)
    if not rows_file.is_file():
        raise SparringError(f"{flag} {path}: no such file (a precheck select rows.jsonl)")
    beside = rows_file.parent / "select.json"
    try:
        record = json.loads(beside.read_text())
        if not isinstance(record, dict) or not isinstance(record.get("settings"), dict):
            raise ValueError("select.json holds no settings")
        rows = read_rows(rows_file)
    except FileNotFoundError:
        raise SparringError(f"{flag} {path}: no select.json beside it (its settings)") from None
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise SparringError(f"{flag} {path}: not a select's rows and settings ({exc})") from None
    if not rows:
        raise SparringError(f"{flag} {path}: holds no rows")
    return record, rows


def _report(
    files: list[list[dict[str, Any]]],
    rules: list[str],
    contrasts: list[str],
    n_boot: int,
    seed: int = 0,
    labels: list[str] | None = None,
) -> dict[str, Any]:
    """The selection report of `files` as JSON (contrast errors are one line)."""
    from sparring.experiments.selection_report import select_report

    try:
        return select_report(files, rules, contrasts, n_boot, seed, labels or [])
    except ValueError as exc:
        flag = "--contrast" if "contrast" in str(exc) else "--sources"
        raise SparringError(f"{flag}: {exc}") from None


def _select_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring.evaluation.choose import NONE, read_rows
    from sparring.experiments.selection_report import format_report

    if args.bootstrap < 1:
        raise SparringError(f"--bootstrap {args.bootstrap}: use N >= 1 resamples")
    target = output_file(args.out, "--out") if args.out else None
    files = []
    for path in args.rows:
        if not Path(path).is_file():
            raise SparringError(f"--rows {path}: no such file (a precheck select rows.jsonl)")
        try:
            rows = read_rows(path)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SparringError(f"--rows: {exc}") from None
        if not rows:
            raise SparringError(f"--rows {path}: holds no rows")
        files.append(rows)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    sources = sources or [NONE, *files[0][0]["tests"]]
    report = _report(files, sources, args.contrast, args.bootstrap, args.bootstrap_seed, args.rows)
    text = json.dumps(report, indent=1)
    if target is not None:
        write_output(target, text, "--out")
    print("\n".join(format_report(json.loads(text))))  # the lines the filed JSON gives
    return 0


def _add_instance_args(p: argparse.ArgumentParser, sized: str) -> None:
    """What precheck and select sample on and with: the config, the instances, the answerer."""
    add_config_args(p, without=f"{DEFAULT_CONFIG} is used")
    p.add_argument("--seed", type=int, default=2, help="instance seed (default 2: development)")
    p.add_argument("--levels", default="2,3", help="comma-separated levels (default 2,3)")
    p.add_argument(
        "--families",
        default="",
        help="comma-separated families (default: the config's trained families)",
    )
    p.add_argument(
        "--per-family",
        type=int,
        default=0,
        metavar="N",
        help=f"instances per family and level (default 0: {sized})",
    )
    p.add_argument("--given-tests", type=int, default=3, metavar="K", help="given tests (3)")
    p.add_argument("--model", default="", help="answerer to sample (default: the config's)")


def _levels(args: argparse.Namespace) -> list[int]:
    """--levels checked (and --seed, --per-family, --given-tests), before any model loads."""
    from sparring.problems.families import DEFINED_LEVELS

    if args.seed < 0 or args.per_family < 0 or args.given_tests < 1:
        raise SparringError("--seed: use >= 0; --per-family: >= 0 (0: sized); --given-tests: >= 1")
    levels = int_list(args.levels, "--levels")
    if not levels or any(level not in DEFINED_LEVELS for level in levels):
        raise SparringError(f"--levels {args.levels!r}: use levels among {list(DEFINED_LEVELS)}")
    return levels


def _config_and_families(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The config (default configs/learn.yaml) and --families, checked (default: trained)."""
    from sparring.problems.families import FAMILIES
    from sparring.problems.families.sets import trained_families

    if not args.config:
        args.config = DEFAULT_CONFIG
    cfg = config_from_args(args)
    families = [f for f in args.families.split(",") if f.strip()] or trained_families(
        cfg.data.families
    )
    for name in families:
        if name not in FAMILIES:
            known = ", ".join(FAMILIES)
            raise SparringError(f"--families: unknown family {name!r}; known: {known}")
    return cfg, families


def _add_writer_args(p: argparse.ArgumentParser, samples_help: str) -> None:
    """The test writers' arguments both commands share: k kept tests and N completions."""
    p.add_argument(
        "--tests-per-problem",
        type=int,
        default=0,
        metavar="k",
        help="valid tests each writer keeps per pool problem (default: steps.fuzz_tests)",
    )
    p.add_argument("--generator-samples", type=int, default=4, metavar="N", help=samples_help)


def _writers(specs: list[str], base: str) -> dict[str, str]:
    """{name: model} of --writer NAME=MODEL, `base` first unless one is named base."""
    writers = {"base": base}
    for spec in specs:
        name, sep, model = spec.partition("=")
        if not sep or not name.strip() or not model.strip():
            raise SparringError(f"--writer {spec!r}: give NAME=MODEL, e.g. S-t1=<run>/model")
        if name.strip() == "fuzz":
            raise SparringError("--writer fuzz: the fuzzer is always measured; pick another name")
        writers[name.strip()] = model.strip()
    return writers


def _pool_catch(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparring.experiments import pool_catch

    if args.generator_samples < 1 or args.tests_per_problem < 0:
        raise SparringError("--generator-samples: use N >= 1; --tests-per-problem: use k >= 1")
    if not Path(args.pool).is_file():
        raise SparringError(f"--pool {args.pool}: no such file (a pre-check's pool.jsonl)")
    try:
        pool = pool_catch.read_pool(args.pool)
    except ValueError as exc:
        raise SparringError(str(exc)) from None
    if not pool:
        raise SparringError(f"--pool {args.pool}: holds no answers")
    if not args.config:
        args.config = DEFAULT_CONFIG
    cfg = config_from_args(args)
    writers = _writers(args.writer, cfg.model_for("generator").name)
    k = args.tests_per_problem or cfg.steps.fuzz_tests
    problems = len({e.problem.id for e in pool})
    print(
        f"POOLCATCH plan: {len(pool)} answers on {problems} problems; writers fuzz, "
        f"{', '.join(writers)}; k={k}, {args.generator_samples} completions a problem and "
        f"generator, seed {args.seed}",
        flush=True,
    )
    measured = pool_catch.run_pool_catch(cfg, pool, writers, k, args.generator_samples, args.seed)
    print("\n".join(pool_catch.format_lines(measured["result"])))
    if args.out:
        record = {
            "settings": {"pool": args.pool, "config": args.config, "seed": args.seed, "k": k,
                         "generator_samples": args.generator_samples, "writers": writers},
            **measured,
        }  # fmt: skip
        write_output(Path(args.out), json.dumps(record, indent=1), "--out")
    return 0


def _precheck(args: argparse.Namespace) -> int:
    from sparring.experiments import precheck

    if args.samples < 1 or args.generator_samples < 0 or args.tests_per_problem < 0:
        raise SparringError(
            "--samples-per-instance (>= 1), --generator-samples (>= 0), --tests-per-problem "
            "(k >= 1; 0: steps.fuzz_tests)"
        )
    levels = _levels(args)
    out = output_dir(args.out, "--out") if args.out else None  # before an hour of sampling
    cfg, families = _config_and_families(args)
    per_family = args.per_family or precheck.per_family_for(len(families), args.samples)
    k = args.tests_per_problem or cfg.steps.fuzz_tests
    a_level = len(families) * per_family * args.samples
    short = "" if a_level >= precheck.MIN_ANSWERS else f" (under {precheck.MIN_ANSWERS}: a trial)"
    print(
        f"PRECHECK plan: {len(families)} families x {per_family} instances x {args.samples} "
        f"samples = {a_level} answers a level{short}, {a_level * len(levels)} in all (levels "
        f"{','.join(map(str, levels))}, seed {args.seed}, K={args.given_tests} given tests, "
        f"k={k} tests a writer, {args.generator_samples} generator samples a pool problem)",
        flush=True,
    )
    result = precheck.run_precheck(
        cfg, args.seed, per_family, args.samples, families, levels, args.given_tests, k,
        args.generator_samples, args.model, args.generator_model,
    )  # fmt: skip
    print(precheck.format_report(result["summary"], POOL_NEEDED))
    timing = result["timing"]
    if timing["answers"]:
        print(
            f"PRECHECK timing: model loaded in {timing['load_s']:.1f}s, {timing['answers']} "
            f"answers sampled in {timing['sample_s']:.1f}s ({timing['seconds_per_answer']:.2f} "
            f"s/answer, {timing['cpu_seconds_per_answer']:.2f} CPU s/answer), judged in "
            f"{timing['judge_s']:.1f}s; generator {timing['generator_completions']} completions "
            f"in {timing['generator_s']:.1f}s, catch {timing['catch_s']:.1f}s"
        )
    kept = result["kept"]
    print(
        f"PRECHECK writers: on {len(kept['fuzz'])} pool problems the fuzzer kept "
        f"{sum(map(len, kept['fuzz'].values()))} tests; the base generator wrote "
        f"{sum(map(len, kept.get('base_written', {}).values()))} and kept "
        f"{sum(map(len, kept['base'].values()))}"
    )
    if out is not None:
        settings = {
            "config": args.config, "seed": args.seed, "levels": levels, "families": families,
            "per_family": per_family, "samples": args.samples, "given_tests": args.given_tests,
            "tests_per_problem": k, "generator_samples": args.generator_samples,
            "model": args.model or cfg.model_for("answerer").name,
            "generator_model": args.generator_model or cfg.model_for("generator").name,
        }  # fmt: skip
        record = {
            "settings": settings,
            "summary": result["summary"],
            "timing": timing,
            "kept_tests": result["kept"],
            "rows": result["rows"],
        }
        write_output(out / "precheck.json", json.dumps(record, indent=1), "--out")
        lines = "".join(json.dumps(e.to_row()) + "\n" for e in result["pool"])
        write_output(out / "pool.jsonl", lines, "--out")
        lines = "".join(json.dumps(row) + "\n" for row in result["answers"])
        write_output(out / "answers.jsonl", lines, "--out")
    return 0
