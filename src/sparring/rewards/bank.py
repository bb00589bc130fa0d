"""The adversarial test bank: the validated generated tests that every later phase attacks with.

A bank is a JSONL file, `bank.jsonl`; as an artifact it is a folder holding that file (the
materialize phase's data folder, the validate phase's output), beside which validation writes
its `zone.json` and `validation.json` (`beside_bank`). One row per banked test:

- `problem_id` (str): the training problem the test attacks;
- `test` (str): one assert statement, as the sandbox validated it (with the reference
  solution's expected values when `rewards.reference_expected` is on);
- `round` (int): lineage, the generator round whose validation banked it (a bank carried in
  from `storage.bank_uri` keeps the round numbers of the run that banked them);
- `breaks` (int): how many of the frozen answerer's solutions failed it when it was banked;
- `reference` (str): `reference_digest` of the problem's reference solution it was validated
  against, and `space` (str): `task_space` of the training problems of the run that banked it;
- `run` (str): the MLflow parent run whose select phase first persisted it (`stamp_run`);
- `caught` (list[int], only where not empty): the frozen answers of its round it failed that
  the problem's given tests pass, as indices into that round's frozen solutions row of the
  problem (`frozen_solutions.jsonl`, its `solutions` list): the answers only it caught.

No phase field: a round's tests all come from its one generator phase (its alternating pairs
included), so the round is the whole lineage the rows record.

Covers: where an artifact's bank file is (`bank_file`, `beside_bank`), reading (`read_rows`:
every row, as the phases carry and append them; `read_bank`: the rows that are tests, as
evaluation and the answerer read them), writing (`write_rows`, atomic) and copying verbatim
(`bank_text`, `copy_bank`: persistence and checkpoints), the per-problem view
(`tests_by_problem`, `bank_tests`), lineage (`rows_by_round`), and what enters the bank
(`BankMerge`: a test joins when it is valid, no trivial solution passes it (`trivially_passed`)
and it is no duplicate, exact or near, of the problem's baseline tests, banked tests or tests
joined before it; with a cap, `per_problem`, a problem's tests beyond it are refused in the
order offered: `full`). Banked tests are therefore discriminating by construction: the answerer's
credit counts every one (`rewards.credit_view`, its `n_extra`). What a bank covers
(`coverage`: the share of training problems with a banked test, tests per covered problem;
`sampled_cover`: the same over the problems the answerer's trainer sampled, and the tests in
their reward).

Across runs (recurring training): `carry` decides what of a persisted bank a new run inherits.
A bank of another task space is refused (`BankRefused`, naming both); a test whose problem's
reference changed, a duplicate by behaviour (`behaviour_key`: what an assert calls, since the
reference fixes what it expects) and what is over BANK_CAP_PER_PROBLEM are retired, counted by
reason. Re-validating the inherited tests in the sandbox is materialize's.

Does not cover: running tests or trivial solutions in the sandbox (sparring.phases.validate,
sparring.sandbox), the trivial-solution family (sparring.problems.trivial), the validate phase's
metrics
and zone estimate (sparring.phases.validate, sparring.rewards.frozen), persisting the bank at
`storage.bank_uri` (sparring.phases.select saves it, sparring.phases.materialize carries it
in), which checkpoint holds which bank (sparring.plain_runner.checkpoints). Pure: no heavy imports.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring import rewards, storage
from sparring.errors import SparringError
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
    text = dump_rows(rows)
    storage.write_text(str(path), text)


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
    banked, added), or its token Jaccard similarity to one reaches `similarity`. `per_problem`
    (`steps.bank_per_problem`; 0 = no cap): the most tests a problem holds, banked and added
    together; the caller asks `full` before adding.
    """

    def __init__(
        self,
        rows: list[Any],
        baseline: Mapping[str, Sequence[str]],
        similarity: float,
        per_problem: int = 0,
    ) -> None:
        self.banked = list(rows)
        self.added: list[Row] = []
        self.similarity = similarity
        self.per_problem = per_problem
        self._baseline = baseline
        self._by_problem = tests_by_problem(keep_tests(self.banked))
        self._held = Counter({pid: len(tests) for pid, tests in self._by_problem.items()})
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

    def full(self, problem_id: str) -> bool:
        """Whether the problem holds `per_problem` tests already (never without a cap)."""
        return bool(self.per_problem) and self._held[problem_id] >= self.per_problem

    def add(self, problem_id: str, test: str, round_index: int, breaks: int, **lineage: Any) -> Row:
        """Bank `test` (the caller checked it: valid, not trivially passed, no duplicate, the
        problem not `full`); `lineage`: its `reference`, `space` and `caught` (the module
        docstring)."""
        row = {"problem_id": problem_id, "test": test, "round": round_index, "breaks": breaks}
        row.update(lineage)
        self.added.append(row)
        self._held[problem_id] += 1
        known, keys = self._seen(problem_id)
        known.append(test)
        keys.add(normalize(test))
        return row

    @property
    def rows(self) -> list[Any]:
        """The bank after the merge: its rows as they were, then the added ones."""
        return self.banked + self.added


