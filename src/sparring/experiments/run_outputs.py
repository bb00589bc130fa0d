"""What a finished local run left on disk that its MLflow runs do not hold: its kfp.local output
folder (`run_outputs`) and its final bank, each test with the frozen answers only it caught
(`bank_with_catches`), which the study files beside the run's heldout.json.

Does not cover: running (sparring.local_run), the bank's format (sparring.rewards.bank), the
study's files (sparring.experiments.study_runner).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _numbered(folder: Path, prefix: str) -> list[Path]:
    """`folder`'s subfolders named `prefix` or `prefix`-<n>, in the order the rounds ran
    (kfp.local numbers a task's later instances)."""

    def order(p: Path) -> int:
        tail = p.name[len(prefix) :].lstrip("-")
        return int(tail) if tail.isdigit() else 0

    found = [p for p in folder.glob(f"{prefix}*") if p.is_dir()]
    return sorted((p for p in found if p.name == prefix or p.name[len(prefix)] == "-"), key=order)


def run_outputs(pipeline_root: str | Path, name: str) -> Path | None:
    """The newest kfp.local output folder of the config `name` under `pipeline_root`
    (`sparring-<name>-<date and time>`, pipelines.common.pipeline_name), None when there is none."""
    prefix = f"sparring-{name}".lower().replace("_", "-") + "-"
    folders = sorted(
        p for p in Path(pipeline_root).glob(f"{prefix}*")
        if p.is_dir() and p.name[len(prefix) :][:4].isdigit()
    )  # fmt: skip
    return folders[-1] if folders else None


def bank_with_catches(outputs: Path) -> list[dict[str, Any]] | None:
    """The last validation's bank of the run whose kfp.local outputs are `outputs`, each row
    with `caught_answers` beside its `caught` indices: the frozen answers of the round's
    generator phase that only this test failed (the given tests passed them); None when the run
    validated no tests."""
    from sparring.phases.common import read_lines
    from sparring.rewards.bank import read_rows

    validations = _numbered(outputs, "validate-tests")
    bank_file = validations[-1] / "bank" / "bank.jsonl" if validations else None
    if bank_file is None or not bank_file.is_file():
        return None
    answers = {
        (round_index, row["problem_id"]): list(row.get("solutions", []))
        for round_index, phase in enumerate(_numbered(outputs, "train-generator"), start=1)
        for row in read_lines(phase / "frozen_solutions")
        if "problem_id" in row
    }
    rows = []
    for row in read_rows(str(bank_file)):
        row = dict(row)
        frozen = answers.get((int(row.get("round", 0)), str(row.get("problem_id"))), [])
        caught = [i for i in row.get("caught", []) if 0 <= i < len(frozen)]
        if caught:
            row["caught_answers"] = [frozen[i] for i in caught]
        rows.append(row)
    return rows
