"""The study's pre-check (issue 73, item 1): on the BASE model, does a level leave room for
adversarial tests, and how much of that room does each test writer reach?

The base answerer is sampled on family instances of a development seed (the calibrate path:
sparring.evaluation.calibration's `calibration_problems` and `sample_model`). Each answer runs
on all its problem's tests once; with K given tests (sparring.problems.given_tests), per
family and level and pooled per level:
- room: the share of answers that pass the K given tests and fail a withheld credited test
  (code_duel.false_positive_flags, the measure calibrate's `fp` column reports), with a 95%
  interval that resamples tasks (an instance with all its samples), not answers;
- stated_case_pass: the share of answers that pass the stated-case test(s)
  (`stated_case_tests`), and whether any answer does;
- the pool: every answer in the room (wrong but passing), with its problem as the reward sees
  it and the withheld tests it fails (pool.jsonl);
- the catch of each test writer on the pool (share of pool answers failed by at least one of
  its valid tests, interval over tasks) and their paired difference: the non-learning
  generator (sparring.phases.fuzz's `fuzz_tests`: k drawn tests a problem that validation would
  bank) and the base generator (the config's generator model through the generator prompt,
  sparring.evaluation.generator_heldout's `sample_tests`; its tests parsed as the generator
  phase does and its first k valid ones kept by validation's rule, `pick_tests`).

Per answer (for sizing the selection study's N), `judge` also keeps one row, filed by
`sparring precheck --out DIR` as DIR/answers.jsonl beside precheck.json and pool.jsonl, one
JSON object a line in sampling order (instance by instance, its samples in order):
- `task`: the instance's task key (its `task:` tag, else its id: instances of one task share
  it, so they are one unit when averaging over tasks); `id`: the instance's problem id;
- `family`, `level`: the instance's family and level; `sample`: the answer's index among the
  instance's samples (0-based, as in pool.jsonl);
- `given`: the answer passes the K given tests (the typical ones the reward sees);
- `stated`: it passes the stated-case test(s) (`stated_case_tests`), null where the problem has
  none;
- `every`: it passes every one of the problem's tests (given, withheld and trivially passed).
An answer whose code does not parse passes nothing (given and every false, stated false or
null). From these rows alone, sparring.experiments.sizing_oracle estimates how many answers a
task a perfect chooser needs (`sparring precheck size-n`).

Everything is seeded by the development seed: answers by it, the generator by it + 1, the
fuzzer's draws and the bootstrap by it. A rerun repeats (sampling on the same machine).

Covers: the judging (`judge`, `judge_answers`, planted completions welcome; the per-answer
rows; which tests are the stated case's: sparring.problems.families.stated_case_tests), the
catch (`kept_tests`, `catch_on_pool`, `measure_catch`), the statistics (`task_share`,
`paired_task_difference`, `summarize`), the printout (`format_report`) and `run_precheck`.
Does not cover: the command's arguments (sparring.cli.precheck), the families. It lives here
and not in sparring.evaluation because it judges by the fuzz and validate phases' rules, which
the evaluation room may not import (tests/unit/test_layout.py's floors).
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparring.problems import Problem
from sparring.problems.families import family_and_level, stated_case_tests, task_tag

MIN_ANSWERS = 800  # answers a level the pre-check wants (issue 73): per_family is sized to it
BOOTSTRAP = 2000  # task resamples per interval
GENERATORS = ("fuzz", "base")  # the test writers measured on the pool


@dataclass(frozen=True)
class PoolEntry:
    """One wrong answer that passes: `problem` as the reward sees it (the K given tests as
    `baseline_tests`, the rest in `withheld_tests`), the answer's code, and the withheld tests
    it fails."""

    problem: Problem
    family: str
    level: int
    sample: int
    code: str
    fails: list[str]

    def to_row(self) -> dict[str, Any]:
        return {
            "problem": self.problem.to_dict(),
            "family": self.family,
            "level": self.level,
            "sample": self.sample,
            "answer": self.code,
            "fails": list(self.fails),
        }


def per_family_for(families: int, samples: int, answers: int = MIN_ANSWERS) -> int:
    """The fewest instances a family and level that give at least `answers` answers a level.

    >>> per_family_for(14, 8), per_family_for(16, 8)
    (8, 7)
    """
    return max(1, -(-answers // max(1, families * samples)))


# --------------------------------------------------------------------------- judging


def judge_answers(
    problems: Sequence[Problem], texts: Sequence[Sequence[str]], given_tests: int, sandbox: Any
) -> tuple[list[dict[str, Any]], list[PoolEntry]]:
    """Rows (one per instance: id, family, level, `room` and, where it has a stated case,
    `stated`, each 0/1 per answer, and the `stated_tests`) and the pool, from `texts[i]`, the
    answers to problems[i] (sampled, or planted by a test). The problems carry their trivial
    passes (calibration_problems). An answer whose code does not parse passes nothing."""
    rows, pool, _ = judge(problems, texts, given_tests, sandbox)
    return rows, pool


def judge(
    problems: Sequence[Problem], texts: Sequence[Sequence[str]], given_tests: int, sandbox: Any
) -> tuple[list[dict[str, Any]], list[PoolEntry], list[dict[str, Any]]]:
    """`judge_answers`' rows and pool, and the per-answer rows (the module docstring's
    answers.jsonl: task, id, family, level, sample, given, stated, every), one per answer in
    the order of `texts`, read from the same single run of every test on each answer."""
    from sparring.problems.given_tests import given_view
    from sparring.problems.programs import extract_code
    from sparring.rewards import code_duel
    from sparring.sandbox.result_cache import ResultCache, run_cached

    views = [given_view(p, given_tests) for p in problems]
    flat = [(i, text) for i, outs in enumerate(texts) for text in outs]
    codes = [extract_code(text, problems[i].function_name) for i, text in flat]
    cache = ResultCache()  # every test runs once on an answer; the flags below read it back
    jobs = [
        (c, list(problems[i].baseline_tests)) for (i, _), c in zip(flat, codes, strict=True) if c
    ]
    ran = iter(run_cached(sandbox, jobs, cache) if jobs else [])
    results = [next(ran) if c else None for c in codes]
    flags = code_duel.false_positive_flags(
        [text for _, text in flat],
        [views[i].baseline_tests for i, _ in flat],
        [views[i].withheld_tests for i, _ in flat],
        [problems[i].function_name for i, _ in flat],
        sandbox,
        cache,
    )
    rows, pool, answers, at = [], [], [], 0
    for p, view, outs in zip(problems, views, texts, strict=True):
        family, level = family_and_level(p.tags)
        stated = stated_case_tests(p)
        given = [p.baseline_tests.index(t) for t in view.baseline_tests]
        room, passed = [], []
        for j in range(len(outs)):
            result, flag, code = results[at], flags[at], codes[at]
            at += 1
            hit = bool(flag and flag[1])
            room.append(int(hit))
            passed.append(int(result is not None and all(result[t] is True for t in stated)))
            answers.append(
                {
                    "task": task_tag(p),
                    "id": p.id,
                    "family": family,
                    "level": level,
                    "sample": j,
                    "given": result is not None and all(result[t] is True for t in given),
                    "stated": bool(passed[-1]) if stated else None,
                    "every": result is not None and all(r is True for r in result),
                }
            )
            if hit and code is not None and result is not None:
                outcome = dict(zip(p.baseline_tests, result, strict=True))
                fails = [t for t in view.withheld_tests if outcome.get(t) is False]
                pool.append(PoolEntry(view, family, level, j, code, fails))
        row: dict[str, Any] = {"id": p.id, "family": family, "level": level, "room": room}
        if stated:
            row["stated"] = passed
            row["stated_tests"] = [p.baseline_tests[t] for t in stated]
        rows.append(row)
    return rows, pool, answers


# --------------------------------------------------------------------------- catch


def kept_tests(
    problem: Problem,
    candidates: Sequence[str],
    k: int,
    sandbox: Any,
    reference_expected: bool = True,
    similarity: float = 0.9,
) -> list[str]:
    """The first `k` of `candidates` that validation would bank for `problem` (the reference
    passes them, inside the declared types, no trivial solution passes them, none repeats a
    given test or an earlier pick: sparring.phases.fuzz.pick_tests); with
    `reference_expected`, each takes the reference's expected value first."""
    from sparring.phases.fuzz import pick_tests
    from sparring.rewards.bank import BankMerge

    bank = BankMerge([], {problem.id: problem.baseline_tests}, similarity)
    return pick_tests(problem, list(candidates), k, bank, sandbox, reference_expected)[0]


