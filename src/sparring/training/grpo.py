"""TRL glue: one GRPO run of one role on one dataset, with Sparring's config mapped onto TRL's.

Covers: `grpo_args` (cfg.grpo -> GRPOConfig: num_generations, epsilon, beta, loss_type, learning
rate, completion length, temperature, top_p, batch sizes; GPU switches `use_vllm` -> vLLM colocate
mode and `bf16`; `report_to=["mlflow"]` when an MLflow run is active so TRL logs loss, kl,
entropy, clip ratios, frac_reward_zero_std and completion lengths into it), and `run_grpo`, which
trains for a fixed number of steps and returns TRL's logged metrics averaged over the phase plus
step time, tokens/s and peak memory.

Multi-GPU: the phase functions are plain Python, so `accelerate launch --num_processes N -m
sparring.cli phase train-answerer ...` (or `... train`) runs them data-parallel; TRL/Accelerate
handle the process group. Not tested here (no GPU).

Notes on TRL 1.16: GRPOConfig has no `max_prompt_length`, so `fit_prompts` enforces
`cfg.grpo.max_prompt_length` itself by dropping rows whose rendered prompt is longer (cutting a
problem statement in half would train on a different problem); reward functions may return
None, which TRL turns into NaN and drops with nansum/nanmean, so a sandbox failure is "no
signal", not 0.
Does not cover: rewards (sparring.duel) or which model/adapter is trained (sparring.phases).
"""

from __future__ import annotations

import gc
import logging
import resource
import time
from typing import Any

from sparring.config import Config
from sparring.errors import SparringError

log = logging.getLogger(__name__)


def peak_memory_mb() -> float:
    """RSS high-water mark of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def mlflow_active() -> bool:
    try:
        import mlflow
    except ImportError:  # pragma: no cover
        return False
    return mlflow.active_run() is not None


def grpo_args(cfg: Config, output_dir: str, steps: int, seed: int, device: str = "cpu") -> Any:
    """GRPOConfig for one phase of `steps` optimizer steps."""
    from trl import GRPOConfig

    g = cfg.grpo
    kwargs: dict[str, Any] = {
        "output_dir": output_dir,
        "max_steps": steps,
        "per_device_train_batch_size": g.per_device_batch_size,
        "gradient_accumulation_steps": g.gradient_accumulation_steps,
        "num_generations": g.num_generations,
        "learning_rate": g.learning_rate,
        "beta": g.beta,
        "epsilon": g.epsilon,
        "loss_type": g.loss_type,
        "max_completion_length": g.max_completion_length,
        "temperature": g.temperature,
        "top_p": g.top_p,
        "logging_steps": g.logging_steps,
        "save_strategy": "no",
        "report_to": ["mlflow"] if mlflow_active() else "none",
        "seed": seed,
        "data_seed": seed,
        "gradient_checkpointing": False,  # small models on CPU: speed over memory
        "bf16": bool(g.bf16),
        "use_cpu": device == "cpu",
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,
        "disable_tqdm": False,
    }
    if g.use_vllm:
        kwargs.update(use_vllm=True, vllm_mode="colocate")
    return GRPOConfig(**kwargs)


def _aggregate(history: list[dict[str, Any]]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for row in history:
        for k, v in row.items():
            if isinstance(v, (int, float)) and k not in ("epoch", "step"):
                sums.setdefault(k, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def fit_prompts(dataset: Any, tokenizer: Any, max_tokens: int) -> tuple[Any, int]:
    """Rows whose chat-rendered prompt fits in `max_tokens`, and how many were dropped."""
    from sparring.generation import render_prompt

    def fits(row: dict[str, Any]) -> bool:
        text = render_prompt(tokenizer, row["prompt"])
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= max_tokens

    kept = dataset.filter(fits)
    return kept, len(dataset) - len(kept)


def run_grpo(
    model: Any,
    tokenizer: Any,
    dataset: Any,
    reward_fn: Any,
    cfg: Config,
    steps: int,
    output_dir: str,
    seed: int,
    peft_config: Any = None,
) -> tuple[Any, dict[str, float]]:
    """Train `model` with GRPO for `steps` steps; returns (trained model, metrics).

    With `peft_config`, TRL wraps a plain model in a fresh LoRA adapter; a `PeftModel` passed in
    trains its active adapter only.
    """
    from trl import GRPOTrainer

    dataset, dropped = fit_prompts(dataset, tokenizer, cfg.grpo.max_prompt_length)
    if len(dataset) == 0:
        raise SparringError(
            f"grpo.max_prompt_length: {cfg.grpo.max_prompt_length} tokens is shorter than every "
            "prompt of this phase; raise it"
        )
    device = str(next(model.parameters()).device.type)
    args = grpo_args(cfg, output_dir, steps, seed, device)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward_fn],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    start = time.perf_counter()
    trainer.train()
    elapsed = time.perf_counter() - start
    logged = _aggregate([h for h in trainer.state.log_history if "train_runtime" not in h])
    trained = trainer.model
    n_tokens = max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0)
    metrics = {f"trl/{k.replace('/', '_')}": v for k, v in logged.items()}
    metrics.update(
        {
            "steps": float(steps),
            "prompts_dropped_too_long": float(dropped),
            "step_time_s": elapsed / max(1, steps),
            "tokens_per_s": float(n_tokens) / elapsed if elapsed > 0 else 0.0,
            "peak_memory_mb": peak_memory_mb(),
        }
    )
    del trainer
    gc.collect()
    return trained, metrics
