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
