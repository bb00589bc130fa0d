"""A study run's folder: the files a finished run leaves, reading them back, and their filed
copies.

Covers: the file names (`RECORD` written last, so a folder with it is a finished run;
`HELDOUT`, `LEARN`, `BANK`), `read_record`, `read_run` (a finished run as a
sparring.experiments.study.StudyRun with its record; for runs filed before record.json kept its
scalars, the 2026-12-02 study's, the values come from learn.txt: `old_learn_values`), and the
filed copies (`file_run`, `restore`): every finished run's files kept in a folder under git
(docs/results, as <run>-<date>-<file>), so a fresh clone goes on from them and a report is
rebuilt from them.
Does not cover: running a run or planning a study (sparring.experiments.study_runner), a run's
pipeline outputs (sparring.experiments.run_outputs), the statistics
(sparring.experiments.study).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.evaluation.heldout import Heldout
from sparring.experiments.study import StudyRun

RECORD = "record.json"  # written last: a run folder with it is a finished run
HELDOUT = "heldout.json"
LEARN = "learn.txt"
BANK = "bank.jsonl"  # the run's final bank, each test with the answers only it caught
# a run's files in the order they are copied: record.json last, so a torn copy is unfinished;
# a run without a generator phase has no bank
FILED = (HELDOUT, LEARN, BANK, RECORD)


def read_record(folder: Path) -> dict[str, Any] | None:
    return read_record_file(folder / RECORD)


def read_record_file(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None  # a torn or foreign file: the run counts as not finished
    return record if isinstance(record, dict) else None


def copy_run(source: Path, source_prefix: str, target: Path, target_prefix: str) -> list[Path]:
    """Copy a run's files (`FILED`, record.json last) from `source` to `target`, each name
    prefixed; the copies' paths."""
    target.mkdir(parents=True, exist_ok=True)
    return [
        Path(shutil.copyfile(source / f"{source_prefix}{part}", target / f"{target_prefix}{part}"))
        for part in FILED
        if (source / f"{source_prefix}{part}").is_file()
    ]


def file_run(out: Path, name: str, filed: Path) -> list[Path]:
    """Copy the finished run `out`/`name` to `filed` as `<name>-<day it finished>-<file>`;
    the copies' paths (none when the run has not finished)."""
    record = read_record(out / name)
    if record is None or not (out / name / HELDOUT).is_file():
        return []
    day = str(record.get("finished", ""))[:10] or datetime.date.today().isoformat()
    return copy_run(out / name, "", filed, f"{name}-{day}-")


def restore(filed: Path, out: Path, names: Sequence[str]) -> list[str]:
    """Copy back to `out`/<name>/ the latest filed run of each of `names` that has no finished
    run under `out` (a fresh clone, a lost local_outputs); one line per run restored. Whatever
    its code: the plan reruns a run of other code, as it does one that ran here."""
    lines = []
    for name in names:
        if read_record(out / name) is not None:
            continue  # a run here is never replaced by a copy
        for record_path in sorted(filed.glob(f"{name}-????-??-??-{RECORD}"), reverse=True):
            prefix = record_path.name[: -len(RECORD)]
            record = read_record_file(record_path)
            if record and record.get("name") == name and (filed / f"{prefix}{HELDOUT}").is_file():
                copy_run(filed, prefix, out / name, "")
                lines.append(f"study: {name} restored from {filed / prefix}*")
                break
    return lines


# The LEARN lines of the values `run_values` keeps, for runs filed before record.json kept them
OLD_LEARN_VALUES = {
    "false_positive_rate": re.compile(r"^LEARN false_positive_rate (\S+)"),
    "generator_catch_heldout": re.compile(r"^LEARN generator_catch_heldout base=(\S+) final=(\S+)"),
    "humaneval_pass_at_1": re.compile(r"^LEARN humaneval_pass_at_1 base=(\S+) final=(\S+)"),
}


def old_learn_values(lines: Sequence[str]) -> dict[str, float]:
    """For OLD FILES ONLY: the values `run_values` keeps in record.json, read back from a run's
    LEARN lines, for runs whose record.json has no `values` (every run filed before it did, the
    2026-12-02 study's 15 among them: the false-positive rate, the generators' catch rate and
    HumanEval pass@1 are in their learn.txt and nowhere else); n/a left out.

    >>> old_learn_values(["LEARN false_positive_rate 0.120",
    ...                   "LEARN generator_catch_heldout base=0.300 final=n/a ci95_delta=n/a",
    ...                   "LEARN humaneval_pass_at_1 base=0.050 final=0.100"])
    {'false_positive_rate': 0.12, 'generator_catch_heldout_base': 0.3, \
'humaneval_pass_at_1_base': 0.05, 'humaneval_pass_at_1_final': 0.1}
    """
    out: dict[str, float] = {}
    for line in lines:
        for name, pattern in OLD_LEARN_VALUES.items():
            match = pattern.match(line.strip())
            if not match:
                continue
            values = match.groups()
            keys = [name] if len(values) == 1 else [f"{name}_base", f"{name}_final"]
            for key, value in zip(keys, values, strict=True):
                with contextlib.suppress(ValueError):
                    out[key] = float(value)
    return out


def read_run(folder: Path, arm: str, seed: int) -> tuple[StudyRun, dict[str, Any]] | None:
    """(the run, its record) of a finished run's folder, None when it has not finished: its
    heldout.json through the typed record, the values from its record.json (or, for an old
    file without them, `old_learn_values` of its learn.txt). A heldout.json that is not one is
    a SparringError naming it."""
    record = read_record(folder)
    if record is None or not (folder / HELDOUT).is_file():
        return None
    try:
        heldout = Heldout.load(folder / HELDOUT)
    except ValueError as exc:
        raise SparringError(str(exc)) from None
    learn_file = folder / LEARN
    learn = tuple(learn_file.read_text().splitlines()) if learn_file.is_file() else ()
    values = record.get("values")
    if not isinstance(values, dict):  # an old file: before record.json kept them
        values = old_learn_values(learn)
    return StudyRun(folder.name, arm, seed, heldout, values, learn), record
