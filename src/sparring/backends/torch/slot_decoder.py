"""The GPU decoder: fixed slots in a static KV cache, one CUDA graph per decode step.

Covers: `slots_supported` (which models it drives: Llama-architecture decoders, LoRA-wrapped
by PEFT or not) and `generate_slots`, the same contract as
`sparring.backends.torch.generation._generate_refill` (generated ids per prompt, EOS excluded,
up to and including the token that closed the fence; a finished row's slot goes to the next
prompt) built for a device where a Python loop and kernel launches, not arithmetic, are the cost:

- every buffer has a fixed shape: per layer one [slots, kv_heads, max_len, head_dim] key and
  value cache, one token and one position per slot; a slot's sequence starts at cache column 0,
  so admitting a prompt is writing its prefill into its slot's row, with nothing to concatenate,
  pad or cut;
- the decode step (embed, the layers' own projections, norms as F.rms_norm, rotary positions
  per slot, attention over the slot's first position+1 columns, the head, the pick of the next
  token on the device) is captured into a CUDA graph and replayed, one launch per step; the
  decode attention is whichever of DECODE_ATTENTION ran fastest on the card when the graph was
  recorded, timed with the slots at a typical position (`_Slots.capture`; "triton" is
  decode_attention's one kernel for rotary positions, cache write and attention, 2.1 ms a step
  against the matmuls' 3.7 on an H200), and the state with its graph is kept on the model for
  the next call of the same shape;
- the host looks at the tokens every `check_every` steps (one pinned copy) while the device
  decodes the next block: the fence, EOS and length rules run there
  (sparring.backends.torch.generation.FenceStop), finished slots are refilled, and the tokens
  a slot drew after it finished are dropped.

The layers are called through their own modules (q/k/v/o projections, MLP, rotary embedding),
so LoRA adapters apply as in the model's forward; only the attention, the norms' arithmetic and
the cache are this module's. The next token is drawn by the refill decoder's rule
(generation.pick_next, host-free): greedy runs agree with the refill decoder token for token
(tests/unit/test_slot_decoder.py compares them on CPU, where the graph is off).

Does not cover: other attention layouts (sliding windows, biases on the attention scores,
multimodal inputs) - `slots_supported` says no and the caller uses the refill decoder; the CPU,
where the refill decoder's dynamic cache is faster (no static attention width to pay for).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

ARCHITECTURES = ("llama",)  # config.model_type values whose layers `_Slots` knows
CHECK_EVERY = 8  # decode steps between two looks of the host at the tokens
WIDTH_STEP = 64  # cache widths round up to this, so batches of similar prompts share a graph
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> (key, _Slots)


DECODE_ATTENTION = ("matmul", "triton", "efficient", "sdpa")  # what `_Slots.capture` times


def fastest(timings: dict[str, float]) -> str:
    """The decode attention with the fewest milliseconds per step (the first listed on a tie).

    >>> fastest({"matmul": 4.4, "efficient": 2.9, "sdpa": 5.7})
    'efficient'
    """
    return min(timings, key=lambda name: timings[name])


def _sdpa_backend(attention: str) -> Any:
    """The context that holds SDPA to one backend ("efficient": the memory-efficient kernel)
    or leaves the choice to PyTorch ("sdpa")."""
    import contextlib

    from torch.nn.attention import SDPBackend, sdpa_kernel

    if attention == "efficient":
        return sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
    return contextlib.nullcontext()


def _base(model: Any) -> Any:
    return model.get_base_model() if hasattr(model, "get_base_model") else model  # PEFT


def slots_supported(model: Any) -> bool:
    """Whether `generate_slots` can drive `model`: a Llama-architecture causal LM with full
    attention (no sliding window) whose layers have the modules `_Slots` calls."""
    try:
        base = _base(model)
        config = base.config
        if config.model_type not in ARCHITECTURES or getattr(config, "sliding_window", None):
            return False
        layer = base.model.layers[0]
        needed = (layer.self_attn.q_proj, layer.mlp, layer.input_layernorm, base.lm_head)
        return all(m is not None for m in needed) and hasattr(base.model, "rotary_emb")
    except Exception:  # anything unexpected: the caller uses the refill decoder
        return False


class _Slots:
    """The static state of one `generate_slots` call and its two forwards (prefill into
    slots, one decode step of every slot)."""

    def __init__(self, model: Any, slots: int, max_len: int, pick: Callable[[Any], Any]) -> None:
        import torch

        base = _base(model)
        self.core, self.head, self.pick = base.model, base.lm_head, pick
        config = base.config
        self.layers = list(self.core.layers[: config.num_hidden_layers])
        attn = self.layers[0].self_attn
        self.head_dim = attn.head_dim
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.scaling = attn.scaling
        weight = self.core.embed_tokens.weight
        device, dtype = weight.device, weight.dtype
        shape = (slots, self.kv_heads, max_len, self.head_dim)
        self.keys = [torch.zeros(shape, device=device, dtype=dtype) for _ in self.layers]
        self.values = [torch.zeros(shape, device=device, dtype=dtype) for _ in self.layers]
        self.tokens = torch.zeros(slots, dtype=torch.long, device=device)
        self.positions = torch.zeros(slots, dtype=torch.long, device=device)
        self.rows = torch.arange(slots, device=device)
        self.columns = torch.arange(max_len, device=device)
        self.hidden_mask = torch.full((slots, 1, 1, max_len), -float("inf"), device=device)
        self.device = device
        self.graph: Any = None
        self.attention = "matmul"  # the decode attention; `capture` times each on the card
        self.step_ms: dict[str, float] = {}
        self.kernel_ms: dict[str, float] = {}  # the Triton attention's tiles, timed (capture)

    def _attend(self, i: int, h: Any, rope: tuple, write: Callable, mask: Any, decode: bool) -> Any:
        """Layer i's attention of `h`: a decode step (one new token per slot, written into the
        cache by `write` or by the Triton kernel) or a prefill (`write` copies its keys and
        values into the slots)."""
        import torch
        import torch.nn.functional as F

        attn = self.layers[i].self_attn
        n, t, _ = h.shape
        cos, sin = rope
        q, k, v = attn.q_proj(h), attn.k_proj(h), attn.v_proj(h)
        if decode and self.attention == "triton":  # rotary, cache write, attention: one kernel
            from sparring.backends.torch.decode_attention import decode_attention

            out = decode_attention(
                q.reshape(n, -1), k.reshape(n, -1), v.reshape(n, -1), cos.reshape(n, -1),
                sin.reshape(n, -1), self.keys[i], self.values[i], self.positions, self.scaling,
            )  # fmt: skip
            return attn.o_proj(out.view(n, 1, -1))
        q = q.view(n, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(n, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(n, t, self.kv_heads, self.head_dim).transpose(1, 2)
        half = self.head_dim // 2  # rotate_half(x) * sin == roll(x) * sin_signed (_forward)
        q = torch.addcmul(q * cos, q.roll(half, -1), sin)
        k = torch.addcmul(k * cos, k.roll(half, -1), sin)
        keys, values = write(k, v)
        if decode:  # a kv head's query heads stand in for query positions, no repeat
            grouped = q.reshape(n, self.kv_heads, self.heads // self.kv_heads, self.head_dim)
            if self.attention == "matmul":  # two small matmuls around a float32 softmax
                raw = torch.matmul(grouped, keys.transpose(-1, -2))
                scores = torch.add(mask, raw, alpha=self.scaling)  # float32, as the mask is
                out = torch.matmul(scores.softmax(dim=-1).to(values.dtype), values)
            else:
                with _sdpa_backend(self.attention):
                    out = F.scaled_dot_product_attention(
                        grouped, keys, values, attn_mask=mask, scale=self.scaling
                    )
            return attn.o_proj(out.reshape(n, 1, self.heads * self.head_dim))
        out = F.scaled_dot_product_attention(
            q, keys, values, attn_mask=mask, scale=self.scaling,
            enable_gqa=self.heads != self.kv_heads,
        )  # fmt: skip
        return attn.o_proj(out.transpose(1, 2).reshape(n, t, self.heads * self.head_dim))

    def _norm(self, norm: Any, x: Any) -> Any:
        """`norm(x)` for an RMSNorm as one fused kernel (F.rms_norm) instead of HF's eight."""
        import torch.nn.functional as F

        eps = getattr(norm, "variance_epsilon", None)
        if eps is None or getattr(norm, "weight", None) is None:
            return norm(x)
        return F.rms_norm(x, (x.shape[-1],), norm.weight, eps)

    def _forward(
        self, ids: Any, positions: Any, writer: Callable[[int], Callable], mask: Any, decode: bool
    ) -> Any:
        import torch

        x = self.core.embed_tokens(ids)
        cos, sin = self.core.rotary_emb(x, positions)
        half = self.head_dim // 2
        sin_signed = torch.cat((-sin[..., :half], sin[..., half:]), -1)
        rope = (cos.unsqueeze(1), sin_signed.unsqueeze(1))
        for i, layer in enumerate(self.layers):
            h = self._norm(layer.input_layernorm, x)
            x = x + self._attend(i, h, rope, writer(i), mask, decode)
            x = x + layer.mlp(self._norm(layer.post_attention_layernorm, x))
        return self._norm(self.core.norm, x)

    def step(self) -> None:
        """One decode step of every slot: its token's keys and values written at its position,
        the next token drawn into `tokens`, positions advanced (all on the device)."""
        pos = self.positions

        def writer(i: int) -> Callable:
            def write(k: Any, v: Any) -> tuple[Any, Any]:
                self.keys[i][self.rows, :, pos] = k[:, :, 0]
                self.values[i][self.rows, :, pos] = v[:, :, 0]
                return self.keys[i], self.values[i]

            return write

        mask = None  # the Triton kernel reads each slot's position itself
        if self.attention != "triton":
            visible = (self.columns[None, :] <= pos[:, None])[:, None, None, :]
            mask = self.hidden_mask.masked_fill(visible, 0.0)  # additive: 0 or -inf
            if self.attention != "matmul":  # SDPA takes the mask in the query's dtype
                mask = mask.to(self.keys[0].dtype)
        hidden = self._forward(self.tokens[:, None], pos[:, None], writer, mask, decode=True)
        self.tokens.copy_(self.pick(self.head(hidden[:, -1]).float()))
        self.positions.add_(1)

    def _record(self) -> Any:
        """`step` recorded into a CUDA graph (warmed up on a side stream first, as CUDA graphs
        require); positions reset after, the slots empty."""
        import torch

        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self.step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.step()
        self.positions.zero_()
        return graph

    def capture(self, position: int = 0, replays: int = 8) -> None:
        """Record one graph per decode attention (DECODE_ATTENTION), time `replays` replays of
        each on this card with every slot at `position` and keep the fastest: which kernels win
        depends on the card, the head layout, the cache width and how much of it the slots see
        (the Triton kernel reads columns 0..position, the others the whole width), so
        `position` should be where a typical slot decodes. One that fails to build or record
        (no Triton, an SDPA backend that refuses the shape) is skipped."""
        import torch

        timings: dict[str, float] = {}
        graphs: dict[str, Any] = {}
        for attention in DECODE_ATTENTION:
            self.attention = attention
            try:
                if attention == "triton":  # its tile first, at the same positions
                    self.kernel_ms = self._tune_triton(position)
                graph = self._record()
            except Exception as exc:  # a kernel this card or shape lacks: the next one
                log.info("slot decoder: no graph with %s attention (%s)", attention, exc)
                torch.cuda.synchronize()
                continue
            self.positions.fill_(position)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(replays):
                graph.replay()
            end.record()
            end.synchronize()
            timings[attention], graphs[attention] = start.elapsed_time(end) / replays, graph
            self.positions.zero_()
        if not graphs:
            raise RuntimeError("no decode attention could be recorded into a CUDA graph")
        self.attention = fastest(timings)
        self.graph, self.step_ms = graphs[self.attention], timings
        log.info("slot decoder: %s attention, ms per step %s", self.attention, timings)

    def _tune_triton(self, position: int) -> dict[str, float]:
        """decode_attention.tune on this state's first cache with every slot at `position`."""
        import torch

        from sparring.backends.torch.decode_attention import tune

        keys = self.keys[0]
        slots, dim = keys.shape[0], self.head_dim

        def random(width: int) -> Any:
            return torch.randn((slots, width), device=self.device, dtype=keys.dtype)

        positions = torch.full_like(self.positions, position)
        kv = self.kv_heads * dim
        args = (random(self.heads * dim), random(kv), random(kv), random(dim), random(dim))
        return tune((*args, keys, self.values[0], positions, self.scaling))

    def run_step(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.step()

    def admit(self, slots: list[int], prompts: list[list[int]], pad_token_id: int) -> list[int]:
        """Prefill `prompts` into `slots` (each distinct prompt once, its cache copied to every
        slot that holds it); returns each slot's first generated token."""
        import torch

        distinct: dict[tuple[int, ...], int] = {}
        which = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
        unique = list(distinct)
        width = max(len(p) for p in unique)
        ids = torch.full((len(unique), width), pad_token_id, dtype=torch.long)
        lengths = torch.tensor([len(p) for p in unique])
        for r, p in enumerate(unique):
            ids[r, : len(p)] = torch.tensor(p)
        ids, lengths = ids.to(self.device), lengths.to(self.device)
        cols = self.columns[:width]
        positions = cols[None, :].expand(len(unique), width)
        causal = cols[None, :, None] >= cols[None, None, :]  # [1, query, key]
        mask = (causal & (cols[None, None, :] < lengths[:, None, None]))[:, None]
        target = torch.tensor(slots, device=self.device)
        expand = torch.tensor(which, device=self.device)

        def writer(i: int) -> Callable:
            def write(k: Any, v: Any) -> tuple[Any, Any]:
                self.keys[i][target, :, :width] = k[expand]
                self.values[i][target, :, :width] = v[expand]
                return k, v

            return write

        hidden = self._forward(ids, positions, writer, mask, decode=False)
        last = hidden[torch.arange(len(unique), device=self.device), lengths - 1]
        first = self.pick(self.head(last).float()[expand])
        self.tokens[target] = first
        self.positions[target] = lengths[expand]
        return first.tolist()


def _to_host(tokens: Any) -> tuple[Any, Any]:
    """`tokens` copied to the host without waiting: (host tensor, CUDA event that marks the copy
    done, or None on a CPU, where the tensor is already there)."""
    import torch

    if tokens.device.type != "cuda":
        return tokens, None
    host = torch.empty(tokens.shape, dtype=tokens.dtype, pin_memory=True)
    host.copy_(tokens, non_blocking=True)
    copied = torch.cuda.Event()
    copied.record()
    return host, copied


def _fingerprint(model: Any) -> tuple:
    """What a kept state's graph was recorded against: every parameter's storage (a graph
    replays raw pointers: a moved, cast or re-created parameter needs a new recording)."""
    return tuple(p.data_ptr() for p in model.parameters())


def _state(
    model: Any, slots: int, max_len: int, pick: Callable, pick_key: Any, graph: bool, position: int
) -> _Slots:
    """The `_Slots` for this call: the model's kept one where slots, width, pick and parameters
    match (GRPO steps and evaluation passes reuse one recorded graph), else a new one, its
    graph's decode attention timed with the slots at `position`."""
    import torch

    # a state made under inference_mode cannot be written outside it: the mode is in the key
    key = (slots, max_len, pick_key, graph, torch.is_inference_mode_enabled(), _fingerprint(model))
    kept = _KEPT.get(model) if pick_key is not None else None
    if kept is not None and kept[0] == key:
        return kept[1]
    if kept is not None:
        del _KEPT[model]  # its buffers and graph pool go before the new ones are made
    state = _Slots(model, slots, max_len, pick)
    if graph:
        try:
            state.capture(position)
        except Exception as exc:  # a model whose layers cannot be captured still decodes
            log.warning("slot decoder: no CUDA graph (%s); decoding step by step", exc)
            torch.cuda.synchronize()
            state.graph, state.attention = None, "matmul"  # not whichever was tried last
    if pick_key is not None:
        _KEPT[model] = (key, state)
    return state


def generate_slots(
    model: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    batch_size: int,
    pick: Callable[[Any], Any],
    stop: Any,
    pad_token_id: int,
    on_done: Callable[[int, list[int]], None] | None = None,
    check_every: int = CHECK_EVERY,
    graph: bool | None = None,
    pick_key: Any = None,
) -> list[list[int]]:
    """Generated ids per prompt, decoded in `batch_size` fixed slots (see the module docstring).

    `pick(logits) -> tokens` must not synchronise with the host (generation.pick_next); `stop` is a
    `FenceStop` (its `eos_token_ids` end a row too); `graph` (default: on a CUDA device) replays
    the decode step as a CUDA graph, else runs it eagerly (the CPU tests). A hashable
    `pick_key` naming what `pick` does (say its temperature and top_p) keeps the state and its
    graph on the model for the next call of the same shape: recording one (four attentions
    timed, the Triton kernel's tiles tuned) took 0.44 s on an H200, about one 256-row batch;
    its cache stays allocated while the model lives.
    """
    import torch

    if not prompts:
        return []
    stop.start(len(prompts))
    slots = min(batch_size, len(prompts))
    needed = max(len(p) for p in prompts) + max_new_tokens + 2 * check_every + 1  # see below
    max_len = -(-needed // WIDTH_STEP) * WIDTH_STEP
    if graph is None:
        graph = next(model.parameters()).device.type == "cuda"
    # where a slot typically decodes: its prompt, then half the budget
    typical = sum(map(len, prompts)) // len(prompts) + max_new_tokens // 2
    state = _state(model, slots, max_len, pick, pick_key, graph, typical)
    results: list[list[int]] = [[] for _ in prompts]
    owner: list[int | None] = [None] * slots  # the prompt each slot is decoding
    drawn = [0] * slots  # tokens its prompt has had drawn, read by the host or not
    pending = list(range(len(prompts)))[::-1]  # popped from the end: input order

    def take(slot: int, token: int) -> bool:
        """Feed `token` to the prompt in `slot`; True once that prompt is finished."""
        i = owner[slot]
        assert i is not None
        if token in stop.eos_token_ids:
            stop.ended[i] = True
            return True
        results[i].append(token)
        return stop.add(i, token, len(results[i])) or len(results[i]) >= max_new_tokens

    def release(slot: int) -> None:
        i, owner[slot] = owner[slot], None
        if on_done is not None:
            on_done(i, results[i])

    # The host reads block k's tokens while the device decodes block k+1: a finished row's slot
    # runs one block past its end (its tokens dropped), and a slot refilled meanwhile skips
    # the block that was already in flight when its new prompt came in. A block is cut short,
    # or not run, where no row can use its steps: the longest row's budget ends the decode
    # without a block in flight.
    inflight: tuple[Any, Any, set[int]] | None = None  # tokens on the host, their event, stale
    while True:
        while pending and None in owner:  # a prompt can finish at its first token: loop
            free = [s for s, i in enumerate(owner) if i is None][: len(pending)]
            new = [pending.pop() for _ in free]
            for s, i in zip(free, new, strict=True):
                owner[s] = i
            firsts = state.admit(free, [prompts[i] for i in new], pad_token_id)
            for s in free:
                drawn[s] = 1
            if inflight is not None:
                inflight[2].update(free)
            for s, token in zip(free, firsts, strict=True):
                if take(s, token):
                    release(s)
        block = None
        # no step past the budget: once every row has had max_new_tokens drawn (the last block
        # on the host's desk), the decode is over whatever that block says
        to_draw = [max_new_tokens - drawn[s] for s, i in enumerate(owner) if i is not None]
        steps = min(check_every, max(to_draw, default=0))
        if steps > 0:
            idle = [s for s, i in enumerate(owner) if i is None]
            if idle:  # an empty slot keeps stepping: keep its position inside the cache
                state.positions[torch.tensor(idle, device=state.device)] = 0
            history = torch.empty((slots, steps), dtype=torch.long, device=state.device)
            for j in range(steps):
                state.run_step()
                history[:, j].copy_(state.tokens)
            for s, i in enumerate(owner):
                if i is not None:
                    drawn[s] += steps
            block = (*_to_host(history), set())
        if inflight is not None:
            tokens, copied, stale = inflight
            if copied is not None:
                copied.synchronize()  # the copy was queued before `block`, which still runs
            for s, row in enumerate(tokens.tolist()):
                if owner[s] is None or s in stale:
                    continue
                for token in row:
                    if take(s, token):
                        release(s)
                        break
        if block is None and inflight is None:
            break
        inflight = block
    return results
