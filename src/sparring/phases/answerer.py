"""The answerer phase: GRPO of the answerer on the problems plus the banked adversarial tests.

Covers: the answerer's dataset (prompt rows with the tests each problem is judged on, and the
problem's family and level), `train_answerer`, and with `coach.enabled` the curriculum coach's
part of it (`coach_for`): the coach continues from the state the init model's record keeps, each
coached family is drawn at its current level only, the coach counts the rewards as training
goes (and, on the torch backend in one process, swaps in rows at a family's new level when it
moves mid-phase: sparring.problems.coach.Reserve), and its state is kept in the trained model's
record
(`sparring_model.json`, key `coach`) for the next answerer phase. With `steps.screen_pool` and
no zone from a generator phase before it, the phase first screens the pool itself
(sparring.phases.screen).
Does not cover: the reward (sparring.rewards.code_duel.AnswererRewardFn), the coach's rule
(sparring.problems.coach) or the GRPO loop (the backend's `train`).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from sparring import backends, rewards
from sparring.backends.base import META_FILE, read_meta
from sparring.config import Config
from sparring.errors import SparringError
from sparring.evaluation.calibration import family_and_level
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    reward_metrics,
    train_problems,
    trained_record,
)
from sparring.phases.zone import draw_in_zone, in_zone, read_zone, screened_flat
from sparring.problems import Problem, prompts
from sparring.problems.coach import Coach, Reserve
from sparring.problems.families import stated_case_tests
from sparring.rewards.bank import bank_tests, sampled_cover
from sparring.sandbox.limits import untrusted_limits


def answerer_rows(
    problems: list[Problem],
    bank: dict[str, list[str]],
    stages: list[str],
    flat_ids: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """One row per problem: the prompt and what the answerer's reward needs (tests = baseline
    + banked, which of them are at the stated case, which tests discriminate, and the trivial
    solutions' results on them), and
    whether the frozen answerer's screen saw the problem flat, with the reward it saw (the
    trainer's skip starts from those: `flat_ids`, id -> that reward)."""
    flat = flat_ids or {}
    rows = []
    for p in problems:
        banked = bank.get(p.id, [])
        mask, trivial = rewards.credit_view(len(p.baseline_tests), p.trivial_passes, len(banked))
        family, level = family_and_level(p.tags)  # "" for a problem of no family
        rows.append(
            {
                "prompt": prompts.answerer_messages(p, stages),
                "problem_id": p.id,
                "tests": list(p.baseline_tests) + banked,
                "stated_tests": stated_case_tests(p),
                "discriminating": mask,
                "trivial_results": trivial,
                "difficulty": p.difficulty,
                "function_name": p.function_name,
                "signature": p.function_signature,
                "reference_solution": p.reference_solution,
                "family": family,
                "level": level,
                "screened_flat": p.id in flat,
                "screened_mean": float(flat.get(p.id, 0.0)),
            }
        )
    if any(p.withheld_tests for p in problems):  # never scored: false positives only
        for row, p in zip(rows, problems, strict=True):
            row["withheld_tests"] = list(p.withheld_tests)
    return rows


def answerer_dataset(
    problems: list[Problem],
    bank: dict[str, list[str]],
    stages: list[str],
    flat_ids: Mapping[str, float] | None = None,
):
    from datasets import Dataset

    return Dataset.from_list(answerer_rows(problems, bank, stages, flat_ids))


def coach_for(cfg: Config, problems: list[Problem], init_model: str | None) -> Coach | None:
    """The answerer's curriculum coach (`coach:`) over the families of `problems` at the
    levels each has there, continuing the state `init_model`'s record keeps (a fresh start
    without one); None when the coach is off or no problem belongs to a family."""
    if not cfg.coach.enabled:
        return None
    available: dict[str, set[int]] = defaultdict(set)
    for p in problems:
        family, level = family_and_level(p.tags)
        if family:
            available[family].add(level)
    if not available:
        return None
    meta = read_meta(init_model) if init_model and os.path.isdir(init_model) else None
    c = cfg.coach
    try:
        return Coach(
            available, last_k=c.last_k, success_threshold=c.success_threshold,
            failure_threshold=c.failure_threshold, start_level=c.start_level,
            state=(meta or {}).get("coach"),
        )  # fmt: skip
    except ValueError as exc:
        raise SparringError(f"{init_model}/{META_FILE}: {exc}") from None


def at_coach_level(problem: Problem, coach: Coach | None) -> bool:
    """Whether `problem` may be drawn: it is of no coached family, or at its family's level."""
    family, level = family_and_level(problem.tags)
    return coach is None or family not in coach or level == coach.level(family)


def coach_metrics(coach: Coach | None, moves_before: int, reserve: Reserve | None = None):
    """`coach_level/<family>` (the level reached), the moves and the swapped groups of a phase."""
    if coach is None:
        return {}
    out = {f"coach_level/{f}": float(level) for f, level in coach.levels().items()}
    out["coach_moves"] = float(coach.moves - moves_before)
    out["coach_swapped_groups"] = float(reserve.swapped if reserve else 0)
    return out


