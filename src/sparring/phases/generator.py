"""The generator phase: GRPO of the test writer against a frozen answerer.

Covers: `train_generator` in its steps: the plan and the first draw (`first_draw`), the
isolation gate, the frozen answerer sampled once with the phase's reasoning stages and its own
seed (`frozen_sampling`) and the draw its answers order (`frozen_draw`: the zone first; for the
catch reward the catchable problems only), then the test writer's GRPO against them and the
phase's outputs (`train_test_writer`: its reward `writer_reward`, its final tests, the trained
model with its record); a dry run writes `dry_run`'s outputs instead (the mutated baseline
tests of `fallback_tests`). Does not cover: the frozen answerer's sampling itself, in process
or behind the server (sparring.serving.duel), the rewards' rules (sparring.rewards.code_duel),
the writer's rows (sparring.problems.writer_rows), validation (sparring.phases.validate) or the
generator's other modes, each a phase of its own that the phase table runs in this one's place:
`generator_mode: problems` (sparring.phases.proposer) and `fuzz` (sparring.phases.fuzz)."""

from __future__ import annotations

import ast
import gc
import tempfile
from dataclasses import dataclass
from typing import Any

from sparring import backends, storage
from sparring.backends.base import copy_model, trained_record
from sparring.backends.sampler import sample_final_tests
from sparring.config import Config
from sparring.distributed import ranks
from sparring.engine.credit import catch_step_metrics, reward_metrics
from sparring.errors import SparringError
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    train_problems,
)
from sparring.phases.schedule import reasoning_stages
from sparring.phases.zone import draw_in_zone, in_zone, problems_in_zone, tested_problems
from sparring.problems import Problem
from sparring.problems.writer_rows import writer_rows, written_tests
from sparring.rewards import code_duel
from sparring.rewards.frozen import frozen_zone
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits
from sparring.serving.duel import sample_frozen_pool


def _equality(test: str) -> tuple[ast.expr, ast.expr] | None:
    """(call, expected) of `assert call == expected`; None for any other shape."""
    try:
        node = ast.parse(test).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    cmp = node.test
    if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], ast.Eq):
        return None
    return cmp.left, cmp.comparators[0]


def fallback_tests(problem: Problem, n: int = 4) -> list[str]:
    """The dry run's stand-in for generated tests: pairs of baseline equality tests joined into
    one `assert (a, b) == (x, y)`. Valid by construction (the reference passes both halves),
    new as text, and as hard to pass trivially as the harder half, so a dry run exercises the
    whole validate -> bank -> selection path the way real generated tests do."""
    parts = [e for e in (_equality(t) for t in problem.baseline_tests) if e]
    out: list[str] = []
    for gap in range(1, len(parts)):
        for i in range(len(parts) - gap):
            (c1, e1), (c2, e2) = parts[i], parts[i + gap]
            joined = ast.Compare(
                ast.Tuple([c1, c2], ast.Load()), [ast.Eq()], [ast.Tuple([e1, e2], ast.Load())]
            )
            out.append(ast.unparse(ast.Assert(joined)))
            if len(out) == n:
                return out
    return out


