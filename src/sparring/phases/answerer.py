"""The answerer phase: GRPO of the answerer on the problems plus the banked adversarial tests.

Covers: the answerer's dataset (prompt rows with the tests each problem is judged on, and the
problem's family and level), `train_answerer` and its steps (the draw: `draw_answerer_problems`,
what it records and measures: `drawn_record`, `drawn_metrics`; GRPO; what training showed:
`trained_metrics`), and with `coach.enabled` the curriculum coach's part of it (`coach_for`):
the coach continues from the state the init model's record keeps, each coached family is drawn
at its current level only, the coach counts the rewards as training goes (and, on the torch
backend in one process, swaps in rows at a family's new level when it moves mid-phase:
`coach_reserve`, sparring.problems.coach.Reserve), and its state is kept in the trained model's
record (`sparring_model.json`, key `coach`) for the next answerer phase. With
`steps.screen_pool` and no zone from a generator phase before it, the phase first screens the
pool itself (sparring.phases.screen).
Does not cover: the filtered fine-tuning mode, which the phase table runs in its place
(sparring.phases.filtered_sft), the reward (sparring.rewards.code_duel.AnswererRewardFn), the
coach's rule
(sparring.problems.coach) or the GRPO loop (the backend's `train`).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparring import backends, rewards
from sparring.backends.base import META_FILE, copy_model, read_meta
from sparring.config import Config
from sparring.errors import SparringError
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    reward_metrics,
    train_problems,
    trained_record,
)
from sparring.phases.sandboxed import require_isolation
from sparring.phases.schedule import reasoning_stages
from sparring.phases.screen import screen_zone
from sparring.phases.zone import draw_in_zone, problems_in_zone, read_zone, screened_flat
from sparring.problems import Problem, prompts
from sparring.problems.coach import Coach, Reserve, at_coach_level
from sparring.problems.families import family_and_level, stated_case_tests
from sparring.rewards.bank import bank_tests, sampled_cover
from sparring.rewards.code_duel import AnswererRewardFn
from sparring.sandbox import Sandbox
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
    from datasets import Dataset  # heavy (pyarrow): imported when a phase trains

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
    init_model = init_model or None  # "" from a pipeline means "the base model"
    start = init_model or cfg.model_for("answerer").name  # the model the phase starts from
    steps = planned_steps(cfg, phase, "answerer", round_index)
    stages = reasoning_stages(cfg, round_index)
    seed = derived_seed(cfg, round_index, phase)
    zone = read_zone(bank_path)
    # the phase screens its pool only when it trains (and no zone came with the bank)
    screened = start if cfg.steps.screen_pool and steps and not cfg.dry_run else None
    screen_seed = derived_seed(cfg, round_index, f"{phase}-screen")
    drawn = draw_answerer_problems(
        cfg, train_problems(data_dir), zone, init_model, (screened, stages, screen_seed),
        round_index, phase,
    )  # fmt: skip
    bank = bank_tests(bank_path) if cfg.rewards.answerer_bank else {}
    meta = drawn_record(drawn, round_index, phase, stages)
    metrics = drawn_metrics(drawn, bank, stages, cfg.dry_run)
    base = backends.base_name(cfg, "answerer", init_model)
    if cfg.dry_run or steps == 0:
        copy_model(start, out_model, {**meta, "role": "answerer"})
        return metrics
    check_shared_beta(cfg)
    require_isolation(cfg)  # before the model loads: rewards run the answers it writes
    flat = screened_flat(drawn.problems, drawn.zone) if cfg.steps.screen_pool else {}
    metrics["problems_screened_flat"] = float(len(flat))
    dataset = answerer_dataset(drawn.problems, bank, stages, flat)
    reserve = coach_reserve(drawn.coach, drawn.everything, bank, stages, seed)
    limits = untrusted_limits(cfg)
    backend = backends.get(cfg.backend)
    model, tok, peft_config = backend.load_trainable(cfg, "answerer", init_model)
    with Sandbox(limits) as sb, tempfile.TemporaryDirectory() as tmp:
        coached = {"coach": drawn.coach, "reserve": reserve} if drawn.coach is not None else {}
        reward_fn = AnswererRewardFn(sb, cfg.rewards, **coached)
        model, trl_metrics = backend.train(
            cfg, model, tok, dataset, reward_fn, steps, tmp, seed, peft_config,
            drawn.problems, "answerer",
        )  # fmt: skip
    metrics.update(trl_metrics)
    meta["problems_sampled"] = sorted(reward_fn.by_problem)
    if drawn.coach is not None:
        meta["coach"] = drawn.coach.to_dict()
    record = trained_record(cfg, "answerer", base, meta, init_model)
    metrics.update(trained_metrics(cfg, reward_fn, drawn, bank, reserve))
    backend.save_trained(cfg, model, tok, out_model, record)
    return metrics


@dataclass(frozen=True)
class AnswererDraw:
    """What the answerer phase drew from: the training problems (`everything`), the coach over
    them with its moves when the phase began, the `zone` it drew by (`screen`: the screen's
    metrics when the phase screened the pool itself), and what it drew (`problems`)."""

    everything: list[Problem]
    coach: Coach | None
    moves_before: int
    zone: dict[str, dict[str, float]]
    screen: dict[str, float]
    problems: list[Problem]


def draw_answerer_problems(
    cfg: Config,
    everything: list[Problem],
    zone: dict[str, dict[str, float]],
    init_model: str | None,
    screen: tuple[str | None, list[str], int],
    round_index: int,
    phase: str,
) -> AnswererDraw:
    """The phase's draw (`draw_in_zone`) among the problems of `everything` at the levels of
    the coach `init_model`'s record continues; with no `zone` yet, the pool's screen
    (sparring.phases.screen) orders it, when `screen` names a model: (the model, the reasoning
    stages of its prompts, the seed it samples with)."""
    screened, stages, screen_seed = screen
    coach = coach_for(cfg, everything, init_model)
    moves_before = coach.moves if coach else 0
    pool = [p for p in everything if at_coach_level(p, coach)]
    screened_metrics: dict[str, float] = {}
    if screened is not None and not zone:
        # no generator phase screened the pool before this one (the given-tests arm)
        zone, screened_metrics = screen_zone(cfg, screened, pool, stages, screen_seed)
    problems = draw_in_zone(cfg, pool, zone, round_index, phase)
    return AnswererDraw(everything, coach, moves_before, zone, screened_metrics, problems)


def drawn_record(
    drawn: AnswererDraw, round_index: int, phase: str, stages: list[str]
) -> dict[str, Any]:
    """What the trained model's record says of the draw (the coach's state as it began)."""
    meta: dict[str, Any] = {"round": round_index, "phase": phase, "stages": stages,
                            "problems_drawn": drawn_digest(drawn.problems)}  # fmt: skip
    if drawn.coach is not None:
        meta["coach"] = drawn.coach.to_dict()
    return meta


def drawn_metrics(
    drawn: AnswererDraw, bank: dict[str, list[str]], stages: list[str], dry_run: bool
) -> dict[str, float]:
    """The metrics of the draw: problems, those in the zone, the banked tests they hold, the
    reasoning stages, the coach's levels and the screen's metrics."""
    n_bank = sum(len(bank.get(p.id, [])) for p in drawn.problems)
    return {
        "problems": float(len(drawn.problems)),
        "problems_in_zone": float(problems_in_zone(drawn.problems, drawn.zone)),
        "bank_tests_used": float(n_bank),
        "stages": float(len(stages)),
        "dry_run": float(dry_run),
        **coach_metrics(drawn.coach, drawn.moves_before),
        **drawn.screen,
    }


def coach_reserve(
    coach: Coach | None,
    everything: list[Problem],
    bank: dict[str, list[str]],
    stages: list[str],
    seed: int,
) -> Reserve | None:
    """Every coached instance of `everything` as answerer rows, in an order `seed` shuffles:
    what the coach swaps in when a family moves mid-phase; None without a coach."""
    if coach is None:
        return None
    coached = [p for p in everything if family_and_level(p.tags)[0] in coach]
    coached = random.Random(seed).sample(coached, len(coached))
    return Reserve(answerer_rows(coached, bank, stages))


def trained_metrics(
    cfg: Config,
    reward_fn: AnswererRewardFn,
    drawn: AnswererDraw,
    bank: dict[str, list[str]],
    reserve: Reserve | None,
) -> dict[str, float]:
    """What training showed: the reward metrics, which problems the trainer sampled and how many
    tests their reward held (a banked test changes the answerer's reward only on a problem it
    samples: `sampled_cover`), and the coach's levels and moves."""
    credited = {p.id: sum(rewards.credit_view(len(p.baseline_tests), p.trivial_passes)[0])
                for p in drawn.problems}  # fmt: skip
    coached = coach_metrics(drawn.coach, drawn.moves_before, reserve)
    cover = sampled_cover(reward_fn.by_problem, credited, bank)
    return {**reward_metrics(reward_fn.rewards, reward_fn.history, cfg), **cover, **coached}
