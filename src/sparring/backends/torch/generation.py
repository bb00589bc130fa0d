"""Batched sampling from a (frozen) model: snapshot solutions, evaluation and inference.

Covers: `sample` (`generate`: its texts only): the tokenizer's chat template per conversation,
left-padded batches, `num_samples` completions per prompt (greedy at temperature 0) with a fixed
seed, the decoded completions with the tokens and seconds taken. Runs under inference mode with
the model in eval mode (the caller's training state restored): a frozen snapshot never changes.

Stopping at the closing code fence (`stop_at_fence=True`, the default): a sample ends at EOS or
once it has closed its first ```python (or ```py, or bare ```) code block; `FenceStop` decides it
per row (GRPO training installs the same object, sparring.backends.torch.grpo_decoding); the
text rule and the prompt rendering are backend-neutral (sparring.backends.text). In HF `generate`
a stopped row stays in the batch until every row has stopped; `Sampled` counts the kept tokens.

Which decoder runs (`choose_decoder`, `decoder_for`, `decode`): on CUDA, for a llama-family
model, sparring.backends.torch.slot_decoder (static KV cache, CUDA graph, stop detection on the
device); elsewhere the refill decoder here (`_generate_refill`: a finished row's slot goes to the
next prompt, in blocks from WIDE rows on: `refill_block`; one host step per token, the fastest
path measured on CPU); HF `generate` for models neither supports. GRPO training calls `decode`.

Does not cover: TRL's own generation paths (vLLM, continuous batching) or vLLM serving.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sparring.backends.base import Messages, Sampled
from sparring.backends.text import FENCE_LANGUAGES, fence_end, render_prompt, trim_after_fence


class FenceStop:
    """transformers `StoppingCriteria`: per row, True once the generated text (after
    `prompt_length` tokens; inferred at the first call when None) has closed its first code block
    in `languages`. Rows that already produced an `eos_token_ids` token are left alone (generate
    pads them). `stopped_at[i]` is the number of generated tokens of row i up to and including
    the one that closed the fence (None when it did not stop here).

    Text is decoded one new token at a time (cached per token id) and the fence rule re-checked
    only when the new piece holds a backtick, so the cost per step is O(batch).
    One object serves one `generate` call (it keeps per-row state).
    """

    def __init__(
        self,
        tokenizer: Any,
        prompt_length: int | None = None,
        *,
        eos_token_ids: Iterable[int] = (),
        languages: Sequence[str] = FENCE_LANGUAGES,
    ) -> None:
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length
        self.eos_token_ids = {int(t) for t in eos_token_ids if t is not None}
        self.languages = tuple(languages)
        self.texts: list[str] = []
        self.stopped_at: list[int | None] = []
        self.ended: list[bool] = []
        self._pieces: dict[int, str] = {}

    def _piece(self, token: int) -> str:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self.tokenizer.decode([token], skip_special_tokens=True)
            self._pieces[token] = piece
        return piece

    def start(self, rows: int) -> None:
        """Fresh per-row state for `rows` rows (done at the first call when not done before)."""
        self.texts = [""] * rows
        self.stopped_at = [None] * rows
        self.ended = [False] * rows

    def add(self, row: int, token: int, generated: int) -> bool:
        """Feed `row` its `generated`-th new token; True once the row has stopped at a fence."""
        if self.stopped_at[row] is not None:
            return True
        if self.ended[row]:
            return False
        if token in self.eos_token_ids:
            self.ended[row] = True
            return False
        piece = self._piece(token)
        self.texts[row] += piece
        if "`" in piece and fence_end(self.texts[row], self.languages) is not None:
            self.stopped_at[row] = generated
            return True
        return False

    def __call__(self, input_ids: Any, scores: Any = None, **kwargs: Any) -> Any:
        import torch

        rows, length = input_ids.shape
        if self.prompt_length is None:
            self.prompt_length = length - 1
        if not self.texts:
            self.start(rows)
        generated = length - self.prompt_length
        done = [self.add(i, t, generated) for i, t in enumerate(input_ids[:, -1].tolist())]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def cache_kwarg(model: Any) -> str:
    """The name under which the model's forward takes its KV cache. transformers renamed
    `past_key_values` to `cache` (5.24, the trainer's environment, has `cache`; 5.19, the
    serving environment's, has `past_key_values`), and a forward given the other name drops it
    into **kwargs without a word, leaving the cache empty."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # PEFT
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _as_stopping_criteria(criterion: FenceStop) -> Any:
    """A `StoppingCriteriaList` holding `criterion` (registered as a StoppingCriteria)."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    StoppingCriteria.register(FenceStop)  # an ABC: FenceStop implements its __call__ contract
    return StoppingCriteriaList([criterion])


def pick_next(logits: Any, greedy: bool, temperature: float, top_p: float) -> Any:
    """Next token per row: argmax, or a sample at `temperature` within nucleus `top_p` (the
    rule of transformers' TemperatureLogitsWarper + TopPLogitsWarper, top_k off). Every step is
    a tensor operation on the logits' device, with no host synchronisation, so both decoders
    use it, the slot decoder inside its CUDA graph too."""
    import torch

    if greedy:
        return logits.argmax(dim=-1)
    scores = logits / temperature
    if top_p < 1.0:
        sorted_scores, order = torch.sort(scores, descending=False)
        drop = sorted_scores.softmax(dim=-1).cumsum(dim=-1) <= (1 - top_p)
        drop[..., -1:] = False  # keep at least the most likely token
        scores = scores.masked_fill(drop.scatter(1, order, drop), -float("inf"))
    return draw(scores.softmax(dim=-1))


def draw(probs: Any) -> Any:
    """One token per row from `probs` [rows, vocab] by inverting its cumulative sum at a uniform
    draw: the first token whose cumulative probability exceeds it, so a token of probability 0
    is never drawn. torch.multinomial draws from the same distribution, but on a CPU it took 51
    ms for 32 rows of SmolLM2's 49,152 tokens, this 1 ms (2 cores, 2026-11-27), at every
    decode step."""
    import torch

    cumulative = probs.cumsum(dim=-1)
    # scaled by each row's total: a sum a rounding short of 1 cannot leave u past the end
    u = torch.rand((probs.shape[0], 1), device=probs.device) * cumulative[:, -1:]
    return torch.searchsorted(cumulative, u, right=True).squeeze(1).clamp_(max=probs.shape[-1] - 1)


def _refill_supported(model: Any) -> bool:
    """Whether `_generate_refill` can drive this model: a decoder-only model whose cache is made
    of plain `DynamicLayer`s (full attention; no sliding-window, linear or encoder caches)."""
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        config = model.config
        if getattr(config, "is_encoder_decoder", False):
            return False
        layers = DynamicCache(config=config).layers
    except Exception:  # anything unexpected: use HF generate
        return False
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


WIDE = 128  # rows in flight from which a batch compacts in blocks (refill_block)


def refill_block(rows: int) -> int:
    """Stopped rows a batch with `rows` in flight decodes on, unread, before dropping them: a drop
    copies the whole KV cache (at 256 rows, every step: slower than 64, docs/learning.md). Under
    WIDE, at once, as always: a training step's 64 rows sample what they did.

    >>> refill_block(64), refill_block(128), refill_block(256)
    (1, 32, 64)
    """
    return rows // 4 if rows >= WIDE else 1


def _generate_refill(
    model: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    batch_size: int,
    pick: Any,
    stop: FenceStop,
    pad_token_id: int,
    on_done: Callable[[int, list[int]], None] | None = None,
) -> list[list[int]]:
    """Generated token ids per prompt (EOS excluded; up to and including the token that closed
    the fence), decoding up to `batch_size` rows at once, a stopped row's slot refilled with the
    next prompt (a wide batch: once `refill_block` rows have stopped, decoding on unread till
    then). Rows live right-aligned in one left-padded KV cache and a [B, T] mask: admitted
    prompts are prefilled together and concatenated in, stopped rows removed with their cache
    rows, and columns no row attends to any more cut off the left."""
    import torch
    import torch.nn.functional as F
    from transformers import DynamicCache

    cache_kw = cache_kwarg(model)
    device = next(model.parameters()).device
    keep_one = {"logits_to_keep": 1} if _supports_logits_to_keep(model) else {}
    stop.start(len(prompts))
    results: list[list[int]] = [[] for _ in prompts]
    pending = list(range(len(prompts)))[::-1]  # popped from the end: input order
    rows: list[int] = []  # prompt index of each batch row
    dead: set[int] = set()  # rows that stopped, decoding on until the batch compacts
    cache: Any = None
    mask = positions = logits = None
    while pending or rows:
        free = batch_size - len(rows)
        if pending and free > 0:
            new = [pending.pop() for _ in range(min(free, len(pending)))]
            # a GRPO group repeats one prompt: prefill it once, each of its rows a copy
            distinct: dict[tuple[int, ...], int] = {}
            slot = [distinct.setdefault(tuple(prompts[i]), len(distinct)) for i in new]
            unique = list(distinct)
            width = max(len(p) for p in unique)
            ids = torch.full((len(unique), width), pad_token_id, dtype=torch.long)
            new_mask = torch.zeros((len(unique), width), dtype=torch.long)
            for r, p in enumerate(unique):
                ids[r, width - len(p) :] = torch.tensor(p)
                new_mask[r, width - len(p) :] = 1
            ids, new_mask = ids.to(device), new_mask.to(device)
            new_pos = (new_mask.cumsum(-1) - 1).clamp(min=0)
            new_cache = DynamicCache(config=model.config)
            out = model(
                input_ids=ids,
                attention_mask=new_mask,
                position_ids=new_pos,
                use_cache=True,
                **{cache_kw: new_cache},
                **keep_one,
            )
            new_logits = out.logits[:, -1].float()
            if len(unique) < len(new):
                expand = torch.tensor(slot, device=device)
                for layer in new_cache.layers:
                    layer.keys = layer.keys.index_select(0, expand)
                    layer.values = layer.values.index_select(0, expand)
                new_mask, new_pos = new_mask[expand], new_pos[expand]
                new_logits = new_logits[expand]
            if cache is None:
                cache, mask, positions, logits = new_cache, new_mask, new_pos[:, -1] + 1, new_logits
            else:
                old_t, new_t = mask.shape[1], width
                total = max(old_t, new_t)
                for old_l, new_l in zip(cache.layers, new_cache.layers, strict=True):
                    old_l.keys = torch.cat(
                        [
                            F.pad(old_l.keys, (0, 0, total - old_t, 0)),
                            F.pad(new_l.keys, (0, 0, total - new_t, 0)),
                        ]
                    )
                    old_l.values = torch.cat(
                        [
                            F.pad(old_l.values, (0, 0, total - old_t, 0)),
                            F.pad(new_l.values, (0, 0, total - new_t, 0)),
                        ]
                    )
                mask = torch.cat(
                    [F.pad(mask, (total - old_t, 0)), F.pad(new_mask, (total - new_t, 0))]
                )
                positions = torch.cat([positions, new_pos[:, -1] + 1])
                logits = torch.cat([logits, new_logits])
            rows += new
        tokens = pick(logits)
        for r, (i, token) in enumerate(zip(rows, tokens.tolist(), strict=True)):
            if r in dead:
                continue
            out_ids = results[i]
            finished = token in stop.eos_token_ids
            if finished:
                stop.ended[i] = True
            else:
                out_ids.append(token)
                finished = stop.add(i, token, len(out_ids)) or len(out_ids) >= max_new_tokens
            if finished:
                dead.add(r)
                if on_done is not None:
                    on_done(i, out_ids)
        if dead and (len(dead) >= refill_block(len(rows)) or len(dead) == len(rows)):
            alive = [r for r in range(len(rows)) if r not in dead]
            dead = set()
            if not alive:
                rows, cache = [], None
                continue
            index = torch.tensor(alive, device=device)
            cache.batch_select_indices(index)
            mask, positions, tokens = mask[index], positions[index], tokens[index]
            rows = [rows[r] for r in alive]
            first = int(mask.any(dim=0).long().argmax())  # columns left of it are all padding
            if first > 0:
                for layer in cache.layers:
                    layer.keys = layer.keys[:, :, first:]
                    layer.values = layer.values[:, :, first:]
                mask = mask[:, first:]
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
        out = model(
            input_ids=tokens[:, None],
            attention_mask=mask,
            position_ids=positions[:, None],
            use_cache=True,
            **{cache_kw: cache},
        )
        positions = positions + 1
        logits = out.logits[:, -1].float()
    return results


def choose_decoder(device_type: str, slots_ok: bool, refill_ok: bool) -> str:
    """The decoder for a model on `device_type`: "slots" (static cache, CUDA graph) on a CUDA
    device for the architectures it knows, else "refill" where the dynamic cache works, else
    "generate" (HF `generate` per batch).

    >>> choose_decoder("cuda", True, True), choose_decoder("cpu", True, True)
    ('slots', 'refill')
    >>> choose_decoder("cuda", False, True), choose_decoder("mps", False, False)
    ('refill', 'generate')
    """
    if device_type == "cuda" and slots_ok:
        return "slots"
    return "refill" if refill_ok else "generate"


def decoder_for(model: Any) -> str:
    """`choose_decoder` for `model` where it lies."""
    from sparring.backends.torch.slot_decoder import slots_supported

    device = next(model.parameters()).device.type
    return choose_decoder(device, slots_supported(model), _refill_supported(model))


def decode(
    model: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    batch_size: int,
    temperature: float,
    top_p: float,
    stop: FenceStop,
    pad_token_id: int,
    on_done: Callable[[int, list[int]], None] | None = None,
) -> list[list[int]]:
    """Generated ids per prompt (EOS excluded; up to the closing fence) from the decoder that
    `decoder_for` picks, which must not be "generate"; greedy when temperature <= 0.
    `on_done(i, ids)` is called once per prompt, as soon as prompt i is finished, with its final
    ids (GRPO scores finished rows while others still decode: backends.scoring_overlap)."""
    greedy = temperature <= 0.0
    kwargs = dict(
        max_new_tokens=max_new_tokens, batch_size=batch_size, stop=stop,
        pad_token_id=pad_token_id, on_done=on_done,
        pick=lambda x: pick_next(x, greedy, temperature, top_p),
    )  # fmt: skip
    if decoder_for(model) == "slots":
        from sparring.backends.torch.slot_decoder import generate_slots

        return generate_slots(model, prompts, pick_key=(greedy, temperature, top_p), **kwargs)
    return _generate_refill(model, prompts, **kwargs)


def _supports_logits_to_keep(model: Any) -> bool:
    check = getattr(model, "_supports_logits_to_keep", None)
    try:
        return bool(check()) if callable(check) else False
    except Exception:
        return False


def generate(
    model: Any, tokenizer: Any, messages_batch: list[Messages], **kwargs: Any
) -> list[list[str]]:
    """`sample`'s texts only: per conversation, `num_samples` completions."""
    return sample(model, tokenizer, messages_batch, **kwargs).texts


def sample(
    model: Any,
    tokenizer: Any,
    messages_batch: list[Messages],
    *,
    max_new_tokens: int = 128,
    temperature: float = 0.0,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int = 0,
    batch_size: int = 32,
    progress: bool = False,
    stop_at_fence: bool = True,
) -> Sampled:
    """Per conversation, `num_samples` completions (strings without the prompt), with the
    tokens kept, the seconds taken and the samples that ended at a closing fence.

    With `stop_at_fence` (default), a sample ends at EOS or once its first python code block is
    closed, its text cut just after that fence, and (for models `decoder_for` does not send to
    `generate`) `decode` runs `batch_size` rows at a time, a finished sample's slot going to the
    next sample at once; without it,
    the earlier behaviour: HF `generate` per batch, ending at EOS or `max_new_tokens`.
    """
    import torch

    if num_samples < 1:
        raise ValueError("num_samples must be >= 1")
    if max_new_tokens < 1:
        raise ValueError(
            f"max_new_tokens must be >= 1, got {max_new_tokens} (resolve an 'auto' budget first)"
        )
    texts = [render_prompt(tokenizer, m) for m in messages_batch]
    # each prompt repeated num_samples times, consecutive
    flat = [t for t in texts for _ in range(num_samples)]
    out: list[str] = []
    device = next(model.parameters()).device
    greedy = temperature <= 0.0
    old_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    was_training = model.training
    model.eval()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(flat), desc="sampling", unit="completion")
    gen = torch.Generator().manual_seed(seed)  # per-batch seeds: independent of batch order
    n_tokens = 0
    fence_stops = 0
    eos = tokenizer.eos_token_id
    start = time.perf_counter()
    try:
        if stop_at_fence and decoder_for(model) != "generate":
            stop = FenceStop(tokenizer, 0, eos_token_ids=[eos])
            ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
            prompts = [list(p) for p in ids for _ in range(num_samples)]  # as `flat`, once each
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            with torch.inference_mode():
                rows = decode(
                    model,
                    prompts,
                    max_new_tokens=max_new_tokens,
                    batch_size=batch_size,
                    temperature=temperature,
                    top_p=top_p,
                    stop=stop,
                    pad_token_id=tokenizer.pad_token_id,
                    on_done=(lambda *_: bar.update(1)) if bar is not None else None,
                )
            n_tokens = sum(len(r) for r in rows)
            fence_stops = sum(s is not None for s in stop.stopped_at)
            decoded = tokenizer.batch_decode(rows, skip_special_tokens=True)
            out = [trim_after_fence(t) for t in decoded]
        else:
            for i in range(0, len(flat), batch_size):
                chunk = flat[i : i + batch_size]
                enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
                enc = {k: v.to(device) for k, v in enc.items()}
                kwargs: dict[str, Any] = {
                    "max_new_tokens": max_new_tokens,
                    "pad_token_id": tokenizer.pad_token_id,
                    "do_sample": not greedy,
                }
                if not greedy:
                    kwargs.update(temperature=temperature, top_p=top_p, top_k=0)
                stop = None
                if stop_at_fence:
                    stop = FenceStop(tokenizer, enc["input_ids"].shape[1], eos_token_ids=[eos])
                    kwargs["stopping_criteria"] = _as_stopping_criteria(stop)
                torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
                with torch.inference_mode():
                    ids = model.generate(**enc, **kwargs)
                new = ids[:, enc["input_ids"].shape[1] :]
                batch_rows: list[list[int]] = []
                for r, row in enumerate(new.tolist()):
                    kept = row
                    if stop is not None and r < len(stop.stopped_at) and stop.stopped_at[r]:
                        kept = kept[: stop.stopped_at[r]]  # pads after the closing fence dropped
                        fence_stops += 1
                    elif eos is not None and eos in kept:
                        kept = kept[: kept.index(eos)]
                    n_tokens += len(kept)
                    batch_rows.append(kept)
                decoded = tokenizer.batch_decode(batch_rows, skip_special_tokens=True)
                out.extend(trim_after_fence(t) if stop_at_fence else t for t in decoded)
                if bar is not None:
                    bar.update(len(chunk))
    finally:
        tokenizer.padding_side = old_side
        if was_training:
            model.train()
        if bar is not None:
            bar.close()
    texts = [out[i * num_samples : (i + 1) * num_samples] for i in range(len(messages_batch))]
    return Sampled(texts, n_tokens, time.perf_counter() - start, fence_stops)
