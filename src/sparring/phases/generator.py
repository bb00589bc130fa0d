"""The generator phase: GRPO of the test writer (or proposer) against a frozen answerer.

Covers: `train_generator` in its steps: the dry run (`write_dry_run`, with the mutated baseline
tests of `fallback_tests`), the frozen answerer sampled once with the phase's reasoning stages
and its own seed (`frozen_sampling`) and its solutions written (`sample_frozen`),
the draw those solutions order (`order_by_frozen`: the zone first; for the catch reward the
catchable problems only), the test writer's GRPO against them (`train_test_writer`, its reward
`writer_reward`, its catch at the first and last step `catch_step_metrics`), its final tests
(`sample_final_tests`, `written_tests`) and the trained model's record. Does not cover: the
frozen answerer's sampling itself, in process or behind the server (sparring.serving.duel,
`sample_frozen_pool`), the rewards' rules (sparring.rewards.code_duel), the proposer mode
(`generator_mode: problems`, sparring.phases.proposer), which problems get final tests
(sparring.phases.final_tests), validation (sparring.phases.validate) or the generator that does
not learn (`generator_mode: fuzz`, sparring.phases.fuzz, which the phase table runs in this
phase's place)."""

from __future__ import annotations

import ast
import gc
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparring import backends, storage
from sparring.backends.base import copy_model, trained_record
from sparring.config import Config
from sparring.distributed import ranks
from sparring.engine.credit import reward_metrics
from sparring.errors import SparringError
from sparring.evaluation.intervals import side_summary
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    train_problems,
)
from sparring.phases.final_tests import final_problems, writer_rows
from sparring.phases.proposer import train_proposer
from sparring.phases.schedule import reasoning_stages
from sparring.phases.zone import draw_in_zone, in_zone, problems_in_zone
from sparring.problems import Problem, prompts
from sparring.rewards import code_duel
from sparring.rewards.frozen import frozen_zone
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits
from sparring.serving.duel import sample_final_tests, sample_frozen_pool


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
    """GRPO of the generator against a frozen answerer snapshot (sampled once), for the planned
    steps of `phase` (its `Phase.name`, which also seeds its draws and the frozen sampling; a
    free label runs `cfg.steps.generator` steps). Its steps: the plan and the draw, the
    isolation gate (when it trains), then `grpo_generator`, or in a dry run (or a phase of no
    steps) `write_dry_run`. The table runs sparring.phases.fuzz instead in fuzz mode."""
    if cfg.generator_mode == "fuzz":  # nothing learns: the phase table runs that mode instead
        raise SparringError("generator_mode fuzz: run sparring.phases.fuzz.fuzz_generator")
    init_model = init_model or None
    steps = planned_steps(cfg, phase, "generator", round_index)
    pool = train_problems(data_dir)
    problems = draw_in_zone(cfg, pool, {}, round_index, phase)
    metrics: dict[str, float] = {"problems": float(len(problems)), "dry_run": float(cfg.dry_run)}
    outs = (out_model, out_tests, out_frozen_solutions)
    if steps and not cfg.dry_run:
        check_shared_beta(cfg)
        require_isolation(cfg)  # before the models load: its tests run against the answers
        limits = untrusted_limits(cfg)  # of every sandbox the phase opens
        trained = grpo_generator(
            cfg, limits, pool=pool, problems=problems,
            answerer=frozen_answerer or cfg.model_for("answerer").name,
            round_index=round_index, phase=phase, steps=steps, init_model=init_model, outs=outs,
        )  # fmt: skip
        return {**metrics, **trained}
    tested = final_problems(cfg, problems, pool)
    meta = generator_record(round_index, phase, cfg.generator_mode, problems)
    start = init_model or cfg.model_for("generator").name
    return {**metrics, "generated_tests": write_dry_run(problems, tested, meta, start, outs)}


