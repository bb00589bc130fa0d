"""Real GRPO steps on tiny-random (seconds each): what LoRA, full tuning and the shared topology
change, and what they must leave alone. The reward is a real function with variance (completion
length), so updates are non-zero even though a random model never writes passing code.
tiny-random never ends a completion before the cap, so these runs keep clipped completions in
the loss (`grpo.mask_truncated_completions=false`); the fence test makes rows end on purpose."""

from __future__ import annotations

import dataclasses
import os
import time

import pytest
import torch

from sparring.backends.torch import models
from sparring.config import load_config

pytestmark = pytest.mark.integration
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def cfg_for(**overrides):
    sets = ["grpo.mask_truncated_completions=false"]
    sets += [f"{k}={v}" for k, v in overrides.items()]
    return load_config("configs/smoke.yaml", sets)


class LengthReward:
    __name__ = "length_reward"

    def __call__(self, prompts, completions, **kwargs):
        return [float(len(c[-1]["content"] if isinstance(c, list) else c)) for c in completions]


def dataset():
    from datasets import Dataset

    msgs = [[{"role": "user", "content": f"Say something about {w}."}] for w in ("cats", "dogs")]
    return Dataset.from_list([{"prompt": m} for m in msgs])


def snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_lora_changes_only_the_adapter(tmp_path):
    from sparring.backends.torch.grpo import run_grpo

    cfg = cfg_for(**{"grpo.learning_rate": 0.05})
    model, tok = models.load_model("tiny-random")
    before = snapshot(model)
    trained, metrics = run_grpo(
        model,
        tok,
        dataset(),
        LengthReward(),
        cfg,
        2,
        str(tmp_path),
        0,
        models.peft_lora_config(cfg.lora),
    )
    assert metrics["steps"] == 2 and metrics["step_time_s"] > 0
    base = trained.get_base_model()
    after = {k: v for k, v in base.state_dict().items() if "lora_" not in k}
    renamed = {k.replace(".base_layer", ""): v for k, v in after.items()}
    assert set(renamed) == set(before)
    for k, v in before.items():
        assert torch.equal(renamed[k], v), f"base weight {k} changed"
    lora_b = [v for k, v in trained.state_dict().items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b), "adapter did not learn"
    out = tmp_path / "artifact"
    models.save_model(trained, tok, str(out), {"base": "tiny-random", "role": "answerer"})
    assert (out / "adapter_model.safetensors").is_file()
    assert not (out / "model.safetensors").exists()
    again, _ = models.load_model(str(out), trainable=True)
    loaded_b = [v for k, v in again.state_dict().items() if "lora_B" in k]
    assert all(torch.equal(a, b) for a, b in zip(lora_b, loaded_b, strict=True))
    fresh, _ = models.load_model("tiny-random")
    assert all(torch.equal(fresh.state_dict()[k], v) for k, v in before.items())


def test_full_tuning_changes_the_weights(tmp_path):
    from sparring.backends.torch.grpo import run_grpo

    cfg = cfg_for(tuning_mode="full", **{"grpo.learning_rate": 0.01})
    model, tok = models.load_model("tiny-random")
    before = snapshot(model)
    trained, _ = run_grpo(model, tok, dataset(), LengthReward(), cfg, 1, str(tmp_path), 0)
    changed = [k for k, v in trained.state_dict().items() if not torch.equal(v, before[k])]
    assert len(changed) > len(before) // 2
    models.save_model(trained, tok, str(tmp_path / "full"), {"base": "tiny-random"})
    meta = models.read_meta(tmp_path / "full")
    assert meta["tuning_mode"] == "full" and (tmp_path / "full" / "model.safetensors").is_file()


