"""GRPO's loss batch: which rows of a scored generation batch reach the loss, and their log-probs.

Covers, for `sparring.backends.torch.grpo_trainer.SparringGRPOTrainer` (mixed in as `LossBatch`;
the switches below are fields of the trainer's `grpo` section):
- which groups carry an advantage (`useful_groups`: rewards not all equal) and their mean
  rewards (`group_means`), from TRL's per-function rewards (NaN = unscorable, ignored);
- dynamic sampling, DAPO-style "drop" (`drop_flat_groups`): groups whose rewards are all equal
  (zero advantage, no gradient) leave the loss batch; every per-row tensor is sliced alike
  (`_select_rows`) and `num_items_in_batch` recounted. When no useful group (or no unmasked
  loss token) remains, the batch is flagged `sparring_skip` and `compute_loss` skips the whole
  optimizer update (no forward/backward; all grads stay None so AdamW leaves every weight
  alone), rather than stepping on zero advantages, which costs a full backward and still moves
  the weights through Adam's momentum. With `steps_per_generation > 1` the kept rows are topped
  up with zero-advantage rows of dropped groups to a multiple of it (TRL splits the batch into
  that many equal slices), and over several processes to the most rows any of them keeps
  (`rows_to_keep`: TRL's collectives need equal counts);
- one prompt forward per group (`share_prompt_forward`): the completions' per-token log-probs
  with each distinct prompt run once and its KV cache shared by the group's rows
  (`_shared_prompt_logps`), the same values as TRL's per-row forward;
- the loss in parts (`loss_micro_batch`): the batch's rows, a prompt's rows together, cut into
  parts whose forward and backward run one after another (`micro_batches`), each weighted so
  that the parts sum to TRL's loss over the whole batch for its `loss_type`: a step's autograd
  graph then holds one part's activations, not every row's.

Does not cover: the policy-gradient loss itself (TRL's `compute_loss`: clipping, KL, the
`loss_type` aggregation), when a batch is dropped or counted (the step,
sparring.backends.torch.grpo_trainer), which problems are sampled
(sparring.backends.torch.grpo_sampling), multimodal batches (no dropping when images are present:
the step's check), DAPO's "resample until the batch is full" variant (dropping shrinks the batch
instead).
"""

from __future__ import annotations

import math
from typing import Any

from sparring.backends.torch.generation import cache_kwarg


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


class LossBatch:
    """Mixin of `SparringGRPOTrainer` (sparring.backends.torch.grpo_trainer): the rows a scored
    batch keeps for the loss, the skipped update, and the shared-prompt forward (the module
    docstring says what and why). Uses the trainer's `accelerator`, `args` and
    `grpo.share_prompt_forward`."""

    def _loss_tokens(self, out):
        mask = out["completion_mask"]
        if out.get("tool_mask") is not None:
            mask = mask * out["tool_mask"]
        return self.accelerator.gather(mask.sum()).sum()

    def _keep_rows(self, out, keep):
        """`out` without the rows of flat groups, or flagged `sparring_skip` when no useful
        group or no loss token is left (collectives run alike on every process)."""
        import torch

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
        import torch

        plain = not compute_aux_loss and all(v is None for v in extra.values())
        prompt_len = input_ids.size(1) - logits_to_keep
        if not (self.grpo.share_prompt_forward and plain and prompt_len > 1) or (
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
        import torch

        if "sparring_skip" in inputs:  # no signal: no forward/backward, grads stay None
            return torch.zeros((), device=self.accelerator.device, requires_grad=True)
        rows = self.grpo.loss_micro_batch
        n = inputs["completion_ids"].size(0)
        if not rows or n <= rows or not model.training or not self._micro_batchable(inputs):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        parts = micro_batches(inputs, rows, self.loss_type)
        done = None
        for i, (part, weight) in enumerate(parts):
            loss = super().compute_loss(model, part, return_outputs, num_items_in_batch) * weight
            if i == len(parts) - 1:  # the trainer's own backward takes the last part
                return loss if done is None else loss + done
            with self.accelerator.no_sync(model):  # gradients sync once, with the last part
                self.accelerator.backward(loss)
            done = loss.detach() if done is None else done + loss.detach()
        raise AssertionError("unreachable: micro_batches returns at least one part")

    def _micro_batchable(self, inputs) -> bool:
        """Whether the loss splits into row parts that sum to the whole: not with images, an
        entropy bonus or top-entropy mask (per-part means and quantiles), or a MoE aux loss."""
        return (
            "pixel_values" not in inputs
            and not getattr(self, "_entropy_bonus_enabled", False)
            and getattr(self, "top_entropy_quantile", 1.0) >= 1.0
            and not getattr(self, "aux_loss_enabled", False)
        )


# How each TRL loss_type aggregates rows, so that parts of a batch weigh as in the whole: a
# token sum over the step's `num_items_in_batch` (each part's share is already its own), a mean
# over rows (a part weighs its rows), or a token mean over the batch's own tokens (a part weighs
# its tokens)
_STEP_NORMALISED = ("dapo", "cispo", "vespo")
_ROW_MEANS = ("grpo", "sapo", "dr_grpo", "luspo")


def micro_batches(inputs: dict[str, Any], rows: int, loss_type: str) -> list[tuple[Any, float]]:
    """`inputs` (one loss batch) cut into parts of at most `rows` rows, each with the weight
    that makes the parts' weighted losses sum to the whole batch's loss under `loss_type`.
    Rows sharing a prompt go to the same part where they fit (the shared-prompt forward then
    runs a prompt in as few parts as possible); row order does not change the loss."""
    import torch

    n = inputs["completion_ids"].size(0)
    prompts = torch.cat([inputs["prompt_ids"], inputs["prompt_mask"]], dim=1)
    _, slot = torch.unique(prompts, dim=0, return_inverse=True)
    order = torch.argsort(slot, stable=True)
    mask = inputs["completion_mask"]
    if inputs.get("tool_mask") is not None:
        mask = mask * inputs["tool_mask"]
    tokens = float(mask.sum().clamp(min=1))
    parts = []
    for index in order.split(rows):
        part = _select_rows(inputs, index, n)
        if loss_type in _STEP_NORMALISED:
            weight = 1.0
        elif loss_type in _ROW_MEANS:
            weight = len(index) / n
        elif loss_type == "bnpo":
            weight = float(mask.index_select(0, index.to(mask.device)).sum()) / tokens
        else:
            raise ValueError(f"grpo.loss_micro_batch: no part weights for loss_type {loss_type!r}")
        parts.append((part, weight))
    return parts


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
