"""`sparring config …` and `sparring problems …`: validate and show configs, list and check
problem sets. The checks run reference solutions in the sandbox."""

from __future__ import annotations

import argparse
import json
import sys

from sparring import config as config_mod
from sparring.cli_common import add_config_args, config_from_args


def add_group(sub, name: str, help_text: str) -> argparse._SubParsersAction:
    """A subcommand group (`sparring NAME …`) whose bare form prints its own help."""
    group = sub.add_parser(name, help=help_text, description=help_text)
    group.set_defaults(func=None, group_parser=group)
    return group.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")


def add_commands(sub) -> None:
    cfg = add_group(sub, "config", "validate and show experiment configs")
    p = cfg.add_parser("validate", help="check a config file; exit 0 when valid")
    p.add_argument("file", help="experiment YAML")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    p.set_defaults(func=_config_validate)
    p = cfg.add_parser("show", help="print the resolved config (defaults filled in)")
    add_config_args(p)
    p.set_defaults(func=_config_show)
    p = cfg.add_parser("reference", help="print every config field with its default and doc")
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.set_defaults(func=_config_reference)

    prob = add_group(sub, "problems", "list and check problem sets")
    p = prob.add_parser("list", help="list the problems of a source")
    p.add_argument("--source", default="bundled", help="bundled, humaneval, FILE, DIR or s3://…")
    p.add_argument("--json", action="store_true", help="print a JSON list of full problems")
    p.set_defaults(func=_problems_list)
    p = prob.add_parser("check", help="run every reference solution against its own tests")
    p.add_argument("--source", default="bundled", help="bundled, humaneval, FILE, DIR or s3://…")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per test")
    p.set_defaults(func=_problems_check)


def _config_validate(args: argparse.Namespace) -> int:
    cfg = config_mod.load_config(args.file, args.overrides)
    print(f"{args.file}: valid ({cfg.name}, {cfg.rounds} rounds, digest {cfg.digest()})")
    return 0


def _config_show(args: argparse.Namespace) -> int:
    sys.stdout.write(config_mod.dump_yaml(config_from_args(args)))
    return 0


def _config_reference(args: argparse.Namespace) -> int:
    if args.markdown:
        sys.stdout.write(config_mod.reference_markdown())
        return 0
    for key, tp, default, doc in config_mod.reference():
        print(f"{key:45s} {tp:30s} {default:20s} {doc}")
    return 0


def _problems_list(args: argparse.Namespace) -> int:
    from sparring.problems import load_source

    problems = load_source(args.source)
    if args.json:
        json.dump([p.to_dict() for p in problems], sys.stdout, indent=1)
        print()
        return 0
    for p in problems:
        print(f"{p.id:40s} {p.difficulty:7s} {len(p.baseline_tests):2d} tests  {','.join(p.tags)}")
    print(f"{len(problems)} problems")
    return 0


def _problems_check(args: argparse.Namespace) -> int:
    from sparring.problems import check_problems, load_source

    problems = load_source(args.source)
    failures = check_problems(problems, timeout_s=args.timeout)
    for problem_id, detail in failures:
        print(f"FAIL {problem_id}: {detail}", file=sys.stderr)
    print(f"{len(problems) - len(failures)}/{len(problems)} reference solutions pass their tests")
    return 1 if failures else 0
