"""The generator phase's proposer mode (`generator_mode: problems`): the generator proposes whole
problems, rewarded by goldilocks on the frozen answerer's pass rate on each.

Covers: `train_proposer` (GRPO of the proposer; its output is what it proposed while training,
no final sampling) and its reward function (`ProposerRewardFn`: the frozen answerer, loaded in
process, solves each proposal). Does not cover: the rest of the generator phase (the draw, the
frozen answerer's sampling, the record: sparring.phases.generator), the proposal's rules and
reward (sparring.rewards.code_duel.proposer_rewards).
"""

from __future__ import annotations

import tempfile
from typing import Any

from sparring.backends import sampler
from sparring.backends.budget import completion_tokens
from sparring.config import Config
from sparring.engine.credit import reward_metrics
from sparring.problems import Problem, prompts
from sparring.rewards.code_duel import completion_text, proposer_rewards
from sparring.sandbox import Sandbox


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
