"""One decode step's attention, rotary positions and cache write as one Triton kernel, for the
slot decoder on CUDA.

Covers `decode_attention`: for every slot and kv head, from the new token's query and key/value
projections: rotary positions on the query heads that share the kv head and on its key (in
float32, rounded once), the key and value written into the slot's cache column `position`, then
attention over the slot's columns 0..position in one pass that reads each visible key and value
once (online softmax in float32, tensor-core dots with the group padded to 16 rows). `tune`
times the kernel's tiles on the card and keeps the fastest per shape.

Why one kernel: a decode step of SmolLM2-135M at 256 rows is a few milliseconds of hundreds of
small kernels. Eager, this part of a layer was nine of them (two rotary products of three
kernels, two indexed writes, attention); the other decode attentions (two batched matmuls, SDPA)
also read the whole fixed-width cache, where an H200 ran each matmul at 30 us a layer
(docs/benchmarks.md). `_Slots.capture` times this kernel against them on the card and keeps the
fastest, so a card or shape where it loses costs nothing.

Does not cover: prefill (many query positions: SDPA does it), a query length above one,
sliding windows, attention biases, rotary embeddings other than the rotate-half kind (Llama's).
Needs Triton, which CUDA builds of torch ship; on a CPU it runs only under Triton's interpreter
(`TRITON_INTERPRET=1`, the tests), read when the kernel is first built.
"""

from __future__ import annotations

import functools
from typing import Any

# (cache columns a program reads per iteration, warps): `tune` times each on the card; the
# fastest depends on the card and on how many columns the slots see
CONFIGS = ((64, 4), (32, 4), (64, 2), (32, 2), (128, 8))
_TUNED: dict[tuple, tuple[int, int]] = {}  # shape -> the config `tune` chose


