"""Choosing one of N sampled answers by tests, scored exactly from kept verdicts.

A task's N answers each come with: whether it passes the given tests (`given`), whether it
passes every held-out test (`right`, the stated case included: what the choice is scored on),
and per test source (a writer model, the bank, the fuzzer: any name without "+") its verdict on
each of that source's tests, as `run_cached` gives them (True passed, False failed, None a
sandbox failure or not run). Each source's tests arrive with their verdict against the
reference (sparring.sandbox.validation's `TestVerdict`: `test`, `valid`, `reason`,
`duplicate`): a test that fails the reference, or that validation marked a duplicate, is
dropped before anything is counted, and the rows say how many were.

The rule for source S: among the answers that pass the given tests (all N when none does, and
the choice says `fallback`), the answers passing the most of S's kept tests (a test counts only
where it passed: None is no pass). The tied answers are reported as a set, and the choice's
score is the exact expectation of a uniform pick among them (right tied / tied, a Fraction),
never a draw. "a+b" is the union of a's and b's kept tests, a test both wrote (the same by
sparring.sandbox.plan's `normalize`) counted once; "none" chooses by the given tests alone,
i.e. the uniform pick among the answers passing them. Beside each task's choices: the oracle
(1 when some sampled answer is right) and, per source, how many of the right answers its kept
tests reject (one of them fails).

The rows (`task_row`) are plain JSON, one per task, holding every answer's verdicts and every
source's tests with their validity, so `score_rows` re-scores any rule from a filed file
(`read_rows`) without sampling or running anything again.

Covers: `task_row`, `check_row`, `kept_tests`, `choose`, `oracle`, `room`, `rejected_right`,
`caught_wrong` (a source's catch on the task's pool), `score_rows`, `rows_jsonl`, `read_rows`.
Does not cover: sampling the answers, writing and validating the tests, running them
(sparring.backends.sampler, sparring.sandbox's `judge_tests` and `run_cached`,
sparring.phases.fuzz), `sparring infer --choose-by`
(sparring.experiments.choose_answers), the study's intervals and report. A rule naming a source
a row lacks is an error, not "none": a source that kept no test for a task is named with an
empty list. Pure: the standard library and `normalize` (ast only); no ML framework.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from sparring.sandbox.plan import normalize

NONE = "none"  # the source with no tests: the uniform pick among answers passing the given tests
UNION = "+"  # "writer+fuzz": the union of two (or more) sources' kept tests
POOLED = "all"  # the group of every task in `score_rows`


def _entry(item: Any) -> dict[str, Any]:
    """One test with its validity as a row keeps it: {"test", "valid", "reason"}; a TestVerdict
    or a mapping with the same fields. A duplicate (validation's flag) is not valid."""
    get = item.get if isinstance(item, Mapping) else lambda k, d=None: getattr(item, k, d)
    test, valid = get("test"), get("valid")
    if not isinstance(test, str) or not isinstance(valid, bool):
        raise ValueError(f"a test needs a str `test` and a bool `valid`, got {item!r}")
    duplicate = bool(get("duplicate", False))
    reason = str(get("reason", "") or ("ok" if valid else "invalid"))
    return {
        "test": test,
        "valid": valid and not duplicate,
        "reason": "duplicate" if valid and duplicate else reason,
    }


def task_row(
    task: str,
    given: Sequence[bool],
    right: Sequence[bool],
    tests: Mapping[str, Sequence[Any]],
    verdicts: Mapping[str, Sequence[Sequence[bool | None]]],
    meta: Mapping[str, Any] | None = None,
    codes: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The task's row: {"task", "meta", "answers": [{"given", "right", "verdicts": {source:
    [True/False/None per test]}, ("code")}], "tests": {source: [{"test", "valid", "reason"}]}}.
    `verdicts[source][answer]` follows `tests[source]` test for test (None where a test was not
    run, e.g. an invalid one); `meta` (level, family, ...) is kept as given."""
    sources = {str(s): [_entry(t) for t in ts] for s, ts in tests.items()}
    answers = []
    for i, (g, r) in enumerate(zip(given, right, strict=True)):
        answer: dict[str, Any] = {
            "given": bool(g),
            "right": bool(r),
            "verdicts": {
                s: [None if v is None else bool(v) for v in verdicts[s][i]] for s in sources
            },
        }
        if codes is not None:
            answer["code"] = codes[i]
        answers.append(answer)
    row = {"task": str(task), "meta": dict(meta or {}), "answers": answers, "tests": sources}
    check_row(row)
    return row


def check_row(row: Mapping[str, Any]) -> None:
    """A ValueError naming the task when `row` is not a `task_row` (a file's row, say)."""
    task = row.get("task") if isinstance(row, Mapping) else None
    where = f"task {task!r}"
    if not isinstance(row, Mapping) or not isinstance(task, str):
        raise ValueError(f"not a choice row (no task): {str(row)[:80]}")
    answers, tests = row.get("answers"), row.get("tests")
    if not isinstance(answers, list) or not answers or not isinstance(tests, Mapping):
        raise ValueError(f"{where}: needs answers (at least one) and tests")
    for source, entries in tests.items():
        if UNION in source or source == NONE:
            raise ValueError(f"{where}: source {source!r} is reserved ({NONE!r}, {UNION!r})")
        for e in entries:
            if (
                not isinstance(e, Mapping)
                or not isinstance(e.get("test"), str)
                or not isinstance(e.get("valid"), bool)
            ):
                raise ValueError(f"{where}: source {source!r} holds a test without test/valid")
    for i, a in enumerate(answers):
        if not isinstance(a, Mapping) or not isinstance(a.get("verdicts"), Mapping):
            raise ValueError(f"{where}: answer {i} is not {{given, right, verdicts}}")
        if not isinstance(a.get("given"), bool) or not isinstance(a.get("right"), bool):
            raise ValueError(f"{where}: answer {i} needs bool given and right")
        for source, entries in tests.items():
            got = a["verdicts"].get(source)
            if not isinstance(got, list) or len(got) != len(entries):
                raise ValueError(
                    f"{where}: answer {i} has no verdict per test of source {source!r} "
                    f"({len(entries)} tests)"
                )
            if any(v is not None and not isinstance(v, bool) for v in got):
                raise ValueError(
                    f"{where}: answer {i}, source {source!r}: verdicts are true/false/null"
                )


def kept_tests(row: Mapping[str, Any], source: str) -> tuple[list[tuple[str, int]], int, int]:
    """(the tests the rule counts for `source`, as (source, index in its tests), the number
    dropped because they fail the reference (or validation called them duplicates), the number
    left out as repeats of an earlier kept test (`normalize`), within a source or across a
    union's parts). "none" keeps nothing."""
    if source == NONE:
        return [], 0, 0
    parts = source.split(UNION)
    missing = [p for p in parts if p not in row["tests"]]
    if missing:
        known = ", ".join([NONE, *row["tests"]])
        raise ValueError(f"task {row['task']!r}: no tests of source {missing}; known: {known}")
    kept: list[tuple[str, int]] = []
    seen: set[str] = set()
    dropped = repeated = 0
    for part in parts:
        for i, entry in enumerate(row["tests"][part]):
            if not entry["valid"]:
                dropped += 1
                continue
            key = normalize(entry["test"])
            if key in seen:
                repeated += 1
                continue
            seen.add(key)
            kept.append((part, i))
    return kept, dropped, repeated


def _fraction_text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def choose(row: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The rule's choice on one task (module docstring): {"task", "source", "fallback" (no
    answer passes the given tests: all answers were candidates), "candidates" (answer indices),
    "passes" (kept tests each candidate passes, candidate order), "tied" (the chosen set),
    "right_tied", "expected" (float) and "expected_exact" ("p/q": right_tied / tied, the score
    of a uniform pick among the tied), "tests_kept", "tests_dropped", "tests_repeated"}."""
    answers = row["answers"]
    kept, dropped, repeated = kept_tests(row, source)
    candidates = [i for i, a in enumerate(answers) if a["given"]]
    fallback = not candidates
    if fallback:
        candidates = list(range(len(answers)))
    passes = [sum(answers[i]["verdicts"][part][j] is True for part, j in kept) for i in candidates]
    best = max(passes)
    tied = [i for i, n in zip(candidates, passes, strict=True) if n == best]
    right_tied = sum(answers[i]["right"] for i in tied)
    expected = Fraction(right_tied, len(tied))
    return {
        "task": row["task"],
        "source": source,
        "fallback": fallback,
        "candidates": candidates,
        "passes": passes,
        "tied": tied,
        "right_tied": right_tied,
        "expected": float(expected),
        "expected_exact": _fraction_text(expected),
        "tests_kept": len(kept),
        "tests_dropped": dropped,
        "tests_repeated": repeated,
    }


def oracle(row: Mapping[str, Any]) -> int:
    """1 when some sampled answer of the task passes every held-out test, else 0."""
    return int(any(a["right"] for a in row["answers"]))


def room(row: Mapping[str, Any]) -> bool:
    """Whether a source could change what the rule scores on this task: the candidates (the
    answers passing the given tests, all N when none does, as `choose` takes them) include a
    right answer and a wrong one. Elsewhere every candidate is equally right or wrong, and every
    rule scores the task alike (1 when all are right, 0 when none is)."""
    answers = row["answers"]
    candidates = [a["right"] for a in answers if a["given"]] or [a["right"] for a in answers]
    return any(candidates) and not all(candidates)


def rejected_right(row: Mapping[str, Any], source: str) -> tuple[int, int]:
    """(right answers of the task, those of them that some kept test of `source` fails)."""
    kept = kept_tests(row, source)[0]
    right = [a for a in row["answers"] if a["right"]]
    rejected = sum(any(a["verdicts"][part][j] is False for part, j in kept) for a in right)
    return len(right), rejected


def caught_wrong(row: Mapping[str, Any], source: str) -> tuple[int, int]:
    """(the task's pool: wrong answers that pass the given tests, those of them that some kept
    test of `source` fails): the source's catch, as the pre-check's pool catch counts it."""
    kept = kept_tests(row, source)[0]
    pool = [a for a in row["answers"] if a["given"] and not a["right"]]
    caught = sum(any(a["verdicts"][part][j] is False for part, j in kept) for a in pool)
    return len(pool), caught


def score_rows(
    rows: Sequence[Mapping[str, Any]], sources: Sequence[str], by: str | None = None
) -> dict[str, Any]:
    """Every rule re-scored from rows alone: {"groups": {group: {"tasks", "oracle", "rules":
    {source: {"score", "score_exact", "fallback_tasks", "tied_tasks" (more than one answer
    tied), "tests_kept", "tests_dropped", "tests_repeated" (sums over tasks), "right",
    "right_rejected", "right_rejected_share" (None without right answers), "pool",
    "pool_caught", "pool_caught_share" (None without a pool: `caught_wrong`)}}}}, "tasks":
    [{"task", "meta", "oracle", "choices": {source: choose(...)}}]}. "none" (the uniform pick
    among answers passing the given tests) is always scored. Groups: the value of meta[`by`]
    (e.g. "level") per task, and "all"."""
    names = [NONE, *(s for s in sources if s != NONE)]
    per_task = []
    for row in rows:
        check_row(row)
        choices = {s: choose(row, s) for s in names}
        rejected = {s: rejected_right(row, s) for s in names}
        caught = {s: caught_wrong(row, s) for s in names}
        per_task.append((row, oracle(row), choices, rejected, caught))
    groups: dict[str, list[int]] = {}
    for i, (row, *_) in enumerate(per_task):
        if by is not None:
            groups.setdefault(str(row["meta"].get(by)), []).append(i)
    groups[POOLED] = list(range(len(per_task)))

    def summary(indices: list[int]) -> dict[str, Any]:
        hits = sum(per_task[i][1] for i in indices)
        return {
            "tasks": len(indices),
            "oracle": hits / len(indices) if indices else None,
            "rules": {s: _rule_summary([per_task[i] for i in indices], s) for s in names},
        }

    return {
        "groups": {g: summary(ix) for g, ix in groups.items()},
        "tasks": [
            {"task": row["task"], "meta": row["meta"], "oracle": o, "choices": choices}
            for row, o, choices, *_ in per_task
        ],
    }


def _rule_summary(per_task: Sequence[tuple[Any, ...]], s: str) -> dict[str, Any]:
    """Rule `s` over some tasks of `score_rows` (each: row, oracle, choices, (right,
    rejected), (pool, caught) per rule): its score and its sums."""
    chosen = [t[2][s] for t in per_task]
    total = sum((Fraction(c["expected_exact"]) for c in chosen), Fraction(0))
    score = total / len(per_task) if per_task else None
    right, rejected = (sum(t[3][s][k] for t in per_task) for k in (0, 1))
    pool, caught = (sum(t[4][s][k] for t in per_task) for k in (0, 1))
    return {
        "score": None if score is None else float(score),
        "score_exact": None if score is None else _fraction_text(score),
        "fallback_tasks": sum(c["fallback"] for c in chosen),
        "tied_tasks": sum(len(c["tied"]) > 1 for c in chosen),
        "tests_kept": sum(c["tests_kept"] for c in chosen),
        "tests_dropped": sum(c["tests_dropped"] for c in chosen),
        "tests_repeated": sum(c["tests_repeated"] for c in chosen),
        "right": right,
        "right_rejected": rejected,
        "right_rejected_share": rejected / right if right else None,
        "pool": pool,
        "pool_caught": caught,
        "pool_caught_share": caught / pool if pool else None,
    }


def rows_jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as JSON Lines, one task a line (what `read_rows` reads back)."""
    return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSON Lines file written by `rows_jsonl`, each checked; a ValueError naming
    the line otherwise."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            check_row(row)
        except (ValueError, AttributeError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a choice row ({exc})") from None
        rows.append(row)
    return rows
