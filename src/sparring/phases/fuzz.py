"""The generator phase with `generator_mode: fuzz`: a generator that does not learn (issue 73's
arm R), in the generator phase's place and with its outputs, so validate, the bank and the
answerer run unchanged.

For every training problem (the whole training set: every problem the answerer may sample),
hypothesis draws candidate inputs from the parameters' declared types (sparring.problems.fuzz), the
reference gives each its expected value (sparring.sandbox.oracle, as for the generator's tests),
and the first `steps.fuzz_tests` (k) candidates in draw order that the validate phase would bank
are written: the reference passes them and they call the function inside its declared types
(`judge_tests`), no trivial solution passes them, and none is a duplicate of the problem's given
tests, its banked tests in the data folder or an earlier pick (`BankMerge`); 8k inputs are drawn
first, and 32k where fewer than k of those qualify (a problem whose outputs trivial code always
matches, a bool, keeps none). The validate phase then judges and banks them exactly as it does
the generator's tests. With `steps.bank_per_problem` (the cap validation banks a problem's
tests to), `steps.fuzz_tests` must equal it (sparring.config.checks): both arms bank the same k
tests a problem. The draws are seeded by the phase's seed and the problem's id: a run repeats
them.

Outputs as the generator phase's: the tests (one row per training problem), frozen solutions
(none: nothing samples the answerer here, so validation's zone is empty and, with
`steps.screen_pool`, the answerer phase screens the pool itself, as the given-tests arm does),
and the model: the init generator passed through, untrained.

Covers: `fuzz_generator` (the phase: the phase table's generator row runs it in
`train_generator`'s place), `fuzz_tests` (every problem's k: the draws and the
picks, also what the study's pre-check measures, sparring.experiments.precheck) and `pick_tests`
(one problem's k; with `reference_expected` off, the rule validation banks a learned generator's
tests by when `rewards.reference_expected` is off). Does not cover: the draws
(sparring.problems.fuzz), validation and banking (sparring.phases.validate).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sparring import progress as lines
from sparring import storage
from sparring.backends.base import copy_model
from sparring.config import Config
from sparring.phases.common import derived_seed, train_problems
from sparring.phases.validate import trivially_passed_in
from sparring.problems import Problem, fuzz
from sparring.rewards.bank import BankMerge, read_rows
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits
from sparring.sandbox.oracle import with_reference_expected
from sparring.sandbox.validation import judge_tests

# inputs drawn per test to write: where fewer than k of the first qualify, more are drawn
CANDIDATES_PER_TEST = (8, 32)


def pick_tests(
    problem: Problem,
    candidates: list[str],
    k: int,
    bank: BankMerge,
    sandbox: Any,
    reference_expected: bool = True,
) -> tuple[list[str], dict[str, int]]:
    """The first `k` of `candidates` (in order) that validation would bank, each with the
    reference's expected value (as written without `reference_expected`), added to `bank` as
    picked; and why the others were passed over: {"invalid", "trivial", "duplicate"} (counted
    up to the k-th pick)."""
    if not candidates:
        return [], {}
    ref = problem.reference_solution
    tests = with_reference_expected(ref, candidates, sandbox) if reference_expected else candidates
    report = judge_tests(
        ref, tests, [], problem.function_name, problem.function_signature, sandbox, False
    )
    valid = [v.test for v in report.verdicts if v.valid and not v.duplicate]
    barred = trivially_passed_in(problem, valid, sandbox) if valid else set()
    picked: list[str] = []
    skipped = {"invalid": 0, "trivial": 0, "duplicate": 0}
    for v in report.verdicts:
        if len(picked) == k:
            break
        if not v.valid or v.duplicate:
            skipped["invalid"] += 1
        elif v.test in barred:
            skipped["trivial"] += 1
        elif bank.is_duplicate(problem.id, v.test):
            skipped["duplicate"] += 1
        else:
            picked.append(v.test)
            bank.add(problem.id, v.test, 0, 0)  # only the dedup of later picks reads it
    return picked, skipped


@dataclass
class FuzzDraw:
    """`fuzz_tests`' result: per problem the tests picked and the candidates judged, why the
    others were passed over, and the seconds spent drawing."""

    picked: dict[str, list[str]]
    judged: dict[str, set[str]]
    skipped: dict[str, int]
    draw_s: float


def fuzz_tests(
    problems: list[Problem], k: int, seed: int, bank: BankMerge, sandbox: Any
) -> FuzzDraw:
    """Up to `k` tests for each of `problems` (`pick_tests`), from 8k inputs drawn under
    `seed`, and 32k for the problems that fell short."""
    drawn_s = 0.0
    picked: dict[str, list[str]] = {p.id: [] for p in problems}
    judged: dict[str, set[str]] = {p.id: set() for p in problems}
    skipped = {"invalid": 0, "trivial": 0, "duplicate": 0}
    for per_test in CANDIDATES_PER_TEST:
        short = [p for p in problems if len(picked[p.id]) < k]
        if not short:
            break
        began = time.perf_counter()
        # a larger draw from the same seed shares most of the smaller one's inputs (not
        # all: hypothesis paces its draws by the number asked); those are not judged again
        candidates = fuzz.candidate_tests(short, per_test * k, seed)
        drawn_s += time.perf_counter() - began
        for p in short:
            fresh = [c for c in candidates[p.id] if c not in judged[p.id]]
            judged[p.id].update(fresh)
            got, why = pick_tests(p, fresh, k - len(picked[p.id]), bank, sandbox)
            picked[p.id] += got
            for reason, n in why.items():
                skipped[reason] += n
    return FuzzDraw(picked, judged, skipped, drawn_s)


def fuzz_generator(
    cfg: Config,
    round_index: int,
    data_dir: str,
    init_model: str | None,
    out_model: str,
    out_tests: str,
    out_frozen_solutions: str,
    phase: str = "generator",
) -> dict[str, float]:
    """Write `steps.fuzz_tests` drawn tests for every training problem (the module docstring);
    `phase` seeds the draws, as it seeds a generator phase's."""
    k = cfg.steps.fuzz_tests
    seed = derived_seed(cfg, round_index, phase)
    require_isolation(cfg)  # validation will run the same tests the same way
    problems = train_problems(data_dir)
    bank = BankMerge(
        read_rows(data_dir),
        {p.id: p.baseline_tests for p in problems},
        cfg.rewards.duplicate_similarity,
    )
    start = time.perf_counter()
    with Sandbox(untrusted_limits(cfg)) as sb:
        drawn = fuzz_tests(problems, k, seed, bank, sb)
    picked, judged, skipped, drawn_s = drawn.picked, drawn.judged, drawn.skipped, drawn.draw_s
    rows = [{"problem_id": p.id, "tests": picked[p.id], "round": round_index} for p in problems]
    storage.write_records(out_tests, rows)
    # no answerer sampled: validation's zone stays empty
    storage.write_records(out_frozen_solutions, [])
    meta = {"round": round_index, "phase": phase, "mode": "fuzz", "role": "generator"}
    copy_model(init_model or cfg.model_for("generator").name, out_model, meta)
    written = [len(r["tests"]) for r in rows]
    short = sum(n < k for n in written)
    took = time.perf_counter() - start
    lines.say(
        f"{lines.LABEL or 'train-generator'} fuzz: {sum(written)} tests on {len(problems)} "
        f"problems ({short} with fewer than {k}) in {lines.fmt_seconds(took)}"
    )
    return {
        "problems": float(len(problems)),
        "generated_tests": float(sum(written)),
        "fuzz_candidates": float(sum(len(c) for c in judged.values())),
        "fuzz_problems_full": float(sum(n == k for n in written)),
        "fuzz_problems_short": float(short),
        "fuzz_skipped_invalid": float(skipped["invalid"]),
        "fuzz_skipped_trivial": float(skipped["trivial"]),
        "fuzz_skipped_duplicate": float(skipped["duplicate"]),
        "fuzz_draw_s": drawn_s,
        "fuzz_s": took,
        "dry_run": float(cfg.dry_run),
    }