def train_answerer(
    cfg: Config,
    round_index: int,
    data_dir: str,
    bank_path: str,
    init_model: str | None,
    out_model: str,
    phase: str = "answerer",
) -> dict[str, float]:
    """GRPO of the answerer for the planned steps of `phase` (the phase's `Phase.name`, which
    also seeds its draws; a free label runs `cfg.steps.answerer` steps); writes the model."""
    from sparring.phases.schedule import reasoning_stages

    init_model = init_model or None  # "" from a pipeline means "the base model"
    steps = planned_steps(cfg, phase, "answerer", round_index)
    zone = read_zone(bank_path)
    everything = train_problems(data_dir)
    coach = coach_for(cfg, everything, init_model)
    moves_before = coach.moves if coach else 0
    pool = [p for p in everything if at_coach_level(p, coach)]
    screen: dict[str, float] = {}
    if cfg.steps.screen_pool and not zone and steps and not cfg.dry_run:
        # no generator phase screened the pool before this one (the given-tests arm)
        from sparring.phases.sandboxed import require_isolation
        from sparring.phases.screen import screen_zone

        require_isolation(cfg)  # the screen runs the answerer's samples
        model = init_model or cfg.model_for("answerer").name
        zone, screen = screen_zone(cfg, model, pool, round_index, f"{phase}-screen")
    problems = draw_in_zone(cfg, pool, zone, round_index, phase)
    bank = bank_tests(bank_path) if cfg.rewards.answerer_bank else {}
    stages = reasoning_stages(cfg, round_index)
    base = backends.base_name(cfg, "answerer", init_model)
    meta: dict[str, Any] = {"round": round_index, "phase": phase, "stages": stages,
                            "problems_drawn": drawn_digest(problems)}  # fmt: skip
    if coach is not None:
        meta["coach"] = coach.to_dict()
    n_bank = sum(len(bank.get(p.id, [])) for p in problems)
    metrics: dict[str, float] = {
        "problems": float(len(problems)),
        "problems_in_zone": float(sum(in_zone(zone.get(p.id)) for p in problems)),
        "bank_tests_used": float(n_bank),
        "stages": float(len(stages)),
        "dry_run": float(cfg.dry_run),
        **coach_metrics(coach, moves_before),
        **screen,
    }
    if cfg.dry_run or steps == 0:
        from sparring.backends.base import copy_model

        copy_model(
            init_model or cfg.model_for("answerer").name, out_model, {**meta, "role": "answerer"}
        )
        return metrics
    check_shared_beta(cfg)
    from sparring.phases.sandboxed import require_isolation
    from sparring.rewards.code_duel import AnswererRewardFn
    from sparring.sandbox import Sandbox

    require_isolation(cfg)  # before the model loads: rewards run the answers it writes

    backend = backends.get(cfg.backend)
    model, tok, peft_config = backend.load_trainable(cfg, "answerer", init_model)
    flat = screened_flat(problems, zone) if cfg.steps.screen_pool else {}
    metrics["problems_screened_flat"] = float(len(flat))
    dataset = answerer_dataset(problems, bank, stages, flat)
    seed = derived_seed(cfg, round_index, phase)
    reserve = None
    if coach is not None:  # every coached instance, in a seeded order
        coached = [p for p in everything if family_and_level(p.tags)[0] in coach]
        coached = random.Random(seed).sample(coached, len(coached))
        reserve = Reserve(answerer_rows(coached, bank, stages))
    with Sandbox(untrusted_limits(cfg)) as sb, tempfile.TemporaryDirectory() as tmp:
        coach_kwargs = {"coach": coach, "reserve": reserve} if coach is not None else {}
        reward_fn = AnswererRewardFn(sb, cfg.rewards, **coach_kwargs)
        model, trl_metrics = backend.train(
            cfg, model, tok, dataset, reward_fn, steps, tmp, seed, peft_config,
            problems, "answerer",
        )  # fmt: skip
    metrics.update(trl_metrics)
    metrics.update(reward_metrics(reward_fn.rewards, reward_fn.history, cfg))
    # which problems the trainer sampled and how many tests their reward held: a banked test
    # changes the answerer's reward only on a problem it samples
    credited = {p.id: sum(rewards.credit_view(len(p.baseline_tests), p.trivial_passes)[0])
                for p in problems}  # fmt: skip
    metrics.update(sampled_cover(reward_fn.by_problem, credited, bank))
    meta["problems_sampled"] = sorted(reward_fn.by_problem)
    if coach is not None:
        metrics.update(coach_metrics(coach, moves_before, reserve))
        meta["coach"] = coach.to_dict()
    backend.save_trained(
        cfg, model, tok, out_model, trained_record(cfg, "answerer", base, meta, init_model)
    )
    return metrics
