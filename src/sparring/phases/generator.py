"""The generator phase: GRPO of the test writer (or proposer) against a frozen answerer.

Covers: sampling the frozen answerer snapshot once (`sample_frozen_solutions`; over a pool, in
process or behind the server: `sample_frozen_pool`, the answerer phase's screen too),
`train_generator` (rewarded against those cached solutions; writes the generated tests and
frozen solutions), the proposer mode's reward, and the dry run's mutated baseline tests
(`fallback_tests`). Does not cover: the rewards' rules (sparring.rewards.code_duel), which
problems get final tests (sparring.phases.final_tests), validation (sparring.phases.validate)
or the generator that does not learn (`generator_mode: fuzz`,
sparring.phases.fuzz, which `train_generator` hands the phase to).
"""

from __future__ import annotations

import ast
import gc
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sparring import backends
from sparring.backends.base import Sampled
from sparring.backends.budget import completion_tokens
from sparring.config import Config
from sparring.distributed import ranks
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    reward_metrics,
    train_problems,
    trained_record,
    write_lines,
)
from sparring.phases.final_tests import final_problems, final_rows
from sparring.phases.zone import (
    catchable_problems,
    draw_in_zone,
    frozen_zone,
    in_zone,
)
from sparring.problems import Problem, programs, prompts
from sparring.sandbox.limits import untrusted_limits


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


def sampling_rows(cfg: Config) -> int:
    """Rows the phase decodes at once outside its GRPO step: `steps.frozen_rows`, else
    `grpo.rollout_batch_size`."""
    return cfg.steps.frozen_rows or cfg.grpo.rollout_batch_size


def sample_frozen_solutions(
    cfg: Config,
    answerer: Any,
    problems: list[Problem],
    round_index: int,
    progress=True,
    seed_label: str = "frozen",
    cache_model: str | None = None,
) -> tuple[list[dict[str, Any]], Sampled]:
    """`steps.frozen_samples` solutions per problem, sampled once ("" when unparseable), and
    what sampling them took; `answerer` is the frozen snapshot loaded in process or, with
    `serving.mode: server`, behind the server. `seed_label` seeds the sampling (the generator
    phase passes its own label). With `cache_model` (a completion_cache.model_identity), the
    completions come from, or go to, the completion cache: the arms of a study that start from
    one base model with one seed sample its pool once (a hit reports no sampling time)."""
    from sparring.backends.sampler import sample_answers
    from sparring.evaluation.completion_cache import loaded_on, through_cache
    from sparring.phases.schedule import reasoning_stages
    from sparring.problems.prompts import answerer_messages

    stages = reasoning_stages(cfg, round_index)
    settings = {
        "max_new_tokens": completion_tokens(cfg, answerer.tokenizer, problems),
        "temperature": cfg.grpo.temperature, "top_p": cfg.grpo.top_p,
        "num_samples": cfg.steps.frozen_samples, "seed": derived_seed(cfg, round_index, seed_label),
    }  # fmt: skip
    fresh: list[Sampled] = []

    def sample() -> list[list[str]]:
        fresh.append(sample_answers(answerer, problems, stages=stages, bar=progress, **settings))
        return fresh[-1].texts

    if cache_model and problems:
        messages = [answerer_messages(p, stages) for p in problems]
        mc = cfg.model_for("answerer")  # what else decides the tokens: how the model is loaded
        loaded = {"topology": cfg.topology, "configured": [mc.device, mc.dtype],
                  **loaded_on(answerer), "rows": getattr(answerer, "rows", None)}  # fmt: skip
        key = {**settings, **loaded, "purpose": "frozen pool"}
        texts = through_cache(cache_model, messages, key, settings["num_samples"], sample)
        sampled = fresh[0] if fresh else Sampled(texts)
    else:
        sample()
        sampled = fresh[0]
    rows = [
        {
            "problem_id": p.id,
            "solutions": [programs.extract_code(t, p.function_name) or "" for t in samples],
        }
        for p, samples in zip(problems, sampled.texts, strict=True)
    ]
    return rows, sampled


