"""The engine's torch policy on the tiny model: its loss equals TRL's GRPO loss on the same batch,
an update moves only the trained role's adapter, and saved adapters load back."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cfg():
    from sparring.config import load_config

    return load_config(overrides=["grpo.learning_rate=0.01", "grpo.loss_type=bnpo"])


def _records(advantages):
    from sparring.engine.core import TrainingRecord

    texts = ["def f():\n    return 1", "print('hello world')", "x", "assert f() == 1"]
    return [
        TrainingRecord(
            "solver",
            [{"role": "user", "content": f"write code {i}"}],
            texts[i % len(texts)],
            adv,
            temperature=0.7,
        )
        for i, adv in enumerate(advantages)
    ]


@pytest.mark.parametrize("loss_type", ["bnpo", "grpo", "dr_grpo"])
def test_policy_loss_equals_trl_grpo_loss_on_the_same_batch(tmp_path, loss_type):
    """Same model, same tensors (clipping active through old log-probs): same loss and same
    gradients as GRPOTrainer._compute_loss."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sparring.backends.torch.models import load_model
    from sparring.backends.torch.policy import policy_loss, records_batch, token_logprobs

    model, tok = load_model("tiny-random")
    batch = records_batch(tok, _records([1.0, -0.5, 0.25, -1.0]))
    with torch.no_grad():  # an older policy: ratios away from 1, so the clip matters
        batch["old_per_token_logps"] = token_logprobs(model, batch) + torch.linspace(
            -0.4, 0.4, batch["completion_ids"].numel()
        ).reshape(batch["completion_ids"].shape)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=16,
        temperature=0.7,
        loss_type=loss_type,
        epsilon=0.2,
        beta=0.0,
        report_to="none",
        use_cpu=True,
        bf16=False,  # TRL's default autocasts to bf16 even on a CPU: not the same arithmetic
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "x"}] * 4),
        processing_class=tok,
    )
    trainer.current_gradient_accumulation_steps = 1
    model.train()
    trl_inputs = {k: v for k, v in batch.items() if k != "temperatures"}
    trl_inputs["num_items_in_batch"] = batch["completion_mask"].sum()
    trl_loss = trainer._compute_loss(model, trl_inputs)
    trl_loss.backward()
    trl_grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()
    ours = policy_loss(
        model, batch, epsilon_low=0.2, epsilon_high=0.2, loss_type=loss_type,
        max_completion_length=16,
    )  # fmt: skip
    ours.backward()
    our_grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    assert float(ours.detach()) == pytest.approx(float(trl_loss.detach()), rel=1e-5, abs=1e-7)
    assert len(our_grads) == len(trl_grads) > 0
    for a, b in zip(our_grads, trl_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)


def test_an_update_moves_only_the_trained_roles_adapter_and_saves(tmp_path, cfg):
    from sparring.backends.torch.policy import TorchPolicy

    policy = TorchPolicy(cfg, "tiny-random", ["solver", "critic"])

    def snapshot(role):
        return {
            n: p.detach().clone() for n, p in policy.model.named_parameters() if f".{role}." in n
        }

    before = {"solver": snapshot("solver"), "critic": snapshot("critic")}
    metrics = policy.train(_records([1.0, -1.0, 0.5, -0.5]))
    assert metrics["grad_norm/solver"] > 0 and metrics["records/solver"] == 4
    assert policy.version == 1
    moved = sum(not torch.equal(p, snapshot("solver")[n]) for n, p in before["solver"].items())
    assert moved > 0
    assert all(torch.equal(p, snapshot("critic")[n]) for n, p in before["critic"].items())
    # zero advantages: no gradient at all
    assert policy.train(_records([0.0, 0.0]))["grad_norm/solver"] == 0.0
    policy.save(str(tmp_path / "adapters"), {"game": "test"})
    again = TorchPolicy(cfg, "tiny-random", ["solver", "critic"], str(tmp_path / "adapters"))
    for name, p in again.model.named_parameters():
        if ".solver." in name:
            torch.testing.assert_close(p, dict(policy.model.named_parameters())[name])
    prompts = [[{"role": "user", "content": "hi"}]]
    base = again.sample(prompts, adapter=None, temperature=0, top_p=1, max_tokens=6,
                        stop_at_fence=False, seed=0)  # fmt: skip
    assert isinstance(base[0], str)
    with pytest.raises(ValueError, match="no adapter"):
        again.train([*_records([1.0])[:0], _records([1.0])[0].__class__("judge", [], "x", 1.0)])


def test_sampler_logprobs_are_the_old_policy_of_the_step():
    """A record that carries a server's token ids and log-probabilities is trained on those
    tokens with the ratio pi_now / pi_sampler; a record without keeps the ratio 1 (on-policy)."""
    import dataclasses
    import math

    from sparring.backends.torch.models import load_model
    from sparring.backends.torch.policy import policy_loss, records_batch, token_logprobs

    model, tok = load_model("tiny-random")
    plain = _records([1.0, -0.5])
    batch = records_batch(tok, plain)
    assert "old_per_token_logps" not in batch  # in process: nothing from a sampler
    with torch.no_grad():
        now = token_logprobs(model, batch)
    n0, n1 = (int(n) for n in batch["completion_mask"].sum(-1))
    ids = tuple(int(t) for t in batch["completion_ids"][0, :n0])
    # the sampler gave row 0's tokens one nat more than this policy does: ratio e^-1 < 0.8
    sampled = dataclasses.replace(
        plain[0], token_ids=ids, sampler_logprobs=tuple(float(x) + 1.0 for x in now[0, :n0])
    )
    served = records_batch(tok, [sampled, plain[1]])
    assert torch.equal(served["completion_ids"], batch["completion_ids"])
    assert torch.isnan(served["old_per_token_logps"][1]).all()
    stats: dict[str, float] = {}
    with torch.no_grad():
        loss = policy_loss(model, served, loss_type="bnpo", stats=stats)
    # row 0 (A = 1): -min(e^-1 * 1, 0.8 * 1) per token; row 1 (A = -0.5, r = 1): +0.5 per token
    expected = (-n0 * math.exp(-1.0) + 0.5 * n1) / (n0 + n1)
    assert float(loss) == pytest.approx(expected, rel=1e-4)
    assert stats["old_tokens"] == n0 and stats["clipped"] == n0
    assert stats["is_weight"] == pytest.approx(n0 * math.exp(-1.0), rel=1e-4)
    with pytest.raises(ValueError, match="sampler log-probabilities"):
        records_batch(tok, [dataclasses.replace(sampled, sampler_logprobs=(-1.0,))])
