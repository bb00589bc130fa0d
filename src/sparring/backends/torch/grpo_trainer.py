"""The GRPO trainer: TRL 1.16's GRPOTrainer, given the `grpo:` config section whole, with
Sparring's sampling, problem choice, loss batch and the step that joins them.

`SparringGRPOTrainer(grpo, ...)` takes `cfg.grpo` (sparring.config.training.GrpoConfig) as its
first argument and keeps it as `self.grpo`; it and its mixins read their switches from it where
they use them (`self.grpo.stop_at_fence`, ...), so a field's default lives in the config alone.
The other keywords are TRL's (`model`, `args`: the GRPOConfig that
sparring.backends.torch.grpo.grpo_args builds from the same section, ...) and `prompt_fits`.
Three mixins, one module each, share TRL's internals through the trainer (its `accelerator`,
`args`, `train_dataset`, ...):
- `FencedDecoding` (sparring.backends.torch.grpo_decoding): how the completions are decoded:
  stop at the closing code fence, Sparring's refill decoder, decoding from the LoRA adapter
  merged into the base, scoring overlapped with decoding;
- `ProblemSelection` (sparring.backends.torch.grpo_sampling): which problems a generation batch
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

Does not cover: TRL's arguments, the run and its metrics (sparring.backends.torch.grpo), what
each mixin does in detail (its module). Imports TRL: import it where a trainer is built.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from trl import GRPOTrainer

from sparring import progress
from sparring.backends.torch.grpo_decoding import FencedDecoding
from sparring.backends.torch.grpo_loss import LossBatch, group_means, useful_groups
from sparring.backends.torch.grpo_sampling import ProblemSelection
from sparring.config.training import GrpoConfig

SLOW_SAMPLING_S = 30.0  # a step's sampling longer than this says a line when it ends


class SparringGRPOTrainer(FencedDecoding, LossBatch, ProblemSelection, GRPOTrainer):
    """GRPOTrainer + stop at the closing code fence + dynamic sampling, switched by `grpo`
    (the module docstring and each mixin's module docstring say what each override does and
    why). `prompt_fits` says whether a row's prompt fits `grpo.max_prompt_length` (the coach's
    re-selection uses no row that does not)."""

    def __init__(
        self,
        grpo: GrpoConfig,
        *args: Any,
        prompt_fits: Callable[[dict[str, Any]], bool] | None = None,
        **kw: Any,
    ) -> None:
        self.grpo = grpo
        self.prompt_fits = prompt_fits
        self.scoring_overlapped_seconds = 0.0  # sandbox seconds spent while still sampling
        self._batch_inputs: list[dict[str, Any]] | None = None
        self._prefetch_wait = 0.0
        self.generation_seconds = 0.0
        self.reward_seconds = 0.0
        self._init_problem_selection(kw.get("train_dataset"))
        self.groups_total = 0
        self.groups_useful = 0
        self.batches_skipped = 0
        self.completions_total = 0
        self.completions_trained = 0  # in groups with an advantage, in steps that trained
        self.fence_stops = 0
        self._fence_stopped: list[bool] | None = None
        self._rewards_per_func: Any = None
        super().__init__(*args, **kw)

    # -- sampling (grpo_decoding), timed -----------------------------------------------------
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

    # -- the step: score, refill, drop, count ------------------------------------------------
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
        while not bool(useful.any()) and refills < self.grpo.refill_flat_batches:
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
        drop = self.grpo.drop_flat_groups
        if drop and "pixel_values" not in out:
            start = self.accelerator.process_index * n
            keep = useful.repeat_interleave(g)[start : start + n]
            out = self._keep_rows(out, keep.to(out["advantages"].device))
        if "sparring_skip" in out:
            self.batches_skipped += 1
        else:  # the completions whose tokens enter this step's loss
            kept = int(useful.sum()) * g if drop else int(useful.numel()) * g
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