def sample_frozen_pool(
    cfg: Config,
    backend: Any,
    model: str,
    problems: list[Problem],
    round_index: int,
    seed_label: str,
    label: str,
) -> tuple[list[dict[str, Any]], Any, Any, dict[str, float]]:
    """`sample_frozen_solutions` of `model` on `problems`, each training process sampling a
    share and all getting every row; in process, or behind the server with `serving.mode:
    server`. Returns (rows, the loaded model, its tokenizer, {"seconds", "tokens_per_s"}); the
    model is loaded either way (the tokenizer sizes budgets; the proposer mode solves with it).
    One line says what was sampled; `label` names the phase in it."""
    from sparring.backends.sampler import LoadedAnswerer
    from sparring.evaluation import completion_cache

    start = time.perf_counter()
    frozen, tok = backend.load_frozen(cfg, model)
    # steps.frozen_rows, else a training rollout's rows: on a CPU a wider decode step costs
    # little more (docs/training.md), and the frozen samples are most of this phase's time
    answerer: Any = LoadedAnswerer(backend, frozen, tok, sampling_rows(cfg))
    if cfg.serving.mode == "server":
        from sparring.serving.duel import ServedAnswerer

        answerer = ServedAnswerer(cfg, model, tok)
    stats: list[Sampled] = []
    # served answers are the server's to reproduce; in process, the cache's
    cached = None if cfg.serving.mode == "server" else completion_cache.identity_if_enabled(model)

    def sample_share(part: list[Problem]) -> list[dict[str, Any]]:
        rows, sampled = sample_frozen_solutions(
            cfg, answerer, part, round_index, seed_label=seed_label, cache_model=cached
        )
        stats.append(sampled)
        return rows

    rows = ranks.shard_and_gather(problems, sample_share)
    seconds = time.perf_counter() - start
    if ranks.world().main:
        from sparring import progress as lines

        lines.say(
            f"{lines.LABEL or label} frozen answerer: "
            f"{len(problems) * cfg.steps.frozen_samples} solutions on {len(problems)} problems "
            f"sampled in {lines.fmt_seconds(seconds)}"
        )
    tokens_per_s = stats[0].tokens_per_s if stats else 0.0
    return rows, frozen, tok, {"seconds": seconds, "tokens_per_s": tokens_per_s}


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
    steps of `phase` (the phase's `Phase.name`, which also seeds its draws and the frozen
    sampling; a free label runs `cfg.steps.generator` steps). With `generator_mode: fuzz` the
    generator does not learn: sparring.phases.fuzz writes the phase's outputs instead."""
    init_model = init_model or None
    if cfg.generator_mode == "fuzz":
        from sparring.phases.fuzz import fuzz_generator

        return fuzz_generator(
            cfg, round_index, data_dir, init_model, out_model, out_tests, out_frozen_solutions,
            phase,
        )  # fmt: skip
    frozen_answerer = frozen_answerer or cfg.model_for("answerer").name
    steps = planned_steps(cfg, phase, "generator", round_index)
    # each planned phase samples its frozen answerer with its own seed; the default label keeps
    # the seed it always had (pipelines compiled before labels were phase names pass none)
    frozen_label = "frozen" if phase == "generator" else f"{phase}-frozen"
    pool = train_problems(data_dir)
    problems = draw_in_zone(cfg, pool, {}, round_index, phase)
    base = backends.base_name(cfg, "generator", init_model)
    meta = {"round": round_index, "phase": phase, "mode": cfg.generator_mode,
            "problems_drawn": drawn_digest(problems)}  # fmt: skip
    metrics: dict[str, float] = {"problems": float(len(problems)), "dry_run": float(cfg.dry_run)}
    if cfg.dry_run or steps == 0:
        from sparring.backends.base import copy_model

        write_lines(out_frozen_solutions, [{"problem_id": p.id, "solutions": []} for p in problems])
        tested = final_problems(cfg, problems, pool)
        rows = [
            {"problem_id": p.id, "tests": fallback_tests(p), "round": round_index} for p in tested
        ]
        write_lines(out_tests, rows)
        copy_model(
            init_model or cfg.model_for("generator").name, out_model, {**meta, "role": "generator"}
        )
        metrics["generated_tests"] = float(sum(len(r["tests"]) for r in rows))
        return metrics
    check_shared_beta(cfg)
    from sparring.phases.sandboxed import require_isolation

    require_isolation(cfg)  # before the models load: its tests run against the answers

    from sparring.rewards import code_duel
    from sparring.sandbox import Sandbox

    backend = backends.get(cfg.backend)
    # Sampled once: with several training processes each samples a share, all get every row.
    # With steps.screen_pool on every training problem: the zone of the whole pool.
    screened = pool if cfg.steps.screen_pool else problems
    frozen_rows, frozen, ftok, sampling = sample_frozen_pool(
        cfg, backend, frozen_answerer, screened, round_index, frozen_label, "train-generator"
    )
    metrics["frozen_sampling_s"] = sampling["seconds"]
    metrics["frozen_tokens_per_s"] = sampling["tokens_per_s"]
    write_lines(out_frozen_solutions, frozen_rows)
    solutions = {r["problem_id"]: [s for s in r["solutions"] if s] for r in frozen_rows}
    metrics["frozen_parse_rate"] = sum(len(v) for v in solutions.values()) / max(
        1, len(screened) * cfg.steps.frozen_samples
    )
    # validation recomputes this zone for zone.json in its own task (seconds of sandbox time);
    # here it only orders the generator's draw
    zone: dict[str, dict[str, float]] = {}
    if cfg.steps.screen_pool:  # the generator writes tests where the answers differ, first
        with Sandbox(untrusted_limits(cfg)) as sb:
            zone = frozen_zone(cfg, {p.id: p for p in pool}, solutions, sb)
        problems = draw_in_zone(cfg, pool, zone, round_index, phase)
        meta["problems_drawn"] = drawn_digest(problems)
        metrics["problems_in_zone"] = float(sum(in_zone(zone.get(p.id)) for p in problems))
        metrics["pool_in_zone"] = float(sum(in_zone(z) for z in zone.values()))
    proposer = cfg.generator_mode == "problems"
    if cfg.rewards.generator == "catch" and not proposer:
        # the catch reward pays only where a frozen answer passes the given tests: train there
        # only (at levels 2-3 about 4 problems in 10 hold one of 8 answers; drawn at random, a
        # step's 4 problems held 0 to 3 of them, 2026-12-03; TRL shuffles the dataset, so an
        # order would not do). Final tests still cover the rest (steps.final_tests_all).
        with Sandbox(untrusted_limits(cfg)) as sb:
            catchable = catchable_problems(pool, solutions, sb)
        metrics["pool_catchable"] = float(len(catchable))
        metrics["problems_catchable"] = float(sum(p.id in catchable for p in problems))
        problems = [p for p in problems if p.id in catchable] or problems
        meta["problems_drawn"] = drawn_digest(problems)
    if not proposer:
        del frozen  # the cached solutions are all the phase needs (a shared base stays cached)
        gc.collect()
    model, tok, peft_config = backend.load_trainable(cfg, "generator", init_model)
    seed = derived_seed(cfg, round_index, phase)
    w = cfg.rewards
    weights = {
        "validity": w.validity,
        "hardness": w.hardness,
        "diversity": w.diversity,
        "consistency": w.consistency,
    }
    from datasets import Dataset

    role = "proposer" if proposer else "generator"
    with Sandbox(untrusted_limits(cfg)) as sb, tempfile.TemporaryDirectory() as tmp:
        if proposer:
            reward_fn = _ProposerRewardFn(cfg, sb, frozen, ftok, round_index)
            rows = [{"prompt": prompts.proposer_messages(p), "problem_id": p.id} for p in problems]
        else:
            infos = {p.id: code_duel.problem_info(p, solutions[p.id]) for p in problems}
            scorer = code_duel.GeneratorScorer(
                infos,
                sb,
                weights,
                w.duplicate_similarity,
                reference_expected=w.reference_expected,
                reward=w.generator,
            )
            reward_fn = code_duel.GeneratorRewardFn(scorer)
            asked = (cfg.steps.generator_tests, cfg.steps.generator_stated_cases)
            rows = [
                {"prompt": prompts.generator_messages(p, *asked), "problem_id": p.id}
                for p in problems
            ]
        model, trl_metrics = backend.train(
            cfg,
            model,
            tok,
            Dataset.from_list(rows),
            reward_fn,
            steps,
            tmp,
            seed,
            peft_config,
            problems,
            role,
        )
        metrics.update(trl_metrics)
        metrics.update(reward_metrics(reward_fn.rewards, reward_fn.history, cfg))
        backend.use_role(model, "generator")
        # the proposer's output is what it proposed while training: no final sampling
        asked_rows = [] if proposer else final_rows(cfg, rows, zone, problems, pool)
        if asked_rows:  # minutes on a CPU: say so, then a bar
            from sparring import progress as lines

            lines.say(
                f"{lines.LABEL or 'train-generator'} final tests: {len(asked_rows)} problems x "
                f"{cfg.steps.final_samples} completions"
            )
        final = (
            backend.sample(
                model,
                tok,
                [r["prompt"] for r in asked_rows],
                max_new_tokens=completion_tokens(cfg, tok, problems, role),
                temperature=cfg.grpo.temperature,
                top_p=cfg.grpo.top_p,
                num_samples=cfg.steps.final_samples,
                seed=seed,
                batch_size=sampling_rows(cfg),
                progress=True,
            ).texts
            if asked_rows
            else []
        )
    if proposer:
        out_rows = [
            {
                "problem_id": p.id,
                "tests": [],
                "round": round_index,
                "proposed": reward_fn.proposed.get(p.id, []),
            }
            for p in problems
        ]
    else:
        out_rows = []
        generated = ranks.merge_lists(scorer.generated)  # every process's training completions
        if w.generator == "catch":  # the first and last step's catch, over every process's
            metrics.update(catch_step_metrics(ranks.all_gather(reward_fn.catch_calls)))
        written = {r["problem_id"]: texts for r, texts in zip(asked_rows, final, strict=True)}
        for p in final_problems(cfg, problems, pool):
            tests = list(generated.get(p.id, []))
            for text in written.get(p.id, ()):
                for t in prompts.extract_tests(text, p.function_name):
                    if t not in tests:
                        tests.append(t)
            out_rows.append({"problem_id": p.id, "tests": tests, "round": round_index})
        metrics["final_tests_problems"] = float(len(asked_rows))
    write_lines(out_tests, out_rows)
    metrics["generated_tests"] = float(sum(len(r["tests"]) for r in out_rows))
    backend.save_trained(
        cfg, model, tok, out_model, trained_record(cfg, "generator", base, meta, init_model)
    )
    return metrics