def train_generator(
    cfg: Config,
    round_index: int,
    data_dir: str,
    frozen_answerer: str,
    init_model: str | None,
    out_model: str,
    out_tests: str,
    out_frozen_solutions: str,
    phase: str = "generator",
) -> dict[str, float]:
    """GRPO of the test writer against a frozen answerer snapshot (sampled once), for the
    planned steps of `phase` (its `Phase.name`, which also seeds its draws and the frozen
    sampling; a free label runs `cfg.steps.generator` steps). Its steps: the plan and the draw,
    the isolation gate, the frozen answers and the draw they order (`frozen_draw`), then
    `train_test_writer`; in a dry run (or a phase of no steps) `dry_run`."""
    if cfg.generator_mode != "tests":  # the phase table runs the other modes' phases
        raise SparringError(
            f"generator_mode {cfg.generator_mode}: run its own phase (sparring.phases.table)"
        )
    init_model = init_model or None
    steps, pool, problems = first_draw(cfg, round_index, data_dir, phase)
    metrics: dict[str, float] = {"problems": float(len(problems)), "dry_run": float(cfg.dry_run)}
    outs = (out_model, out_tests, out_frozen_solutions)
    if not steps or cfg.dry_run:
        return {**metrics, **dry_run(cfg, problems, pool, round_index, phase, init_model, outs)}
    seed = derived_seed(cfg, round_index, phase)
    check_shared_beta(cfg)
    backend = backends.get(cfg.backend)
    require_isolation(cfg)  # before the models load: its tests run against the answers
    limits = untrusted_limits(cfg)  # of every sandbox the phase opens
    answerer = frozen_answerer or cfg.model_for("answerer").name
    drawn, loaded, sampled = frozen_draw(
        cfg, backend, limits, answerer, pool, problems, round_index, phase,
        catch_only=cfg.rewards.generator == "catch",
    )  # fmt: skip
    del loaded  # the cached answers are all the writer needs (a shared base stays cached)
    gc.collect()
    trained = train_test_writer(
        cfg, backend, limits, drawn, steps=steps, seed=seed, round_index=round_index,
        phase=phase, init_model=init_model, outs=outs,
    )  # fmt: skip
    return {**metrics, **sampled, **trained}


def first_draw(
    cfg: Config, round_index: int, data_dir: str, phase: str
) -> tuple[int, list[Problem], list[Problem]]:
    """A generator phase's planned steps, its training pool (from `data_dir`) and its first
    draw, before any frozen answer orders it."""
    steps = planned_steps(cfg, phase, "generator", round_index)
    pool = train_problems(data_dir)
    return steps, pool, draw_in_zone(cfg, pool, {}, round_index, phase)


def final_problems(cfg: Config, problems: list[Problem], pool: list[Problem]) -> list[Problem]:
    """The problems the phase writes tests for: its draw, then with `steps.final_tests_all` the
    rest of the training pool in pool order. Every one, because the next answerer phase may
    sample any: it draws (`draw_in_zone`) by the zone that validation writes after banking
    these tests (a problem whose frozen answers all pass the given tests joins the zone when a
    banked test fails one), among the problems at its coach's levels, which only its init
    model's record holds; a generated test changes the answerer's reward only on a problem it
    covers."""
    if not cfg.steps.final_tests_all:
        return problems
    drawn = {p.id for p in problems}
    return problems + [p for p in pool if p.id not in drawn]


def frozen_sampling(cfg: Config, round_index: int, phase: str) -> tuple[list[str], int]:
    """How the phase labelled `phase` samples its frozen answerer: the reasoning stages of its
    prompts and its seed. Each planned phase samples it with its own seed; the default label
    keeps the seed it always had (pipelines compiled before labels were phase names pass none)."""
    label = "frozen" if phase == "generator" else f"{phase}-frozen"
    return reasoning_stages(cfg, round_index), derived_seed(cfg, round_index, label)


def generator_record(
    round_index: int, phase: str, mode: str, problems: list[Problem]
) -> dict[str, Any]:
    """What the trained (or copied) model's record says of the phase and its draw."""
    return {"round": round_index, "phase": phase, "mode": mode,
            "problems_drawn": drawn_digest(problems)}  # fmt: skip


def dry_run(
    cfg: Config,
    problems: list[Problem],
    pool: list[Problem],
    round_index: int,
    phase: str,
    init_model: str | None,
    outs: tuple[str, str, str],
) -> dict[str, float]:
    """A generator phase's outputs without training (a dry run, or a phase of no steps), in
    either mode: its start (`init_model`, else the base model) copied as the trained model and
    `write_dry_run` for the first draw `problems`; its metric."""
    meta = generator_record(round_index, phase, cfg.generator_mode, problems)
    start = init_model or cfg.model_for("generator").name
    tested = final_problems(cfg, problems, pool)
    return {"generated_tests": write_dry_run(problems, tested, meta, start, outs)}


