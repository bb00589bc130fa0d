"""`sparring rerun`: run a filed run again and print, line by line, where its LEARN lines differ.

Covers: reading a filed run (its record.json: the `--set` overrides it ran with; its learn.txt
beside it, as the study files them: <prefix>-record.json and <prefix>-learn.txt), running
`sparring run` with those overrides and the filed run's torch thread count (`torch_threads`;
completions depend on it), a warning when the record names another CPU kind
(`cpu_capability`), its output passed through, and the comparison
(sparring.experiments.learn_diff). Exit 0 when every line repeats, 1 when one differs. With
`--compare LOG` it runs nothing and compares with a rerun's saved output.
Does not cover: checking out the commit the run was filed at: rerun from a worktree at the
record's code (its `code` field is the sparring source digest, `lineage.code_digest`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from sparring.errors import SparringError


def add_commands(sub) -> None:
    p = sub.add_parser(
        "rerun",
        help="run a filed run again and print where its LEARN lines differ from the filed ones",
        description="Read a filed run's record.json (the --set overrides it ran with) and the "
        "learn.txt beside it, run `sparring run --config CONFIG` with the same overrides, and "
        "print one RERUN line per LEARN measure: same, or differs with both values. Exit 1 when "
        "a line differs. Run it from a checkout at the run's code (the record's `code`).",
    )
    p.add_argument("record", metavar="RECORD", help="a filed run's record.json")
    p.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        default="configs/learn.yaml",
        help="the config the run's overrides apply to (default configs/learn.yaml, the study's)",
    )
    p.add_argument(
        "--learn",
        metavar="FILE",
        help="the filed LEARN lines (default: the learn.txt beside RECORD)",
    )
    p.add_argument(
        "--compare",
        metavar="LOG",
        help="compare with the LEARN lines of a rerun that already ran (its saved output, e.g. "
        "from a cluster, or a copy started with the record's overrides and thread count) "
        "instead of running one",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more override after the record's (e.g. a pipeline_root of the rerun's own)",
    )
    p.set_defaults(func=_rerun)


def filed_learn_path(record: Path) -> Path:
    """The learn.txt filed with `record`: <prefix>-learn.txt beside <prefix>-record.json, or
    learn.txt in the same folder (a run folder under local_outputs/study)."""
    name = record.name
    if name.endswith("-record.json"):
        return record.with_name(name[: -len("record.json")] + "learn.txt")
    return record.with_name("learn.txt")


def _rerun(args: argparse.Namespace) -> int:
    from sparring.backends import lineage
    from sparring.experiments import learn_diff

    record_path = Path(args.record)
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as exc:
        raise SparringError(f"RECORD {record_path}: cannot read it as JSON ({exc})") from None
    overrides = record.get("overrides") if isinstance(record, dict) else None
    if not isinstance(overrides, list):
        raise SparringError(f"RECORD {record_path}: no 'overrides' list: not a filed run's record")
    learn_path = Path(args.learn) if args.learn else filed_learn_path(record_path)
    try:
        filed = learn_diff.learn_lines(learn_path.read_text())
    except OSError as exc:
        raise SparringError(f"--learn {learn_path}: {exc.strerror or exc}") from None
    if not filed:
        raise SparringError(f"--learn {learn_path}: no LEARN line in it")
    if args.compare:
        try:
            ran = learn_diff.learn_lines(Path(args.compare).read_text())
        except OSError as exc:
            raise SparringError(f"--compare {args.compare}: {exc.strerror or exc}") from None
        if not ran:
            raise SparringError(f"--compare {args.compare}: no LEARN line in it")
        return _report(filed, ran)
    if not Path(args.config).is_file():
        raise SparringError(f"--config {args.config}: no such file")
    sets = [*map(str, overrides), *args.overrides]
    cmd = [sys.executable, "-m", "sparring.cli.main", "run", "--config", args.config]
    cmd += [part for s in sets for part in ("--set", s)]
    threads = record.get("torch_threads")
    name, code = record.get("name", record_path.name), record.get("code")
    print(f"rerun {name} (filed at code {code}, torch_threads={threads or 'unrecorded'}): "
          + " ".join(cmd[3:]), flush=True)  # fmt: skip
    warning = lineage.cpu_warning(record.get("cpu_capability"), lineage.cpu_capability())
    if warning:
        print(f"rerun {name}: {warning}", file=sys.stderr, flush=True)
    lines: list[str] = []
    # completions depend on torch's thread count: the rerun computes with the filed run's
    env = lineage.threads_env({**os.environ, "PYTHONUNBUFFERED": "1"}, threads)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line.rstrip("\n"))
    if proc.returncode:
        raise SparringError(f"the rerun's sparring run exited {proc.returncode}")
    return _report(filed, learn_diff.learn_lines(lines))


def _report(filed: Mapping[str, str], ran: Mapping[str, str]) -> int:
    """Print the RERUN lines of `filed` against `ran`; 0 when every line repeats, else 1."""
    from sparring.experiments import learn_diff

    report = learn_diff.report_lines(learn_diff.differences(filed, ran))
    print("\n".join(report))
    return 0 if report[-1].startswith("RERUN 0 ") else 1
