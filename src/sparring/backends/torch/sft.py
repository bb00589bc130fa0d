"""Supervised fine-tuning on torch: TRL's SFTTrainer, for the warm start.

Covers: `run_sft` (conversational prompt-completion rows, loss on the completion tokens only,
`cfg.warm_start.steps` optimizer steps, epochs repeating as needed) and its metrics: examples
used / truncated, steps, epochs, loss_first / loss_last (one step each) and loss_first_epoch /
loss_last_epoch (means over an epoch's worth of steps), mean_token_accuracy_first / _last,
step_time_s, tokens_per_s, peak_memory_mb.

TRL 1.16 facts relied on: SFTConfig defaults `gradient_checkpointing=True` and `bf16=True` (set
here to False and to `grpo.bf16`); a dataset with "prompt"/"completion" columns of chat messages
is rendered with the tokenizer's chat template (prompt with `add_generation_prompt=True`), and
with `completion_only_loss` the prompt tokens get label -100; `max_length` truncates from the
end and drops examples left with no completion token; the trainer logs `loss`,
`mean_token_accuracy`, `entropy` and `num_tokens` every `logging_steps`.

Does not cover: which examples (sparring.phases.warm_start), packing or validation loss.
"""

from __future__ import annotations

import gc
import math
import tempfile
import time
from typing import Any

from sparring import progress, tracking
from sparring.config import Config


def sft_args(cfg: Config, output_dir: str, seed: int, device: str) -> Any:
    """SFTConfig of the warm start (cfg.warm_start; bf16 follows the GPU switch grpo.bf16)."""
    from trl import SFTConfig

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
        report_to="none",  # MLflow through tracking.trainer_callbacks: outage-proof
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


def run_sft(
    cfg: Config, model: Any, tok: Any, rows: list[dict[str, Any]], peft_config: Any, seed: int
) -> tuple[Any, dict[str, float]]:
    """`cfg.warm_start.steps` SFT steps on `rows`; returns (trained model, metrics)."""
    ws = cfg.warm_start
    metrics: dict[str, float] = {}
    from datasets import Dataset
    from trl import SFTTrainer

    from sparring.backends.torch.grpo import peak_memory_mb

    metrics["examples_truncated"] = float(_too_long(tok, rows, ws.max_length))
    device = str(next(model.parameters()).device.type)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = SFTTrainer(
            model=model,
            args=sft_args(cfg, tmp, seed, device),
            train_dataset=Dataset.from_list(rows),
            processing_class=tok,
            peft_config=peft_config,
            callbacks=[progress.step_callback(ws.steps), *tracking.trainer_callbacks()],
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
    return trained, metrics
