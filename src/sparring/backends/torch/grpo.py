"""TRL glue: one GRPO run of one role on one dataset, with Sparring's config mapped onto TRL's.

This TRL subclass is the torch implementation of the code duel's policy-gradient step, kept for
TRL's distributed (DDP, FSDP, ZeRO-3) and vLLM paths; the engine's step on torch is
`sparring.backends.torch.policy` (`records_batch`, `policy_loss`, `TorchPolicy.train`).

Covers: `trl_kwargs`, the one place cfg.grpo's fields become TRL GRPOConfig keywords
(num_generations, epsilon, beta, loss_type, learning rate, completion length,
mask_truncated_completions, temperature, top_p, batch sizes, logging_steps; GPU switches
`use_vllm` -> vLLM colocate mode and `bf16`; no `report_to`: TRL's loss, kl, entropy, clip
ratios, frac_reward_zero_std, completion lengths and our `sparring/*` metrics reach the phase's
MLflow run through `sparring.tracking.trainer_callbacks`, which survives an outage), and
`grpo_args`, the GRPOConfig built from them (the `max_completion_length: 0` "auto" budget is
sized by sparring.backends.budget); and `run_grpo`, which builds
`sparring.backends.torch.grpo_trainer.SparringGRPOTrainer` with cfg.grpo whole, trains for a
fixed number of steps and returns TRL's logged metrics averaged over the phase plus step time,
tokens/s, peak memory and the group counts of dynamic sampling.

Multi-process: `sparring.cluster.entry` runs a phase under `torchrun` (or `accelerate launch`)
on one node or on the nodes of a Kubeflow TrainJob; TRL/Accelerate handle the process group,
`sparring.distributed.recipes` adds the strategy (DDP, FSDP, ZeRO-3) and the vLLM mode to
GRPOConfig, and under FSDP/ZeRO-3 `run_grpo` gathers the full weights for saving. DDP does not
broadcast buffers: each forward would be a collective, and the shared-prompt loss makes a
data-dependent number of forwards per process. Tested here with 2 CPU processes (gloo, DDP);
the GPU strategies are not.

Notes on TRL 1.16: GRPOConfig has no `max_prompt_length`, so `fit_prompts` enforces
`cfg.grpo.max_prompt_length` itself by dropping rows whose rendered prompt is longer (cutting a
problem statement in half would train on a different problem); reward functions may return
None, which TRL turns into NaN and drops with nansum/nanmean, so a sandbox failure is "no
signal", not 0.
Does not cover: the trainer's step and its mixins (sparring.backends.torch.grpo_trainer, which
imports TRL: this module imports it only where a run needs it), rewards
(sparring.rewards.code_duel), which model/adapter is trained (sparring.phases), multi-GPU runs
of the subclass (untested here).
"""

from __future__ import annotations

import gc
import logging
import resource
import time
from collections.abc import Callable, Sequence
from typing import Any

from sparring import progress, tracking
from sparring.backends.budget import resolve_completion_length
from sparring.config import Config
from sparring.errors import SparringError

log = logging.getLogger(__name__)


def peak_memory_mb() -> float:
    """RSS high-water mark of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def trl_kwargs(
    cfg: Config,
    output_dir: str,
    steps: int,
    seed: int,
    device: str,
    completion_length: int,
    *,
    world_size: int,
    transformers_major: int,
) -> dict[str, Any]:
    """TRL GRPOConfig's keywords for one phase of `steps` optimizer steps: cfg.grpo's fields under
    TRL's names (`completion_length` resolved), the run's, those Sparring fixes, and the
    distributed recipe for `world_size` processes. Pure: imports no TRL."""
    from sparring.distributed import recipes

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
        "max_completion_length": completion_length,
        "mask_truncated_completions": bool(g.mask_truncated_completions),
        "temperature": g.temperature,
        "top_p": g.top_p,
        "logging_steps": g.logging_steps,
        "save_strategy": "no",
        "report_to": "none",  # MLflow through tracking.trainer_callbacks: outage-proof
        "seed": seed,
        "data_seed": seed,
        "gradient_checkpointing": False,  # small models on CPU: speed over memory
        "bf16": bool(g.bf16),
        "use_cpu": device == "cpu",
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,
        # By default DDP broadcasts buffers (the rotary table: constant) in every forward, a
        # collective per call, and the shared-prompt loss makes a data-dependent number of
        # calls: processes keeping different row counts hung there in CI (now kept equal by
        # rows_to_keep), and one whose prompts repeat still makes other calls than one whose
        # prompts do not.
        "ddp_broadcast_buffers": False,
        "disable_tqdm": False,
    }
    kwargs.update(recipes.grpo_kwargs(cfg, world_size, transformers_major))  # FSDP/ZeRO-3, vLLM
    return kwargs


def grpo_args(
    cfg: Config,
    output_dir: str,
    steps: int,
    seed: int,
    device: str = "cpu",
    max_completion_length: int | None = None,
) -> Any:
    """GRPOConfig of `trl_kwargs` for this process's world; `max_completion_length` (resolved)
    overrides cfg.grpo's, which must then not be 0 ("auto")."""
    import transformers
    from trl import GRPOConfig

    from sparring.distributed import ranks

    completion_length = max_completion_length or cfg.grpo.max_completion_length
    if not completion_length:
        raise SparringError(
            "grpo.max_completion_length: 0 (auto) must be resolved before building GRPOConfig"
        )
    major = int(transformers.__version__.split(".")[0])
    kwargs = trl_kwargs(
        cfg, output_dir, steps, seed, device, completion_length,
        world_size=ranks.world().size, transformers_major=major,
    )  # fmt: skip
    return GRPOConfig(**kwargs)


