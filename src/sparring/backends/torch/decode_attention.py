"""One decode step's attention as one Triton kernel, for the slot decoder on CUDA.

Covers `decode_attention`: for every slot and kv head, the query heads that share that kv head
(grouped-query attention, the new token only) attend over the slot's cache columns
0..position, in one pass that reads each visible key and value once (online softmax in float32).
The slot decoder's other decode attentions (two batched matmuls, SDPA) read the whole
fixed-width cache in several kernels: for SmolLM2's 3 query heads per kv head, an H200 ran each
of those matmuls at 30 us a layer (docs/benchmarks.md). `_Slots.capture` times this kernel
against them on the card and keeps the fastest, so a card or shape where it loses costs nothing.

Does not cover: prefill (many query positions: SDPA does it), a query length above one,
sliding windows, attention biases. Needs Triton, which CUDA builds of torch ship; on a CPU it
runs only under Triton's interpreter (`TRITON_INTERPRET=1`, the tests), read when the kernel is
first built.
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
        q_ptr, k_ptr, v_ptr, out_ptr, pos_ptr, scale,
        q_slot, q_head, q_group, k_slot, k_head, k_column, o_slot, o_head, o_group,
        GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, BLOCK: tl.constexpr,
    ):  # fmt: skip
        slot, head = tl.program_id(0), tl.program_id(1)
        groups, dims = tl.arange(0, GROUP_PAD), tl.arange(0, DIM)
        in_group = groups < GROUP
        q = tl.load(
            q_ptr + slot * q_slot + head * q_head + groups[:, None] * q_group + dims[None, :],
            mask=in_group[:, None], other=0.0,
        )  # fmt: skip
        visible = tl.load(pos_ptr + slot) + 1  # columns 0..position
        best = tl.full([GROUP_PAD], float("-inf"), tl.float32)
        total = tl.zeros([GROUP_PAD], tl.float32)
        acc = tl.zeros([GROUP_PAD, DIM], tl.float32)
        base = slot * k_slot + head * k_head
        for start in range(0, visible, BLOCK):
            columns = start + tl.arange(0, BLOCK)
            seen = columns < visible
            where = base + columns[:, None] * k_column + dims[None, :]
            k = tl.load(k_ptr + where, mask=seen[:, None], other=0.0)
            # tensor-core dots: the group's rows padded to GROUP_PAD (tl.dot's least is 16)
            scores = tl.dot(q, tl.trans(k)) * scale
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
            out_ptr + slot * o_slot + head * o_head + groups[:, None] * o_group + dims[None, :],
            out.to(out_ptr.dtype.element_ty), mask=in_group[:, None],
        )  # fmt: skip

    return attend


def decode_attention(
    q: Any, keys: Any, values: Any, positions: Any, scale: float, config: tuple | None = None
) -> Any:
    """Attention of one new token per slot: `q` [slots, kv_heads, group, dim] (the query heads
    of each kv head), `keys` and `values` [slots, kv_heads, columns, dim] with a slot's token at
    column `positions[slot]` already written; returns [slots, kv_heads, group, dim] in q's
    dtype. Columns past a slot's position are never read. `config` (columns per iteration,
    warps) defaults to what `tune` chose for this shape, else CONFIGS[0]."""
    import torch

    slots, kv_heads, group, dim = q.shape
    if keys.stride(-1) != 1 or values.stride() != keys.stride() or q.stride(-1) != 1:
        raise ValueError("decode_attention: keys and values must share a layout, dim innermost")
    if dim & (dim - 1) or dim < 16:
        raise ValueError(f"decode_attention: head dim {dim} is not a power of two from 16 up")
    block, warps = config or _TUNED.get(_shape(q, keys), CONFIGS[0])
    out = torch.empty((slots, kv_heads, group, dim), dtype=q.dtype, device=q.device)
    _kernel()[(slots, kv_heads)](
        q, keys, values, out, positions, scale,
        q.stride(0), q.stride(1), q.stride(2), keys.stride(0), keys.stride(1), keys.stride(2),
        out.stride(0), out.stride(1), out.stride(2),
        GROUP=group, GROUP_PAD=max(16, 1 << (group - 1).bit_length()), DIM=dim, BLOCK=block,
        num_warps=warps,
    )  # fmt: skip
    return out


def _shape(q: Any, keys: Any) -> tuple:
    return (tuple(q.shape), tuple(keys.shape), str(q.dtype), str(q.device))


def tune(q: Any, keys: Any, values: Any, positions: Any, scale: float, repeats: int = 20) -> dict:
    """Times each of CONFIGS on this CUDA card at these positions (CUDA events, `repeats` calls
    after one that builds the kernel) and keeps the fastest for this shape; returns
    {"64x4": ms per call, ...}. A config that fails to build is left out."""
    import torch

    timings: dict[tuple, float] = {}
    for config in CONFIGS:
        try:
            decode_attention(q, keys, values, positions, scale, config)
        except Exception:  # a tile this card cannot build: the others still run
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            decode_attention(q, keys, values, positions, scale, config)
        end.record()
        end.synchronize()
        timings[config] = start.elapsed_time(end) / repeats
    if timings:
        _TUNED[_shape(q, keys)] = min(timings, key=lambda c: timings[c])
    return {f"{block}x{warps}": ms for (block, warps), ms in timings.items()}
