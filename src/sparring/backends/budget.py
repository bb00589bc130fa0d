"""Completion budgets: how many new tokens a role's completion may take.

Covers: `completion_targets` (what a good completion of each role holds), `completion_tokens`
(`grpo.max_completion_length`, or the "auto" budget sized from those targets), and the sizing
rule (`completion_budget`, `resolve_completion_length`). Shared by the training phases and
evaluation, so that evaluation sees answers as long as training allowed. Does not cover: where
a sampler stops (sparring.backends.text). Pure: tokenizers are passed in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from sparring.config import Config
from sparring.errors import SparringError
from sparring.problems import Problem, prompts


def completion_targets(
    problems: list[Problem], role: str = "answerer", n_tests: int = prompts.GENERATOR_TESTS
) -> list[str]:
    """What a good completion of `role` holds, per problem: the reference solution for the
    answerer (`answer_target`); for the generator, tests like the problem's own (as many as it
    is asked for: `n_tests`)."""
    if role == "generator":
        n = n_tests
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
    completion_budget below)."""
    if cfg.grpo.max_completion_length:
        return cfg.grpo.max_completion_length
    # mlx-lm's TokenizerWrapper is not callable and holds the HF tokenizer in `_tokenizer`; an HF
    # tokenizer also has a `_tokenizer` (the raw, uncallable Rust one), so unwrap only the wrapper.
    hf_tok = tok if callable(tok) else tok._tokenizer
    targets = completion_targets(problems, role, cfg.steps.generator_tests)
    return resolve_completion_length(cfg, hf_tok, targets)


def completion_budget(
    reference_token_lengths: Sequence[int],
    quantile: float = 0.9,
    margin: float = 1.3,
    fence_tokens: int = 12,
    floor: int = 64,
    cap: int = 512,
) -> int:
    """Completion tokens that let a model write a reference-sized answer: the `quantile` of the
    reference solutions' token lengths (linear interpolation), times `margin`, plus
    `fence_tokens` (the ```python fence lines and a short lead-in), rounded up and clamped to
    [floor, cap]. No reference lengths: `cap`.

    >>> completion_budget([40, 50, 60, 200], quantile=0.5, floor=16)
    84
    """
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"quantile: {quantile} must be in (0, 1]")
    if margin <= 0 or fence_tokens < 0 or floor < 1 or cap < floor:
        raise ValueError("completion_budget: needs margin > 0, fence_tokens >= 0, floor <= cap")
    lengths = sorted(int(n) for n in reference_token_lengths)
    if not lengths:
        return cap
    pos = quantile * (len(lengths) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(lengths) - 1)
    value = lengths[lo] + (lengths[hi] - lengths[lo]) * (pos - lo)
    return max(floor, min(cap, math.ceil(value * margin + fence_tokens)))


# Margin of the "auto" budget over the references' 0.9 quantile. Measured on SmolLM2-135M-Instruct
# (12 easy bundled problems x 4 samples, temperature 0.9): its fenced answers are a median 1.8x
# and a 0.9 quantile 3.1x the reference's tokens (it restates the signature and a docstring); a
# budget of 1.3x (113 tokens) let only 40% of samples close their fence, 256 tokens 71%.
AUTO_MARGIN = 3.0


def resolve_completion_length(
    cfg: Config,
    tokenizer: Any,
    reference_solutions: Sequence[str] | None = None,
    margin: float = AUTO_MARGIN,
) -> int:
    """`cfg.grpo.max_completion_length`, or for 0 ("auto") the `completion_budget` (with
    `margin`) of the reference solutions' token lengths (tokenized without special tokens)."""
    n = cfg.grpo.max_completion_length
    if n:
        return n
    refs = [r for r in (reference_solutions or []) if isinstance(r, str) and r.strip()]
    if not refs:
        raise SparringError(
            "grpo.max_completion_length: 0 (auto) needs reference solutions to size the budget; "
            "this phase has none, so set a number of tokens"
        )
    lengths = [len(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in refs]
    return completion_budget(lengths, margin=margin)
