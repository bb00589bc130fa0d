"""`sparring config validate | show | reference`: check a config file, print the resolved config,
list every field with its default and doc.

Does not cover: what a config holds, its defaults and validation (sparring.config).
"""

from __future__ import annotations

import argparse
import sys

from sparring import config as config_mod
from sparring.cli.common import add_config_args, add_group, config_from_args


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
