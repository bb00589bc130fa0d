"""TRL glue: one GRPO run of one role on one dataset, with Sparring's config mapped onto TRL's.

This TRL subclass is the torch implementation of the code duel's policy-gradient step, kept for
TRL's distributed (DDP, FSDP, ZeRO-3) and vLLM paths; the engine's step on torch is
`sparring.backends.torch.policy` (`records_batch`, `policy_loss`, `TorchPolicy.train`).

Covers: `grpo_args` (cfg.grpo -> GRPOConfig: num_generations, epsilon, beta, loss_type, learning
rate, completion length, mask_truncated_completions, temperature, top_p, batch sizes; GPU
switches `use_vllm` -> vLLM colocate mode and `bf16`; no `report_to`: TRL's loss, kl, entropy,
clip ratios, frac_reward_zero_std, completion lengths and our `sparring/*` metrics reach the
phase's MLflow run through `sparring.tracking.trainer_callbacks`, which survives an outage),
(the `max_completion_length: 0` "auto" budget is sized by sparring.backends.budget),
`SparringGRPOTrainer` (below), and `run_grpo`, which trains for a fixed number of steps and returns
TRL's logged metrics averaged over the phase plus step time, tokens/s, peak memory and the group
counts of dynamic sampling.

`SparringGRPOTrainer` is TRL 1.16's GRPOTrainer with three mixins, one module each, that share
TRL's internals through the trainer (its `accelerator`, `args`, `train_dataset`, ...):
- `Rollout` (sparring.backends.torch.grpo_rollout): stop at the closing code fence, Sparring's
  refill decoder, sampling from the LoRA adapter merged into the base, scoring overlapped with
  sampling;
- `SamplingOrder` (sparring.backends.torch.grpo_sampling): which problems a generation batch
  samples: dynamic sampling's "skip" of flat or mastered problems (`skip_flat_problems`,
  `skip_mastered_at`, `revisit_order`), the fresh batch of "refill", the coach's re-selection;
- `LossBatch` (sparring.backends.torch.grpo_loss): dynamic sampling's "drop" of flat groups
  (`drop_flat_groups`), the update skipped when no signal is left, one prompt forward per group.
This module is the step that joins them: per generation batch it re-selects and swaps problems,
samples (timed: `generation_seconds`; a sampling slower than `SLOW_SAMPLING_S` says a line),
scores (`reward_seconds`), masks the EOS appended after a fence out of the loss, notes each
group's spread and mean, refills an all-flat batch with up to `refill_flat_batches` fresh ones
(TRL's metrics of a replaced batch are taken back so that they describe the batch trained on;
`sparring/refilled_batches` counts the replacements, each one a full generation: the price of a
step that trains; single process only), drops the flat groups and counts: `groups_total`,
`groups_useful`, `batches_skipped`; per generation batch TRL logs
`sparring/useful_group_share` (and `sparring/fence_stop_ratio`) with its own metrics.

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
Does not cover: rewards (sparring.rewards.code_duel), which model/adapter is trained
(sparring.phases), what each mixin does in detail (its module), multi-GPU runs of the subclass
(untested here).
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
from sparring.backends.torch.grpo_loss import (  # noqa: F401 (rows_to_keep: re-exported for tests)
    LossBatch,
    group_means,
    rows_to_keep,
    useful_groups,
)
from sparring.backends.torch.grpo_rollout import Rollout
from sparring.backends.torch.grpo_sampling import SamplingOrder
from sparring.config import Config
from sparring.errors import SparringError

log = logging.getLogger(__name__)
SLOW_SAMPLING_S = 30.0  # a step's sampling longer than this says a line when it ends


def peak_memory_mb() -> float:
    """RSS high-water mark of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def grpo_args(
    cfg: Config,
    output_dir: str,
    steps: int,
    seed: int,
    device: str = "cpu",
    max_completion_length: int | None = None,
) -> Any:
    """GRPOConfig for one phase of `steps` optimizer steps; `max_completion_length` (resolved)
    overrides cfg.grpo's, which must then not be 0 ("auto")."""
    from trl import GRPOConfig

    g = cfg.grpo
    completion_length = max_completion_length or g.max_completion_length
    if not completion_length:
        raise SparringError(
            "grpo.max_completion_length: 0 (auto) must be resolved before building GRPOConfig"
        )
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
    import transformers

    from sparring.distributed import ranks, recipes

    major = int(transformers.__version__.split(".")[0])
    kwargs.update(recipes.grpo_kwargs(cfg, ranks.world().size, major))  # FSDP/ZeRO-3, vLLM
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


