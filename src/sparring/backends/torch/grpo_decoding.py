"""GRPO's decoding: how a generation batch's completions are sampled for the TRL trainer.

Covers, for `sparring.backends.torch.grpo_trainer.SparringGRPOTrainer` (mixed in as
`FencedDecoding`), what TRL 1.16's GRPOTrainer does not have:
- stop at the closing code fence (`grpo.stop_at_fence`): TRL calls `model.generate(**inputs,
  generation_config=...)` without `tokenizer=` (so `stop_strings` cannot work) and takes no
  custom stopping criteria, so `_generate_fenced` passes a
  `sparring.backends.torch.generation.FenceStop` to that call (`_generate_with`), cuts each
  stopped row just after its closing fence and appends EOS. TRL calls a completion "truncated"
  when its last token is not EOS/pad (clipped_ratio, mask_truncated_completions), so the EOS
  makes a fenced answer a finished one; that EOS was not sampled, so the step masks it out of
  the loss. Plain HF generation only (not vLLM, not continuous batching: their completions are
  left as TRL makes them).
- Sparring's refill decoder (`grpo.sampler: refill`; `_generate_refilled`): a finished row's slot
  goes to the next prompt at once.
- sampling from the LoRA adapter merged into the base (`grpo.merge_lora_sampling`, `lora_merged`;
  refill decoder, unsharded weights): one matmul per adapted linear in each decode step, the
  base weights restored bit for bit before the update.
- scoring overlapped with sampling (`grpo.overlap_scoring`; Sparring's decoders only): a
  finished row's tests run in the sandbox, into the answerer reward's result cache, while the
  other rows still decode (sparring.backends.scoring_overlap); TRL's reward call then reads the
  cache, so rewards and metrics are those of the plain path. `scoring_overlapped_seconds` says
  how much sandbox time was hidden; the wait for what was left after sampling counts as reward
  time.

Does not cover: the timing of sampling and the slow-sampling line (the step,
sparring.backends.torch.grpo_trainer), which problems are sampled
(sparring.backends.torch.grpo_sampling), the decoders themselves
(sparring.backends.torch.generation), rewards (sparring.rewards.code_duel).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from sparring.backends.torch import generation

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _generate_with(model: Any, **extra: Any) -> Iterator[None]:
    """While inside, `model.generate(...)` also receives `extra` (an instance attribute shadows
    the method and is removed, or the previous one restored, on exit)."""
    had = "generate" in vars(model)
    previous = vars(model).get("generate")
    original = model.generate

    def generate(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **{**extra, **kwargs})

    object.__setattr__(model, "generate", generate)
    try:
        yield
    finally:
        if had:
            object.__setattr__(model, "generate", previous)
        else:
            vars(model).pop("generate", None)


class FencedDecoding:
    """Mixin of `SparringGRPOTrainer` (sparring.backends.torch.grpo_trainer): its completions
    decoded up to the closing code fence, by the refill decoder, from merged LoRA, scored while
    the rest still decode (the module docstring says what and why). Reads the trainer's `grpo`
    section (`stop_at_fence`, `sampler`, `rollout_batch_size`, `merge_lora_sampling`,
    `overlap_scoring`) and `_batch_inputs` (the rows being sampled)."""

    def _generate_fenced(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images
    ):
        self._fence_stopped = None
        args = (prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
        plain = self.use_vllm or self.use_transformers_continuous_batching
        if not self.grpo.stop_at_fence or plain:
            return super()._generate_single_turn(*args)
        stop = generation.FenceStop(self._tokenizer, eos_token_ids=self.eos_token_ids)
        model = self.accelerator.unwrap_model(self.model_wrapped)  # what TRL generates with
        if self.grpo.sampler == "refill" and not images and generation._refill_supported(model):
            return self._generate_refilled(model, prompt_ids, stop)
        stopping = generation._as_stopping_criteria(stop)
        with _generate_with(model, stopping_criteria=stopping):
            completion_ids, logprobs = super()._generate_single_turn(*args)
        eos = self._tokenizer.eos_token_id
        eos = self.eos_token_ids[0] if eos is None else eos
        stopped = []
        for i, ids in enumerate(completion_ids):
            end = stop.stopped_at[i] if i < len(stop.stopped_at) else None
            if end:  # drop what generate padded after the fence; end with one EOS
                completion_ids[i] = [*ids[:end], eos]
            stopped.append(bool(end))
        self._fence_stopped = stopped
        return completion_ids, logprobs

    def _generate_refilled(self, model, prompt_ids, stop):
        """Completions from Sparring's refill decoder (a finished row's slot goes to the
        next prompt at once): ids up to the closing fence or EOS, each finished one ending
        in EOS (after a fence: appended, masked out of the loss in `_score_batch`), a row
        cut at max_completion_length without one (TRL calls it truncated)."""
        import torch

        from sparring.backends.torch.models import lora_merged

        stop.start(len(prompt_ids))
        was_training = model.training
        model.eval()
        prefetcher, finished = self._prefetcher(len(prompt_ids))

        def on_done(i: int, ids: list[int]) -> None:
            finished[i] = list(ids)
            prefetcher.submit(i)

        # the slot decoder's CUDA graphs hold the unmerged kernels; shards cannot be merged
        sharded = self.is_fsdp_enabled or self.is_deepspeed_enabled
        mergeable = (
            self.grpo.merge_lora_sampling
            and not sharded
            and generation.decoder_for(model) == "refill"
        )
        merge = lora_merged(model) if mergeable else contextlib.nullcontext(False)
        try:
            with merge, torch.inference_mode():
                rows = generation.decode(
                    model,
                    [list(p) for p in prompt_ids],
                    max_new_tokens=self.max_completion_length,
                    batch_size=self.grpo.rollout_batch_size,
                    temperature=self.temperature,
                    top_p=self.top_p,
                    stop=stop,
                    pad_token_id=self._tokenizer.pad_token_id,
                    on_done=on_done if prefetcher is not None else None,
                )
        finally:
            model.train(was_training)
            if prefetcher is not None:
                self._close_prefetcher(prefetcher)
        eos = self._tokenizer.eos_token_id
        eos = self.eos_token_ids[0] if eos is None else eos
        stopped = [s is not None for s in stop.stopped_at]
        completion_ids = [
            [*ids, eos] if fenced or ended else ids
            for ids, fenced, ended in zip(rows, stopped, stop.ended, strict=True)
        ]
        self._fence_stopped = stopped
        return completion_ids, None

    # -- scoring overlapped with sampling ---------------------------------------------
    def _prefetcher(self, n_rows):
        """A `Prefetcher` that runs the sandbox on finished rows into the reward's cache
        (sparring.backends.scoring_overlap), and the dict it reads their ids from; (None, {}) when
        the switch is off or the reward or the batch does not allow it."""
        from sparring.backends.scoring_overlap import Prefetcher

        inputs = self._batch_inputs
        reward = self.reward_funcs[0] if len(self.reward_funcs) == 1 else None
        if (
            not self.grpo.overlap_scoring
            or not hasattr(reward, "prefetch")
            or inputs is None
            or len(inputs) != n_rows
            or not all("tests" in r and "function_name" in r for r in inputs)
        ):
            return None, {}
        finished: dict[int, list[int]] = {}
        decode_text = self._tokenizer.batch_decode

        def warm(rows):
            texts = decode_text([finished[i] for i in rows], skip_special_tokens=True)
            reward.prefetch(
                texts,
                [inputs[i]["tests"] for i in rows],
                [inputs[i]["function_name"] for i in rows],
            )

        return Prefetcher(warm), finished

    def _close_prefetcher(self, prefetcher):
        sampled_at = time.perf_counter()
        report = prefetcher.close()
        self._prefetch_wait = report.waited_s
        self.scoring_overlapped_seconds += sum(
            max(0.0, min(end, sampled_at) - start) for start, end, _ in report.calls
        )
        if report.error is not None:
            log.warning(
                "scoring during sampling failed (%s); the reward call scores the batch",
                report.error,
            )
