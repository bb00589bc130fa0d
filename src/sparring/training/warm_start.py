"""Warm start: supervised fine-tuning (SFT) of the answerer on the training split's reference
solutions, before self-play, so GRPO starts from a model that writes the expected format.

Covers `warm_start(cfg, data_dir, init_model, out_model)`: reads `data_dir/train.jsonl` only
(never val.jsonl or eval.jsonl), builds one conversational prompt-completion example per problem
(prompt = `prompts.answerer_messages(problem, ["code"])`, completion = one assistant message
holding the reference solution in a ```python block, the format `prompts.extract_code` parses),
and trains with TRL's `SFTTrainer` for `cfg.warm_start.steps` optimizer steps (epochs repeat as
needed) on the completion tokens only (TRL's `completion_only_loss`; the chat template's
end-of-turn token is part of the completion, so the model also learns to stop). LoRA through
`peft_lora_config(cfg.lora)` when `tuning_mode` is lora (an init model that already is a LoRA
artifact keeps training its adapter), full fine-tune otherwise; the shared topology trains the
`answerer` adapter. The artifact is saved like every other answerer phase (round 0, phase
"warm_start"), so round 1 and `sparring.models.load_model` read it as usual. Metrics: examples
(train problems), examples_used / examples_truncated, steps, epochs, loss_first / loss_last (one
step each) and loss_first_epoch / loss_last_epoch (means over an epoch's worth of steps),
mean_token_accuracy_first / _last, step_time_s, tokens_per_s, peak_memory_mb.

TRL 1.16 facts relied on: SFTConfig defaults `gradient_checkpointing=True` and `bf16=True` (set
here to False and to `grpo.bf16`); a dataset with "prompt"/"completion" columns of chat messages
is rendered with the tokenizer's chat template (prompt with `add_generation_prompt=True`), and
with `completion_only_loss` the prompt tokens get label -100; `max_length` truncates from the
end and drops examples left with no completion token; the trainer logs `loss`,
`mean_token_accuracy`, `entropy` and `num_tokens` every `logging_steps`.

`cfg.dry_run` or `warm_start.steps == 0`: no model is loaded; the init model is copied.
Does not cover: the MLX backend (raises a SparringError naming `backend` and
`warm_start.steps`), packing, validation loss, or when the phase runs (training.schedule and the
pipeline decide; it is skipped there when `warm_start.steps` is 0).
"""

from __future__ import annotations

import gc
import logging
import math
import tempfile
import time
from typing import Any

from sparring import progress, prompts
from sparring.config import Config
from sparring.errors import SparringError
from sparring.problems import Problem

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


def sft_args(cfg: Config, output_dir: str, seed: int, device: str) -> Any:
    """SFTConfig of the warm start (cfg.warm_start; bf16 follows the GPU switch grpo.bf16)."""
    from trl import SFTConfig

    from sparring.training.grpo import mlflow_active

    ws = cfg.warm_start
    return SFTConfig(
        output_dir=output_dir,
        max_steps=ws.steps,
        per_device_train_batch_size=ws.batch_size,
        gradient_accumulation_steps=1,
        learning_rate=ws.learning_rate,
        max_length=ws.max_length,
        completion_only_loss=True,
        assistant_only_loss=False,
        packing=False,
        logging_steps=1,
        save_strategy="no",
        report_to=["mlflow"] if mlflow_active() else "none",
        seed=seed,
        data_seed=seed,
        gradient_checkpointing=False,  # small models on CPU: speed over memory
        bf16=bool(cfg.grpo.bf16),
        use_cpu=device == "cpu",
        dataloader_num_workers=0,
        disable_tqdm=True,
    )


def _too_long(tok: Any, rows: list[dict[str, Any]], max_length: int) -> int:
    """How many examples the chat template renders longer than max_length tokens."""
    n = 0
    for row in rows:
        ids = tok.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        n += len(ids) > max_length
    return n


def _series(history: list[dict[str, Any]], key: str) -> list[float]:
    return [float(h[key]) for h in history if key in h and "train_runtime" not in h]


def warm_start(
    cfg: Config, data_dir: str, init_model: str | None, out_model: str
) -> dict[str, float]:
    """SFT of the answerer for `cfg.warm_start.steps` steps on train.jsonl's reference
    solutions; writes the model artifact to out_model and returns flat metrics."""
    from sparring import phases

    init_model = init_model or None  # "" from a pipeline means "the base model"
    problems = phases._train_problems(data_dir)
    ws = cfg.warm_start
    base = phases._base_name(cfg, "answerer", init_model)
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
        from sparring.models import copy_model

        copy_model(init_model or base, out_model, {**meta, "role": "answerer"})
        metrics["steps"] = 0.0
        return metrics
    if cfg.backend == "mlx":
        raise SparringError(
            "backend: the warm start (warm_start.steps > 0) runs on torch only; "
            "set warm_start.steps: 0 with backend: mlx"
        )
    from datasets import Dataset
    from trl import SFTTrainer

    from sparring.training.grpo import peak_memory_mb

    seed = phases.derived_seed(cfg, 0, PHASE)
    model, tok, peft_config = phases._load_trainable(cfg, "answerer", init_model)
    rows = sft_examples(problems)
    metrics["examples_truncated"] = float(_too_long(tok, rows, ws.max_length))
    device = str(next(model.parameters()).device.type)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = SFTTrainer(
            model=model,
            args=sft_args(cfg, tmp, seed, device),
            train_dataset=Dataset.from_list(rows),
            processing_class=tok,
            peft_config=peft_config,
            callbacks=[progress.step_callback(ws.steps)],
        )
        start = time.perf_counter()
        trainer.train()
        elapsed = time.perf_counter() - start
    metrics["examples_used"] = float(len(trainer.train_dataset))  # fully truncated ones dropped
    history = trainer.state.log_history
    losses = _series(history, "loss")
    accuracy = _series(history, "mean_token_accuracy")
    if losses:
        # one step's loss depends on which problems its batch drew: also the means over an
        # epoch's worth of steps at the start and at the end (each problem about once)
        k = min(len(losses), math.ceil(len(trainer.train_dataset) / ws.batch_size))
        metrics.update(
            loss_first=losses[0],
            loss_last=losses[-1],
            loss_first_epoch=sum(losses[:k]) / k,
            loss_last_epoch=sum(losses[-k:]) / k,
        )
    if accuracy:
        metrics.update(mean_token_accuracy_first=accuracy[0], mean_token_accuracy_last=accuracy[-1])
    n_tokens = max((h.get("num_tokens", 0) for h in history), default=0)
    metrics.update(
        steps=float(trainer.state.global_step),
        epochs=float(trainer.state.epoch or 0.0),
        step_time_s=elapsed / max(1, trainer.state.global_step),
        tokens_per_s=float(n_tokens) / elapsed if elapsed > 0 else 0.0,
        peak_memory_mb=peak_memory_mb(),
    )
    trained = trainer.model
    del trainer
    gc.collect()
    log.info(
        "warm start: %d steps on %d examples, loss %.3f -> %.3f",
        int(metrics["steps"]), len(problems), metrics.get("loss_first", float("nan")),
        metrics.get("loss_last", float("nan")),
    )  # fmt: skip
    phases._save_trained(cfg, trained, tok, out_model, "answerer", base, meta)
    return metrics
