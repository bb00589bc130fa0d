"""Arguments shared by every command that takes an experiment config (`--config`, `--set`)."""

from __future__ import annotations

import argparse

from sparring.config import Config, load_config


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
