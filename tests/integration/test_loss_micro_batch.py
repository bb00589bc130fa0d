"""The GRPO loss in micro-batches (`grpo.loss_micro_batch`) on tiny-random: the same loss and the
same LoRA gradients as the whole step at once, for every loss type's normalisation, with each
part's backward run as it goes (what bounds a step's memory)."""

from __future__ import annotations

import pytest
import torch

from sparring.backends.torch import models
from sparring.config import load_config

pytestmark = pytest.mark.integration


class LengthReward:
    __name__ = "length_reward"

    def __call__(self, prompts, completions, **kwargs):
        return [float(len(c)) for c in completions]


def _trainer(tmp_path, loss_type: str):
    from datasets import Dataset

    from sparring.backends.torch.grpo import grpo_args
    from sparring.backends.torch.grpo_trainer import SparringGRPOTrainer

    cfg = load_config(
        "configs/smoke.yaml",
        ["grpo.num_generations=2", "grpo.per_device_batch_size=6", f"grpo.loss_type={loss_type}"],
    )
    model, tok = models.load_model("tiny-random")
    rows = [{"prompt": [{"role": "user", "content": f"Say {w}."}]} for w in ("a", "b", "c")]
    trainer = SparringGRPOTrainer(
        cfg.grpo,
        model=model,
        reward_funcs=[LengthReward()],
        args=grpo_args(cfg, str(tmp_path), 1, 0, "cpu", 16),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=models.peft_lora_config(cfg.lora),
    )
    torch.manual_seed(0)
    for name, p in trainer.model.named_parameters():  # non-zero B: gradients reach lora_A too
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which is not run
    return trainer, tok.pad_token_id


def _batch(pad: int) -> dict:
    """Six rows, three prompts (left-padded, two lengths), completions of 1-5 tokens,
    shuffled as TRL hands them over, advantages of both signs."""
    prompts = {0: [5, 6, 7, 8, 9], 1: [pad, pad, 11, 12, 13], 2: [pad, 14, 15, 16, 17]}
    which = [2, 0, 1, 0, 2, 1]
    lengths = [5, 1, 3, 4, 2, 5]
    completion = [[30 + i + t for t in range(n)] + [pad] * (5 - n) for i, n in enumerate(lengths)]
    mask = [[1] * n + [0] * (5 - n) for n in lengths]
    batch = {
        "prompt_ids": torch.tensor([prompts[w] for w in which]),
        "prompt_mask": torch.tensor([[int(t != pad) for t in prompts[w]] for w in which]),
        "completion_ids": torch.tensor(completion),
        "completion_mask": torch.tensor(mask),
        "advantages": torch.tensor([0.9, -0.4, 1.3, 0.4, -0.9, -1.3]),
    }
    batch["num_items_in_batch"] = batch["completion_mask"].sum()
    return batch


def _loss_and_grads(trainer, batch, rows: int):
    import dataclasses

    trainer.grpo = dataclasses.replace(trainer.grpo, loss_micro_batch=rows)
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(trainer.model, dict(batch))
    trainer.accelerator.backward(loss)  # the trainer's own backward, as in training_step
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    return float(loss.detach()), grads


@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "bnpo", "dr_grpo"])
def test_micro_batched_loss_and_gradients_equal_the_whole_steps(tmp_path, loss_type, monkeypatch):
    from sparring.backends.torch import grpo_loss

    calls = []
    real = grpo_loss.micro_batches
    monkeypatch.setattr(grpo_loss, "micro_batches", lambda *a: calls.append(a[1]) or real(*a))
    trainer, pad = _trainer(tmp_path, loss_type)
    batch = _batch(pad)
    whole, whole_grads = _loss_and_grads(trainer, batch, 0)
    assert not calls and whole_grads
    for rows in (4, 2, 1):  # parts of 4+2 rows, three of 2, six of 1
        loss, grads = _loss_and_grads(trainer, batch, rows)
        assert calls[-1] == rows
        assert loss == pytest.approx(whole, rel=1e-5, abs=1e-7), (loss_type, rows)
        assert grads.keys() == whole_grads.keys()
        for name, grad in whole_grads.items():
            assert torch.allclose(grads[name], grad, rtol=1e-4, atol=1e-6), (loss_type, rows, name)


def test_parts_keep_a_prompts_rows_together():
    """Rows of one prompt land in one part where they fit: the shared-prompt forward then runs
    each prompt once per step, as without parts."""
    from sparring.backends.torch.grpo_loss import micro_batches

    batch = _batch(0)
    parts = micro_batches(batch, 2, "dapo")
    assert [w for _, w in parts] == [1.0, 1.0, 1.0]
    for part, _ in parts:
        assert len({tuple(r) for r in part["prompt_ids"].tolist()}) == 1
    tokens = sum(int(p["completion_mask"].sum()) for p, _ in parts)
    assert tokens == int(batch["num_items_in_batch"])