def catch_on_pool(
    pool: Sequence[PoolEntry], tests: Mapping[str, Sequence[str]], sandbox: Any
) -> list[bool]:
    """Per pool entry: whether one of its problem's `tests` fails it (a sandbox failure fails
    nothing)."""
    from sparring.sandbox.result_cache import run_cached

    jobs = [(e.code, list(tests.get(e.problem.id, ()))) for e in pool]
    runs = run_cached(sandbox, [j for j in jobs if j[1]], None) if any(j[1] for j in jobs) else []
    it = iter(runs)
    return [bool(j[1]) and any(r is False for r in next(it)) for j in jobs]


def pool_problems(pool: Sequence[PoolEntry]) -> list[Problem]:
    """The pool's problems, each once, in pool order."""
    return list({e.problem.id: e.problem for e in pool}.values())


def generator_kept(
    cfg: Any,
    problems: Sequence[Problem],
    texts: Mapping[str, Sequence[str]],
    k: int,
    sandbox: Any,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """({problem id: its first k valid tests}, {problem id: every test written}) of a
    generator's completions `texts[problem id]`, tests parsed in order as the generator phase
    does and kept as validation keeps them (`kept_tests`)."""
    from sparring.problems.prompts import extract_tests

    kept: dict[str, list[str]] = {}
    written_by: dict[str, list[str]] = {}
    for p in problems:
        written: list[str] = []
        for text in texts.get(p.id, ()):
            written += [t for t in extract_tests(text, p.function_name) if t not in written]
        kept[p.id] = kept_tests(
            p, written, k, sandbox, cfg.rewards.reference_expected, cfg.rewards.duplicate_similarity
        )
        written_by[p.id] = written
    return kept, written_by


def measure_catch(
    cfg: Any,
    pool: Sequence[PoolEntry],
    generator_texts: Mapping[str, Sequence[str]],
    k: int,
    seed: int,
    sandbox: Any,
) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[bool]]]:
    """({writer: {problem id: kept tests}}, {writer: caught per pool entry}) for the fuzzer
    (k drawn tests a problem, `fuzz_tests` under `seed`) and the base generator (its
    completions `generator_texts[problem id]`, tests parsed in order, the first k valid kept
    as validation keeps them under `rewards.reference_expected`); the first also holds
    `base_written`, every test the generator wrote (what it was judged on)."""
    from sparring.phases.fuzz import fuzz_tests
    from sparring.rewards.bank import BankMerge

    problems = pool_problems(pool)
    similarity = cfg.rewards.duplicate_similarity
    bank = BankMerge([], {p.id: p.baseline_tests for p in problems}, similarity)
    kept: dict[str, dict[str, list[str]]] = {
        "fuzz": fuzz_tests(problems, k, seed, bank, sandbox).picked if problems else {}
    }
    kept["base"], kept["base_written"] = generator_kept(cfg, problems, generator_texts, k, sandbox)
    caught = {name: catch_on_pool(pool, kept[name], sandbox) for name in GENERATORS}
    return kept, caught


