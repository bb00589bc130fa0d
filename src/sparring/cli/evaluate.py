"""`sparring eval …` (HumanEval pass@k, snapshot evaluation, a run against its control, runs
pooled over seeds) and `sparring infer` (the seed's inference command line). Heavy imports
happen inside the handlers.

Covers: arguments, checks of user input, and printing. Does not cover: evaluation itself
(sparring.evaluation), generation and checkpoints (sparring.serving.inference, sparring.backends).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from sparring.cli.common import (
    Deprecated,
    add_config_args,
    add_group,
    config_from_args,
    output_dir,
    output_file,
    write_output,
)
from sparring.errors import SparringError, read_user_text
from sparring.evaluation.arms import ARM_MEASURES, ARMS
from sparring.evaluation.heldout import Heldout

SET_HELP = (
    "held-out set measured: new_tasks (tasks never trained, of trained "
    "families; default), new_families, trained_tasks (new instances of trained tasks) or bundled"
)


def add_commands(sub) -> None:
    ev = add_group(sub, "eval", "evaluate answerers: HumanEval pass@k, snapshots, cross-play")
    p = ev.add_parser(
        "humaneval",
        help="HumanEval pass@k in Sparring's sandbox, from samples or a checkpoint",
        description="Evaluate official-format samples (--samples) or generate them first with a "
        "model (--checkpoint), then run every sample against HumanEval's tests in the sandbox.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--samples", metavar="FILE.jsonl", help="samples: task_id, completion")
    src.add_argument("--checkpoint", metavar="PATH|NAME", help="model to generate samples with")
    p.add_argument("--limit", type=int, default=None, help="first N tasks (default: all 164)")
    p.add_argument("--samples-per-task", type=int, default=1, help="completions per task")
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sampling temperature (default 0 = greedy; 0.8 with several samples)",
    )
    p.add_argument("--top-p", type=float, default=0.95, help="nucleus sampling")
    p.add_argument("--max-tokens", type=int, default=320, help="new tokens per completion")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    p.add_argument("--output", metavar="FILE.jsonl", help="write the generated samples here")
    p.add_argument("--timeout", type=float, default=None, help="seconds per test (sandbox)")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    add_config_args(p)
    p.set_defaults(func=_eval_humaneval)

    p = ev.add_parser(
        "snapshots",
        help="evaluate answerer snapshots and write a run report",
        description="Evaluate a run's answerer snapshots (base model first) on its data folder "
        "(--data-dir: val and eval sets) with each round's tests and the bank, choose the best "
        "the way the select phase does, and write report.json, report.md and the figures to "
        "--out.",
    )
    p.add_argument("--data-dir", required=True, help="folder with train/val/eval.jsonl")
    p.add_argument(
        "--model",
        dest="models",
        action="append",
        required=True,
        help="answerer snapshot, round order (repeat; first = base model)",
    )
    p.add_argument(
        "--round-tests",
        action="append",
        default=[],
        help="validated tests JSONL of a round (repeat, round order)",
    )
    p.add_argument("--bank", default="", help="adversarial test bank JSONL")
    p.add_argument("--out", required=True, help="output folder (report.json, report.md, PNGs)")
    add_config_args(p)
    p.set_defaults(func=_eval_snapshots)

    p = ev.add_parser(
        "control",
        help="a treatment's held-out gain over its control's, from two runs' heldout.json",
        description="Print `LEARN reward_vs_control`: the treatment's held-out gain (final - "
        "base) minus the control's, with a 95% bootstrap interval over tasks (a task's "
        "instances together). Each file is the learning/heldout.json that a run's evaluate "
        "phase logs to MLflow (make learn and make learn-control print the line themselves "
        "when both are in one MLflow experiment; this compares runs kept apart). Refused "
        "unless both name their answerer reward, the rewards differ, and both measured the "
        "same problems with the same base scores. The two runs must differ in their answerer "
        "reward alone (or in --arm's field): the files cannot show that.",
    )
    p.add_argument("treatment", metavar="TREATMENT.json", help="the treatment's heldout.json")
    p.add_argument("control", metavar="CONTROL.json", help="the control's heldout.json")
    _add_heldout_set(p)
    p.add_argument(
        "--arm", default="reward_vs_control", choices=[name for name, _ in ARMS],
        help="which pair of arms the files are (the line's name; each pair is one config field "
        "apart: the reward, phase_schedule, data.given_tests, rewards.answerer_bank)",
    )  # fmt: skip
    p.add_argument(
        "--measure", default="discriminating", choices=[m for m, _ in ARM_MEASURES],
        help="discriminating: the share of tests passed (default); strict: the share of "
        "answers passing every test (the line's name gains _strict)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (the run's seed: 0)")
    p.set_defaults(func=_eval_control)

    p = ev.add_parser(
        "pool",
        help="held-out gains pooled over several training seeds, from their heldout.json",
        description="Print the `LEARN heldout_<set>` lines pooled over several runs of one "
        "config that differ in their training seed (one learning/heldout.json each), with a "
        "95% bootstrap interval resampling runs and tasks: `n=TASKS seeds=K`. Given control "
        "runs' files (--control), also `LEARN reward_vs_control` pooled over both sides' runs. "
        "Refused unless all files measured the same held-out sets of the same problems with "
        "the same base scores, the runs share one answerer reward and the controls another.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN.json", help="one heldout.json per run")
    p.add_argument(
        "--control", dest="controls", nargs="+", default=[], metavar="CONTROL.json",
        help="the control runs' heldout.json files",
    )  # fmt: skip
    _add_heldout_set(p)
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (the run's seed: 0)")
    p.set_defaults(func=_eval_pool)

    p = sub.add_parser(
        "infer",
        help="solve problems with a trained answerer (optionally running tests)",
        description="Generate a solution with a checkpoint for one problem (--problem or "
        "--problem-file) or many (--batch --problems-file), optionally running tests.",
    )
    p.add_argument(
        "--checkpoint",
        required=True,
        help="model folder, built-in name, or models:/NAME@ALIAS (MLflow registry)",
    )
    p.add_argument("--problem", help="problem description")
    p.add_argument("--problem-file", help="file holding the problem description")
    p.add_argument("--signature", default="", help="function signature, e.g. 'def f(x):'")
    p.add_argument("--tests", default="", help="tests separated by ';', e.g. 'assert f(1)==2'")
    p.add_argument("--execute-tests", action="store_true", help="run the tests in the sandbox")
    p.add_argument("--batch", action="store_true", help="batch mode (with --problems-file)")
    p.add_argument(
        "--problems-file",
        metavar="FILE",
        help="problems, read as every problems file is: JSON Lines (one per line), a JSON list "
        'or {"problems": [...]}; full records or {"description", "signature", "tests"}',
    )
    p.add_argument("--output", metavar="FILE.json", help="write results as JSON")
    p.add_argument("--no-reasoning", action="store_true", help="show only the code")
    p.add_argument(
        "--stages",
        default="",
        help="reasoning stages, comma-separated, ending with code "
        "(default: from the config, direct code)",
    )
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    p.add_argument("--max-tokens", type=int, default=512, help="max new tokens (default 512)")
    p.add_argument("--temperature", type=float, default=0.7, help="0 = greedy (default 0.7)")
    p.add_argument("--top-p", type=float, default=0.9, help="nucleus sampling (default 0.9)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument(
        "--answers",
        type=int,
        default=1,
        metavar="N",
        help="answers sampled a problem (default 1); with N > 1 one is chosen by --choose-by",
    )
    p.add_argument(
        "--choose-by",
        default="none",
        metavar="RULE",
        help="with --answers N: among the answers passing the problem's tests, the one passing "
        "the most tests of these sources, joined by '+': fuzz, base (the config's generator), "
        "writer:PATH (a trained writer); each source's tests kept only where the problem's "
        "reference passes them. none (default): the first answer passing the problem's tests. "
        "Ties are reported as a set",
    )
    p.add_argument(
        "--choose-k",
        type=int,
        default=3,
        metavar="k",
        help="valid tests each source keeps a problem (default 3)",
    )
    p.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking URI for models:/ checkpoints (default: MLFLOW_TRACKING_URI, "
        "else tracking.mlflow_uri of the config)",
    )
    add_config_args(p)
    p.set_defaults(func=_infer)


def _chooser(args: argparse.Namespace, cfg: Any, problems: list) -> Any:
    """The choice among --answers answers (sparring.experiments.choose_answers), or None for
    one answer; a SparringError naming the flag on a bad value, before anything is sampled."""
    if args.answers < 1:
        raise SparringError(f"--answers {args.answers}: give 1 or more answers a problem")
    if args.choose_k < 1:
        raise SparringError(f"--choose-k {args.choose_k}: give 1 or more tests a source keeps")
    if args.answers == 1:
        if args.choose_by.strip() != "none":
            raise SparringError("--choose-by chooses among answers: give --answers N (N > 1)")
        return None
    from sparring.experiments.choose_answers import choose_answers, parse_rule, without_reference

    try:
        sources = parse_rule(args.choose_by, cfg.model_for("generator").name)
    except ValueError as exc:
        raise SparringError(f"--choose-by: {exc}") from None
    unreferenced = without_reference(problems)
    if sources and unreferenced:
        raise SparringError(
            f"--choose-by {args.choose_by}: {len(unreferenced)} of {len(problems)} problems have "
            "no reference solution, and a source's tests are kept only where the reference "
            "passes them: give a problems file whose records carry reference_solution, or "
            "--choose-by none"
        )

    def choose(problems, texts):
        try:
            return choose_answers(cfg, problems, texts, sources, args.choose_k, args.seed, 4)
        except ValueError as exc:
            raise SparringError(f"--choose-by {args.choose_by}: {exc}") from None

    return choose


def _add_heldout_set(p: argparse.ArgumentParser) -> None:
    """`--heldout-set NAME` (`--set`, its old spelling here, means a config override elsewhere)."""
    p.add_argument("--heldout-set", dest="set_name", default="new_tasks", metavar="SET",
                   help=SET_HELP)  # fmt: skip
    p.add_argument("--set", dest="set_name", action=Deprecated, new="--heldout-set",
                   metavar="SET")  # fmt: skip


def _eval_humaneval(args: argparse.Namespace) -> int:
    from sparring.evaluation.humaneval import evaluate_humaneval_samples, read_samples
    from sparring.problems import load_humaneval
    from sparring.sandbox.limits import trusted_limits

    cfg = config_from_args(args)
    output = output_file(args.output, "--output") if args.output else None
    if args.samples_per_task < 1:
        raise SparringError("--samples-per-task: must be >= 1")
    if args.limit is not None and args.limit < 0:
        raise SparringError("--limit: must be >= 0")
    started = time.perf_counter()
    problems = load_humaneval()
    overrides = {"timeout_s": args.timeout} if args.timeout else {}
    limits = trusted_limits(cfg, **overrides)
    if args.samples:
        samples = read_samples(args.samples)
        if args.limit:
            keep = {p.id for p in problems[: args.limit]}
            samples = [s for s in samples if s["task_id"] in keep]
    else:
        targets = problems[: args.limit] if args.limit else problems
        temperature = args.temperature
        if temperature is None:
            temperature = 0.0 if args.samples_per_task == 1 else 0.8
        from sparring.backends.sampler import load_answerer, sample_answers
        from sparring.evaluation.humaneval import sample_rows
        from sparring.sandbox.isolation import check
        from sparring.serving.inference import resolve_checkpoint

        check(limits.isolation)  # fail closed before the model loads, not after generating
        # also models:/NAME@ALIAS from the registry
        answerer = load_answerer(resolve_checkpoint(args.checkpoint), device=args.device)
        completions = sample_answers(
            answerer,
            targets,
            num_samples=args.samples_per_task,
            max_new_tokens=args.max_tokens,
            temperature=temperature,
            top_p=args.top_p,
            seed=cfg.seed,
            label=None if args.json else "eval",
        ).texts
        samples = sample_rows(targets, completions)
        if output is not None:
            write_output(output, "".join(json.dumps(s) + "\n" for s in samples), "--output")
    generated = time.perf_counter()
    result = evaluate_humaneval_samples(samples, problems, limits, cfg.data.pass_k)
    if not args.json and len(samples) > FEW:
        from sparring import progress

        progress.say(f"eval: {len(samples)} samples run in {time.perf_counter() - generated:.0f}s")
    result["seconds"] = {
        "generation": round(generated - started, 1),
        "execution": round(time.perf_counter() - generated, 1),
    }
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return 0
    for r in result["results"]:
        print(f"{r['task_id']:16s} {'PASS' if r['passed'] else 'fail'}  {r.get('result', '')[:90]}")
    metrics = "  ".join(f"{k}={v:.4f}" for k, v in result.items() if k.startswith("pass@"))
    print(f"{result['tasks']} tasks, {result['samples']} samples: {metrics}")
    return 0


FEW = 8  # more samples than this: a line when their tests have run


def _read_heldout(path: str) -> Heldout:
    """A heldout.json as its typed record; SparringError when it cannot be read, is not JSON or
    is no heldout.json."""
    try:
        return Heldout.load(path)
    except ValueError as exc:
        raise SparringError(str(exc)) from None


def _eval_control(args: argparse.Namespace) -> int:
    from sparring.evaluation.arms import heldout_pair, reward_vs_control

    runs = [_read_heldout(path) for path in (args.treatment, args.control)]
    field = dict(ARMS)[args.arm]
    name = args.arm + dict(ARM_MEASURES)[args.measure]
    try:
        treatment, control, tasks = heldout_pair(
            runs[0], runs[1], args.set_name, field, args.measure
        )
        print(reward_vs_control(treatment, control, tasks, seed=args.seed, name=name))
    except ValueError as exc:
        raise SparringError(str(exc)) from None
    return 0


def _eval_pool(args: argparse.Namespace) -> int:
    from sparring.evaluation.arms import pool_lines

    runs = [(path, _read_heldout(path)) for path in args.runs]
    controls = [(path, _read_heldout(path)) for path in args.controls]
    try:
        lines = pool_lines(runs, controls, args.set_name, seed=args.seed)
    except ValueError as exc:
        raise SparringError(str(exc)) from None
    print("\n".join(lines))
    return 0


def _eval_snapshots(args: argparse.Namespace) -> int:
    from sparring.evaluation.snapshots import evaluate_snapshots

    cfg = config_from_args(args)
    output_dir(args.out, "--out")
    report = evaluate_snapshots(
        cfg, args.data_dir, args.models, args.round_tests, args.bank, args.out
    )
    sel = report["selection"]
    print(f"wrote {args.out}/report.json and report.md; selection: {sel['reason']}")
    return 0


def _infer(args: argparse.Namespace) -> int:
    from sparring.serving import inference as inf

    given = [bool(args.problem), bool(args.problem_file), bool(args.batch or args.problems_file)]
    if sum(given) == 0:
        raise SparringError(
            "no problem given: pass --problem TEXT, --problem-file FILE, or --batch --problems-file"
        )
    if sum(given) > 1:
        raise SparringError(
            "give one of --problem, --problem-file, or --batch --problems-file (not several)"
        )
    if args.batch and not args.problems_file:
        raise SparringError("--batch needs --problems-file FILE (.json or .jsonl)")
    if args.problems_file and not args.batch:
        raise SparringError("--problems-file needs --batch")
    output = output_file(args.output, "--output") if args.output else None  # before generating
    tests = inf.split_tests(args.tests)
    if args.batch:
        problems = inf.read_problems_file(args.problems_file)
    else:
        text = args.problem
        if args.problem_file:
            path = Path(args.problem_file)
            if not path.is_file():
                raise SparringError(f"{args.problem_file}: no such problem file")
            text = read_user_text(path)
        problems = [inf.make_problem(text, args.signature, tests)]
    cfg = config_from_args(args)
    if args.stages:
        stages = [s.strip() for s in args.stages.split(",") if s.strip()]
        if not stages or stages[-1] != "code":
            raise SparringError("--stages: list stages ending with code, e.g. informal,code")
    else:
        stages = ["code"] if cfg.reasoning.direct else list(cfg.reasoning.stages)
    if args.execute_tests and not any(p.baseline_tests for p in problems):
        raise SparringError("--execute-tests needs tests: pass --tests 'assert f(1) == 2; …'")
    from sparring.sandbox.limits import trusted_limits

    choose = _chooser(args, cfg, problems)
    records = inf.solve(
        args.checkpoint,
        problems,
        execute_tests=args.execute_tests,
        device=args.device,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        stages=stages,
        seed=args.seed,
        tracking_uri=args.tracking_uri
        or os.environ.get("MLFLOW_TRACKING_URI")
        or cfg.tracking.mlflow_uri,
        limits=trusted_limits(cfg),
        samples=args.answers,
        choose=choose,
    )
    for i, record in enumerate(records):
        if i:
            print("\n" + "-" * 60)
        print(inf.format_result(record, show_reasoning=not args.no_reasoning))
    if output is not None:
        payload = records if args.batch else records[0]
        write_output(output, json.dumps(payload, indent=1), "--output")
        print(f"\nwrote {args.output}")
    return 0
