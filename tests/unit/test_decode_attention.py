"""The slot decoder's Triton decode step (sparring.backends.torch.decode_attention), run on the
CPU under Triton's interpreter in a child process (TRITON_INTERPRET must be set before Triton is
imported): rotary positions applied, the new key and value written at each slot's position and
nowhere else, the same output as softmax attention over each slot's visible columns, columns
past a slot's position never read, and the same greedy tokens as the matmul attention through a
real model. Its speed is measured on a GPU only (`make bench-gpu`)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None,
    reason="needs torch and triton (Linux x86-64: requirements.lock)",
)


def interpreted(code: str) -> str:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_it_rotates_writes_and_attends_over_the_visible_columns_only():
    out = interpreted(
        """
        import torch
        from sparring.backends.torch.decode_attention import CONFIGS, decode_attention

        torch.manual_seed(0)
        slots, kv, group, dim, width = 6, 2, 3, 16, 140
        q, k, v = (torch.randn(slots, n * dim) for n in (kv * group, kv, kv))
        angle = torch.randn(slots, dim)
        cos, sin_signed = angle.cos(), angle.sin()
        keys, values = torch.randn(slots, kv, width, dim), torch.randn(slots, kv, width, dim)
        positions = torch.tensor([0, 5, 63, 64, 129, 139])  # one column, block edges, the last

        def rope(x):  # [slots, heads, dim]
            return x * cos[:, None] + x.roll(dim // 2, -1) * sin_signed[:, None]

        rows = torch.arange(slots)
        want_keys, want_values = keys.clone(), values.clone()
        want_keys[rows, :, positions] = rope(k.view(slots, kv, dim))
        want_values[rows, :, positions] = v.view(slots, kv, dim)
        visible = torch.arange(width)[None, :] <= positions[:, None]
        query = rope(q.view(slots, kv * group, dim)).view(slots, kv, group, dim)
        scores = (query @ want_keys.transpose(-1, -2)) * 0.25
        scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
        expected = (scores.softmax(-1) @ want_values).reshape(slots, -1)
        hidden = ~visible[:, None, :, None].expand(slots, kv, width, dim)
        keys[hidden], values[hidden] = float("nan"), float("nan")  # read, they would show
        for config in CONFIGS:  # every tile `tune` may choose
            got = decode_attention(q, k, v, cos, sin_signed, keys, values, positions, 0.25, config)
            written = max(
                float((keys - want_keys)[~hidden].abs().max()),
                float((values - want_values)[~hidden].abs().max()),
            )
            print(got.shape == expected.shape, float((got - expected).abs().max()), written)
        """
    )
    from sparring.backends.torch.decode_attention import CONFIGS  # imports no Triton

    lines = [line.split() for line in out.splitlines()]
    assert len(lines) == len(CONFIGS)
    for same_shape, error, written in lines:
        assert same_shape == "True" and float(error) < 1e-5 and float(written) < 1e-6


def test_a_model_decodes_the_same_greedy_tokens_with_it_as_with_matmuls():
    out = interpreted(
        """
        import torch
        from sparring.backends.torch.models import load_model
        from sparring.backends.torch.generation import pick_next
        from sparring.backends.torch.slot_decoder import _Slots

        model, tok = load_model("tiny-random")
        with torch.no_grad():  # sharpen attention: which columns are read must matter
            for layer in model.model.layers:
                layer.self_attn.q_proj.weight.mul_(40)
                layer.self_attn.k_proj.weight.mul_(40)
                layer.self_attn.o_proj.weight.mul_(40)  # and what attention reads out
        texts = ["def add(a, b):", "Write a function", "x", "reverse a list of"]
        prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        drawn = {}
        for attention in ("matmul", "triton"):
            state = _Slots(model.eval(), len(prompts), 64, lambda x: pick_next(x, True, 1, 1))
            state.attention = attention
            with torch.inference_mode():
                state.admit(list(range(len(prompts))), prompts, 0)
                rows = []
                for _ in range(8):
                    state.step()
                    rows.append(state.tokens.tolist())
            drawn[attention] = rows
        print(drawn["triton"] == drawn["matmul"], len({tuple(r) for r in drawn["matmul"]}))
        """
    )
    same, distinct = out.split()
    assert same == "True" and int(distinct) > 1


def test_a_head_dim_it_cannot_tile_is_refused_before_any_kernel():
    torch = pytest.importorskip("torch")
    from sparring.backends.torch.decode_attention import decode_attention

    new, rope, cache = torch.zeros(1, 48), torch.zeros(1, 24), torch.zeros(1, 1, 8, 24)
    with pytest.raises(ValueError, match="head dim 24"):
        decode_attention(new, new[:, :24], new[:, :24], rope, rope, cache, cache,
                         torch.zeros(1, dtype=torch.long), 1.0)  # fmt: skip
