"""The `sparring` command: the top-level parser and `main` (`sparring = sparring.cli.main:main`).

Covers: the top-level parser, wiring of the subcommand modules (one per command group, in this
package), and turning user mistakes (SparringError), and a write that found the disk full
wherever it happened, into one-line messages with exit code 2 instead of tracebacks. Does not
cover: any command's arguments or handler (see COMMAND_MODULES).
Heavy frameworks (torch, kfp, mlflow) are imported only inside the subcommand that needs them,
so `sparring --help` and `sparring config validate` stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from sparring.errors import SparringError, disk_full

# Modules that define `add_commands(subparsers)`; each registers its own subcommands.
COMMAND_MODULES = (
    "sparring.cli.config",
    "sparring.cli.problems",
    "sparring.cli.calibrate",
    "sparring.cli.precheck",
    "sparring.cli.reward",
    "sparring.cli.sandbox",
    "sparring.cli.train",
    "sparring.cli.pipeline",
    "sparring.cli.evaluate",
    "sparring.cli.serve",
    "sparring.cli.game",
    "sparring.cli.study",
    "sparring.cli.rerun",
)


# commands whose results name the code that made them: refused when they would run another
# checkout's package than the one they are run in (lineage.checkout_mismatch)
FILES_RESULTS = frozenset(
    {"calibrate", "precheck", "pool-catch", "train", "phase", "run", "recur", "eval", "study",
     "rerun"}
)  # fmt: skip


def _refuse_other_checkout() -> None:
    from pathlib import Path

    from sparring.backends import lineage

    why = lineage.checkout_mismatch(Path.cwd())
    if why:
        raise SparringError(why)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparring",
        description=(
            "Adversarial self-play for code LLMs: an answerer learns to solve programming "
            "problems while a generator learns to write tests that break it (GRPO, TRL/PEFT), "
            "as a Kubeflow pipeline or locally."
        ),
        epilog="Start with: sparring run --config configs/smoke.yaml   (see README.md)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # area not present in this build
                continue
            raise
        module.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if not getattr(args, "func", None):
        # A group without its subcommand (e.g. `sparring config`): show that group's help.
        (getattr(args, "group_parser", None) or parser).print_help()
        return 2
    try:
        if args.command in FILES_RESULTS:
            _refuse_other_checkout()
        return int(args.func(args) or 0)
    except SparringError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        full = disk_full(exc)
        if full is None:
            raise
        print(f"error: {full}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
