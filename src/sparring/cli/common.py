"""Arguments shared by every command that takes an experiment config (`--config`, `--set`),
`add_group`, a subcommand group whose bare form prints its own help, `Deprecated`, an old
spelling of an option that still works and says so in one line, and the output files a command
writes (`output_file`, `output_dir`: checked before the work that fills them; `write_output`;
`output_error`): a path that cannot be written is one line naming the flag, never a traceback.

Does not cover: loading or validating configs (sparring.config) or any command of its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sparring.config import Config, load_config
from sparring.errors import SparringError, disk_full


def add_group(sub, name: str, help_text: str) -> argparse._SubParsersAction:
    """A subcommand group (`sparring NAME …`) whose bare form prints its own help."""
    group = sub.add_parser(name, help=help_text, description=help_text)
    group.set_defaults(func=None, group_parser=group)
    return group.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")


def deprecated(old: str, new: str) -> None:
    """Say on stderr, in one line, that `old` is an old spelling of `new` (it still works)."""
    print(f"warning: {old} is deprecated and will go; use {new}", file=sys.stderr)


class Deprecated(argparse.Action):
    """An option's old spelling: stores its value where the new one does and warns in one line
    (`add_argument("--old", action=Deprecated, new="--new", dest=...)`)."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        self.new = new
        kwargs.setdefault("help", f"deprecated spelling of {new}")
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        deprecated(option_string or self.option_strings[0], self.new)
        setattr(namespace, self.dest, values)


def add_config_args(
    parser: argparse.ArgumentParser,
    required: bool = False,
    without: str | None = "the embedded defaults are used",
) -> None:
    """Add `--config FILE` and repeatable `--set key.path=value` to a subcommand; `without`
    says what the command does without `--config` (None: it needs one, and checks that
    itself)."""
    parser.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        required=required,
        help="experiment YAML (see configs/); required"
        if required or without is None
        else f"experiment YAML (see configs/); without it {without}",
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


def output_file(path: str, flag: str) -> Path:
    """`path` as a file the command may write (its folders made as needed), checked before the
    work that fills it: SparringError naming `flag` when it is a folder, when a file stands
    where a folder must be, or when the nearest existing folder is not writable."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise SparringError(f"{flag} {path}: is a folder; name a file")
    _writable_from(target.parent, path, flag)
    return target


def output_dir(path: str, flag: str) -> Path:
    """`path` as a folder the command may write into (made as needed), checked before the
    work: SparringError naming `flag` when a file stands there or where one of its folders
    must be, or when the nearest existing folder is not writable."""
    target = Path(path).expanduser()
    if target.exists() and not target.is_dir():
        raise SparringError(f"{flag} {path}: is a file; name a folder")
    _writable_from(target, path, flag)
    return target


def _writable_from(folder: Path, path: str, flag: str) -> None:
    """The nearest existing folder at or above `folder` must be a writable folder."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise SparringError(f"{flag} {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SparringError(f"{flag} {path}: cannot write in {folder} (permission denied)")


def output_error(exc: OSError, target: Path, flag: str) -> SparringError | None:
    """One line naming `flag` for a write to `target` (or to its folder: a temporary file, a
    folder made for it) that failed; None for an error elsewhere, which is not the output's."""
    full = disk_full(exc, target)
    if full is not None:
        return full
    where = Path(exc.filename).resolve() if exc.filename else None
    if where is not None and not target.resolve().is_relative_to(where.parent):
        return None
    return SparringError(f"{flag} {target}: cannot write: {exc.strerror or exc}")


def write_output(target: Path, text: str, flag: str) -> None:
    """Write `text` to an output file (made by `output_file`); a failure is one line."""
    from sparring.atomic import write_file

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file(target, text.encode())
    except OSError as exc:
        error = output_error(exc, target, flag)
        if error is None:
            raise
        raise error from None
