"""The answerer phase: GRPO of the answerer on the problems plus the banked adversarial tests.

Covers: `train_answerer` and its steps: the plan, the curriculum coach (`coach_for`, with
`coach.enabled`: it continues from the state the init model's record keeps and each coached
family is drawn at its current level only), the isolation gate, the draw
(`draw_answerer_problems`; with `steps.screen_pool` and no zone from a generator phase before
it, the phase first screens the pool itself: sparring.phases.screen), what the draw records and
measures (`drawn_record`, `drawn_metrics`), GRPO on it (`grpo_answerer`: the coach counts the
rewards as training goes and, on the torch backend in one process, swaps in rows at a family's
new level when it moves mid-phase) and what training showed (`trained_metrics`, the coach's
state kept in the trained model's record, `sparring_model.json` key `coach`, for the next
answerer phase).
Does not cover: the rows (sparring.rewards.answerer_rows), the filtered fine-tuning mode, which
the phase table runs in its place (sparring.phases.filtered_sft), the reward
(sparring.rewards.code_duel.AnswererRewardFn), the coach's rule (sparring.problems.coach) or
the GRPO loop (the backend's `train`).
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sparring import backends, rewards
from sparring.backends.base import META_FILE, copy_model, read_meta, trained_record
from sparring.config import Config
from sparring.engine.credit import reward_metrics
from sparring.errors import SparringError
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    train_problems,
)
from sparring.phases.schedule import reasoning_stages
from sparring.phases.screen import screen_zone
from sparring.phases.zone import draw_in_zone, problems_in_zone, read_zone, screened_flat
from sparring.problems import Problem
from sparring.problems.coach import Coach, Reserve, at_coach_level
from sparring.problems.families import family_and_level
from sparring.rewards.answerer_rows import training_rows
from sparring.rewards.bank import bank_tests, sampled_cover
from sparring.rewards.code_duel import AnswererRewardFn
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits


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
    also seeds its draws; a free label runs `cfg.steps.answerer` steps); writes the model. Its
    steps: the plan, the coach, the isolation gate (when it trains), the draw, then GRPO
    (`grpo_answerer`) or, in a dry run or a phase of no steps, the start copied as the model."""
    init_model = init_model or None  # "" from a pipeline means "the base model"
    steps = planned_steps(cfg, phase, "answerer", round_index)
    stages = reasoning_stages(cfg, round_index)
    seed, screen_seed = (derived_seed(cfg, round_index, f) for f in (phase, f"{phase}-screen"))
    trains = bool(steps) and not cfg.dry_run
    if trains:  # a config it cannot train with stops before anything is read
        check_shared_beta(cfg)
    everything = train_problems(data_dir)
    coach = coach_for(cfg, everything, init_model)
    pool = [p for p in everything if at_coach_level(p, coach)]
    limits = None
    if trains:  # before the screen samples and the model loads: the rewards run the answers
        require_isolation(cfg)
        limits = untrusted_limits(cfg)  # of every sandbox the phase opens
    start = init_model or cfg.model_for("answerer").name  # the model the phase starts from
    drawn = draw_answerer_problems(
        cfg, everything, pool, coach, read_zone(bank_path),
        # the phase screens its pool only when it trains (and no zone came with the bank)
        screened=start if trains and cfg.steps.screen_pool else None, limits=limits,
        stages=stages, screen_seed=screen_seed, round_index=round_index, phase=phase,
    )  # fmt: skip
    bank = bank_tests(bank_path) if cfg.rewards.answerer_bank else {}
    meta = drawn_record(drawn, round_index, phase, stages)
    metrics = drawn_metrics(drawn, bank, stages, cfg.dry_run)
    if trains:
        trained = grpo_answerer(
            cfg, limits, drawn, bank=bank, stages=stages, seed=seed, steps=steps,
            init_model=init_model, out_model=out_model, meta=meta,
        )  # fmt: skip
        return {**metrics, **trained}
    copy_model(start, out_model, {**meta, "role": "answerer"})
    return metrics


def grpo_answerer(
    cfg: Config,
    limits: Any,
    drawn: AnswererDraw,
    *,
    bank: dict[str, list[str]],
    stages: list[str],
    seed: int,
    steps: int,
    init_model: str | None,
    out_model: str,
    meta: dict[str, Any],
) -> dict[str, float]:
    """GRPO of the answerer from `init_model` (None: the base model) on the `drawn` problems for
    `steps` steps with the phase's `seed`, its rows holding the `bank`'s tests and prompts of the
    reasoning `stages`, its rewards run in sandboxes of `limits`; the trained model goes to
    `out_model` with its record (`meta` and what training added). Returns the training's
    metrics."""
    from datasets import Dataset  # heavy (pyarrow): imported when a phase trains

    flat = screened_flat(drawn.problems, drawn.zone) if cfg.steps.screen_pool else {}
    backend = backends.get(cfg.backend)
    model, tok, peft_config = backend.load_trainable(cfg, "answerer", init_model)
    with Sandbox(limits) as sb, tempfile.TemporaryDirectory() as tmp:
        rows, reserve = training_rows(
            drawn.problems, flat, drawn.coach, drawn.everything, bank, stages, seed
        )
        reward_fn = AnswererRewardFn(sb, cfg.rewards, coach=drawn.coach, reserve=reserve)
        model, trl_metrics = backend.train(
            cfg, model, tok, Dataset.from_list(rows), reward_fn, steps, tmp, seed, peft_config,
            drawn.problems, "answerer",
        )  # fmt: skip
    meta = {**meta, "problems_sampled": sorted(reward_fn.by_problem)}
    if drawn.coach is not None:
        meta["coach"] = drawn.coach.to_dict()
    metrics = {"problems_screened_flat": float(len(flat)), **trl_metrics}
    metrics.update(trained_metrics(cfg, reward_fn, drawn, bank, reserve))
    record = trained_record(cfg, "answerer", meta, init_model)
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
    pool: list[Problem],
    coach: Coach | None,
    zone: dict[str, dict[str, float]],
    *,
    screened: str | None,
    limits: Any,
    stages: list[str],
    screen_seed: int,
    round_index: int,
    phase: str,
) -> AnswererDraw:
    """The phase's draw (`draw_in_zone`) from the `pool` (the training problems, `everything`,
    at the `coach`'s levels); with no `zone` yet, the pool's screen (sparring.phases.screen)
    orders it when `screened` names a model: sampled with the reasoning `stages` and
    `screen_seed`, its answers run in sandboxes of `limits`."""
    moves_before = coach.moves if coach else 0
    screened_metrics: dict[str, float] = {}
    if screened is not None and not zone:
        # no generator phase screened the pool before this one (the given-tests arm)
        zone, screened_metrics = screen_zone(cfg, limits, screened, pool, stages, screen_seed)
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
    return {
        **reward_metrics(reward_fn.rewards, reward_fn.history, cfg.grpo.num_generations),
        **cover,
        **coached,
    }
