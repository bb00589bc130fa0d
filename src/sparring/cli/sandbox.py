"""`sparring sandbox exec` and `sparring sandbox validate`.

`add_commands(sub)` is wired into the top-level `sparring` parser; `python -m
sparring.cli.sandbox ...` runs the same commands standalone. Exit 0 whenever the sandbox ran
(whatever the tests did), 2 on bad input (one line on stderr, no traceback), 1 on a sandbox infra
failure.
Covers: argument parsing and printing. Does not cover: any execution logic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sparring.cli.common import add_group
from sparring.sandbox.limits import SandboxLimits
from sparring.sandbox.plan import parse_tests_file


class _InputError(Exception):
    pass


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _InputError(f"cannot read {what} {path}: {e.strerror or e}") from None


def _limits(args: argparse.Namespace) -> SandboxLimits:
    try:
        return SandboxLimits(
            timeout_s=args.timeout,
            memory_mb=args.memory_mb,
            isolation=args.isolation,
        )
    except ValueError as e:
        raise _InputError(str(e)) from None


def _cmd_exec(args: argparse.Namespace) -> int:
    from sparring.sandbox.pool import Sandbox

    try:
        solution = _read(args.solution, "solution file")
        tests = parse_tests_file(_read(args.tests, "tests file"))
        limits = _limits(args)
    except _InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with Sandbox(limits) as sb:
        report = sb.run(solution, tests)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        for r in report.results:
            print(f"{r.outcome:<13} {r.test[:60]:<60} {r.detail[:60]}")
        print(f"passed {report.passed}/{report.total}")
    if report.infra_error:
        print(f"error: {report.infra_error}", file=sys.stderr)
        return 1
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from sparring.sandbox.pool import Sandbox
    from sparring.sandbox.validation import validate_tests

    try:
        try:
            problem = json.loads(_read(args.problem, "problem file"))
        except json.JSONDecodeError as e:
            raise _InputError(f"problem file {args.problem} is not JSON: {e}") from None
        if not isinstance(problem, dict) or not isinstance(problem.get("reference_solution"), str):
            raise _InputError(f"problem file {args.problem} has no 'reference_solution' string")
        tests = parse_tests_file(_read(args.tests, "tests file"))
        solutions = [_read(p, "solution file") for p in args.solutions or []]
        limits = _limits(args)
    except _InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with Sandbox(limits) as sb:
        report = validate_tests(problem["reference_solution"], tests, solutions, sb)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        for v in report.verdicts:
            mark = "valid" if v.valid else ("dup" if v.duplicate else "invalid")
            print(f"{mark:<8} breaks={v.breaks!s:<10} {v.test[:60]:<60} {v.reason[:50]}")
        print(f"validity {report.validity:.3f}  discrimination {report.discrimination:.3f}")
    if report.infra_error:
        print(f"error: {report.infra_error}", file=sys.stderr)
        return 1
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tests", required=True, help="file with one assert per line")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds per test (wall clock)")
    p.add_argument("--memory-mb", type=int, default=512, help="address space limit per test")
    p.add_argument(
        "--isolation",
        choices=["auto", "bwrap", "none"],
        default="auto",
        help="auto and bwrap: bubblewrap namespaces (stops in one line where they do not work); "
        "none: rlimits only, no file system, network or /proc isolation (default auto)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register `sandbox exec` and `sandbox validate` on a top-level subparsers object."""
    sub = add_group(subparsers, "sandbox", "run untrusted code against tests")
    ex = sub.add_parser(
        "exec",
        help="run a solution against tests",
        description="Run a Python file against a file of asserts (one per line), each test "
        "alone in the sandbox under its time and memory limits, and print each test's outcome "
        "(passed, failed, error, timeout, ...) and the count passed. Exit 0 whenever the "
        "sandbox ran, 2 on bad input, 1 on a sandbox failure.",
    )
    ex.add_argument("--solution", required=True, help="Python file defining the function(s)")
    _common(ex)
    ex.set_defaults(func=_cmd_exec)
    va = sub.add_parser(
        "validate",
        help="validate generated tests against a reference solution",
        description="Judge generated tests the way the validate phase does: a test is valid "
        "when the problem's reference solution passes it (duplicates are marked), and each "
        "valid test says which --solutions it breaks. Prints each verdict, the validity and "
        "the discrimination (the share of valid tests that break some solution).",
    )
    va.add_argument("--problem", required=True, help="JSON file with 'reference_solution'")
    va.add_argument("--solutions", nargs="*", default=[], help="solution files to try to break")
    _common(va)
    va.set_defaults(func=_cmd_validate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sparring")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):  # the bare group: its help, as `sparring sandbox` does
        args.group_parser.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