def _trainer_class() -> type:
    from trl import GRPOTrainer

    class SparringGRPOTrainer(Rollout, LossBatch, SamplingOrder, GRPOTrainer):
        """GRPOTrainer + stop at the closing code fence + dynamic sampling (this module's
        docstring and each mixin's module docstring say what each override does and why)."""

        def __init__(
            self,
            *args: Any,
            stop_at_fence: bool = True,
            drop_flat_groups: bool = True,
            refill_flat_batches: int = 0,
            skip_flat_problems: bool = False,
            skip_mastered_at: float = 1.0,
            revisit_order: str = "dataset",
            sampler: str = "refill",
            rollout_batch_size: int = 16,
            share_prompt_forward: bool = True,
            overlap_scoring: bool = True,
            merge_lora_sampling: bool = True,
            prompt_fits: Callable[[dict[str, Any]], bool] | None = None,
            **kw: Any,
        ) -> None:
            self.prompt_fits = prompt_fits
            self.share_prompt_forward = share_prompt_forward
            self.overlap_scoring = overlap_scoring
            self.merge_lora_sampling = merge_lora_sampling
            self.scoring_overlapped_seconds = 0.0  # sandbox seconds spent while still sampling
            self._batch_inputs: list[dict[str, Any]] | None = None
            self._prefetch_wait = 0.0
            self.stop_at_fence = stop_at_fence
            self.sampler = sampler
            self.rollout_batch_size = rollout_batch_size
            self.generation_seconds = 0.0
            self.reward_seconds = 0.0
            self.drop_flat_groups = drop_flat_groups
            self._init_sampling_order(
                kw.get("train_dataset"), refill_flat_batches, skip_flat_problems,
                skip_mastered_at, revisit_order,
            )  # fmt: skip
            self.groups_total = 0
            self.groups_useful = 0
            self.batches_skipped = 0
            self.completions_total = 0
            self.completions_trained = 0  # in groups with an advantage, in steps that trained
            self.fence_stops = 0
            self._fence_stopped: list[bool] | None = None
            self._rewards_per_func: Any = None
            super().__init__(*args, **kw)

        # -- sampling (grpo_rollout), timed ----------------------------------------------
        def _generate_single_turn(
            self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
        ):
            start = time.perf_counter()
            try:
                return self._generate_fenced(
                    prompt_ids, images, multimodal_fields, num_generations, has_tool_images
                )
            finally:
                took = time.perf_counter() - start
                wait, self._prefetch_wait = self._prefetch_wait, 0.0
                self.generation_seconds += took - wait  # the wait was scoring, not sampling
                self.reward_seconds += wait
                if took > SLOW_SAMPLING_S and self.accelerator.is_main_process:
                    # a step can take minutes on a CPU: say where it is between step lines
                    progress.say(
                        f"{progress.LABEL or 'train'} sampled {len(prompt_ids)} completions "
                        f"in {progress.fmt_seconds(took)}; scoring and updating"
                    )

        # -- the step: score, refill, drop, count ----------------------------------------
        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            start = time.perf_counter()
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self.reward_seconds += time.perf_counter() - start
            self._rewards_per_func = rewards  # gathered over processes; groups are row blocks
            return rewards

        def _generate_and_score_completions(self, inputs):
            if not self.model.training:
                return super()._generate_and_score_completions(inputs)
            metrics = self._metrics["train"]
            logged = {k: len(v) for k, v in metrics.items()}
            out, useful, stopped = self._score_batch(inputs)
            tried = {row.get("problem_id") for row in inputs}
            refills = 0
            while not bool(useful.any()) and refills < self.refill_flat_batches:
                fresh = self._refill_inputs(len(inputs), tried)
                if fresh is None:
                    break
                refills += 1
                for k in list(metrics):  # TRL's metrics describe the batch that is trained on
                    if k in logged:
                        del metrics[k][logged[k] :]
                    else:
                        del metrics[k]
                # the replaced batch was sampled: it counts against completions_sampled
                self.completions_total += out["completion_ids"].size(0)
                self.groups_total += int(useful.numel())
                out, useful, stopped = self._score_batch(fresh)
            self.batches_refilled += refills
            n = out["completion_ids"].size(0)
            self.completions_total += n
            self.fence_stops += sum(stopped or [])
            g = self.num_generations
            self.groups_total += int(useful.numel())
            self.groups_useful += int(useful.sum())
            metrics["sparring/useful_group_share"].append(float(useful.float().mean()))
            metrics["sparring/refilled_batches"].append(float(refills))
            if stopped is not None:
                metrics["sparring/fence_stop_ratio"].append(sum(stopped) / max(1, n))
            if self.drop_flat_groups and "pixel_values" not in out:
                start = self.accelerator.process_index * n
                keep = useful.repeat_interleave(g)[start : start + n]
                out = self._keep_rows(out, keep.to(out["advantages"].device))
            if "sparring_skip" in out:
                self.batches_skipped += 1
            else:  # the completions whose tokens enter this step's loss
                kept = int(useful.sum()) * g if self.drop_flat_groups else int(useful.numel()) * g
                self.completions_trained += kept // self.accelerator.num_processes
            return out

        def _score_batch(self, inputs):
            """TRL's generation and scoring, the fence EOS masked; (out, useful groups, stops)."""
            inputs = self._coached(inputs)
            inputs = self._unflat(inputs)
            self._batch_inputs = inputs  # the rows' tests, for scoring during sampling
            try:
                out = super()._generate_and_score_completions(inputs)
            finally:
                self._batch_inputs = None
            n = out["completion_ids"].size(0)
            stopped = self._fence_stopped
            if stopped is not None and len(stopped) == n:
                mask = out["completion_mask"].clone()
                lengths = mask.sum(dim=1).tolist()
                for i, s in enumerate(stopped):
                    if s and lengths[i] > 0:
                        mask[i, int(lengths[i]) - 1] = 0  # the appended EOS was not sampled
                out["completion_mask"] = mask
                out["num_items_in_batch"] = self._loss_tokens(out)
            g = self.num_generations
            useful = useful_groups(self._rewards_per_func, self.reward_weights, g)
            means = group_means(self._rewards_per_func, self.reward_weights, g)
            self._note_groups(inputs, useful.tolist(), means)
            return out, useful, stopped

    return SparringGRPOTrainer


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
    trainer = _trainer_class()(
        model=model,
        reward_funcs=[reward_fn],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        stop_at_fence=cfg.grpo.stop_at_fence,
        drop_flat_groups=cfg.grpo.drop_flat_groups,
        refill_flat_batches=cfg.grpo.refill_flat_batches,
        skip_flat_problems=cfg.grpo.skip_flat_problems,
        skip_mastered_at=cfg.grpo.skip_mastered_at,
        revisit_order=cfg.grpo.revisit_order,
        sampler=cfg.grpo.sampler,
        rollout_batch_size=cfg.grpo.rollout_batch_size,
        share_prompt_forward=cfg.grpo.share_prompt_forward,
        overlap_scoring=cfg.grpo.overlap_scoring,
        merge_lora_sampling=cfg.grpo.merge_lora_sampling,
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