def test_shared_topology_holds_one_base(tmp_path):
    from sparring.backends.torch.grpo import run_grpo

    models.clear_shared()
    cfg = cfg_for(topology="shared", shared_model="tiny-random", **{"grpo.learning_rate": 0.05})
    model, tok = models.shared_peft_model("tiny-random", cfg.lora)
    again, _ = models.shared_peft_model("tiny-random", cfg.lora)
    assert again is model
    assert set(model.peft_config) == {"answerer", "generator"}
    single, _ = models.load_model("tiny-random")
    base_ptrs = {p.data_ptr() for n, p in model.named_parameters() if "lora_" not in n}
    single_ptrs = {p.data_ptr() for p in single.parameters()}
    assert len(base_ptrs) == len(single_ptrs)  # one copy of every base tensor
    n_base = sum(p.numel() for n, p in model.named_parameters() if "lora_" not in n)
    assert n_base == sum(p.numel() for p in single.parameters())

    def adapter(name):
        return {k: v.clone() for k, v in model.state_dict().items() if f".{name}." in k}

    models.ensure_adapter(model, "answerer", None, cfg.lora)
    run_grpo(model, tok, dataset(), LengthReward(), cfg, 1, str(tmp_path / "a"), 0)
    ans = adapter("answerer")
    models.ensure_adapter(model, "generator", None, cfg.lora)
    run_grpo(model, tok, dataset(), LengthReward(), cfg, 1, str(tmp_path / "g"), 0)
    assert all(torch.equal(v, ans[k]) for k, v in adapter("answerer").items())
    assert any(v.abs().sum() > 0 for k, v in adapter("generator").items() if "lora_B" in k)
    models.save_model(model, tok, str(tmp_path / "gen"), {"base": "tiny-random"})
    assert models.read_meta(tmp_path / "gen")["tuning_mode"] == "lora"
    assert (tmp_path / "gen" / "adapter_model.safetensors").is_file()
    models.clear_shared()


def test_generate_is_seeded_and_greedy():
    from sparring.backends.torch.generation import generate

    model, tok = models.load_model("tiny-random")
    msgs = [[{"role": "user", "content": "hi"}], [{"role": "user", "content": "a longer hello"}]]
    a = generate(model, tok, msgs, max_new_tokens=6, temperature=1.0, num_samples=2, seed=3)
    b = generate(model, tok, msgs, max_new_tokens=6, temperature=1.0, num_samples=2, seed=3)
    assert a == b and len(a) == 2 and all(len(x) == 2 for x in a)
    g1 = generate(model, tok, msgs, max_new_tokens=6)
    g2 = generate(model, tok, msgs[:1], max_new_tokens=6, batch_size=1)
    assert g1[0] == g2[0]  # left padding: batching does not change greedy output
    # no fence here: the refilling sampler and plain HF generate agree token for token
    assert generate(model, tok, msgs, max_new_tokens=6, batch_size=1, stop_at_fence=False) == g1
    # a repeated prompt is prefilled once and its KV cache copied to every row of it: greedy
    # samples of one prompt equal the lone greedy answer, beside another prompt in the batch
    shared = generate(model, tok, msgs, max_new_tokens=6, num_samples=3, batch_size=6)
    assert shared == [[g1[0][0]] * 3, [g1[1][0]] * 3]
    hf = generate(model, tok, msgs, max_new_tokens=6, num_samples=3, stop_at_fence=False)
    assert hf == shared


def test_grpo_completions_stop_at_the_fence(tmp_path, monkeypatch, capsys):
    """tiny-random cannot write a fence, so a FenceStop that reports even rows' fence as closed
    at their 5th token stands in: those rows end there with one EOS (not clipped, so masking
    keeps them), the others run to the cap and are masked out; training still moves LoRA.
    Sampling slower than SLOW_SAMPLING_S (here: any) says a line before the step's own."""
    from sparring.backends.torch import generation, grpo_trainer
    from sparring.backends.torch.grpo import run_grpo

    monkeypatch.setattr(grpo_trainer, "SLOW_SAMPLING_S", 0.0)

    created = []

    class EarlyFence(generation.FenceStop):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            created.append(self)

        def add(self, row, token, generated):
            if row % 2 == 0 and generated == 5 and not self.ended[row]:
                self.texts[row] += "```python\nx = 1\n```"
                self.stopped_at[row] = generated
                return True
            return super().add(row, token, generated)

    monkeypatch.setattr(generation, "FenceStop", EarlyFence)
    seen = []

    def reward(prompts, completions, completion_ids, **kwargs):
        seen.extend(completion_ids)
        return [float(len(ids)) for ids in completion_ids]

    reward.__name__ = "length_reward"
    cfg = cfg_for(**{"grpo.mask_truncated_completions": "true", "grpo.learning_rate": 0.05})
    model, tok = models.load_model("tiny-random")
    trained, metrics = run_grpo(
        model, tok, dataset(), reward, cfg, 1, str(tmp_path), 0, models.peft_lora_config(cfg.lora)
    )
    assert created and all(len(c.stopped_at) == 2 for c in created)  # installed and called
    eos = tok.eos_token_id
    stopped = [ids for ids in seen if len(ids) == 6]
    assert len(stopped) == len(seen) // 2 and all(ids[-1] == eos for ids in stopped)
    assert all(len(ids) == 16 and eos not in ids for ids in seen if len(ids) != 6)
    assert metrics["trl/completions_clipped_ratio"] == 0.5
    assert metrics["fence_stop_ratio"] == 0.5 and metrics["trl/sparring_fence_stop_ratio"] == 0.5
    lora_b = [v for k, v in trained.state_dict().items() if "lora_B" in k]
    assert any(v.abs().sum() > 0 for v in lora_b), "the fenced rows did not train"
    out = capsys.readouterr().out
    assert f"sampled {len(seen)} completions in " in out and out.index("sampled") < out.index(
        "step 1/1"
    )


