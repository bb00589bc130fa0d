"""Completion budgets: how many new tokens a role's completion may take.

Covers: `completion_targets` (what a good completion of each role holds) and `completion_tokens`
(`grpo.max_completion_length`, or the "auto" budget sized from those targets). Shared by the
training phases and evaluation, so that evaluation sees answers as long as training allowed.
Does not cover: the sizing rule itself (sparring.backends.torch.grpo.completion_budget).
"""

from __future__ import annotations

import json
from typing import Any

from sparring import prompts
from sparring.config import Config
from sparring.problems import Problem


def completion_targets(problems: list[Problem], role: str = "answerer") -> list[str]:
    """What a good completion of `role` holds, per problem: the reference solution for the
    answerer (`answer_target`); for the generator, tests like the problem's own (as many as it
    is asked for)."""
    if role == "generator":
        n = prompts.GENERATOR_TESTS
        return ["\n".join(p.baseline_tests[-n:]) for p in problems if p.baseline_tests]
    if role == "proposer":  # a whole problem as JSON
        return [json.dumps(p.to_dict()) for p in problems]
    return [answer_target(p) for p in problems]


def answer_target(problem: Problem) -> str:
    """What a good answer to `problem` holds: its reference solution, except that for a
    HumanEval-style problem (the prompt is the start of the reference) the prompt's docstring and
    helpers are given, not written: the entry point's `def` line and the canonical body."""
    ref, prompt = problem.reference_solution, problem.prompt
    if not prompt or not ref.startswith(prompt):
        return ref
    name = problem.function_name
    signature = next(
        (line for line in prompt.splitlines() if line.lstrip().startswith(f"def {name}(")), ""
    )
    return f"{signature}\n{ref[len(prompt) :]}" if signature else ref[len(prompt) :]


def completion_tokens(
    cfg: Config, tok: Any, problems: list[Problem], role: str = "answerer"
) -> int:
    """`grpo.max_completion_length`, or for 0 ("auto") a budget sized from what a good
    completion of `role` holds (`completion_targets`; sizing rule:
    sparring.backends.torch.grpo.completion_budget)."""
    if cfg.grpo.max_completion_length:
        return cfg.grpo.max_completion_length
    from sparring.backends.torch.grpo import resolve_completion_length

    # mlx-lm's TokenizerWrapper is not callable and holds the HF tokenizer in `_tokenizer`; an HF
    # tokenizer also has a `_tokenizer` (the raw, uncallable Rust one), so unwrap only the wrapper.
    hf_tok = tok if callable(tok) else tok._tokenizer
    return resolve_completion_length(cfg, hf_tok, completion_targets(problems, role))
