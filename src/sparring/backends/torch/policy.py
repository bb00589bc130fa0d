"""The engine's policy on torch: one base model, one LoRA adapter per trainable role, trained from
training records with one clipped policy-gradient step, on-policy or off-policy.

Covers: `TorchPolicy` (load a base with a LoRA adapter per role, from fresh or from a folder of
saved adapters; `sample` with a role's adapter, a frozen role's adapter, or the base (adapters
off: the judge); `train(records)`: one AdamW step per role on its records, then `version` + 1;
`save` each adapter as a Sparring LoRA artifact under `out_dir/<role>/`), `records_batch`
(records -> the tensors TRL's GRPOTrainer feeds its loss: left-padded prompts, right-padded
completions, advantages, and the sampler's log-probabilities when the records carry them) and
`policy_loss` (TRL's clipped surrogate and loss aggregations over those tensors; a test shows it
equals `GRPOTrainer._compute_loss` on the same batch).

This is the one policy-gradient step on torch outside TRL. On-policy (the engine's records, sampled
in process or by a server that reported no log-probabilities) the "old" policy is this one, so the
ratio is 1 and the step is the plain policy gradient. Off-policy (records of a server's samples
that carry `token_ids` and `sampler_logprobs`, sparring.serving.rollouts) the tokens are trained
as sampled and the ratio is pi_now / pi_sampler per token, clipped to [1 - epsilon, 1 + epsilon]
(PPO): the importance ratio of a rollout sampled by an older published version. `train` then
also reports the share of clipped tokens and the mean truncated importance weight.

Why not TRL's trainer: TRL 1.16 takes custom rollouts (`rollout_func`, `environment_factory`)
but still computes advantages itself, from rewards, in consecutive groups of `num_generations`;
the engine's credit is per level of an episode tree (a solver against its siblings only) and per
role, so it comes from outside and is fed to TRL's loss, rewritten here on the same tensors.
Completions without token ids are re-tokenized from text (a sampler may return text only).
Does not cover: sampling itself (sparring.backends.torch.generation), dropping stale rollouts
(sparring.serving.versions), GRPO phases of the code duel (sparring.backends.torch.grpo).
torch is imported only when a function runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparring.backends.base import LOSS_TYPES, Messages

MICRO_BATCH = 8  # records per forward pass; the loss is normalised over the whole role batch


def records_batch(tokenizer: Any, records: Sequence[Any], max_prompt_length: int = 1024) -> dict:
    """TRL's loss inputs for `records` (prompt messages, completion, advantage). A record with
    `token_ids` is trained on those tokens; one with `sampler_logprobs` too adds them as
    `old_per_token_logps` (NaN on the rows of records without: their old policy is this one)."""
    import torch

    from sparring.backends.text import render_prompt

    eos = tokenizer.eos_token_id
    prompts, completions = [], []
    for record in records:
        text = render_prompt(tokenizer, record.messages)
        prompts.append(tokenizer(text, add_special_tokens=False)["input_ids"][-max_prompt_length:])
        sampled = tuple(getattr(record, "token_ids", ()) or ())
        if getattr(record, "sampler_logprobs", ()) and len(record.sampler_logprobs) != len(sampled):
            raise ValueError(
                f"record of role {record.role!r}: {len(record.sampler_logprobs)} sampler "
                f"log-probabilities for {len(sampled)} token ids"
            )
        if sampled:
            ids = list(sampled)
        else:
            ids = tokenizer(record.completion, add_special_tokens=False)["input_ids"]
            if record.finish_reason == "stop" and eos is not None:
                ids = [*ids, eos]
        completions.append(ids or ([eos] if eos is not None else [0]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos or 0)
    width_p = max(len(p) for p in prompts)
    width_c = max(len(c) for c in completions)
    prompt_ids = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts])
    prompt_mask = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) for p in prompts])
    completion_ids = torch.tensor([c + [pad] * (width_c - len(c)) for c in completions])
    completion_mask = torch.tensor([[1] * len(c) + [0] * (width_c - len(c)) for c in completions])
    batch = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([float(r.advantage) for r in records]),
        "temperatures": torch.tensor([float(r.temperature or 1.0) for r in records]),
    }
    if any(getattr(r, "sampler_logprobs", ()) for r in records):
        old = torch.full((len(records), width_c), float("nan"))
        for row, record in enumerate(records):
            if record.sampler_logprobs:
                old[row] = torch.tensor(
                    [*record.sampler_logprobs, *[0.0] * (width_c - len(record.sampler_logprobs))]
                )
        batch["old_per_token_logps"] = old
    return batch


def token_logprobs(model: Any, batch: dict) -> Any:
    """Log-probabilities of the completion tokens, logits divided by each row's temperature."""
    import torch

    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    keep = batch["completion_ids"].size(1)
    device = next(model.parameters()).device
    logits = model(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        logits_to_keep=keep + 1,
        use_cache=False,
    ).logits
    logits = logits[:, :-1, :][:, -keep:, :].float()
    logits = logits / batch["temperatures"].to(device)[:, None, None]
    logps = torch.log_softmax(logits, dim=-1)
    return logps.gather(-1, batch["completion_ids"].to(device).unsqueeze(-1)).squeeze(-1)