def coverage(rows: Sequence[Any], problem_ids: Iterable[str]) -> dict[str, float]:
    """What a bank covers of the training problems `problem_ids`: `bank_coverage` (the share
    with at least one banked test: a banked test changes the answerer's reward only on its
    problem), and over the covered ones `bank_tests_per_covered_max` and `_mean` (0 when none
    is covered). Tests of other problems are not counted.

    >>> rows = [{"problem_id": p, "test": t} for p, t in ["a1", "a2", "b1", "z1"]]
    >>> coverage(rows, "abcd")
    {'bank_coverage': 0.5, 'bank_tests_per_covered_max': 2.0, 'bank_tests_per_covered_mean': 1.5}
    """
    ids = set(problem_ids)
    held = [len(t) for pid, t in tests_by_problem(keep_tests(rows)).items() if pid in ids]
    return {
        "bank_coverage": len(held) / len(ids) if ids else 0.0,
        "bank_tests_per_covered_max": float(max(held, default=0)),
        "bank_tests_per_covered_mean": sum(held) / len(held) if held else 0.0,
    }


def sampled_cover(
    sampled: Iterable[str], given: Mapping[str, int], bank: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """What the answerer's reward saw on the problems its trainer sampled (`sampled`, ids):
    `sampled_problems`, `sampled_bank_coverage` (the share with a banked test in `bank`, the
    answerer phase's {problem: tests}), `sampled_banked_tests` (banked tests a sampled problem)
    and `sampled_reward_tests` (tests its reward credits a sampled problem: its `given` count,
    the given tests the reward credits, plus its banked ones, all credited by construction). A
    sampled id without a `given` count is left out. {} when nothing was sampled.

    >>> sampled_cover(["a", "b"], {"a": 3, "b": 3}, {"a": ["t1", "t2"]})
    {'sampled_problems': 2.0, 'sampled_bank_coverage': 0.5, 'sampled_banked_tests': 1.0, \
'sampled_reward_tests': 4.0}
    """
    ids = sorted({pid for pid in sampled if pid in given})
    if not ids:
        return {}
    banked = [len(bank.get(pid, ())) for pid in ids]
    return {
        "sampled_problems": float(len(ids)),
        "sampled_bank_coverage": sum(1 for b in banked if b) / len(ids),
        "sampled_banked_tests": sum(banked) / len(ids),
        "sampled_reward_tests": sum(given[pid] + b for pid, b in zip(ids, banked, strict=True))
        / len(ids),
    }


# ---------------------------------------------------------------- across runs
# A problem's inherited tests beyond this many are retired, the most-breaking kept: the bank of a
# schedule that runs for months must not grow into every answerer phase's reward without bound.
BANK_CAP_PER_PROBLEM = 16


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def reference_digest(reference_solution: str) -> str:
    """Which reference a test was validated against (12 hex of its source's sha256)."""
    return _digest(reference_solution)


def task_space(problem_ids: Iterable[str]) -> str:
    """The training problems a bank's tests attack, as one digest (12 hex, order-free)."""
    return _digest("\n".join(sorted(set(problem_ids))))


def behaviour_key(test: str) -> str:
    """What a test checks. `assert CALL == EXPECTED` checks CALL: the validated expected value
    is the reference's, so two asserts of one call are one test however their expected values
    are written. Any other test is its normalized text.

    >>> behaviour_key("assert f(1, [2]) == 3") == behaviour_key("assert f(1,[2])==(1+2)")
    True
    >>> behaviour_key("assert f(1) == 3") == behaviour_key("assert f(2) == 3")
    False
    """
    try:
        body = ast.parse(test.strip()).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return normalize(test)
    if len(body) == 1 and isinstance(body[0], ast.Assert):
        check = body[0].test
        if (
            isinstance(check, ast.Compare)
            and len(check.ops) == 1
            and isinstance(check.ops[0], ast.Eq)
            and isinstance(check.left, ast.Call)
        ):
            return "call:" + ast.dump(check.left)
    return normalize(test)


class BankRefused(SparringError):
    """A persisted bank that cannot be carried into this run (another task space)."""


@dataclass
class Carried:
    """What a new run inherits of a persisted bank: `rows` kept (in bank order), `retired`
    (reason -> count), `inherited` (test rows read), `runs` (run -> tests kept)."""

    rows: list[Row]
    inherited: int
    retired: Counter = field(default_factory=Counter)

    @property
    def runs(self) -> dict[str, int]:
        return runs_of(self.rows)


def runs_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Run -> how many of `rows` it banked ("unrecorded" for rows of older code), sorted."""
    return dict(sorted(Counter(str(r.get("run") or "unrecorded") for r in rows).items()))


def carry(
    rows: Sequence[Any],
    space: str,
    references: Mapping[str, str],
    cap: int = BANK_CAP_PER_PROBLEM,
    where: str = "the persisted bank",
) -> Carried:
    """The tests of a persisted bank a run of task space `space` inherits (`references`:
    training problem id -> `reference_digest`). Refuses (BankRefused, one line naming both
    spaces) a bank holding a test of another or an unrecorded task space; retires a test whose
    problem's reference changed (`reference_changed`), a second test of one behaviour
    (`duplicate`, the first banked kept) and a problem's tests beyond `cap`, its most-breaking
    kept (`over_cap`)."""
    tests = keep_tests(rows)
    for row in tests:
        if row.get("space") != space:
            theirs = row.get("space") or "unrecorded (a bank of older code)"
            raise BankRefused(
                f"{where}: its tests attack task space {theirs}, this run trains on task space "
                f"{space} (another problem set): a bank cannot be carried across task spaces "
                "(give this config its own storage.bank_uri, or storage.start_fresh: true)"
            )
    out = Carried(rows=[], inherited=len(tests))
    seen: set[tuple[str, str]] = set()
    candidates: list[Row] = []
    for row in tests:
        pid = str(row["problem_id"])
        if references.get(pid) is None or row.get("reference") != references[pid]:
            out.retired["reference_changed"] += 1
            continue
        key = (pid, behaviour_key(row["test"]))
        if key in seen:
            out.retired["duplicate"] += 1
            continue
        seen.add(key)
        candidates.append(dict(row))
    by_problem: dict[str, list[int]] = {}
    for i, row in enumerate(candidates):
        by_problem.setdefault(str(row["problem_id"]), []).append(i)
    keep: set[int] = set()
    for indices in by_problem.values():
        ranked = sorted(indices, key=lambda i: -int(candidates[i].get("breaks") or 0))
        keep.update(ranked[:cap])
        out.retired["over_cap"] += len(ranked[cap:])
    out.rows = [row for i, row in enumerate(candidates) if i in keep]
    out.retired = Counter({k: v for k, v in out.retired.items() if v})
    return out


def stamp_run(rows: Iterable[Any], run_id: str) -> list[Any]:
    """The rows, each test row without a `run` given `run_id` (the run persisting it first)."""
    return [
        {**r, "run": run_id} if isinstance(r, dict) and "test" in r and not r.get("run") else r
        for r in rows
    ]
