"""The test writers' catch on a fixed pool of wrong answers (issue 73's secondary measure): does
a trained generator catch more of the answers the given tests let through than the base
generator and the fuzzer?

The pool is the pre-check's pool.jsonl (sparring.experiments.precheck: answers of the base model
that pass the K given tests and fail a withheld one, on development-seed instances no run trains
or is measured on). Every writer keeps at most k valid tests a pool problem, as validation would
bank them: the fuzzer its drawn ones (under `seed`, as the pre-check), a generator model the
first valid ones of its completions through the generator prompt (sampled under `seed` + 1, as
the pre-check samples the base generator, so the base and fuzz numbers repeat the pre-check's).
A pool answer is caught when one of its problem's kept tests fails it. Per level and pooled:
each writer's catch with a 95% interval resampling tasks, and each writer minus the base
generator and minus the fuzzer, paired over the same answers and tasks.

Covers: `read_pool`, `pool_catch` (the numbers), `format_lines` (the POOLCATCH lines) and
`run_pool_catch` (sampling each generator, keeping and running the tests). Does not cover:
making the pool (sparring.experiments.precheck), the command (sparring.cli.precheck's
`pool-catch`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparring import progress
from sparring.experiments.precheck import (
    PoolEntry,
    catch_on_pool,
    generator_kept,
    paired_task_difference,
    pool_problems,
    task_share,
)
from sparring.problems import problem_from_dict

BASELINES = ("base", "fuzz")  # every other writer is compared with these two


def read_pool(path: str | Path) -> list[PoolEntry]:
    """The pool entries of a pre-check's pool.jsonl; a ValueError naming the line otherwise."""
    entries = []
    for i, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            entries.append(
                PoolEntry(
                    problem=problem_from_dict(row["problem"], f"{path}:{i}"),
                    family=str(row["family"]),
                    level=int(row["level"]),
                    sample=int(row["sample"]),
                    code=str(row["answer"]),
                    fails=[str(t) for t in row["fails"]],
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path}:{i}: not a pool row ({exc}); is it a pre-check's pool.jsonl?"
            ) from None
    return entries


def pool_catch(
    pool: Sequence[PoolEntry], caught: Mapping[str, Sequence[bool]], seed: int = 0
) -> dict[str, Any]:
    """{"levels": {level: {writer: share, "<writer>_minus_<baseline>": difference}},
    "pooled": the same over every level}: each writer's share of `pool` that its tests caught
    (`caught[writer]`, one flag per entry) with a 95% interval over tasks (a problem and all
    its pool answers, one unit), and every writer but the baselines (`BASELINES`) minus each
    baseline present, paired over the same tasks.

    >>> from sparring.problems import Problem
    >>> pool = [PoolEntry(Problem("p", "", "def f(x)", [], ""), "fam", 3, 0, "", [])] * 2
    >>> out = pool_catch(pool, {"base": [False, False], "S-t1": [True, False]})
    >>> out["pooled"]["S-t1"]["value"], out["pooled"]["S-t1_minus_base"]["value"]
    (0.5, 0.5)
    """

    def summary(indices: Sequence[int]) -> dict[str, Any]:
        tasks: dict[str, list[int]] = {}
        for i in indices:
            tasks.setdefault(pool[i].problem.id, []).append(i)
        out: dict[str, Any] = {}
        for writer, flags in caught.items():
            units = [(sum(flags[i] for i in ids), len(ids)) for ids in tasks.values()]
            out[writer] = task_share(units, seed=seed)
        for writer, flags in caught.items():
            for base in (b for b in BASELINES if b in caught and b != writer):
                if writer in BASELINES and BASELINES.index(writer) > BASELINES.index(base):
                    continue  # fuzz - base is printed once, as base - fuzz
                other = caught[base]
                units3 = [
                    (sum(flags[i] for i in ids), sum(other[i] for i in ids), len(ids))
                    for ids in tasks.values()
                ]
                out[f"{writer}_minus_{base}"] = paired_task_difference(units3, seed=seed)
        return out

    levels = sorted({e.level for e in pool})
    return {
        "levels": {
            str(level): summary([i for i, e in enumerate(pool) if e.level == level])
            for level in levels
        },
        "pooled": summary(range(len(pool))),
    }


def _share(s: Mapping[str, Any]) -> str:
    if s.get("value") is None:
        return "n/a"
    return f"{s['value']:.3f} ({s['lo']:.3f}..{s['hi']:.3f})"


def format_lines(result: Mapping[str, Any]) -> list[str]:
    """`POOLCATCH level=L writer=W catch=X (LO..HI) tasks=T answers=N`, then one line per
    difference, per level and pooled (level=all)."""
    lines = []
    for level, by in [*result["levels"].items(), ("all", result["pooled"])]:
        for key, s in by.items():
            what = "minus" if "_minus_" in key else "catch"
            lines.append(
                f"POOLCATCH level={level} writer={key} {what}={_share(s)} "
                f"tasks={s['tasks']} answers={s['answers']}"
            )
    return lines


def run_pool_catch(
    cfg: Any,
    pool: Sequence[PoolEntry],
    writers: Mapping[str, str],
    k: int,
    samples: int,
    seed: int,
) -> dict[str, Any]:
    """The whole measure: the fuzzer's and every generator model's (`writers`: {name: model
    name or folder}) kept tests on the pool's problems, what they catch, and `pool_catch`;
    {"result", "kept", "written"}."""
    from sparring.evaluation.generator_heldout import sample_tests
    from sparring.phases.fuzz import fuzz_tests
    from sparring.rewards.bank import BankMerge
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import untrusted_limits

    problems = pool_problems(pool)
    texts = {}
    for name, model in writers.items():
        # a line per writer: each samples for minutes (13 in all for three, on 2 cores) and
        # says nothing else
        progress.say(f"pool-catch: {name} writes tests for {len(problems)} problems x {samples}")
        written_texts = sample_tests(cfg, model, problems, samples, seed + 1)
        texts[name] = dict(zip([p.id for p in problems], written_texts, strict=True))
    kept: dict[str, dict[str, list[str]]] = {}
    written: dict[str, dict[str, list[str]]] = {}
    progress.say(f"pool-catch: keeping and running each writer's tests on {len(pool)} answers")
    with Sandbox(untrusted_limits(cfg)) as sb:
        bank = BankMerge(
            [], {p.id: p.baseline_tests for p in problems}, cfg.rewards.duplicate_similarity
        )
        kept["fuzz"] = fuzz_tests(problems, k, seed, bank, sb).picked
        for name in writers:
            kept[name], written[name] = generator_kept(cfg, problems, texts[name], k, sb)
        caught = {name: catch_on_pool(pool, tests, sb) for name, tests in kept.items()}
    return {"result": pool_catch(pool, caught, seed), "kept": kept, "written": written}
