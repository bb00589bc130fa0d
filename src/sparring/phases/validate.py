"""The validate phase: keep the generated tests that the reference passes, bank the survivors.

Covers: `validate_tests` and its steps: each round's tests judged by
sparring.sandbox.validation.judge_tests (the reference solution and the parameters' declared
types), then the trivial solutions, the frozen answerer's break rate (`bank_generated`, its
counts a `Tally`; the frozen answers and which of them pass the given tests: `FrozenAnswers`),
the zone estimate for the next answerer phase, the survivors merged into the bank by
sparring.rewards.bank's rule, at most `steps.bank_per_problem` a problem (the first in the order
written), each with the frozen answers it caught that the given tests pass; the phase's metrics
(`validation_summary`); `trivially_passed_in`, the trivial solutions run on a problem's tests,
is shared with the fuzz generator's pick; what the bank covers (`bank_coverage` and tests per
covered problem; `room_metrics`: of the problems where a frozen answer passes the given tests
and fails a withheld one, the share whose bank fails an answer the given tests pass) and
`validate_into` (the sandbox task's body: the bank and its metrics in one folder, since that
task has no MLflow credentials).
Does not cover: the sandbox (sparring.sandbox), the bank's format and what enters it
(sparring.rewards.bank)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.config import Config
from sparring.phases.common import read_lines, train_problems
from sparring.phases.zone import ZONE_FILE, in_zone
from sparring.problems import Problem
from sparring.rewards.bank import (
    BANK_FILE,
    BankMerge,
    beside_bank,
    coverage,
    keep_tests,
    read_rows,
    reference_digest,
    task_space,
    tests_by_problem,
    trivially_passed,
    write_rows,
)
from sparring.rewards.frozen import frozen_zone
from sparring.rewards.generator_scoring import problem_info
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits
from sparring.sandbox.result_cache import ResultCache, run_cached
from sparring.sandbox.validation import TestVerdict, judge_tests

VALIDATION_FILE = "validation.json"


def validate_tests(
    cfg: Config,
    round_index: int,
    data_dir: str,
    generated_tests: str,
    frozen_solutions: str,
    bank_in: str,
    bank_out: str,
) -> dict[str, float]:
    """Validate generated tests in the sandbox; append survivors to the bank (bank_out), at
    most `steps.bank_per_problem` a problem (0: no cap), the first valid ones in the order
    `generated_tests` lists them. `bank_in` is a bank file or folder."""
    require_isolation(cfg)
    problems = {p.id: p for p in train_problems(data_dir)}
    bank = BankMerge(
        read_rows(bank_in),
        {pid: p.baseline_tests for pid, p in problems.items()},
        cfg.rewards.duplicate_similarity,
        cfg.steps.bank_per_problem,
    )
    frozen_rows = read_lines(frozen_solutions)
    generated = read_lines(generated_tests)
    cache = ResultCache()  # the given tests' runs here are the zone's too
    with Sandbox(untrusted_limits(cfg)) as sb:
        answers = frozen_answers(frozen_rows, problems, sb, cache)
        tally = bank_generated(
            generated, problems, answers, bank, sb, round_index, cfg.rewards.reference_expected
        )
        write_rows(bank_out, bank.rows)
        held = tests_by_problem(keep_tests(bank.rows))
        room = room_metrics(problems, answers.solutions, answers.passing, held, sb, cache)
        # the zone the next answerer phase draws by: its reward sees the bank too, so a problem
        # whose samples all pass the given tests and differ on a banked one is in it
        banked = held if cfg.rewards.answerer_bank else {}
        zone = frozen_zone(cfg.steps.frozen_samples, problems, answers.solutions, sb, banked, cache)
    beside_bank(bank_out, ZONE_FILE).write_text(json.dumps(zone, sort_keys=True))
    return validation_summary(tally, zone, bank, problems, room)


@dataclass(frozen=True)
class FrozenAnswers:
    """The frozen answerer's parsed answers per problem (`solutions`), each one's index in its
    frozen row (`position`: what a banked row's `caught` names) and the indices into
    `solutions[pid]` of those that pass every given test (`passing`)."""

    solutions: dict[str, list[str]]
    position: dict[str, list[int]]
    passing: dict[str, set[int]]

    def caught(self, problem_id: str, breaks: list[int]) -> list[int]:
        """The frozen row's indices of the answers in `breaks` that pass the given tests."""
        return [
            self.position[problem_id][j] for j in breaks if j in self.passing.get(problem_id, ())
        ]


def frozen_answers(
    frozen_rows: list[dict[str, Any]], problems: dict[str, Problem], sandbox: Any, cache: Any
) -> FrozenAnswers:
    """The frozen answers of `frozen_rows` (the generator phase's frozen solutions), with those
    that pass the given tests run in `sandbox` (`given_passing`)."""
    solutions = {r["problem_id"]: [s for s in r["solutions"] if s] for r in frozen_rows}
    position = {
        r["problem_id"]: [i for i, s in enumerate(r["solutions"]) if s] for r in frozen_rows
    }
    return FrozenAnswers(solutions, position, given_passing(problems, solutions, sandbox, cache))


@dataclass
class Tally:
    """What validation counted over the generated tests: every judged test (`total`), the
    valid ones, the valid ones no trivial solution passes (`honest`), those that fail a frozen
    answer (`discriminating`), duplicates, the new honest ones a full problem turned away
    (`over_cap`), and the rows whose judging failed in the sandbox (`infra`)."""

    total: int = 0
    valid: int = 0
    honest: int = 0
    discriminating: int = 0
    duplicates: int = 0
    over_cap: int = 0
    infra: int = 0

    def bankable(self, verdict: TestVerdict, duplicate: bool, barred: set[str]) -> bool:
        """Count one verdict; whether its test may enter the bank: valid, passed by no
        trivial solution (those in `barred`) and no duplicate."""
        self.total += 1
        self.duplicates += duplicate
        if not verdict.valid:
            return False
        self.valid += 1
        if verdict.test in barred:
            return False  # trivial code passes it: no credit to anyone, not banked
        self.honest += 1
        self.discriminating += bool(verdict.breaks)
        return not duplicate


def bank_generated(
    generated: list[dict[str, Any]],
    problems: dict[str, Problem],
    answers: FrozenAnswers,
    bank: BankMerge,
    sandbox: Any,
    round_index: int,
    reference_expected: Any,
) -> Tally:
    """Judge each generated row's tests (`judge_tests`: the reference, the declared types, the
    frozen answers) and add the survivors to `bank` in the order written; what was counted."""
    space = task_space(problems)  # what a later run checks before inheriting these tests
    tally = Tally()
    for row in generated:
        p = problems.get(row["problem_id"])
        tests = [t for t in row.get("tests", []) if isinstance(t, str)]
        if p is None or not tests:
            continue
        report = judge_tests(
            p.reference_solution, tests, answers.solutions.get(p.id, []), p.function_name,
            p.function_signature, sandbox, reference_expected,
        )  # fmt: skip
        if report.infra_error:
            tally.infra += 1
            continue
        barred = trivially_passed_in(p, tests, sandbox)
        for v in report.verdicts:
            if not tally.bankable(v, v.duplicate or bank.is_duplicate(p.id, v.test), barred):
                continue
            if bank.full(p.id):
                tally.over_cap += 1
                continue
            caught = answers.caught(p.id, v.breaks)
            bank.add(
                p.id, v.test, round_index, len(v.breaks),
                reference=reference_digest(p.reference_solution), space=space,
                **({"caught": caught} if caught else {}),
            )  # fmt: skip
    return tally


def validation_summary(
    tally: Tally,
    zone: dict[str, dict[str, float]],
    bank: BankMerge,
    problems: dict[str, Problem],
    room: dict[str, float],
) -> dict[str, float]:
    """The validate phase's metrics: the shares of `tally`, the zone, the bank and its room."""
    total, honest = tally.total, tally.honest
    return {
        "candidates": float(total),
        "validity": tally.valid / total if total else 0.0,
        "honest_share": honest / total if total else 0.0,
        "break_rate": tally.discriminating / total if total else 0.0,
        "discrimination": tally.discriminating / honest if honest else 0.0,
        "zone_problems": float(sum(in_zone(z) for z in zone.values())),
        "zone_estimated": float(len(zone)),
        "duplicate_rate": tally.duplicates / total if total else 0.0,
        "new_tests": float(len(bank.added)),
        "bank_size": float(len(keep_tests(bank.rows))),
        "infra_errors": float(tally.infra),
        "over_cap": float(tally.over_cap),
        **coverage(bank.rows, problems),
        **room,
    }


def given_passing(
    problems: dict[str, Problem], solutions: dict[str, list[str]], sandbox: Any, cache: Any
) -> dict[str, set[int]]:
    """Per problem with frozen answers, the indices (into `solutions[pid]`) of those that pass
    every given test of the problem (a sandbox failure passes nothing), run in one batch."""
    jobs = [
        (pid, i, code)
        for pid, codes in solutions.items()
        if pid in problems
        for i, code in enumerate(codes)
    ]
    given = [(code, problems[pid].baseline_tests) for pid, _, code in jobs]
    runs = run_cached(sandbox, given, cache)
    out: dict[str, set[int]] = {pid: set() for pid in solutions if pid in problems}
    for (pid, i, _), row in zip(jobs, runs, strict=True):
        if all(ok is True for ok in row):
            out[pid].add(i)
    return out


def room_metrics(
    problems: dict[str, Problem],
    solutions: dict[str, list[str]],
    passing: dict[str, set[int]],
    banked: dict[str, list[str]],
    sandbox: Any,
    cache: Any,
) -> dict[str, float]:
    """Whether the bank reaches where the given tests let answers through. A problem has room
    when one of its frozen answers passes its given tests (`passing`) and fails a withheld test
    (`Problem.withheld_tests`, data.given_tests): `bank_room_measured` (problems whose frozen
    answers are known and who withhold tests), `bank_room_problems` (those with room) and
    `bank_room_caught` (the share of those whose banked tests fail an answer the given tests
    pass; absent when no problem has room). {} when no problem is measured: no frozen answers
    (generator_mode fuzz) or no withheld tests."""
    measured = [pid for pid in passing if problems[pid].withheld_tests]
    if not measured:
        return {}

    def fails(tests_of: dict[str, list[str]], ids: list[str]) -> set[str]:
        jobs = [(pid, solutions[pid][i]) for pid in ids for i in sorted(passing[pid])]
        runs = run_cached(sandbox, [(code, tests_of.get(pid, [])) for pid, code in jobs], cache)
        return {pid for (pid, _), row in zip(jobs, runs, strict=True) if False in row}

    room = sorted(fails({pid: problems[pid].withheld_tests for pid in measured}, measured))
    out = {"bank_room_measured": float(len(measured)), "bank_room_problems": float(len(room))}
    if room:
        out["bank_room_caught"] = len(fails(banked, room)) / len(room)
    return out


def trivially_passed_in(problem: Problem, tests: list[str], sandbox: Any) -> set[str]:
    """The tests among `tests` that some trivial solution of the problem passes (run here,
    judged by sparring.rewards.bank.trivially_passed)."""
    family = problem_info(problem, []).trivial_solutions
    return trivially_passed(tests, run_cached(sandbox, [(code, tests) for code in family], None))


def validate_into(
    cfg: Config,
    round_index: int,
    data_dir: str,
    generated_tests: str,
    frozen_solutions: str,
    bank_in: str,
    out_dir: str,
) -> dict[str, float]:
    """Validation in the sandbox pod: no MLflow there (no credentials), so the metrics are
    written next to the new bank (out_dir/bank.jsonl, out_dir/validation.json) and logged by
    the next answerer phase (`validation_metrics`). `bank_in` is a bank folder or file."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    result = validate_tests(
        cfg, round_index, data_dir, generated_tests, frozen_solutions, bank_in,
        str(Path(out_dir) / BANK_FILE),
    )  # fmt: skip
    numeric = {k: float(v) for k, v in (result or {}).items() if isinstance(v, (int, float))}
    (Path(out_dir) / VALIDATION_FILE).write_text(json.dumps(numeric, sort_keys=True))
    return numeric


def validation_metrics(bank_dir: str) -> dict[str, float] | None:
    """The metrics `validate_into` wrote beside a bank, or None for a bank without them."""
    path = Path(bank_dir) / VALIDATION_FILE
    return json.loads(path.read_text()) if path.is_file() else None
