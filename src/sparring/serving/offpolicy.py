"""A GRPO step on rollouts sampled through a server by older policy versions (torch, PEFT LoRA).

Covers: `Rollout` (a conversation, the server's `Completion` with its sampled token ids and
log-probabilities and policy version, the reward, and the group it was sampled in),
`group_advantages` (pure: reward minus its group's mean, over the group's std), and
`OffPolicyTrainer.step`: drop the rollouts more than `max_staleness` versions behind the
trainer (`sparring.serving.versions.split_stale`), score the rest under the current weights,
and take one optimizer step on the PPO-clipped surrogate whose ratio is pi_now / pi_sampler
per token (the sampler's log-probabilities as the server reported them), i.e. the importance
ratio of an off-policy rollout, clipped to [1 - epsilon, 1 + epsilon]
(`sparring.serving.versions.clip_ratio` is the same rule on one token); the mean truncated
importance weight (`importance_weights`) is reported as a measure of how off-policy the batch
was. After a step
`version` is one higher: the caller saves the adapter (`save_adapter`) and publishes it.

Does not cover: sampling (sparring.serving.client), overlapping sampling with training
(sparring.serving.rollouts), rewards (any callable), or TRL's own GRPO (in-process sampling,
sparring.backends.torch.grpo). torch is imported when a trainer is built.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparring.serving.client import Messages, ServerCompletion
from sparring.serving.versions import importance_weights, split_stale


@dataclass(frozen=True)
class Rollout:
    messages: Messages
    completion: ServerCompletion
    reward: float
    group: int

    @property
    def policy_version(self) -> int:
        return self.completion.policy_version


def group_advantages(rewards: Sequence[float], groups: Sequence[int]) -> list[float]:
    """Per rollout, (reward - its group's mean) / (the group's std + 1e-4); a flat group gets 0.

    >>> group_advantages([1.0, 0.0, 0.5, 0.5], [0, 0, 1, 1])
    [0.9999000099990001, -0.9999000099990001, 0.0, 0.0]
    """
    members: dict[int, list[float]] = {}
    for r, g in zip(rewards, groups, strict=True):
        members.setdefault(g, []).append(r)
    stats = {}
    for g, rs in members.items():
        mean = sum(rs) / len(rs)
        std = math.sqrt(sum((r - mean) ** 2 for r in rs) / len(rs))
        stats[g] = (mean, std)
    return [(r - stats[g][0]) / (stats[g][1] + 1e-4) for r, g in zip(rewards, groups, strict=True)]


class OffPolicyTrainer:
    """One LoRA policy trained on server rollouts; `version` counts its optimizer steps (plus
    `start_version`), so it matches the publisher's numbering when each step is published."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        learning_rate: float = 1e-4,
        epsilon: float = 0.2,
        max_staleness: int = 1,
        start_version: int = 0,
    ) -> None:
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.epsilon = epsilon
        self.max_staleness = max_staleness
        self.version = start_version
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters (expected a LoRA PeftModel)")
        self.optimizer = torch.optim.AdamW(params, lr=learning_rate)
        self.dropped_total = 0

    def _prompt_ids(self, messages: Messages) -> list[int]:
        from sparring.backends.torch.generation import render_prompt

        text = render_prompt(self.tokenizer, messages)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def step(self, rollouts: Sequence[Rollout]) -> dict[str, float]:
        """Drop stale rollouts, then one optimizer step on the rest; metrics of the step."""
        import torch

        start = time.perf_counter()
        kept, dropped = split_stale(rollouts, self.version, self.max_staleness)
        self.dropped_total += len(dropped)
        usable = [r for r in kept if r.completion.token_ids and r.completion.logprobs]
        metrics = {
            "rollouts": float(len(rollouts)),
            "dropped_stale": float(len(dropped)),
            "trained": float(len(usable)),
            "loss": 0.0,
            "clipped_share": 0.0,
            "mean_staleness": (
                sum(self.version - r.policy_version for r in kept) / len(kept) if kept else 0.0
            ),
        }
        advantages = group_advantages([r.reward for r in usable], [r.group for r in usable])
        pairs = [(r, a) for r, a in zip(usable, advantages, strict=True) if a != 0.0]
        if pairs:
            self.model.train()
            self.optimizer.zero_grad()
            device = next(self.model.parameters()).device
            tokens = sum(len(r.completion.token_ids) for r, _ in pairs)
            total_loss, clipped, weight_sum = 0.0, 0, 0.0
            for rollout, advantage in pairs:
                prompt = self._prompt_ids(rollout.messages)
                completion = list(rollout.completion.token_ids)
                ids = torch.tensor([prompt + completion], device=device)
                logits = self.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
                now = torch.log_softmax(logits, dim=-1)
                now = now.gather(1, ids[0, len(prompt) :, None]).squeeze(1)
                then = torch.tensor(rollout.completion.logprobs, device=device)
                ratio = torch.exp((now - then).clamp(max=20.0))
                low, high = 1.0 - self.epsilon, 1.0 + self.epsilon
                surrogate = torch.minimum(ratio * advantage, ratio.clamp(low, high) * advantage)
                loss = -surrogate.sum() / tokens  # token-level mean over the batch (DAPO)
                loss.backward()
                total_loss += float(loss.detach())
                clipped += int(((ratio < low) | (ratio > high)).sum())
                weight_sum += sum(importance_weights(now.detach().tolist(), then.tolist()))
            self.optimizer.step()
            self.optimizer.zero_grad()
            metrics["loss"] = total_loss
            metrics["clipped_share"] = clipped / max(1, tokens)
            metrics["mean_is_weight"] = weight_sum / max(1, tokens)  # truncated at 2
        self.version += 1
        metrics["version"] = float(self.version)
        metrics["step_s"] = time.perf_counter() - start
        return metrics

    def save_adapter(self, out_dir: str, base: str, role: str = "answerer") -> str:
        """Write the trained adapter as a Sparring LoRA artifact (what the publisher loads)."""
        from sparring.backends.torch.models import save_model

        record = {"base": base, "role": role, "version": self.version}
        save_model(self.model, self.tokenizer, out_dir, record)
        return out_dir