def grpo_generator(
    cfg: Config,
    limits: Any,
    *,
    pool: list[Problem],
    problems: list[Problem],
    answerer: str,
    round_index: int,
    phase: str,
    steps: int,
    init_model: str | None,
    outs: tuple[str, str, str],
) -> dict[str, float]:
    """The generator's training: the frozen `answerer` sampled once (`sample_frozen`) on the
    training `pool` (or the first draw, `problems`, without a pool screen), the draw its answers
    order (`order_by_frozen`), GRPO of the test writer (`train_test_writer`) or of the proposer
    from `init_model` for `steps` steps, then its tests and the trained model written to `outs`
    (model, tests, frozen answers); `limits`: of every sandbox the phase opens."""
    out_model, out_tests, out_frozen_solutions = outs
    seed = derived_seed(cfg, round_index, phase)
    stages, frozen_seed = frozen_sampling(cfg, round_index, phase)
    screened = pool if cfg.steps.screen_pool else problems  # screened: the whole pool's zone
    solutions, frozen, ftok, sampled = sample_frozen(
        cfg, answerer, screened, stages, frozen_seed, out_frozen_solutions
    )
    catch_only = cfg.rewards.generator == "catch" and cfg.generator_mode != "problems"
    drawn_by, ordered = order_by_frozen(
        cfg, limits, pool, problems, solutions, round_index, phase, catch_only
    )
    meta = generator_record(round_index, phase, cfg.generator_mode, drawn_by.problems)
    record = trained_record(cfg, "generator", meta, init_model)
    backend = backends.get(cfg.backend)
    if cfg.generator_mode == "problems":  # the proposer
        model, tok, out_rows, trained = train_proposer(
            cfg, backend, limits, init_model, (frozen, ftok), drawn_by.problems, steps, seed,
            round_index,
        )  # fmt: skip
    else:
        frozen = None  # the cached solutions are all the phase needs (a shared base stays cached)
        gc.collect()
        model, tok, out_rows, trained = train_test_writer(
            cfg, backend, limits, init_model, drawn_by, steps, seed, round_index
        )
    written = write_tests(out_tests, out_rows)
    backend.save_trained(cfg, model, tok, out_model, record)
    return {**sampled, **ordered, **trained, "generated_tests": written}


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


def write_tests(path: str, rows: list[dict[str, Any]]) -> float:
    """Write the phase's test rows; how many tests they hold."""
    storage.write_records(path, rows)
    return float(sum(len(r["tests"]) for r in rows))


def write_dry_run(
    problems: list[Problem],
    tested: list[Problem],
    meta: dict[str, Any],
    start: str,
    outs: tuple[str, str, str],
) -> float:
    """A dry run's outputs (or a phase of no steps') in `outs` (model, tests, frozen answers):
    the model `start` copied as the trained one, the `fallback_tests` of each problem of
    `tested` and no frozen answers for `problems`; how many tests were written."""
    out_model, out_tests, out_frozen_solutions = outs
    copy_model(start, out_model, {**meta, "role": "generator"})
    rows = [
        {"problem_id": p.id, "tests": fallback_tests(p), "round": meta["round"]} for p in tested
    ]
    none = [{"problem_id": p.id, "solutions": []} for p in problems]
    storage.write_records(out_frozen_solutions, none)
    return write_tests(out_tests, rows)


def sample_frozen(
    cfg: Config,
    answerer: str,
    screened: list[Problem],
    stages: list[str],
    seed: int,
    out_frozen_solutions: str,
) -> tuple[dict[str, list[str]], Any, Any, dict[str, float]]:
    """The frozen answerer `answerer` sampled once on `screened` with the reasoning `stages` and
    `seed` (sparring.serving.duel.sample_frozen_pool: with several training processes each
    samples a share, all get every row), its answers written to `out_frozen_solutions`. Returns
    (the parsed answers per problem, the loaded model, its tokenizer, the sampling's metrics)."""
    backend = backends.get(cfg.backend)
    rows, frozen, ftok, sampling = sample_frozen_pool(
        cfg, backend, answerer, screened, stages, seed, "train-generator"
    )
    storage.write_records(out_frozen_solutions, rows)
    solutions = {r["problem_id"]: [s for s in r["solutions"] if s] for r in rows}
    parsed = sum(len(v) for v in solutions.values())
    metrics = {
        "frozen_sampling_s": sampling["seconds"],
        "frozen_tokens_per_s": sampling["tokens_per_s"],
        "frozen_parse_rate": parsed / max(1, len(screened) * cfg.steps.frozen_samples),
    }
    return solutions, frozen, ftok, metrics


@dataclass(frozen=True)
class FrozenDraw:
    """A generator phase's draw as the frozen answers ordered it: the training `pool`, the
    drawn `problems`, the frozen answerer's parsed answers per problem (`solutions`) and the zone
    they show (empty without `steps.screen_pool`)."""

    pool: list[Problem]
    problems: list[Problem]
    solutions: dict[str, list[str]]
    zone: dict[str, dict[str, float]]


def order_by_frozen(
    cfg: Config,
    limits: Any,
    pool: list[Problem],
    problems: list[Problem],
    solutions: dict[str, list[str]],
    round_index: int,
    phase: str,
    catch_only: bool,
) -> tuple[FrozenDraw, dict[str, float]]:
    """The draw as the frozen answers order it, and the metrics of that: with
    `steps.screen_pool`, drawn anew by the zone they show; with `catch_only`, cut to the problems
    where a frozen answer passes the given tests (all of them when there are none). `limits`:
    its sandboxes'."""
    zone: dict[str, dict[str, float]] = {}
    metrics: dict[str, float] = {}
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
    return FrozenDraw(pool, problems, solutions, zone), metrics