def policy_loss(
    model: Any,
    batch: dict,
    *,
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.2,
    loss_type: str = "dapo",
    max_completion_length: int = 128,
    normalizer: float | None = None,
    stats: dict[str, float] | None = None,
) -> Any:
    """TRL's GRPO surrogate: -min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A) per token, with
    r = exp(logp - old logp) (old = `batch["old_per_token_logps"]`, else this policy: r = 1; a
    NaN row of old is this policy too; the log-ratio is capped at 20 so a very stale token cannot
    overflow), aggregated as TRL's `loss_type`. `normalizer` (dapo, bnpo) is the token count of
    the whole batch when this is one micro-batch of it. `stats`, when given, gets the counts over
    the tokens that had an old policy: `old_tokens`, `clipped` (ratio outside the clip range) and
    `is_weight` (the sum of the truncated importance weights min(r, 2))."""
    import torch

    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    logps = token_logprobs(model, batch)
    device = logps.device
    mask = batch["completion_mask"].to(device).float()
    advantages = batch["advantages"].to(device).float().unsqueeze(1)
    given = batch.get("old_per_token_logps")
    if given is None:
        old, has_old = logps.detach(), torch.zeros_like(mask, dtype=torch.bool)
    else:
        given = given.to(device)
        has_old = ~torch.isnan(given)
        old = torch.where(has_old, given, logps.detach())
    ratio = torch.exp((logps - old).clamp(max=20.0))
    clipped = torch.clamp(ratio, 1 - epsilon_low, 1 + epsilon_high)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if stats is not None:
        with torch.no_grad():
            counted = has_old & (mask > 0)
            outside = (ratio < 1 - epsilon_low) | (ratio > 1 + epsilon_high)
            stats["old_tokens"] = stats.get("old_tokens", 0.0) + float(counted.sum())
            stats["clipped"] = stats.get("clipped", 0.0) + float((outside & counted).sum())
            weights = ratio.clamp(max=2.0)[counted]
            stats["is_weight"] = stats.get("is_weight", 0.0) + float(weights.sum())
    if loss_type == "grpo":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (per_token.size(0) * max_completion_length)
    total = normalizer if normalizer is not None else mask.sum().clamp(min=1.0)
    return (per_token * mask).sum() / total


