"""The adversarial test bank: the validated generated tests that every later phase attacks with.

A bank is a JSONL file, `bank.jsonl`; as an artifact it is a folder holding that file (the
materialize phase's data folder, the validate phase's output), beside which validation writes
its `zone.json` and `validation.json` (`beside_bank`). One row per banked test:

- `problem_id` (str): the training problem the test attacks;
- `test` (str): one assert statement, as the sandbox validated it (with the reference
  solution's expected values when `rewards.reference_expected` is on);
- `round` (int): lineage, the generator round whose validation banked it (a bank carried in
  from `storage.bank_uri` keeps the round numbers of the run that banked them);
- `breaks` (int): how many of the frozen answerer's solutions failed it when it was banked.

No phase field: a round's tests all come from its one generator phase (its alternating pairs
included), so the round is the whole lineage the rows record.

Covers: where an artifact's bank file is (`bank_file`, `beside_bank`), reading (`read_rows`:
every row, as the phases carry and append them; `read_bank`: the rows that are tests, as
evaluation and the answerer read them), writing (`write_rows`, atomic) and copying verbatim
(`bank_text`, `copy_bank`: persistence and checkpoints), the per-problem view
(`tests_by_problem`, `bank_tests`), lineage (`rows_by_round`), and what enters the bank
(`BankMerge`: a test joins when it is valid, no trivial solution passes it (`trivially_passed`)
and it is no duplicate, exact or near, of the problem's baseline tests, banked tests or tests
joined before it). Banked tests are therefore discriminating by construction: the answerer's
credit counts every one (`rewards.credit_view`, its `n_extra`).

Does not cover: running tests or trivial solutions in the sandbox (sparring.phases.validate,
sparring.sandbox), the trivial-solution family (sparring.trivial), the validate phase's metrics
and zone estimate (sparring.phases.validate, sparring.phases.zone), persisting the bank at
`storage.bank_uri` (sparring.phases.select saves it, sparring.phases.materialize carries it
in), which checkpoint holds which bank (sparring.plain_runner.checkpoints). Pure: no heavy imports.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sparring import rewards, storage
from sparring.sandbox.plan import normalize

BANK_FILE = "bank.jsonl"

Row = dict[str, Any]


def bank_file(path: str | Path) -> str:
    """The bank file of an artifact: a folder holds `bank.jsonl`, a file is itself."""
    p = Path(path)
    return str(p / BANK_FILE) if p.is_dir() else str(p)


def beside_bank(path: str | Path, name: str) -> Path:
    """The file `name` of a bank's artifact folder (the folder, or the file's folder)."""
    return Path(bank_file(path)).parent / name


def parse_rows(text: str) -> list[Any]:
    """Every row of bank text, in order; blank lines skipped."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def dump_rows(rows: Iterable[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def bank_text(path: str | Path | None) -> str:
    """The bank file's text, verbatim; '' when there is none."""
    if not path or not Path(bank_file(path)).is_file():
        return ""
    return Path(bank_file(path)).read_text()


def read_rows(path: str | Path | None) -> list[Any]:
    """Every row of a bank (file or folder artifact), as written; [] when there is none."""
    return parse_rows(bank_text(path))


def keep_tests(rows: Iterable[Any]) -> list[Row]:
    """The rows that are tests: objects with a `problem_id` and a `test`."""
    return [r for r in rows if isinstance(r, dict) and "problem_id" in r and "test" in r]


def read_bank(path: str | Path | None) -> list[Row]:
    """The test rows of a bank (or of a round's validated tests); [] when there is none."""
    return keep_tests(read_rows(path))


def write_rows(path: str | Path, rows: Iterable[Any]) -> None:
    """Write a bank file atomically (temp file, fsync, rename: a killed writer leaves the old
    file); a full disk is a one-line SparringError naming the file."""
    storage.write_text(str(path), dump_rows(rows))


def copy_bank(src: str | Path | None, dst: str | Path) -> None:
    """Copy a bank file byte for byte, atomically; no bank copies as an empty one."""
    storage.write_text(str(dst), bank_text(src))


def tests_by_problem(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Problem id -> its tests, in row order, each once."""
    out: dict[str, list[str]] = {}
    for row in rows:
        tests = out.setdefault(str(row["problem_id"]), [])
        if row["test"] not in tests:
            tests.append(row["test"])
    return out


def bank_tests(path: str | Path | None) -> dict[str, list[str]]:
    """The bank's tests per problem, deduplicated, in bank order."""
    return tests_by_problem(read_bank(path))


def rows_by_round(rows: Sequence[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    """Lineage: round -> the rows that round banked, rounds ascending (rows without an integer
    round belong to none)."""
    numbers = sorted({r["round"] for r in rows if isinstance(r.get("round"), int)})
    return {n: [r for r in rows if r.get("round") == n] for n in numbers}


def trivially_passed(tests: Sequence[str], results: Iterable[Sequence[bool | None]]) -> set[str]:
    """The tests that some trivial solution passes, or may pass: `results[t][i]` is test i on
    trivial solution t, None when unknown. None of them is banked."""
    return {t for row in results for t, ok in zip(tests, row, strict=True) if ok is not False}


class BankMerge:
    """A bank and the tests one validation round adds to it, in order.

    `baseline`: problem id -> its own tests. A candidate is a duplicate when its normalized
    form (`sparring.sandbox.plan.normalize`) equals one of the problem's known tests (baseline,
    banked, added), or its token Jaccard similarity to one reaches `similarity`.
    """

    def __init__(
        self, rows: list[Any], baseline: Mapping[str, Sequence[str]], similarity: float
    ) -> None:
        self.banked = list(rows)
        self.added: list[Row] = []
        self.similarity = similarity
        self._baseline = baseline
        self._by_problem = tests_by_problem(self.banked)
        self._known: dict[str, tuple[list[str], set[str]]] = {}

    def _seen(self, problem_id: str) -> tuple[list[str], set[str]]:
        if problem_id not in self._known:
            known = [*self._baseline.get(problem_id, ()), *self._by_problem.get(problem_id, [])]
            self._known[problem_id] = (known, {normalize(t) for t in known})
        return self._known[problem_id]

    def is_duplicate(self, problem_id: str, test: str) -> bool:
        known, keys = self._seen(problem_id)
        return normalize(test) in keys or any(
            rewards.jaccard(test, k) >= self.similarity for k in known
        )

    def add(self, problem_id: str, test: str, round_index: int, breaks: int) -> Row:
        """Bank `test` (the caller checked it: valid, not trivially passed, no duplicate)."""
        row = {"problem_id": problem_id, "test": test, "round": round_index, "breaks": breaks}
        self.added.append(row)
        known, keys = self._seen(problem_id)
        known.append(test)
        keys.add(normalize(test))
        return row

    @property
    def rows(self) -> list[Any]:
        """The bank after the merge: its rows as they were, then the added ones."""
        return self.banked + self.added