def add_catch(
    rows: Sequence[dict[str, Any]], pool: Sequence[PoolEntry], caught: Mapping[str, list[bool]]
) -> None:
    """Each row with pool answers gains `catch`: {"pool": n, writer: caught of them, ...}."""
    by_id: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(("pool", *caught), 0))
    for i, entry in enumerate(pool):
        counts = by_id[entry.problem.id]
        counts["pool"] += 1
        for name, flags in caught.items():
            counts[name] += int(flags[i])
    for row in rows:
        if row["id"] in by_id:
            row["catch"] = by_id[row["id"]]


# --------------------------------------------------------------------------- statistics


def _interval(draws: list[float]) -> tuple[float, float]:
    draws.sort()
    return draws[int(0.025 * (len(draws) - 1))], draws[int(0.975 * (len(draws) - 1))]


def task_share(
    units: Sequence[tuple[float, int]], n_boot: int = BOOTSTRAP, seed: int = 0
) -> dict[str, Any]:
    """The share of answers that hit, over `units` (per task: hits, answers), with a 95%
    percentile interval that resamples tasks, each with all its answers: a task's samples
    share its prompt, so they are one unit, not independent draws. None without answers.

    >>> s = task_share([(2, 2), (0, 2)])
    >>> s["value"], s["tasks"], s["answers"], s["lo"], s["hi"]
    (0.5, 2, 4, 0.0, 1.0)
    """
    return paired_task_difference([(h, 0.0, n) for h, n in units], n_boot, seed)


