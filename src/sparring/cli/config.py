"""`sparring config validate | show | reference`: check a config file, print the resolved config,
list every field with its default and doc.

Does not cover: what a config holds, its defaults and validation (sparring.config).
"""

from __future__ import annotations

import argparse
import sys

from sparring import config as config_mod
from sparring.cli.common import add_config_args, add_group, config_from_args, deprecated
from sparring.errors import SparringError


def add_commands(sub) -> None:
    cfg = add_group(sub, "config", "validate and show experiment configs")
    p = cfg.add_parser(
        "validate",
        help="check a config file; exit 0 when valid",
        description="Check an experiment YAML (with any --set overrides) the way every command "
        "loads it: unknown keys, types, bounds and the checks across fields. Prints one line "
        "with its name, rounds and digest and exits 0, or one line naming the field and exits 2.",
    )
    add_config_args(p, without=None)
    p.add_argument("file", nargs="?", metavar="FILE", help="deprecated: use --config FILE")
    p.set_defaults(func=_config_validate)
    p = cfg.add_parser(
        "show",
        help="print the resolved config (defaults filled in)",
        description="Print the config as every command would use it: the file's values, the "
        "--set overrides applied and every other field at its default, as YAML in schema order.",
    )
    add_config_args(p)
    p.set_defaults(func=_config_show)
    p = cfg.add_parser(
        "reference",
        help="print every config field with its default and doc",
        description="List every config field: key, type, default and what it means "
        "(docs/config-reference.md is this list with --markdown).",
    )
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.set_defaults(func=_config_reference)


def _config_validate(args: argparse.Namespace) -> int:
    if args.file and args.config:
        raise SparringError(f"config validate: give the file once, as --config {args.config}")
    if args.file:
        deprecated(f"`sparring config validate {args.file}`", f"--config {args.file}")
        args.config = args.file
    if not args.config:
        raise SparringError("config validate: --config FILE is required (the YAML to check)")
    cfg = config_from_args(args)
    print(f"{args.config}: valid ({cfg.name}, {cfg.rounds} rounds, digest {cfg.digest()})")
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