class _ProposerRewardFn:
    """Proposer mode: goldilocks on the frozen solver's pass rate on each proposed problem."""

    __name__ = "proposer_reward"

    def __init__(self, cfg: Config, sandbox: Any, frozen: Any, ftok: Any, round_index: int):
        self.cfg, self.sandbox, self.frozen, self.ftok = cfg, sandbox, frozen, ftok
        self.round_index = round_index
        self.rewards: list[float | None] = []
        self.history: list[dict[str, float]] = []
        self.proposed: dict[str, list[dict[str, Any]]] = {}

    def _solve(self, proposed: list[dict[str, Any]]) -> list[list[str]]:
        from sparring.backends.sampler import LoadedAnswerer, sample_answers

        refs = [
            Problem(f"proposed-{i}", p["description"], p["function_signature"],
                    p["baseline_tests"], p["reference_solution"])
            for i, p in enumerate(proposed)
        ]  # fmt: skip
        backend = backends.get(self.cfg.backend)
        backend.use_role(self.frozen, "answerer")  # one base for both roles: its adapter
        try:
            return sample_answers(
                LoadedAnswerer(backend, self.frozen, self.ftok),
                refs,
                max_new_tokens=completion_tokens(self.cfg, self.ftok, refs),
                temperature=self.cfg.grpo.temperature,
                num_samples=self.cfg.steps.frozen_samples,
                seed=len(self.rewards),
            ).texts
        finally:
            backend.use_role(self.frozen, "generator")

    def __call__(self, prompts, completions, problem_id, **kwargs):
        from sparring.rewards.code_duel import completion_text, proposer_rewards

        texts = [completion_text(c) for c in completions]
        out, valid = proposer_rewards(
            texts, self.sandbox, self._solve, self.cfg.rewards.goldilocks_target
        )
        for pid, p in zip(problem_id, valid, strict=True):
            if p:
                self.proposed.setdefault(pid, []).append(p)
        self.history.append({"proposal_validity": sum(v is not None for v in valid) / len(valid)})
        self.rewards.extend(out)
        return out


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
    from sparring.evaluation.intervals import side_summary

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