def paired_task_difference(
    units: Sequence[tuple[float, float, int]], n_boot: int = BOOTSTRAP, seed: int = 0
) -> dict[str, Any]:
    """Share a minus share b over the same answers (per task: hits a, hits b, answers), with a
    95% interval resampling tasks (both shares from one resample: paired).

    >>> d = paired_task_difference([(1, 0, 1), (1, 1, 1)])
    >>> d["value"], d["tasks"]
    (0.5, 2)
    """
    units = [u for u in units if u[2]]
    out: dict[str, Any] = {"tasks": len(units), "answers": sum(u[2] for u in units)}
    if not units:
        return {**out, "value": None, "lo": None, "hi": None}
    rng = random.Random(seed)
    draws = []
    for _ in range(n_boot):
        pick = rng.choices(units, k=len(units))
        draws.append(
            (sum(a for a, _, _ in pick) - sum(b for _, b, _ in pick)) / sum(n for _, _, n in pick)
        )
    lo, hi = _interval(draws)
    value = (sum(u[0] for u in units) - sum(u[1] for u in units)) / out["answers"]
    return {**out, "value": value, "lo": lo, "hi": hi}


def _group(rows: Sequence[Mapping[str, Any]], seed: int) -> dict[str, Any]:
    room = task_share([(sum(r["room"]), len(r["room"])) for r in rows], seed=seed)
    stated = [r["stated"] for r in rows if "stated" in r]
    passes = [x for s in stated for x in s]
    pooled = [r["catch"] for r in rows if r.get("catch", {}).get("pool")]
    out: dict[str, Any] = {
        "tasks": room["tasks"],
        "answers": room["answers"],
        "room": room,
        "stated_case_pass": sum(passes) / len(passes) if passes else None,
        "stated_case_any": any(passes) if stated else None,
        "pool": sum(sum(r["room"]) for r in rows),
    }
    for name in GENERATORS:
        out[f"catch_{name}"] = task_share([(c[name], c["pool"]) for c in pooled], seed=seed)
    out["catch_difference"] = paired_task_difference(
        [(c["fuzz"], c["base"], c["pool"]) for c in pooled], seed=seed
    )
    return out