def train_test_writer(
    cfg: Config,
    backend: Any,
    limits: Any,
    init_model: str | None,
    drawn: FrozenDraw,
    steps: int,
    seed: int,
    round_index: int,
) -> tuple[Any, Any, list[dict[str, Any]], dict[str, float]]:
    """GRPO of the test writer on the drawn problems, its tests rewarded against the frozen
    answers (`writer_reward`) in sandboxes of `limits`, then its final tests (`writer_rows`).
    Returns (the trained model, its tokenizer, a row of tests per problem it writes for, the
    training's metrics)."""
    from datasets import Dataset  # heavy (pyarrow): imported when a phase trains

    problems = drawn.problems
    tested = final_problems(cfg, problems, drawn.pool)
    rows, asked_rows = writer_rows(cfg, problems, drawn.zone, drawn.pool)  # asked once trained
    model, tok, peft_config = backend.load_trainable(cfg, "generator", init_model)
    with Sandbox(limits) as sb, tempfile.TemporaryDirectory() as tmp:
        reward_fn = code_duel.writer_reward(cfg.rewards, sb, drawn.solutions, problems)
        model, trl_metrics = backend.train(
            cfg, model, tok, Dataset.from_list(rows), reward_fn, steps, tmp, seed, peft_config,
            problems, "generator",
        )  # fmt: skip
        backend.use_role(model, "generator")
        final = sample_final_tests(cfg, backend, model, tok, asked_rows, problems, seed)
    generated = ranks.merge_lists(reward_fn.scorer.generated)  # every process's completions
    # the catch at the first and last step: every process's scoring calls
    calls = ranks.all_gather(reward_fn.catch_calls) if cfg.rewards.generator == "catch" else None
    out_rows = written_tests(tested, generated, asked_rows, final, round_index)
    caught = catch_step_metrics(calls) if calls is not None else {}
    rewarded = reward_metrics(reward_fn.rewards, reward_fn.history, cfg.grpo.num_generations)
    metrics = {**trl_metrics, **rewarded, **caught, "final_tests_problems": float(len(asked_rows))}
    return model, tok, out_rows, metrics


def written_tests(
    tested: list[Problem],
    generated: Mapping[str, list[str]],
    asked_rows: list[dict[str, Any]],
    final: list[list[str]],
    round_index: int,
) -> list[dict[str, Any]]:
    """A row per problem of `tested`: the tests written while training (`generated`), then the
    new ones parsed from its final completions (`final`, a list per row of `asked_rows`)."""
    written = {r["problem_id"]: texts for r, texts in zip(asked_rows, final, strict=True)}
    out_rows = []
    for p in tested:
        tests = list(generated.get(p.id, []))
        for text in written.get(p.id, ()):
            for t in prompts.extract_tests(text, p.function_name):
                if t not in tests:
                    tests.append(t)
        out_rows.append({"problem_id": p.id, "tests": tests, "round": round_index})
    return out_rows


def catch_step_metrics(per_process: Sequence[Sequence[Mapping[str, float]]]) -> dict[str, float]:
    """The generator phase's `generator_catch_{first,last}{,_se,_n}` (mean catch over problems at
    its first and last scoring call, with its standard error over problems and the problem
    count: sparring.evaluation.intervals.side_summary) and `generator_catch_calls`, from
    `catch_by_problem` of each call, per training process (call i of every process together:
    each scores its share of the step's problems). {} when nothing was scored.

    >>> m = catch_step_metrics([[{"a": 0.0, "b": 0.5}, {"a": 1.0}], [{"c": 0.5}, {"c": 0.0}]])
    >>> m["generator_catch_first"], m["generator_catch_last"], m["generator_catch_last_n"]
    (0.3333333333333333, 0.5, 2.0)
    """
    calls: list[dict[str, float]] = []
    for process in per_process:
        for i, per_problem in enumerate(process):
            if i == len(calls):
                calls.append({})
            calls[i].update(per_problem)
    calls = [c for c in calls if c]
    if not calls:
        return {}
    out = {"generator_catch_calls": float(len(calls))}
    for side, call in (("first", calls[0]), ("last", calls[-1])):
        summary = side_summary(list(call.values()))
        out[f"generator_catch_{side}"] = summary["mean"]
        out[f"generator_catch_{side}_se"] = summary["se"]
        out[f"generator_catch_{side}_n"] = summary["n"]
    return out