def test_shared_prompt_forward_equals_trls_per_row_forward(tmp_path, monkeypatch):
    """The loss's log-probs with each distinct prompt run once (its KV cache shared by the
    group) equal TRL's per-row forward, values and LoRA gradients, on left-padded prompts of
    different lengths and right-padded completions."""
    from sparring.backends.torch import grpo_loss as grpo  # the shared-prompt forward's home
    from sparring.backends.torch.grpo import grpo_args
    from sparring.backends.torch.grpo_trainer import SparringGRPOTrainer

    calls = []
    real = grpo._shared_prompt_logps
    monkeypatch.setattr(grpo, "_shared_prompt_logps", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(grpo, "SHARED_CHUNK_ROWS", 3)  # rows by length 2,3,4 | 4: two chunks
    cfg = cfg_for(**{"grpo.num_generations": 2, "grpo.per_device_batch_size": 4})
    model, tok = models.load_model("tiny-random")
    trainer = SparringGRPOTrainer(
        cfg.grpo,
        model=model,
        reward_funcs=[LengthReward()],
        args=grpo_args(cfg, str(tmp_path), 1, 0, "cpu", 16),
        train_dataset=dataset(),
        processing_class=tok,
        peft_config=models.peft_lora_config(cfg.lora),
    )
    trained = trainer.model
    for name, p in trained.named_parameters():  # non-zero B so gradients reach lora_A too
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    pad = tok.pad_token_id
    prompts = [[5, 6, 7, 8, 9], [pad, pad, 11, 12, 13]]  # left-padded, as TRL batches them
    ids, mask = [], []
    for i, completion_len in enumerate((4, 2, 3, 4)):  # rows 0-1: prompt 0, rows 2-3: prompt 1
        p = prompts[i // 2]
        done = [20 + i + t for t in range(completion_len)] + [pad] * (4 - completion_len)
        ids.append(p + done)
        mask.append([int(t != pad) for t in p] + [1] * completion_len + [0] * (4 - completion_len))
    ids, mask = torch.tensor(ids), torch.tensor(mask)

    def logps_and_grads(shared: bool):
        trainer.grpo = dataclasses.replace(trainer.grpo, share_prompt_forward=shared)
        trained.zero_grad()
        logps, entropies, _ = trainer._get_per_token_logps_and_entropies(
            trained, ids, mask, 4, compute_entropy=True
        )
        (logps * mask[:, -4:]).sum().backward()
        grads = {n: p.grad.clone() for n, p in trained.named_parameters() if p.grad is not None}
        return logps.detach(), entropies.detach(), grads

    per_row, per_row_entropy, per_row_grads = logps_and_grads(False)
    assert not calls
    shared, shared_entropy, shared_grads = logps_and_grads(True)
    assert calls == [1]  # the shared path ran (two distinct prompts among four rows)
    keep = mask[:, -4:].bool()
    assert torch.allclose(per_row[keep], shared[keep], atol=1e-5)
    assert torch.allclose(per_row_entropy[keep], shared_entropy[keep], atol=1e-4)
    assert per_row_grads.keys() == shared_grads.keys() and per_row_grads
    for name, grad in per_row_grads.items():
        assert torch.allclose(grad, shared_grads[name], atol=1e-5), name


class PrefetchingReward:
    """A reward with the answerer reward's `prefetch` hook, recording what each part saw and
    when; each prefetch call takes 0.1 s, as a sandbox call would."""

    __name__ = "prefetching_reward"

    def __init__(self):
        self.prefetched: list[tuple[str, str]] = []
        self.scored: list[tuple[str, str]] = []

    def prefetch(self, completions, tests, function_name):
        assert set(function_name) == {"f"}
        time.sleep(0.1)
        self.prefetched += [(c, t[0]) for c, t in zip(completions, tests, strict=True)]

    def __call__(self, prompts, completions, tests, **kwargs):
        from sparring.rewards.code_duel import completion_text

        self.scored += [(completion_text(c), t[0]) for c, t in zip(completions, tests, strict=True)]
        return [float(len(completion_text(c))) for c in completions]


@pytest.mark.parametrize("overlap", [True, False])
def test_scoring_overlaps_sampling(tmp_path, overlap):
    """Four prompts x 2 samples decoded 2 rows at a time: the rows of the first waves are
    scored (prefetched) while later waves still sample, each row once, with the text TRL's
    reward call then sees; with the switch off nothing is prefetched."""
    from datasets import Dataset

    from sparring.backends.torch.grpo import run_grpo

    rows = [
        {"prompt": [{"role": "user", "content": f"Write f for case {k}."}],
         "tests": [f"assert f({k}) == {k}"], "function_name": "f"}
        for k in range(4)
    ]  # fmt: skip
    cfg = cfg_for(**{
        "grpo.per_device_batch_size": 8, "grpo.rollout_batch_size": 2,
        "grpo.overlap_scoring": str(overlap).lower(),
    })  # fmt: skip
    reward = PrefetchingReward()
    model, tok = models.load_model("tiny-random")
    _, metrics = run_grpo(
        model, tok, Dataset.from_list(rows), reward, cfg, 1, str(tmp_path), 0,
        models.peft_lora_config(cfg.lora),
    )  # fmt: skip
    assert len(reward.scored) == 8
    if not overlap:
        assert reward.prefetched == [] and metrics["scoring_overlapped_seconds"] == 0
        return
    assert sorted(reward.prefetched) == sorted(reward.scored)  # every row once, same text
    # some scoring ran while later waves still sampled; how much depends on the machine's speed
    # (a fast one finishes sampling within the first 0.1 s call), so no more than > 0 is asked
    assert metrics["scoring_overlapped_seconds"] > 0, "no scoring happened during sampling"


@pytest.mark.parametrize("merge", [True, False])
def test_sampling_runs_on_the_merged_adapter_when_asked(tmp_path, monkeypatch, merge):
    """grpo.merge_lora_sampling: the refill decoder sees the adapter folded into the base (every
    LoRA layer merged) in each step, or never; either way the update trains the adapter and the
    base weights end bit for bit as they began (the second step samples with a non-zero B)."""
    from peft.tuners.lora import LoraLayer

    from sparring.backends.torch import generation
    from sparring.backends.torch.grpo import run_grpo

    seen: list[bool] = []
    refill = generation._generate_refill

    def watched(model, *args, **kwargs):
        layers = [m for m in model.modules() if isinstance(m, LoraLayer)]
        seen.append(bool(layers) and all(layer.merged for layer in layers))
        return refill(model, *args, **kwargs)

    monkeypatch.setattr(generation, "_generate_refill", watched)
    cfg = cfg_for(**{"grpo.learning_rate": 0.05, "grpo.merge_lora_sampling": str(merge).lower()})
    model, tok = models.load_model("tiny-random")
    before = snapshot(model)
    trained, _ = run_grpo(
        model, tok, dataset(), LengthReward(), cfg, 2, str(tmp_path), 0,
        models.peft_lora_config(cfg.lora),
    )  # fmt: skip
    assert seen == [merge, merge]
    base = trained.get_base_model().state_dict()
    for key, value in before.items():
        key = next(k for k in base if k.replace(".base_layer", "") == key)
        assert torch.equal(base[key], value), f"base weight {key} changed"
    lora_b = [v for k, v in trained.state_dict().items() if "lora_B" in k]
    assert any(v.abs().sum() > 0 for v in lora_b), "adapter did not learn"
