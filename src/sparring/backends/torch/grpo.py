"""TRL glue: one GRPO run of one role on one dataset, with Sparring's config mapped onto TRL's.

This TRL subclass is the torch implementation of the code duel's policy-gradient step, kept for
TRL's distributed (DDP, FSDP, ZeRO-3) and vLLM paths; the engine's step on torch is
`sparring.backends.torch.policy` (`records_batch`, `policy_loss`, `TorchPolicy.train`).

Why one module: the trainer subclass, its arguments and `run_grpo` share the TRL internals the
subclass overrides (generation, scoring, logging of a step); split, each half would reach into
the other's private assumptions about TRL 1.16.

Covers: `grpo_args` (cfg.grpo -> GRPOConfig: num_generations, epsilon, beta, loss_type, learning
rate, completion length, mask_truncated_completions, temperature, top_p, batch sizes; GPU
switches `use_vllm` -> vLLM colocate mode and `bf16`; no `report_to`: TRL's loss, kl, entropy,
clip ratios, frac_reward_zero_std, completion lengths and our `sparring/*` metrics reach the
phase's MLflow run through `sparring.tracking.trainer_callbacks`, which survives an outage),
(the `max_completion_length: 0` "auto" budget is sized by sparring.budget),
`SparringGRPOTrainer` (below), and `run_grpo`, which trains for a fixed number of steps and returns
TRL's logged metrics averaged over the phase plus step time, tokens/s, peak memory and the group
counts of dynamic sampling.

`SparringGRPOTrainer` adds to TRL 1.16's GRPOTrainer, which has neither:
- stop at the closing code fence (`stop_at_fence`): TRL calls `model.generate(**inputs,
  generation_config=...)` without `tokenizer=` (so `stop_strings` cannot work) and takes no
  custom stopping criteria, so `_generate_single_turn` passes a
  `sparring.backends.torch.generation.FenceStop` to that call, cuts each stopped row just after
  its closing fence and appends EOS. TRL calls a
  completion "truncated" when its last token is not EOS/pad (clipped_ratio,
  mask_truncated_completions), so the EOS makes a fenced answer a finished one; that EOS was not
  sampled, so it is masked out of the loss. Plain HF generation only (not vLLM, not continuous
  batching: their completions are left as TRL makes them).
- sampling from the LoRA adapter merged into the base (`merge_lora_sampling`, `lora_merged`;
  refill decoder, unsharded weights): one matmul per adapted linear in each decode step, the
  base weights restored bit for bit before the update.
- scoring overlapped with sampling (`overlap_scoring`; Sparring's decoders only): a finished
  row's tests run in the sandbox, into the answerer reward's result cache, while the other rows
  still decode (sparring.scoring_overlap); TRL's reward call then reads the cache, so rewards
  and metrics are those of the plain path. `scoring_overlapped_seconds` says how much sandbox
  time was hidden; the wait for what was left after sampling counts as reward time.
- dynamic sampling, DAPO-style "drop" (`drop_flat_groups`): after TRL scores a generation batch,
  groups whose rewards are all equal (zero advantage, no gradient) leave the loss batch; every
  per-row tensor is sliced alike and `num_items_in_batch` recounted. When no useful group (or no
  unmasked loss token) remains, the whole optimizer update is skipped (no forward/backward; all
  grads stay None so AdamW leaves every weight alone), rather than stepping on zero advantages,
  which costs a full backward and still moves the weights through Adam's momentum. Counts:
  `groups_total`, `groups_useful`, `batches_skipped`; per generation batch TRL logs
  `sparring/useful_group_share` (and `sparring/fence_stop_ratio`) with its own metrics.
  With `steps_per_generation > 1` the kept rows are topped up with zero-advantage rows of dropped
  groups to a multiple of it (TRL splits the batch into that many equal slices), and over
  several processes to the most rows any of them keeps (`rows_to_keep`: TRL's collectives need
  equal counts).
- dynamic sampling, "refill" (`refill_flat_batches`): when every group of a generation batch is
  flat, up to that many fresh batches of problems not yet tried in this step are generated and
  scored in its place before the step is skipped. TRL's metrics of a replaced batch are taken back
  so that they describe the batch trained on; `sparring/refilled_batches` counts the replacements
  (each one a full generation: the price of a step that trains). Single process only.
- dynamic sampling, "skip" (`skip_flat_problems`): a problem whose last group in this phase was
  flat (every completion passed, or none did) or reached a mean reward of `skip_mastered_at`
  (mastered: its next group is likely all-pass), or that the frozen answerer's screen saw flat
  (a dataset column `screened_flat`, `steps.screen_pool`), is not sampled while it stays so and
  other problems remain: before a
  generation batch is sampled its groups are swapped for problems not seen flat
  (`swap_flat_problems`), so fewer sampled completions leave the loss batch;
  once no problem is left unmarked, a group goes to the problem seen failing (flat below
  `skip_mastered_at`, or screened so) the longest ago, since the answerer has trained since.
  `revisit_order: lowest_reward` re-points a group of a problem already sampled in the phase
  too, and sends such groups to a problem not yet sampled, else to the one whose last group
  earned the least (`groups_revisited`, `revisits_flat` count the returns).
  `groups_swapped` counts the swaps, `groups_retried` those of them to a failing problem,
  `groups_mastered` the groups that marked a problem mastered and `groups_flat_at_zero` the
  flat groups in which nothing earned a reward. Single process only.
- the curriculum coach's per-step re-selection (`coach.enabled`, sparring.coach): before a
  generation batch is sampled, the reward's `reselect` swaps each group of a family whose level
  the coach moved since the phase drew its problems for rows at the family's new level (prompts
  longer than `max_prompt_length` are not used). Single process only (a group may span
  processes, and each process's coach counts its own rows); elsewhere the phase's draw, made at
  the levels the phase starts with, is trained as drawn.

Multi-process: `sparring.cluster.entry` runs a phase under `torchrun` (or `accelerate launch`)
on one node or on the nodes of a Kubeflow TrainJob; TRL/Accelerate handle the process group,
`sparring.cluster.recipes` adds the strategy (DDP, FSDP, ZeRO-3) and the vLLM mode to
GRPOConfig, and under FSDP/ZeRO-3 `run_grpo` gathers the full weights for saving. DDP does not
broadcast buffers: each forward would be a collective, and the shared-prompt loss makes a
data-dependent number of forwards per process. Tested here with 2 CPU processes (gloo, DDP);
the GPU strategies are not.

Notes on TRL 1.16: GRPOConfig has no `max_prompt_length`, so `fit_prompts` enforces
`cfg.grpo.max_prompt_length` itself by dropping rows whose rendered prompt is longer (cutting a
problem statement in half would train on a different problem); reward functions may return
None, which TRL turns into NaN and drops with nansum/nanmean, so a sandbox failure is "no
signal", not 0.
Does not cover: rewards (sparring.code_duel), which model/adapter is trained
(sparring.phases), DAPO's "resample until the batch is full" variant (dropping shrinks the batch
instead), multimodal batches (no dropping when images are present), multi-GPU runs of the
subclass (untested here).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sparring import progress, tracking
from sparring.backends.torch.generation import cache_kwarg
from sparring.budget import resolve_completion_length
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

    from sparring.cluster import ranks, recipes

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


def useful_groups(rewards_per_func: Any, weights: Any, num_generations: int) -> Any:
    """Bool per group of `num_generations` consecutive rows: True when the group's weighted
    rewards (NaN = unscorable, ignored) are not all equal, i.e. it carries an advantage."""
    import torch

    grouped = _grouped_rewards(rewards_per_func, weights, num_generations)
    present = ~torch.isnan(grouped)
    hi = torch.where(present, grouped, torch.full_like(grouped, -math.inf)).amax(dim=1)
    lo = torch.where(present, grouped, torch.full_like(grouped, math.inf)).amin(dim=1)
    spread = present.sum(dim=1) >= 2
    return spread & ~torch.isclose(hi, lo, rtol=1e-5, atol=1e-6)


def group_means(rewards_per_func: Any, weights: Any, num_generations: int) -> list[float]:
    """Per group of `num_generations` consecutive rows, the mean weighted reward of its
    scorable rows (NaN where none is)."""
    import torch

    grouped = _grouped_rewards(rewards_per_func, weights, num_generations)
    return torch.nanmean(grouped, dim=1).tolist()


def _grouped_rewards(rewards_per_func: Any, weights: Any, num_generations: int) -> Any:
    """[groups, num_generations] weighted rewards, NaN where a row is unscorable."""
    import torch

    unscorable = torch.isnan(rewards_per_func).all(dim=1)
    rewards = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    return rewards.masked_fill(unscorable, float("nan")).view(-1, num_generations)


def screened_flat_ids(dataset: Any) -> dict[Any, float]:
    """The problem ids of the rows of `dataset` (a datasets.Dataset, or None) whose
    `screened_flat` column is true, each with the reward the screen saw (`screened_mean`, 0
    without that column): the frozen answerer's screen saw every sample earn the same reward
    (sparring.phases.zone.screened_flat); empty without the column."""
    columns = getattr(dataset, "column_names", ())
    if dataset is None or "screened_flat" not in columns:
        return {}
    ids, flags = dataset["problem_id"], dataset["screened_flat"]
    means = dataset["screened_mean"] if "screened_mean" in columns else [0.0] * len(ids)
    return {pid: m for pid, flat, m in zip(ids, flags, means, strict=True) if flat}


def swap_flat_problems(
    rows: list[dict[str, Any]],
    group: int,
    flat: set[Any],
    pool: Any,
    cursor: int,
    stale: Sequence[dict[str, Any]] = (),
    revisits: Sequence[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], int, int, int]:
    """`rows` (GRPO groups of `group` copies) with each group of a problem in `flat` (its last
    group this phase had no reward spread, or nearly all passed) swapped for a pool row whose
    problem is neither flat nor already in the batch, taken from `pool` from `cursor` on, round
    robin. When the pool has no such row, the group goes to the first of `stale` (rows of flat
    problems that were failing, the longest ago first: the model has trained since) not in the
    batch, else it stays. Returns (rows, next cursor, groups swapped, of them from `stale`).
    Pure.

    With `revisits` (rows of the problems sampled this phase and not flat, the lowest last
    reward first: `grpo.revisit_order: lowest_reward`), the pool gives only problems not among
    them, a group of one of them is re-pointed too, and a group the pool cannot place goes to
    the first revisit not in the batch (or stays, if that is its own) before `stale`.

    >>> pool = [{"problem_id": p} for p in "abcd"]
    >>> rows = [{"problem_id": "a"}] * 2 + [{"problem_id": "b"}] * 2
    >>> out, cursor, swapped, retried = swap_flat_problems(rows, 2, {"a"}, pool, 0)
    >>> [r["problem_id"] for r in out], swapped, retried
    (['c', 'c', 'b', 'b'], 1, 0)
    >>> stale = [{"problem_id": "d"}]
    >>> out, _, swapped, retried = swap_flat_problems(rows, 2, {"a", "c", "d"}, pool[:3], 0, stale)
    >>> [r["problem_id"] for r in out], swapped, retried
    (['d', 'd', 'b', 'b'], 1, 1)
    >>> seen = [{"problem_id": "b"}, {"problem_id": "c"}]  # b earned less than c
    >>> out, *_ = swap_flat_problems(rows, 2, {"a"}, pool, 0, (), seen)
    >>> [r["problem_id"] for r in out]
    ['d', 'd', 'b', 'b']
    >>> out, *_ = swap_flat_problems(rows, 2, {"a", "d"}, pool, 0, (), seen)
    >>> [r["problem_id"] for r in out]
    ['c', 'c', 'b', 'b']
    """
    seen = {r["problem_id"] for r in revisits or ()}
    if not (flat or seen) or not rows or len(rows) % group:
        return rows, cursor, 0, 0
    in_batch = {rows[i]["problem_id"] for i in range(0, len(rows), group)}
    taken = flat | seen  # the pool gives only problems in neither
    out: list[dict[str, Any]] = []
    swapped = retried = 0
    n = len(pool)
    for start in range(0, len(rows), group):
        chunk = rows[start : start + group]
        pid = chunk[0].get("problem_id")
        if pid in taken:
            found = None
            for _ in range(n):
                row = pool[cursor % n]
                cursor += 1
                other = row.get("problem_id")
                if other is not None and other not in taken and other not in in_batch:
                    found = row
                    break
            if found is None:
                found = _first_free(revisits or (), pid, in_batch)
            if found is None:
                found = _first_free(stale, pid, in_batch)
                retried += found is not None and found["problem_id"] != pid
            if found is not None and found["problem_id"] != pid:
                in_batch.add(found["problem_id"])
                chunk = [dict(found) for _ in range(group)]
                swapped += 1
        out.extend(chunk)
    return out, cursor, swapped, retried


def _first_free(rows: Sequence[dict[str, Any]], pid: Any, in_batch: set[Any]) -> Any:
    """The first of `rows` whose problem is `pid` itself or not in the batch, else None."""
    free = (r for r in rows if r["problem_id"] == pid or r["problem_id"] not in in_batch)
    return next(free, None)


def rows_to_keep(keep: Any, most_kept: int, slices: int) -> tuple[Any, Any]:
    """(useful rows, filler rows) of one process's batch, `keep` marking its useful rows and
    `most_kept` the most any process keeps: every process keeps as many rows, that most in
    whole `slices` (TRL splits the batch into steps_per_generation equal ones), its own flat
    rows as filler. Equal counts matter: TRL gathers per-row metrics without padding, so
    processes keeping different counts sent mismatched collectives and aborted."""
    import torch

    rows = torch.nonzero(keep).flatten()
    target = max(slices, -(-most_kept // slices) * slices)
    return rows, torch.nonzero(~keep).flatten()[: target - len(rows)]


def _select_rows(out: dict[str, Any], index: Any, n: int) -> dict[str, Any]:
    """`out` with every per-row entry (a tensor or list of length `n`) reduced to `index`."""
    picked: dict[str, Any] = {}
    idx = index.tolist()
    for key, value in out.items():
        if hasattr(value, "index_select") and value.dim() > 0 and value.size(0) == n:
            picked[key] = value.index_select(0, index.to(value.device))
        elif isinstance(value, list) and len(value) == n:
            picked[key] = [value[i] for i in idx]
        else:
            picked[key] = value
    return picked


def _trainer_class() -> type:
    import torch
    from trl import GRPOTrainer

    from sparring.backends.torch.generation import (
        FenceStop,
        _as_stopping_criteria,
        _refill_supported,
        decode,
        decoder_for,
    )
    from sparring.backends.torch.models import lora_merged

    class SparringGRPOTrainer(GRPOTrainer):
        """GRPOTrainer + stop at the closing code fence + DAPO-style dropping of flat groups
        (the module docstring says what each override does and why)."""

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
            self.refill_flat_batches = refill_flat_batches
            self.skip_flat_problems = skip_flat_problems
            self.skip_mastered_at = skip_mastered_at
            self.revisit_order = revisit_order
            # per problem sampled this phase: (its last group's mean reward, the batch that
            # scored it), the order of `grpo.revisit_order: lowest_reward`
            self._last_reward: dict[Any, tuple[float, int]] = {}
            self.groups_revisited = 0  # groups of a problem already sampled in this phase
            self.revisits_flat = 0  # of them, flat
            self.groups_mastered = 0  # useful groups whose mean reached skip_mastered_at
            self.groups_retried = 0  # swapped for a problem last seen failing, when none was new
            self.groups_flat_at_zero = 0  # flat groups in which no completion earned anything
            # last group this phase (or, before it, the frozen answerer's screen) had no spread
            screened = screened_flat_ids(kw.get("train_dataset")) if skip_flat_problems else {}
            self._flat_problems: set[Any] = set(screened)
            # the skipped problems that were failing, with the generation batch that last saw
            # them so (-1: the screen): retried, the longest ago first, once no other is left
            self._failing_since: dict[Any, int] = {
                pid: -1 for pid, mean in screened.items() if mean < skip_mastered_at
            }
            self._batches_scored = 0
            self._row_of: dict[Any, int] | None = None
            self._skip_cursor = 0
            self.groups_swapped = 0
            self.batches_refilled = 0
            self._refill_cursor = 0
            self.groups_total = 0
            self.groups_useful = 0
            self.batches_skipped = 0
            self.completions_total = 0
            self.completions_trained = 0  # in groups with an advantage, in steps that trained
            self.fence_stops = 0
            self._fence_stopped: list[bool] | None = None
            self._rewards_per_func: Any = None
            super().__init__(*args, **kw)

        # -- stop at the closing fence -----------------------------------------------------
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

        def _generate_fenced(
            self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images
        ):
            self._fence_stopped = None
            args = (prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
            if not self.stop_at_fence or self.use_vllm or self.use_transformers_continuous_batching:
                return super()._generate_single_turn(*args)
            stop = FenceStop(self._tokenizer, eos_token_ids=self.eos_token_ids)
            model = self.accelerator.unwrap_model(self.model_wrapped)  # what TRL generates with
            if self.sampler == "refill" and not images and _refill_supported(model):
                return self._generate_refilled(model, prompt_ids, stop)
            with _generate_with(model, stopping_criteria=_as_stopping_criteria(stop)):
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
            stop.start(len(prompt_ids))
            was_training = model.training
            model.eval()
            prefetcher, finished = self._prefetcher(len(prompt_ids))

            def on_done(i: int, ids: list[int]) -> None:
                finished[i] = list(ids)
                prefetcher.submit(i)

            # the slot decoder's CUDA graphs hold the unmerged kernels; shards cannot be merged
            sharded = self.is_fsdp_enabled or self.is_deepspeed_enabled
            mergeable = self.merge_lora_sampling and not sharded and decoder_for(model) == "refill"
            merge = lora_merged(model) if mergeable else contextlib.nullcontext(False)
            try:
                with merge, torch.inference_mode():
                    rows = decode(
                        model,
                        [list(p) for p in prompt_ids],
                        max_new_tokens=self.max_completion_length,
                        batch_size=self.rollout_batch_size,
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
            (sparring.scoring_overlap), and the dict it reads their ids from; (None, {}) when
            the switch is off or the reward or the batch does not allow it."""
            from sparring.scoring_overlap import Prefetcher

            inputs = self._batch_inputs
            reward = self.reward_funcs[0] if len(self.reward_funcs) == 1 else None
            if (
                not self.overlap_scoring
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

        # -- dynamic sampling --------------------------------------------------------------
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
            self.groups_flat_at_zero += sum(
                1 for spread, mean in zip(useful.tolist(), means, strict=True)
                if not spread and mean == 0.0
            )  # fmt: skip
            if self.skip_flat_problems and self.accelerator.num_processes == 1:
                for i, (spread, mean) in enumerate(zip(useful.tolist(), means, strict=True)):
                    pid = inputs[i * g].get("problem_id") if i * g < len(inputs) else None
                    if pid is None:
                        continue
                    mastered = spread and mean >= self.skip_mastered_at
                    self.groups_mastered += mastered
                    if pid in self._last_reward:
                        self.groups_revisited += 1
                        self.revisits_flat += not spread
                    self._last_reward[pid] = (mean, self._batches_scored)
                    if spread and not mastered:
                        self._flat_problems.discard(pid)
                    else:
                        self._flat_problems.add(pid)
                    if not spread and mean < self.skip_mastered_at:
                        self._failing_since[pid] = self._batches_scored
                    else:
                        self._failing_since.pop(pid, None)
            self._batches_scored += 1
            return out, useful, stopped

        def _unflat(self, inputs):
            """`inputs` with the groups of problems whose last group this phase was flat
            swapped for problems not seen flat (`swap_flat_problems`; one process only: the
            processes would have to agree)."""
            if not self.skip_flat_problems or self.accelerator.num_processes != 1:
                return inputs
            rows, self._skip_cursor, swapped, retried = swap_flat_problems(
                inputs, self.num_generations, self._flat_problems, self.train_dataset,
                self._skip_cursor, self._stale_rows(), self._revisit_rows(),
            )  # fmt: skip
            self.groups_swapped += swapped
            self.groups_retried += retried
            return rows

        def _stale_rows(self):
            """Rows of the problems last seen failing, the longest ago first."""
            order = sorted(self._failing_since, key=self._failing_since.__getitem__)
            return self._rows_of(order)

        def _revisit_rows(self):
            """Under `revisit_order: lowest_reward`, rows of the problems sampled this phase
            and not marked flat, the lowest last reward first (ties: the longest ago); else
            None (dataset order)."""
            if self.revisit_order != "lowest_reward":
                return None
            seen = [pid for pid in self._last_reward if pid not in self._flat_problems]
            return self._rows_of(sorted(seen, key=self._last_reward.__getitem__))

        def _rows_of(self, pids):
            if self._row_of is None:
                self._row_of = {pid: i for i, pid in enumerate(self.train_dataset["problem_id"])}
            return [self.train_dataset[self._row_of[pid]] for pid in pids if pid in self._row_of]

        def _coached(self, inputs):
            """`inputs` with the groups of a family the coach has moved since the phase drew
            its problems swapped for rows at the family's level (the reward's `reselect`; one
            process only: a group may span processes)."""
            reward = self.reward_funcs[0] if len(self.reward_funcs) == 1 else None
            if not hasattr(reward, "reselect") or self.accelerator.num_processes != 1:
                return inputs
            return reward.reselect(inputs, self.num_generations, self.prompt_fits)

        def _refill_inputs(self, n_rows, tried):
            """A fresh generation batch of `n_rows` rows (each prompt `num_generations` times)
            from problems not tried in this step, or None when there are not enough (or when
            several processes train: they would have to agree on a refill)."""
            g = self.num_generations
            if self.accelerator.num_processes != 1 or n_rows % g:
                return None
            data = self.train_dataset
            picked = []
            for _ in range(len(data)):
                row = data[self._refill_cursor % len(data)]
                self._refill_cursor += 1
                pid = row.get("problem_id")
                if pid is None or pid not in tried:
                    tried.add(pid)
                    picked.append(row)
                    if len(picked) == n_rows // g:
                        return [dict(r) for r in picked for _ in range(g)]
            return None

        def _loss_tokens(self, out):
            mask = out["completion_mask"]
            if out.get("tool_mask") is not None:
                mask = mask * out["tool_mask"]
            return self.accelerator.gather(mask.sum()).sum()

        def _keep_rows(self, out, keep):
            """`out` without the rows of flat groups, or flagged `sparring_skip` when no useful
            group or no loss token is left (collectives run alike on every process)."""
            n = keep.numel()
            kept = self.accelerator.gather(keep.sum().long().reshape(1))
            if not bool(kept.sum() > 0):
                out["sparring_skip"] = torch.tensor(True)
                return out
            rows, filler = rows_to_keep(keep, int(kept.max()), self.args.steps_per_generation)
            useful_tokens = self._loss_tokens(_select_rows(out, rows, n))
            if len(rows) + len(filler) < n:
                index = torch.cat([rows, filler]).sort().values
                out = _select_rows(out, index, n)
                out["advantages"][torch.isin(index, filler)] = 0.0
            out["num_items_in_batch"] = useful_tokens
            if not bool(useful_tokens > 0):  # e.g. every useful completion was truncated
                out["sparring_skip"] = torch.tensor(True)
            return out

        # -- one prompt forward per group ---------------------------------------------------
        def _get_per_token_logps_and_entropies(
            self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
            compute_entropy=False, compute_aux_loss=False, **extra,
        ):  # fmt: skip
            """TRL's per-token log-probs of the completions, with each distinct prompt run once
            (its KV cache shared by the group's rows) instead of once per row: a GRPO group's
            rows repeat one prompt, and the prompt is most of each row's tokens. Same values
            as TRL's (tests/integration/test_backends_torch_grpo.py); TRL's own path for
            multimodal inputs, MoE aux losses, sharded models, or when no prompt repeats."""
            plain = not compute_aux_loss and all(v is None for v in extra.values())
            prompt_len = input_ids.size(1) - logits_to_keep
            if not (self.share_prompt_forward and plain and prompt_len > 1) or (
                self.is_fsdp_enabled or self.is_deepspeed_enabled
            ):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size,
                    compute_entropy, compute_aux_loss, **extra,
                )  # fmt: skip
            prompts = torch.cat([input_ids[:, :prompt_len], attention_mask[:, :prompt_len]], 1)
            unique, slot = torch.unique(prompts, dim=0, return_inverse=True)
            if unique.size(0) == input_ids.size(0):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size,
                    compute_entropy, compute_aux_loss, **extra,
                )  # fmt: skip
            return _shared_prompt_logps(
                model, self.accelerator, input_ids, attention_mask, logits_to_keep, unique,
                slot, prompt_len, compute_entropy,
            )  # fmt: skip

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if "sparring_skip" in inputs:  # no signal: no forward/backward, grads stay None
                return torch.zeros((), device=self.accelerator.device, requires_grad=True)
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    return SparringGRPOTrainer