def _aggregate(history: list[dict[str, Any]]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for row in history:
        for k, v in row.items():
            if isinstance(v, (int, float)) and k not in ("epoch", "step"):
                sums.setdefault(k, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def prompt_fits(tokenizer: Any, max_tokens: int) -> Callable[[dict[str, Any]], bool]:
    """Whether a row's chat-rendered prompt fits in `max_tokens`."""
    from sparring.backends.text import render_prompt

    def fits(row: dict[str, Any]) -> bool:
        text = render_prompt(tokenizer, row["prompt"])
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= max_tokens

    return fits


def fit_prompts(dataset: Any, tokenizer: Any, max_tokens: int) -> tuple[Any, int]:
    """Rows whose chat-rendered prompt fits in `max_tokens`, and how many were dropped."""
    kept = dataset.filter(prompt_fits(tokenizer, max_tokens))
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
    *,
    reference_solutions: Sequence[str] | None = None,
) -> tuple[Any, dict[str, float]]:
    """Train `model` with GRPO for `steps` steps; returns (trained model, metrics).

    With `peft_config`, TRL wraps a plain model in a fresh LoRA adapter; a `PeftModel` passed in
    trains its active adapter only. `grpo.max_completion_length: 0` is sized from the dataset's
    `reference_solution` column when it has one, else from `reference_solutions`.
    """
    dataset, dropped = fit_prompts(dataset, tokenizer, cfg.grpo.max_prompt_length)
    if len(dataset) == 0:
        raise SparringError(
            f"grpo.max_prompt_length: {cfg.grpo.max_prompt_length} tokens is shorter than every "
            "prompt of this phase; raise it"
        )
    if "reference_solution" in dataset.column_names:
        reference_solutions = list(dataset["reference_solution"])
    completion_length = resolve_completion_length(cfg, tokenizer, reference_solutions)
    device = str(next(model.parameters()).device.type)
    args = grpo_args(cfg, output_dir, steps, seed, device, completion_length)
    from sparring.backends.torch import grpo_trainer

    trainer = grpo_trainer.SparringGRPOTrainer(
        cfg.grpo,
        model=model,
        reward_funcs=[reward_fn],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        prompt_fits=prompt_fits(tokenizer, cfg.grpo.max_prompt_length),
        callbacks=[progress.step_callback(steps), *tracking.trainer_callbacks()],
    )
    start = time.perf_counter()
    trainer.train()
    elapsed = time.perf_counter() - start
    logged = _aggregate([h for h in trainer.state.log_history if "train_runtime" not in h])
    trained = trainer.model
    if trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled:
        # Sharded (FSDP, ZeRO-3): every process joins in gathering the full weights (rank 0
        # receives them) and saving writes those instead of its own shard (models.save_model).
        state = trainer.accelerator.get_state_dict(trainer.model)
        trained = trainer.accelerator.unwrap_model(trainer.model)
        trained.sparring_state_dict = state
    n_tokens = max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0)
    metrics = {f"trl/{k.replace('/', '_')}": v for k, v in logged.items()}
    groups, useful = trainer.groups_total, trainer.groups_useful
    metrics.update(
        {
            "steps": float(steps),
            "prompts_dropped_too_long": float(dropped),
            "step_time_s": elapsed / max(1, steps),
            "tokens_per_s": float(n_tokens) / elapsed if elapsed > 0 else 0.0,
            "peak_memory_mb": peak_memory_mb(),
            "max_completion_length": float(completion_length),
            "groups_total": float(groups),
            "groups_useful": float(useful),
            "useful_group_share": useful / groups if groups else 0.0,
            "batches_skipped": float(trainer.batches_skipped),
            "batches_refilled": float(trainer.batches_refilled),
            "groups_swapped": float(trainer.groups_swapped),
            "groups_mastered": float(trainer.groups_mastered),
            "groups_retried": float(trainer.groups_retried),
            "groups_revisited": float(trainer.groups_revisited),
            "revisits_flat": float(trainer.revisits_flat),
            "groups_flat_at_zero": float(trainer.groups_flat_at_zero),
            "fence_stop_ratio": trainer.fence_stops / max(1, trainer.completions_total),
            "completions_sampled": float(trainer.completions_total),
            "completions_trained": float(trainer.completions_trained),
            "train_seconds": elapsed,
            "generation_seconds": trainer.generation_seconds,
            "reward_seconds": trainer.reward_seconds,
            "scoring_overlapped_seconds": trainer.scoring_overlapped_seconds,
            "seconds_per_trained_completion": elapsed / max(1, trainer.completions_trained),
        }
    )
    del trainer
    gc.collect()
    return trained, metrics
