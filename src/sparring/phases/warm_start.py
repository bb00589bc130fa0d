"""The warm-start phase: supervised fine-tuning (SFT) of the answerer on the training split's
reference solutions, before self-play, so GRPO starts from a model that writes the expected format.

Covers `warm_start(cfg, data_dir, init_model, out_model)`: reads `data_dir/train.jsonl` only
(never val.jsonl or eval.jsonl), builds one conversational prompt-completion example per problem
(prompt = `prompts.answerer_messages(problem, ["code"])`, completion = one assistant message
holding the reference solution in a ```python block, the format `programs.extract_code` parses),
and trains through the backend's `sft` (torch: TRL's SFTTrainer on the completion tokens only;
the chat template's end-of-turn token is part of the completion, so the model also learns to
stop). LoRA when `tuning_mode` is lora (an init model that already is a LoRA artifact keeps
training its adapter), full fine-tune otherwise; the shared topology trains the `answerer`
adapter. The artifact is saved like every other answerer phase (round 0, phase "warm_start").

`cfg.dry_run` or `warm_start.steps == 0`: no model is loaded; the init model is copied.
Does not cover: the SFT loop (sparring.backends.torch.sft; MLX refuses it, naming `backend` and
`warm_start.steps`) or when the phase runs (sparring.phases.schedule and the pipeline decide).
"""

from __future__ import annotations

import logging
from typing import Any

from sparring import backends
from sparring.backends.base import copy_model, trained_record
from sparring.config import Config
from sparring.phases.common import derived_seed, train_problems
from sparring.problems import Problem, prompts

log = logging.getLogger(__name__)

STAGES = ["code"]
PHASE = "warm_start"


def completion_text(problem: Problem) -> str:
    """The target answer: the reference solution in one python code block."""
    return f"```python\n{problem.reference_solution.strip()}\n```"


def sft_examples(problems: list[Problem]) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows, one per problem."""
    return [
        {
            "prompt": prompts.answerer_messages(p, STAGES),
            "completion": [{"role": "assistant", "content": completion_text(p)}],
        }
        for p in problems
    ]


def warm_start(
    cfg: Config, data_dir: str, init_model: str | None, out_model: str
) -> dict[str, float]:
    """SFT of the answerer for `cfg.warm_start.steps` steps on train.jsonl's reference
    solutions; writes the model artifact to out_model and returns flat metrics."""
    init_model = init_model or None  # "" from a pipeline means "the base model"
    problems = train_problems(data_dir)
    ws = cfg.warm_start
    meta = {
        "round": 0,
        "phase": PHASE,
        "stages": STAGES,
        "warm_start_problems": [p.id for p in problems],
    }
    metrics: dict[str, float] = {
        "examples": float(len(problems)),
        "steps": float(ws.steps),
        "dry_run": float(cfg.dry_run),
    }
    if cfg.dry_run or ws.steps == 0:
        copy_model(
            init_model or cfg.model_for("answerer").name, out_model, {**meta, "role": "answerer"}
        )
        metrics["steps"] = 0.0
        return metrics
    backend = backends.get(cfg.backend)
    model, tok, peft_config = backend.load_trainable(cfg, "answerer", init_model)
    trained, sft_metrics = backend.sft(
        cfg, model, tok, sft_examples(problems), peft_config, derived_seed(cfg, 0, PHASE)
    )
    metrics.update(sft_metrics)
    log.info(
        "warm start: %d steps on %d examples, loss %.3f -> %.3f",
        int(metrics["steps"]), len(problems), metrics.get("loss_first", float("nan")),
        metrics.get("loss_last", float("nan")),
    )  # fmt: skip
    backend.save_trained(
        cfg, trained, tok, out_model, trained_record(cfg, "answerer", meta, init_model)
    )
    return metrics