class TorchPolicy:
    """A base model with a LoRA adapter per trainable role; the engine's `Policy` on torch."""

    def __init__(self, cfg: Any, base: str, roles: Sequence[str], init_dir: str | None = None):
        import torch
        from peft import get_peft_model

        from sparring.backends.base import read_meta
        from sparring.backends.torch import models

        mc = cfg.model_for("answerer")
        self.cfg = cfg
        self.base = base
        self.roles = list(roles)
        self.version = 0
        model, self.tokenizer = models.load_model(base, device=mc.device, dtype=mc.dtype)
        self.model = model
        if self.roles:
            saved = {
                role: str(Path(init_dir) / role)
                for role in self.roles
                if init_dir and read_meta(Path(init_dir) / role)
            }
            first = self.roles[0]
            if first in saved:
                from peft import PeftModel

                self.model = PeftModel.from_pretrained(
                    model, saved[first], adapter_name=first, is_trainable=True
                )
            else:
                self.model = get_peft_model(
                    model,
                    models.peft_lora_config(cfg.lora, models.num_layers(model)),
                    adapter_name=first,
                )
            for role in self.roles[1:]:
                if role in saved:
                    self.model.load_adapter(saved[role], adapter_name=role, is_trainable=True)
                else:
                    self.model.add_adapter(
                        role, models.peft_lora_config(cfg.lora, models.num_layers(self.model))
                    )
        torch.manual_seed(cfg.seed + 1_000_003 * cfg.training_seed)
        self._params = {
            role: [p for n, p in self.model.named_parameters() if f".{role}." in n and "lora_" in n]
            for role in self.roles
        }
        self._optimizers: dict[str, Any] = {}

    def sample(
        self, prompts: list[Messages], *, adapter: str | None, temperature: float, top_p: float,
        max_tokens: int, stop_at_fence: bool, seed: int,
    ) -> list[str]:  # fmt: skip
        from contextlib import nullcontext

        from sparring.backends.torch.generation import generate

        if adapter is not None:
            self.model.set_adapter(adapter)
            context = nullcontext()
        else:
            context = self.model.disable_adapter() if self.roles else nullcontext()
        with context:
            rows = generate(
                self.model, self.tokenizer, prompts, max_new_tokens=max_tokens,
                temperature=temperature, top_p=top_p, seed=seed, batch_size=16,
                stop_at_fence=stop_at_fence,
            )  # fmt: skip
        return [r[0] for r in rows]

    def _optimizer(self, role: str) -> Any:
        import torch

        if role not in self._optimizers:
            self._optimizers[role] = torch.optim.AdamW(
                self._params[role], lr=self.cfg.grpo.learning_rate, weight_decay=0.0
            )
        return self._optimizers[role]

    def train(self, records: Sequence[Any]) -> dict[str, float]:
        """One optimizer step per role on its records; returns loss and grad norm per role."""
        import torch

        by_role: dict[str, list[Any]] = defaultdict(list)
        for record in records:
            if record.role not in self._params:
                raise ValueError(f"record of role {record.role!r}, which has no adapter here")
            by_role[record.role].append(record)
        g = self.cfg.grpo
        metrics: dict[str, float] = {}
        self.model.train()
        for role, rows in by_role.items():
            self.model.set_adapter(role)
            for p in self._params[role]:
                p.requires_grad_(True)
            optimizer = self._optimizer(role)
            optimizer.zero_grad(set_to_none=True)
            batches = [
                records_batch(self.tokenizer, rows[i : i + MICRO_BATCH], g.max_prompt_length)
                for i in range(0, len(rows), MICRO_BATCH)
            ]
            tokens = float(sum(int(b["completion_mask"].sum()) for b in batches)) or 1.0
            total = 0.0
            stats: dict[str, float] = {}
            for batch in batches:
                share = batch["completion_ids"].size(0) / len(rows)  # grpo/dr_grpo: row means
                loss = policy_loss(
                    self.model, batch, epsilon_low=g.epsilon, epsilon_high=g.epsilon,
                    loss_type=g.loss_type, max_completion_length=g.max_completion_length,
                    normalizer=tokens, stats=stats,
                )  # fmt: skip
                if g.loss_type in ("grpo", "dr_grpo"):
                    loss = loss * share
                loss.backward()
                total += float(loss.detach())
            norm = torch.nn.utils.clip_grad_norm_(self._params[role], 1.0)
            optimizer.step()
            metrics[f"loss/{role}"] = round(total, 6)
            metrics[f"grad_norm/{role}"] = round(float(norm), 6)
            metrics[f"records/{role}"] = float(len(rows))
            if stats.get("old_tokens"):  # off-policy records: how far from the sampler
                metrics[f"clipped_share/{role}"] = stats["clipped"] / stats["old_tokens"]
                metrics[f"is_weight/{role}"] = stats["is_weight"] / stats["old_tokens"]
        self.model.eval()
        self.version += 1
        return metrics

    def save(self, out_dir: str, meta: dict[str, Any]) -> None:
        """Each role's adapter as a Sparring LoRA artifact `out_dir/<role>/`."""
        from sparring.backends.torch import models

        for role in self.roles:
            self.model.set_adapter(role)
            models.save_model(
                self.model,
                self.tokenizer,
                str(Path(out_dir) / role),
                {**meta, "base": self.base, "tuning_mode": "lora", "role": role},
            )