def summarize(rows: Sequence[Mapping[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Per (family, level) and pooled per level: tasks, answers, room (with its task interval),
    stated-case pass share and whether any answer passes, pool size, each writer's catch and
    their paired difference (fuzz - base); and the whole pool's size."""
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["family"], row["level"])].append(row)
    families = [
        {"family": family, "level": level, **_group(members, seed)}
        for (family, level), members in sorted(groups.items())
    ]
    levels = {
        level: _group([r for r in rows if r["level"] == level], seed)
        for level in sorted({r["level"] for r in rows})
    }
    return {"families": families, "levels": levels, "pool": sum(v["pool"] for v in levels.values())}


# --------------------------------------------------------------------------- printout


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _with_interval(s: Mapping[str, Any], digits: int = 3) -> str:
    if s["value"] is None:
        return "n/a"
    return f"{s['value']:.{digits}f} ({s['lo']:.{digits}f}..{s['hi']:.{digits}f})"


def _any(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def format_report(summary: Mapping[str, Any], pool_needed: int = 100) -> str:
    """The per-family table, one PRECHECK line per level and the pool's line."""
    head = f"{'family':16s} {'level':>5s} {'tasks':>5s} {'ans':>5s} {'room':>6s} "
    head += f"{'stated':>6s} {'any':>4s} {'pool':>5s} {'fuzz':>6s} {'base':>6s}"
    lines = [head]
    for s in summary["families"]:
        lines.append(
            f"{s['family']:16s} {s['level']:5d} {s['tasks']:5d} {s['answers']:5d} "
            f"{_num(s['room']['value']):>6s} {_num(s['stated_case_pass']):>6s} "
            f"{_any(s['stated_case_any']):>4s} {s['pool']:5d} "
            f"{_num(s['catch_fuzz']['value'], 2):>6s} {_num(s['catch_base']['value'], 2):>6s}"
        )
    for level, s in summary["levels"].items():
        lines.append(
            f"PRECHECK level={level} answers={s['answers']} tasks={s['tasks']} "
            f"room={_with_interval(s['room'])} stated_case_pass={_num(s['stated_case_pass'])} "
            f"any={_any(s['stated_case_any'])} pool={s['pool']} "
            f"catch_fuzz={_with_interval(s['catch_fuzz'], 2)} "
            f"catch_base={_with_interval(s['catch_base'], 2)} "
            f"fuzz_minus_base={_with_interval(s['catch_difference'], 2)}"
        )
    enough = "yes" if summary["pool"] >= pool_needed else "no"
    lines.append(f"PRECHECK pool={summary['pool']} (at least {pool_needed}: {enough})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the run


def run_precheck(
    cfg: Any,
    seed: int,
    per_family: int,
    samples: int,
    families: Sequence[str],
    levels: Sequence[int],
    given_tests: int,
    k: int,
    generator_samples: int,
    model: str = "",
    generator_model: str = "",
) -> dict[str, Any]:
    """The whole pre-check (the module docstring): {"rows", "summary", "pool" (PoolEntry),
    "kept" (each writer's tests per pool problem), "timing", "answers" (the per-answer rows)}."""
    from sparring import progress
    from sparring.evaluation.calibration import answerer_for, calibration_problems, sample_model
    from sparring.evaluation.generator_heldout import sample_tests
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import untrusted_limits

    problems = calibration_problems(cfg, seed, per_family, families, levels)
    began = time.perf_counter()
    answerer = answerer_for(cfg, model)
    loaded_s, began = time.perf_counter() - began, time.perf_counter()
    cpu = time.process_time()  # CPU seconds too: wall time on a shared machine says little
    texts = sample_model(cfg, answerer, problems, samples, seed, label="precheck")
    sampled_s, sampled_cpu = time.perf_counter() - began, time.process_time() - cpu
    del answerer  # the generator loads next: one model in memory at a time
    answers = sum(len(t) for t in texts)
    progress.say(f"precheck: {answers} answers in {sampled_s:.0f}s; judging them")
    began = time.perf_counter()
    with Sandbox(untrusted_limits(cfg)) as sb:
        rows, pool, answers_rows = judge(problems, texts, given_tests, sb)
    judged_s = time.perf_counter() - began
    targets = pool_problems(pool)
    progress.say(f"precheck: pool {len(pool)} answers on {len(targets)} problems")
    began = time.perf_counter()
    name = generator_model or cfg.model_for("generator").name
    written = (
        sample_tests(cfg, name, targets, generator_samples, seed + 1)
        if targets and generator_samples
        else []
    )
    generator_s = time.perf_counter() - began
    began = time.perf_counter()
    with Sandbox(untrusted_limits(cfg)) as sb:
        kept, caught = measure_catch(
            cfg, pool, {p.id: t for p, t in zip(targets, written, strict=False)}, k, seed, sb
        )
    add_catch(rows, pool, caught)
    completions = sum(len(t) for t in written)
    timing = {
        "answers": answers,
        "load_s": loaded_s,
        "sample_s": sampled_s,
        "seconds_per_answer": sampled_s / answers if answers else None,
        "cpu_seconds_per_answer": sampled_cpu / answers if answers else None,
        "judge_s": judged_s,
        "generator_completions": completions,
        "generator_s": generator_s,
        "seconds_per_generator_completion": generator_s / completions if completions else None,
        "catch_s": time.perf_counter() - began,
    }
    return {
        "rows": rows,
        "summary": summarize(rows, seed),
        "pool": pool,
        "kept": kept,
        "timing": timing,
        "answers": answers_rows,
    }