@functools.cache
def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def attend(
        q_ptr, k_new_ptr, v_new_ptr, cos_ptr, sin_ptr, k_ptr, v_ptr, out_ptr, pos_ptr, scale,
        q_row, kv_row, rope_row, k_slot, k_head, k_column,
        GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, BLOCK: tl.constexpr,
    ):  # fmt: skip
        slot, head = tl.program_id(0), tl.program_id(1)
        groups, dims = tl.arange(0, GROUP_PAD), tl.arange(0, DIM)
        rolled = (dims + DIM // 2) % DIM  # rotate_half(x) * sin == x[rolled] * sin_signed
        in_group = groups < GROUP
        position = tl.load(pos_ptr + slot)
        cos = tl.load(cos_ptr + slot * rope_row + dims).to(tl.float32)
        sin = tl.load(sin_ptr + slot * rope_row + dims).to(tl.float32)
        # the query heads of this kv head: rows head * GROUP .. of the slot's projection
        q_at = q_ptr + slot * q_row + (head * GROUP + groups)[:, None] * DIM
        q = tl.load(q_at + dims[None, :], mask=in_group[:, None], other=0.0).to(tl.float32)
        q_rolled = tl.load(q_at + rolled[None, :], mask=in_group[:, None], other=0.0)
        q = (q * cos[None, :] + q_rolled.to(tl.float32) * sin[None, :]).to(k_ptr.dtype.element_ty)
        k_at = k_new_ptr + slot * kv_row + head * DIM
        k_new = tl.load(k_at + dims).to(tl.float32) * cos
        k_new += tl.load(k_at + rolled).to(tl.float32) * sin
        v_new = tl.load(v_new_ptr + slot * kv_row + head * DIM + dims)
        base = slot * k_slot + head * k_head
        tl.store(k_ptr + base + position * k_column + dims, k_new.to(k_ptr.dtype.element_ty))
        tl.store(v_ptr + base + position * k_column + dims, v_new.to(v_ptr.dtype.element_ty))
        tl.debug_barrier()  # the new column, stored by some threads, is read by others below
        visible = position + 1  # columns 0..position
        best = tl.full([GROUP_PAD], float("-inf"), tl.float32)
        total = tl.zeros([GROUP_PAD], tl.float32)
        acc = tl.zeros([GROUP_PAD, DIM], tl.float32)
        for start in range(0, visible, BLOCK):
            columns = start + tl.arange(0, BLOCK)
            seen = columns < visible
            where = base + columns[:, None] * k_column + dims[None, :]
            k = tl.load(k_ptr + where, mask=seen[:, None], other=0.0)
            scores = tl.dot(q, tl.trans(k)) * scale  # tl.dot's least is 16 rows: GROUP_PAD
            scores = tl.where(seen[None, :], scores, float("-inf"))
            new_best = tl.maximum(best, tl.max(scores, axis=1))
            shrink = tl.exp(best - new_best)
            weights = tl.exp(scores - new_best[:, None])
            total = total * shrink + tl.sum(weights, axis=1)
            v = tl.load(v_ptr + where, mask=seen[:, None], other=0.0)
            acc = acc * shrink[:, None] + tl.dot(weights.to(v.dtype), v)
            best = new_best
        out = acc / total[:, None]
        tl.store(
            out_ptr + slot * q_row + (head * GROUP + groups)[:, None] * DIM + dims[None, :],
            out.to(out_ptr.dtype.element_ty), mask=in_group[:, None],
        )  # fmt: skip

    return attend


def decode_attention(
    q: Any,
    k: Any,
    v: Any,
    cos: Any,
    sin_signed: Any,
    keys: Any,
    values: Any,
    positions: Any,
    scale: float,
    config: tuple | None = None,
) -> Any:
    """One decode step's attention of every slot. `q` [slots, heads * dim], `k` and `v`
    [slots, kv_heads * dim]: the new token's projections, before rotary positions; `cos` and
    `sin_signed` [slots, dim]: its rotary factors (`sin_signed` is sin with its first half
    negated, so rotate_half(x) * sin == x.roll(dim // 2) * sin_signed); `keys` and `values`
    [slots, kv_heads, columns, dim]: the cache, into which the rotated key and the value are
    written at column `positions[slot]`. Returns [slots, heads * dim] in q's dtype; columns
    past a slot's position are never read. `config` (columns per iteration, warps) defaults to
    what `tune` chose for this shape, else CONFIGS[0]."""
    import torch

    slots, kv_heads, _, dim = keys.shape
    heads = q.shape[-1] // dim
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    cos, sin_signed = cos.contiguous(), sin_signed.contiguous()
    if keys.stride(-1) != 1 or values.stride() != keys.stride():
        raise ValueError("decode_attention: keys and values must share a layout, dim innermost")
    if dim & (dim - 1) or dim < 16:
        raise ValueError(f"decode_attention: head dim {dim} is not a power of two from 16 up")
    if heads % kv_heads or k.shape != v.shape or k.shape[-1] != kv_heads * dim:
        raise ValueError(f"decode_attention: {heads} query heads for {kv_heads} kv heads")
    group = heads // kv_heads
    block, warps = config or _TUNED.get(_shape(q, keys), CONFIGS[0])
    out = torch.empty_like(q)
    _kernel()[(slots, kv_heads)](
        q, k, v, cos, sin_signed, keys, values, out, positions, scale,
        q.stride(0), k.stride(0), cos.stride(0), keys.stride(0), keys.stride(1), keys.stride(2),
        GROUP=group, GROUP_PAD=max(16, 1 << (group - 1).bit_length()), DIM=dim, BLOCK=block,
        num_warps=warps,
    )  # fmt: skip
    return out


def _shape(q: Any, keys: Any) -> tuple:
    return (tuple(q.shape), tuple(keys.shape), str(q.dtype), str(q.device))


def tune(args: tuple, repeats: int = 20) -> dict[str, float]:
    """Times each of CONFIGS on this CUDA card for `decode_attention(*args)` (CUDA events,
    `repeats` calls after one that builds the kernel) and keeps the fastest for this shape;
    returns {"64x4": ms per call, ...}. A config that fails to build is left out. The calls
    write into the cache at `args`' positions, as a decode step would."""
    import torch

    q, keys = args[0], args[5]
    timings: dict[tuple, float] = {}
    for config in CONFIGS:
        try:
            decode_attention(*args, config=config)
        except Exception:  # a tile this card cannot build: the others still run
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            decode_attention(*args, config=config)
        end.record()
        end.synchronize()
        timings[config] = start.elapsed_time(end) / repeats
    if timings:
        _TUNED[_shape(q, keys)] = min(timings, key=lambda c: timings[c])
    return {f"{block}x{warps}": ms for (block, warps), ms in timings.items()}