def write_dry_run(
    problems: list[Problem],
    tested: list[Problem],
    meta: dict[str, Any],
    start: str,
    outs: tuple[str, str, str],
) -> float:
    """A dry run's outputs (or a phase of no steps') in `outs` (model, tests, frozen answers):
    the model `start` copied as the trained one with its record `meta`, the `fallback_tests`
    of each problem of `tested` and no frozen answers for `problems`; how many tests were
    written."""
    out_model, out_tests, out_frozen_solutions = outs
    copy_model(start, out_model, {**meta, "role": "generator"})
    rows = [
        {"problem_id": p.id, "tests": fallback_tests(p), "round": meta["round"]} for p in tested
    ]
    none = [{"problem_id": p.id, "solutions": []} for p in problems]
    storage.write_records(out_frozen_solutions, none)
    storage.write_records(out_tests, rows)
    return float(sum(len(r["tests"]) for r in rows))


@dataclass(frozen=True)
class FrozenDraw:
    """A generator phase's draw as the frozen answers ordered it: the training `pool`, the
    drawn `problems`, the frozen answerer's rows as sampled (`rows`, the phase's
    frozen_solutions output) and parsed per problem (`solutions`), the problems the phase
    writes tests for (`tested`: `final_problems`) and those the trained writer is asked final
    tests for (`asked`: with `steps.final_tests_all` every tested one, else the drawn ones
    whose frozen answers differed, sparring.phases.zone.tested_problems)."""

    pool: list[Problem]
    problems: list[Problem]
    rows: list[dict[str, Any]]
    solutions: dict[str, list[str]]
    tested: list[Problem]
    asked: list[Problem]


def frozen_draw(
    cfg: Config,
    backend: Any,
    limits: Any,
    answerer: str,
    pool: list[Problem],
    problems: list[Problem],
    round_index: int,
    phase: str,
    catch_only: bool,
) -> tuple[FrozenDraw, tuple[Any, Any], dict[str, float]]:
    """The frozen `answerer` sampled once (`frozen_sampling`; with several training processes
    each samples a share, all get every row) on the training `pool` with `steps.screen_pool`,
    else on the first draw `problems`, and the draw its answers order: with the screen, drawn
    anew by the zone they show; with `catch_only`, cut to the problems where a frozen answer
    passes the given tests (all of them when there are none). `backend` samples it, `limits`:
    its sandboxes'.
    Returns (the draw, the loaded frozen model and tokenizer, the metrics of both)."""
    stages, seed = frozen_sampling(cfg, round_index, phase)
    screened = pool if cfg.steps.screen_pool else problems
    rows, frozen, ftok, sampling = sample_frozen_pool(
        cfg, backend, answerer, screened, stages, seed, "train-generator"
    )
    solutions = {r["problem_id"]: [s for s in r["solutions"] if s] for r in rows}
    metrics = {
        "frozen_sampling_s": sampling["seconds"],
        "frozen_tokens_per_s": sampling["tokens_per_s"],
        "frozen_parse_rate": sum(len(v) for v in solutions.values())
        / max(1, len(screened) * cfg.steps.frozen_samples),
    }
    zone: dict[str, dict[str, float]] = {}
    catchable: set[str] = set()
    # validation recomputes this zone for zone.json in its own task (seconds of sandbox time);
    # here it orders the generator's draw, and the same runs say which problems are catchable
    if cfg.steps.screen_pool or catch_only:
        with Sandbox(limits) as sb:
            screen = frozen_zone(
                cfg.steps.frozen_samples, {p.id: p for p in pool}, solutions, sb,
                catchable=catchable if catch_only else None,
            )  # fmt: skip
        zone = screen if cfg.steps.screen_pool else {}
    if zone:  # the generator writes tests where the answers differ, first
        problems = draw_in_zone(cfg, pool, zone, round_index, phase)
        metrics["problems_in_zone"] = float(problems_in_zone(problems, zone))
        metrics["pool_in_zone"] = float(sum(in_zone(z) for z in zone.values()))
    if catch_only:
        # the catch reward pays only where a frozen answer passes the given tests: train there
        # only (at levels 2-3 about 4 problems in 10 hold one of 8 answers; drawn at random, a
        # step's 4 problems held 0 to 3 of them, 2026-12-03; TRL shuffles the dataset, so an
        # order would not do). Final tests still cover the rest (steps.final_tests_all).
        metrics["pool_catchable"] = float(len(catchable))
        metrics["problems_catchable"] = float(sum(p.id in catchable for p in problems))
        problems = [p for p in problems if p.id in catchable] or problems
    tested = final_problems(cfg, problems, pool)
    asked = tested if cfg.steps.final_tests_all else tested_problems(problems, zone)
    return FrozenDraw(pool, problems, rows, solutions, tested, asked), (frozen, ftok), metrics


