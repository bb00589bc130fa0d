"""The generator phase's proposer mode (`generator_mode: problems`): the generator proposes whole
problems, rewarded by goldilocks on the frozen answerer's pass rate on each.

Covers: `propose_problems`, the phase in this mode (the phase table runs it in the test
writer's place): the test writer's steps (sparring.phases.generator: the plan and first draw,
the dry run, the isolation gate, the frozen answers and the draw they order) with
`train_proposer` in place of the writer's GRPO (its output is what it proposed while training,
no final sampling) and its reward function (`ProposerRewardFn`: the frozen answerer, loaded in
process, solves each proposal). Does not cover: those shared steps themselves, the proposal's
rules and reward (sparring.rewards.code_duel.proposer_rewards).
"""

from __future__ import annotations

import tempfile
from typing import Any

from sparring import backends, storage
from sparring.backends import sampler
from sparring.backends.base import trained_record
from sparring.backends.budget import completion_tokens
from sparring.config import Config
from sparring.engine.credit import reward_metrics
from sparring.phases.common import check_shared_beta, derived_seed
from sparring.phases.generator import dry_run, first_draw, frozen_draw, generator_record
from sparring.problems import Problem, prompts
from sparring.rewards.code_duel import completion_text, proposer_rewards
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits


def propose_problems(
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
    """The generator phase with `generator_mode: problems`, its arguments the test writer's
    (sparring.phases.generator.train_generator): the plan and the first draw, the isolation
    gate, the frozen answers and the draw they order, then GRPO of the proposer against the
    frozen answerer (`train_proposer`) and the outputs: the trained model, a row per problem
    with what was proposed from it (`out_tests`), the frozen answers; in a dry run (or a phase
    of no steps) `dry_run`."""
    init_model = init_model or None
    steps, pool, problems = first_draw(cfg, round_index, data_dir, phase)
    metrics: dict[str, float] = {"problems": float(len(problems)), "dry_run": float(cfg.dry_run)}
    outs = (out_model, out_tests, out_frozen_solutions)
    if not steps or cfg.dry_run:
        return {**metrics, **dry_run(cfg, problems, pool, round_index, phase, init_model, outs)}
    check_shared_beta(cfg)
    backend = backends.get(cfg.backend)
    require_isolation(cfg)  # before the models load: the proposals run in the sandbox
    limits = untrusted_limits(cfg)  # of every sandbox the phase opens
    answerer = frozen_answerer or cfg.model_for("answerer").name
    drawn, solver, sampled = frozen_draw(
        cfg, backend, limits, answerer, pool, problems, round_index, phase, catch_only=False
    )
    meta = generator_record(round_index, phase, cfg.generator_mode, drawn.problems)
    record = trained_record(cfg, "generator", meta, init_model)
    model, tok, rows, trained = train_proposer(
        cfg, backend, limits, init_model, solver, drawn.problems, steps,
        derived_seed(cfg, round_index, phase), round_index,
    )  # fmt: skip
    storage.write_records(out_frozen_solutions, drawn.rows)
    storage.write_records(out_tests, rows)
    backend.save_trained(cfg, model, tok, out_model, record)
    return {**metrics, **sampled, **trained, "generated_tests": 0.0}  # it proposes, no tests


def train_proposer(
    cfg: Config,
    backend: Any,
    limits: Any,
    init_model: str | None,
    solver: tuple[Any, Any],
    problems: list[Problem],
    steps: int,
    seed: int,
    round_index: int,
) -> tuple[Any, Any, list[dict[str, Any]], dict[str, float]]:
    """GRPO of the proposer, prompted by `problems`, against the frozen answerer `solver` (its
    model and tokenizer), the proposals run in sandboxes of `limits`. Returns (the trained
    model, its tokenizer, a row per problem with what was proposed from it, the training's
    metrics)."""
    from datasets import Dataset  # heavy (pyarrow): imported when a phase trains

    rows = [{"prompt": prompts.proposer_messages(p), "problem_id": p.id} for p in problems]
    model, tok, peft_config = backend.load_trainable(cfg, "generator", init_model)
    frozen, ftok = solver
    with Sandbox(limits) as sb, tempfile.TemporaryDirectory() as tmp:
        reward_fn = ProposerRewardFn(cfg, backend, sb, frozen, ftok, round_index)
        model, trl_metrics = backend.train(
            cfg, model, tok, Dataset.from_list(rows), reward_fn, steps, tmp, seed, peft_config,
            problems, "proposer",
        )  # fmt: skip
        metrics = {
            **trl_metrics,
            **reward_metrics(reward_fn.rewards, reward_fn.history, cfg.grpo.num_generations),
        }
        backend.use_role(model, "generator")
    out_rows = [
        {
            "problem_id": p.id,
            "tests": [],
            "round": round_index,
            "proposed": reward_fn.proposed.get(p.id, []),
        }
        for p in problems
    ]
    return model, tok, out_rows, metrics


class ProposerRewardFn:
    """Proposer mode: goldilocks on the frozen solver's pass rate on each proposed problem."""

    __name__ = "proposer_reward"

    def __init__(
        self, cfg: Config, backend: Any, sandbox: Any, frozen: Any, ftok: Any, round_index: int
    ):
        self.cfg, self.backend, self.sandbox, self.frozen, self.ftok = (
            cfg, backend, sandbox, frozen, ftok
        )  # fmt: skip
        self.round_index = round_index
        self.rewards: list[float | None] = []
        self.history: list[dict[str, float]] = []
        self.proposed: dict[str, list[dict[str, Any]]] = {}

    def _solve(self, proposed: list[dict[str, Any]]) -> list[list[str]]:
        refs = [
            Problem(f"proposed-{i}", p["description"], p["function_signature"],
                    p["baseline_tests"], p["reference_solution"])
            for i, p in enumerate(proposed)
        ]  # fmt: skip
        backend = self.backend
        backend.use_role(self.frozen, "answerer")  # one base for both roles: its adapter
        try:
            return sampler.sample_answers(
                sampler.LoadedAnswerer(backend, self.frozen, self.ftok),
                refs,
                max_new_tokens=completion_tokens(self.cfg, self.ftok, refs),
                temperature=self.cfg.grpo.temperature,
                num_samples=self.cfg.steps.frozen_samples,
                seed=len(self.rewards),
            ).texts
        finally:
            backend.use_role(self.frozen, "generator")

    def __call__(self, prompts, completions, problem_id, **kwargs):
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
