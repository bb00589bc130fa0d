"""The answerer phase: GRPO of the answerer on the problems plus the banked adversarial tests.

Covers: the answerer's dataset (prompt rows with the tests each problem is judged on) and
`train_answerer`. Does not cover: the reward (sparring.code_duel.AnswererRewardFn) or the
GRPO loop (the backend's `train`).
"""

from __future__ import annotations

import tempfile
from typing import Any

from sparring import backends, prompts, rewards
from sparring.bank import bank_tests
from sparring.config import Config
from sparring.phases.common import (
    check_shared_beta,
    derived_seed,
    drawn_digest,
    planned_steps,
    reward_metrics,
    train_problems,
    trained_record,
)
from sparring.phases.zone import draw_in_zone, in_zone, read_zone
from sparring.problems import Problem
from sparring.sandbox.limits import untrusted_limits


def answerer_rows(
    problems: list[Problem], bank: dict[str, list[str]], stages: list[str]
) -> list[dict[str, Any]]:
    """One row per problem: the prompt and what the answerer's reward needs (tests = baseline
    + banked, which tests discriminate, and the trivial solutions' results on them)."""
    rows = []
    for p in problems:
        banked = bank.get(p.id, [])
        mask, trivial = rewards.credit_view(len(p.baseline_tests), p.trivial_passes, len(banked))
        rows.append(
            {
                "prompt": prompts.answerer_messages(p, stages),
                "problem_id": p.id,
                "tests": list(p.baseline_tests) + banked,
                "discriminating": mask,
                "trivial_results": trivial,
                "difficulty": p.difficulty,
                "function_name": p.function_name,
                "signature": p.function_signature,
                "reference_solution": p.reference_solution,
            }
        )
    return rows


def answerer_dataset(problems: list[Problem], bank: dict[str, list[str]], stages: list[str]):
    from datasets import Dataset

    return Dataset.from_list(answerer_rows(problems, bank, stages))


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
    from sparring.schedule import reasoning_stages

    init_model = init_model or None  # "" from a pipeline means "the base model"
    steps = planned_steps(cfg, phase, "answerer", round_index)
    zone = read_zone(bank_path)
    problems = draw_in_zone(cfg, train_problems(data_dir), zone, round_index, phase)
    bank = bank_tests(bank_path)
    stages = reasoning_stages(cfg, round_index)
    base = backends.base_name(cfg, "answerer", init_model)
    meta = {"round": round_index, "phase": phase, "stages": stages,
            "problems_drawn": drawn_digest(problems)}  # fmt: skip
    n_bank = sum(len(bank.get(p.id, [])) for p in problems)
    metrics: dict[str, float] = {
        "problems": float(len(problems)),
        "problems_in_zone": float(sum(in_zone(zone.get(p.id)) for p in problems)),
        "bank_tests_used": float(n_bank),
        "stages": float(len(stages)),
        "dry_run": float(cfg.dry_run),
    }
    if cfg.dry_run or steps == 0:
        from sparring.backends.base import copy_model

        copy_model(init_model or base, out_model, {**meta, "role": "answerer"})
        return metrics
    check_shared_beta(cfg)
    from sparring.code_duel import AnswererRewardFn
    from sparring.phases.sandboxed import require_isolation
    from sparring.sandbox import Sandbox

    require_isolation(cfg)  # before the model loads: rewards run the answers it writes

    backend = backends.get(cfg.backend)
    model, tok, peft_config = backend.load_trainable(cfg, "answerer", init_model)
    dataset = answerer_dataset(problems, bank, stages)
    seed = derived_seed(cfg, round_index, phase)
    with Sandbox(untrusted_limits(cfg)) as sb, tempfile.TemporaryDirectory() as tmp:
        reward_fn = AnswererRewardFn(sb, cfg.rewards)
        model, trl_metrics = backend.train(
            cfg, model, tok, dataset, reward_fn, steps, tmp, seed, peft_config,
            problems, "answerer",
        )  # fmt: skip
    metrics.update(trl_metrics)
    metrics.update(reward_metrics(reward_fn.rewards, reward_fn.history, cfg))
    backend.save_trained(cfg, model, tok, out_model, trained_record(cfg, "answerer", base, meta))
    return metrics