def train_test_writer(
    cfg: Config,
    backend: Any,
    limits: Any,
    drawn: FrozenDraw,
    *,
    steps: int,
    seed: int,
    round_index: int,
    phase: str,
    init_model: str | None,
    outs: tuple[str, str, str],
) -> dict[str, float]:
    """GRPO of the test writer from `init_model` (None: the base model) on the `drawn` problems
    for `steps` steps with the phase's `seed`, its tests rewarded against the frozen answers
    (`writer_reward`) in sandboxes of `limits` on `backend`; then its final tests (for
    `drawn.asked`), and the phase's outputs written to `outs`: the trained model with its
    record, its tests (`written_tests`) and the frozen answers. Returns the training's
    metrics."""
    from datasets import Dataset  # heavy (pyarrow): imported when a phase trains

    out_model, out_tests, out_frozen_solutions = outs
    meta = generator_record(round_index, phase, cfg.generator_mode, drawn.problems)
    record = trained_record(cfg, "generator", meta, init_model)
    model, tok, peft_config = backend.load_trainable(cfg, "generator", init_model)
    with Sandbox(limits) as sb, tempfile.TemporaryDirectory() as tmp:
        reward_fn = code_duel.writer_reward(cfg.rewards, sb, drawn.solutions, drawn.problems)
        rows, asked_rows = writer_rows(
            drawn.problems, drawn.asked, cfg.steps.generator_tests,
            cfg.steps.generator_stated_cases,
        )  # fmt: skip
        model, trl_metrics = backend.train(
            cfg, model, tok, Dataset.from_list(rows), reward_fn, steps, tmp, seed, peft_config,
            drawn.problems, "generator",
        )  # fmt: skip
        backend.use_role(model, "generator")
        final = sample_final_tests(cfg, backend, model, tok, asked_rows, drawn.problems, seed)
    generated = ranks.merge_lists(reward_fn.scorer.generated)  # every process's completions
    # the catch at the first and last step: every process's scoring calls
    calls = ranks.all_gather(reward_fn.catch_calls) if cfg.rewards.generator == "catch" else None
    out_rows = written_tests(drawn.tested, generated, asked_rows, final, round_index)
    storage.write_records(out_frozen_solutions, drawn.rows)
    storage.write_records(out_tests, out_rows)
    backend.save_trained(cfg, model, tok, out_model, record)
    return {
        **trl_metrics,
        **reward_metrics(reward_fn.rewards, reward_fn.history, cfg.grpo.num_generations),
        **(catch_step_metrics(calls) if calls is not None else {}),
        "final_tests_problems": float(len(asked_rows)),
        "generated_tests": float(sum(len(r["tests"]) for r in out_rows)),
    }