# Rows per completion pass of the shared-prompt loss: few enough that each chunk's longest
# completion is close to its others (less padding), enough to keep the matmuls wide.
SHARED_CHUNK_ROWS = 8


def _shared_prompt_logps(
    model: Any,
    accelerator: Any,
    input_ids: Any,
    attention_mask: Any,
    logits_to_keep: int,
    unique: Any,
    slot: Any,
    prompt_len: int,
    compute_entropy: bool,
    chunk_rows: int | None = None,
) -> tuple[Any, Any, None]:
    """Per-token log-probs (and entropies) of the last `logits_to_keep` tokens of each row, the
    prompt part (all but its last token) run once per distinct prompt (`unique`, rows mapped to
    it by `slot`) with gradients; then rows, sorted by completion length and taken `chunk_rows`
    at a time, each run its last prompt token and its completion, cut to the chunk's longest
    (one clipped completion would otherwise pad every row to the cap), on a copy of their
    prompts' KV cache, through TRL's fused LM head as TRL does. Positions past a row's end
    get 0 (TRL masks them)."""
    import torch
    from transformers import DynamicCache

    unwrapped = accelerator.unwrap_model(model)
    config = unwrapped.config
    cache_kw = cache_kwarg(unwrapped)
    head = prompt_len - 1
    shared = DynamicCache(config=config)
    with accelerator.autocast():
        model(
            input_ids=unique[:, :head],
            attention_mask=unique[:, prompt_len : prompt_len + head],
            **{cache_kw: shared},
            use_cache=True,
            logits_to_keep=1,
        )
    lengths = attention_mask[:, prompt_len:].sum(dim=1)
    logps = input_ids.new_zeros((input_ids.size(0), logits_to_keep), dtype=torch.float32)
    entropies = torch.zeros_like(logps) if compute_entropy else None
    pieces, entropy_pieces, rows_done = [], [], []
    for rows in torch.argsort(lengths).split(chunk_rows or SHARED_CHUNK_ROWS):
        width = max(1, int(lengths[rows].max()))
        cache = DynamicCache(config=config)
        for i, layer in enumerate(shared.layers):  # index_select keeps the graph to the prompt
            cache.update(layer.keys.index_select(0, slot[rows]),
                         layer.values.index_select(0, slot[rows]), i)  # fmt: skip
        tail = input_ids[rows, head : prompt_len + width]
        labels = tail.masked_fill(attention_mask[rows, head : prompt_len + width] == 0, -100)
        labels[:, 0] = -100  # the last prompt token is context, not scored
        with accelerator.autocast():
            out = model(
                input_ids=tail,
                attention_mask=attention_mask[rows, : prompt_len + width],
                **{cache_kw: cache},
                use_cache=True,
                labels=labels,
                fused_lm_head=True,
            )
        pad = (0, logits_to_keep - width)
        pieces.append(torch.nn.functional.pad(out.log_probs[:, -width:].float(), pad))
        if compute_entropy:
            entropy_pieces.append(torch.nn.functional.pad(out.entropy[:, -width:].float(), pad))
        rows_done.append(rows)
    order = torch.cat(rows_done)
    logps = logps.index_copy(0, order, torch.cat(pieces))
    if compute_entropy:
        entropies = entropies.index_copy(0, order, torch.cat(entropy_pieces))
    return logps, entropies, None


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
