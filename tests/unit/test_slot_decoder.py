"""The GPU decoder (sparring.backends.torch.slot_decoder) run on the CPU with its graph off: the
same greedy completions as the refill decoder (its own attention, static cache and slot refill
agree with the model's forward and the dynamic cache), a prompt that ends at its first token, and
which decoder each device gets. The CUDA graph itself is exercised by `make bench-gpu`.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from sparring.backends.torch.generation import (  # noqa: E402
    FenceStop,
    _generate_refill,
    choose_decoder,
    decoder_for,
    draw,
    pick_next,
)
from sparring.backends.torch.models import load_model  # noqa: E402
from sparring.backends.torch.slot_decoder import (  # noqa: E402
    generate_slots,
    slots_supported,
)


@pytest.fixture(scope="module")
def tiny():
    model, tok = load_model("tiny-random")
    with torch.no_grad():  # sharpen its near-uniform attention: positions and keys must matter
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(40)
            layer.self_attn.k_proj.weight.mul_(40)
            layer.self_attn.o_proj.weight.mul_(40)  # and what attention reads out
    return model.eval(), tok


def prompts(tok) -> list[list[int]]:
    texts = ["def add(a, b):", "Write a function", "x", "def add(a, b):", "reverse a list of"]
    return [tok(t, add_special_tokens=False)["input_ids"] for t in texts]


def test_greedy_slots_agree_with_the_refill_decoder_token_for_token(tiny):
    model, tok = tiny
    assert slots_supported(model)
    ps = prompts(tok)
    kwargs = dict(max_new_tokens=12, batch_size=2, pad_token_id=tok.pad_token_id or 0)
    with torch.inference_mode():
        refill = _generate_refill(
            model, ps, pick=lambda x: pick_next(x, True, 1.0, 1.0),
            stop=FenceStop(tok, 0, eos_token_ids=[tok.eos_token_id]), **kwargs,
        )  # fmt: skip
        slots = generate_slots(
            model, ps, pick=lambda x: pick_next(x, True, 1.0, 1.0),
            stop=FenceStop(tok, 0, eos_token_ids=[tok.eos_token_id]), check_every=3, **kwargs,
        )  # fmt: skip
    assert slots == refill
    assert [len(r) for r in slots] == [12] * len(ps)  # a random model never stops early here


def test_no_step_is_decoded_past_the_longest_rows_budget(tiny, monkeypatch):
    from sparring.backends.torch.slot_decoder import _Slots

    model, tok = tiny
    ps = prompts(tok)
    steps = []
    monkeypatch.setattr(_Slots, "run_step", lambda self: steps.append(self.step()))
    with torch.inference_mode():
        rows = generate_slots(
            model, ps, pick=lambda x: pick_next(x, True, 1.0, 1.0), check_every=5,
            stop=FenceStop(tok, 0, eos_token_ids=[tok.eos_token_id]), max_new_tokens=12,
            batch_size=len(ps), pad_token_id=tok.pad_token_id or 0,
        )  # fmt: skip
    assert [len(r) for r in rows] == [12] * len(ps)
    # the prefill draws the first token, each step one more: blocks of 5, 5 and 1, and no
    # block in flight past the end (that was 20 steps: 4 blocks)
    assert len(steps) == 11


def test_a_kept_state_decodes_the_next_call_as_a_fresh_one_would(tiny):
    from sparring.backends.torch import slot_decoder

    model, tok = tiny
    ps = prompts(tok)

    def run(batch, pick_key):
        with torch.inference_mode():
            return generate_slots(
                model, batch, pick=lambda x: pick_next(x, True, 1.0, 1.0),
                stop=FenceStop(tok, 0, eos_token_ids=[tok.eos_token_id]), pick_key=pick_key,
                max_new_tokens=12, batch_size=2, pad_token_id=tok.pad_token_id or 0,
                check_every=3,
            )  # fmt: skip

    fresh = run(ps[::-1], None)  # nothing kept
    assert model not in slot_decoder._KEPT
    run(ps, ("greedy",))  # leaves its cache, full of these prompts, behind
    kept = slot_decoder._KEPT[model][1]
    assert run(ps[::-1], ("greedy",)) == fresh
    assert slot_decoder._KEPT[model][1] is kept
    run(ps, ("another pick",))
    assert slot_decoder._KEPT[model][1] is not kept


def test_a_kept_state_is_dropped_for_another_grad_mode_or_a_re_created_parameter():
    from sparring.backends.torch import slot_decoder

    model, tok = load_model("tiny-random")

    def run(mode=torch.inference_mode):
        with mode():
            generate_slots(
                model, prompts(tok), pick=lambda x: pick_next(x, True, 1.0, 1.0),
                stop=FenceStop(tok, 0), pick_key="greedy", max_new_tokens=2, batch_size=2,
                pad_token_id=0,
            )  # fmt: skip
        return slot_decoder._KEPT[model][1]

    first = run()
    assert run() is first
    # its buffers are inference tensors, which cannot be written outside inference_mode
    assert run(torch.no_grad) is not first
    first = run()
    norm = model.model.norm
    norm.weight = torch.nn.Parameter(norm.weight.detach().clone())  # a graph would read the old
    assert run() is not first


def test_every_decode_attention_draws_the_same_greedy_tokens(tiny):
    from sparring.backends.torch.slot_decoder import DECODE_ATTENTION, _Slots

    model, tok = tiny
    ps = prompts(tok)
    drawn = {}
    # "efficient" is a CUDA kernel; "triton" runs here under its interpreter only, in a child
    # process (tests/unit/test_decode_attention.py)
    for attention in [a for a in DECODE_ATTENTION if a not in ("efficient", "triton")]:
        state = _Slots(model, len(ps), 64, lambda x: pick_next(x, True, 1.0, 1.0))
        state.attention = attention
        with torch.inference_mode():
            state.admit(list(range(len(ps))), ps, 0)
            tokens = []
            for _ in range(10):
                state.step()
                tokens.append(state.tokens.tolist())
        drawn[attention] = tokens
    assert drawn["sdpa"] == drawn["matmul"]
    assert len({tuple(row) for row in drawn["matmul"]}) > 1  # it decodes, not one token


def test_a_row_ended_by_eos_frees_its_slot_at_once(tiny):
    model, tok = tiny
    eos = tok.eos_token_id
    done = []
    stop = FenceStop(tok, 0, eos_token_ids=[eos])
    with torch.inference_mode():
        rows = generate_slots(
            model, prompts(tok), max_new_tokens=5, batch_size=2, stop=stop,
            pad_token_id=0, pick=lambda x: torch.full((x.shape[0],), eos),
            on_done=lambda i, ids: done.append(i),
        )  # fmt: skip
    assert rows == [[]] * 5 and stop.ended == [True] * 5 and sorted(done) == list(range(5))


def test_sampling_draws_from_the_nucleus_only():
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 5.0, 4.9, -9.0]] * 2000)
    drawn = pick_next(logits, False, 1.0, 0.9)
    assert set(drawn.tolist()) == {1, 2}  # token 0 lies outside the 0.9 nucleus, 3 far outside
    share = (drawn == 1).float().mean().item()
    assert abs(share - 0.525) < 0.04  # softmax of 5.0 vs 4.9 within the nucleus


def test_the_draw_follows_the_probabilities_and_never_takes_a_zero():
    torch.manual_seed(0)
    probs = torch.tensor([[0.0, 0.5, 0.3, 0.0, 0.2]] * 20000)
    shares = torch.bincount(draw(probs), minlength=5) / len(probs)
    assert shares[0] == 0 and shares[3] == 0
    assert torch.allclose(shares, probs[0], atol=0.015), shares


@pytest.mark.parametrize(("u", "token"), [(0.0, 1), (0.9999999, 3)])
def test_a_draw_at_either_end_takes_a_token_that_can_be_drawn(monkeypatch, u, token):
    monkeypatch.setattr(torch, "rand", lambda shape, device=None: torch.full(shape, u))
    assert draw(torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0]])).tolist() == [token]


def test_each_device_gets_its_decoder(tiny):
    model, _ = tiny
    assert decoder_for(model) == "refill"  # on the CPU: the dynamic cache, no graph
    assert choose_decoder("cuda", True, True) == "slots"
    assert choose_decoder("cuda", False, True) == "refill"
    assert choose_decoder("cpu", False, False) == "generate"


def test_a_loaded_answerer_decodes_as_many_rows_as_it_was_sized_for(monkeypatch):
    from sparring.backends.sampler import load_answerer
    from sparring.backends.torch import generation
    from sparring.problems.prompts import answerer_messages
    from tests.unit.test_sampler import problems

    seen = []
    real = generation._generate_refill

    def spy(*args, **kwargs):
        seen.append(kwargs["batch_size"])
        return real(*args, **kwargs)

    monkeypatch.setattr(generation, "_generate_refill", spy)
    loaded = load_answerer("tiny-random", rows=3)
    messages = [answerer_messages(p, ["code"]) for p in problems(2)]
    out = loaded.sample(
        messages, max_new_tokens=2, temperature=0.7, top_p=1.0, num_samples=2, seed=0
    )
    assert seen == [3] and [len(t) for t in out.texts] == [2, 2]


class _StopAt(FenceStop):
    """Ends prompt i after `lengths[i]` tokens: rows of one batch finish at different steps."""

    def __init__(self, tok, lengths):
        super().__init__(tok, 0, eos_token_ids=[tok.eos_token_id])
        self.lengths = lengths

    def add(self, row, token, generated):
        return generated >= self.lengths[row]


def test_a_wide_batch_refills_in_blocks_and_samples_what_row_by_row_refill_does(tiny, monkeypatch):
    """From WIDE rows a batch drops finished rows and admits waiting prompts in blocks of
    refill_block; a finished row decodes on unread until then. Greedy answers are the narrow
    decoder's, token for token, each as long as its stop says (break check: reading a finished
    row's later tokens makes it longer), and the batch compacts less often."""
    from sparring.backends.torch import generation

    model, tok = tiny
    ps = (prompts(tok) * 3)[:14]
    lengths = [1 + (i * 3) % 7 for i in range(len(ps))]
    compactions = {}
    from transformers import DynamicCache

    select = DynamicCache.batch_select_indices  # the real one: each run counts its own calls

    def run(wide):
        monkeypatch.setattr(generation, "WIDE", wide)
        calls = []
        monkeypatch.setattr(
            DynamicCache, "batch_select_indices", lambda c, i: (calls.append(1), select(c, i))
        )
        with torch.inference_mode():
            out = _generate_refill(
                model, ps, max_new_tokens=10, batch_size=8, pad_token_id=tok.pad_token_id or 0,
                pick=lambda x: pick_next(x, True, 1.0, 1.0), stop=_StopAt(tok, lengths),
            )  # fmt: skip
        compactions[wide] = len(calls)
        return out

    narrow = run(10_000)
    assert generation.refill_block(8) == 1
    blocked = run(8)
    assert generation.refill_block(8) == 2
    assert blocked == narrow
    assert [len(r) for r in blocked] == lengths
    assert compactions[8] < compactions[10_000]
