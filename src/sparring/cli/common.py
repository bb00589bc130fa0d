"""Arguments shared by every command that takes an experiment config (`--config`, `--set`), and
`add_group`, a subcommand group whose bare form prints its own help.

Does not cover: loading or validating configs (sparring.config) or any command of its own.
"""

from __future__ import annotations

import argparse

from sparring.config import Config, load_config


def add_group(sub, name: str, help_text: str) -> argparse._SubParsersAction:
    """A subcommand group (`sparring NAME …`) whose bare form prints its own help."""
    group = sub.add_parser(name, help=help_text, description=help_text)
    group.set_defaults(func=None, group_parser=group)
    return group.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")


def add_config_args(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """Add `--config FILE` and repeatable `--set key.path=value` to a subcommand."""
    parser.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        required=required,
        help="experiment YAML (see configs/); without it the embedded defaults are used",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override one config field, e.g. --set rounds=3 --set grpo.beta=0.04 (repeatable)",
    )


def config_from_args(args: argparse.Namespace) -> Config:
    """The validated config named by `--config` with `--set` overrides applied."""
    return load_config(getattr(args, "config", None), getattr(args, "overrides", []))
