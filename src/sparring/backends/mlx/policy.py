"""The engine's policy on MLX: the same training records as sparring.backends.torch.policy.

Covers: `MlxPolicy`: one mlx-lm model with LoRA layers per role (MLX has no named adapters on one
base, and the models this backend runs are small), started fresh or from MLX adapter artifacts
under `init_dir/<role>/`; `sample` with a role's adapter, or the base (LoRA scale 0: the judge);
`train(records)`: per role one Adam step on its records through
`sparring.backends.mlx.step.policy_step`, the MLX policy-gradient step the code duel's GRPO loop
shares (TRL's clipped surrogate over completion tokens, ratio 1: one update per batch of fresh
records, loss aggregated as `grpo.loss_type`, grad norm clipped at 1.0); `save` each role's
adapter as an MLX Sparring artifact.
Does not cover: old log-probs from a server (records are trained on-policy) or full fine-tuning.
`mlx` is imported only when a method runs.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparring.backends.base import Messages, read_meta
from sparring.backends.mlx.generation import encode, generate
from sparring.backends.mlx.models import add_lora, hf_tokenizer, load, save_adapter, set_lora_scale
from sparring.backends.mlx.step import policy_step


class MlxPolicy:
    def __init__(self, cfg: Any, base: str, roles: Sequence[str], init_dir: str | None = None):
        self.cfg = cfg
        self.base = base
        self.roles = list(roles)
        self.version = 0
        self.models: dict[str, Any] = {}
        for i, role in enumerate(self.roles):
            saved = Path(init_dir) / role if init_dir else None
            if saved is not None and read_meta(saved):
                model, self.tokenizer = load(str(saved))
            else:
                model, self.tokenizer = load(base)
            add_lora(
                model,
                dataclasses.asdict(cfg.lora),
                seed=cfg.seed + 1_000_003 * cfg.training_seed + i,
            )
            self.models[role] = model
        if not self.models:
            self.plain, self.tokenizer = load(base)
        self._optimizers: dict[str, Any] = {}

    def sample(
        self, prompts: list[Messages], *, adapter: str | None, temperature: float, top_p: float,
        max_tokens: int, stop_at_fence: bool, seed: int,
    ) -> list[str]:  # fmt: skip
        if adapter is not None:
            model = self.models[adapter]
            scales = None
        else:  # the base model: any role's model with its LoRA switched off
            model = next(iter(self.models.values()), None) or self.plain
            scales = set_lora_scale(model, 0.0) if self.models else None
        try:
            rows = generate(
                model, self.tokenizer, prompts, max_new_tokens=max_tokens,
                temperature=temperature, top_p=top_p, seed=seed, stop_at_fence=stop_at_fence,
            )  # fmt: skip
        finally:
            if scales is not None:
                set_lora_scale(model, scales)
        return [r[0] for r in rows]

    def train(self, records: Sequence[Any]) -> dict[str, float]:
        """One optimizer step per role on its records; returns loss and grad norm per role."""
        import mlx.optimizers as optim

        g = self.cfg.grpo
        by_role: dict[str, list[Any]] = defaultdict(list)
        for record in records:
            if record.role not in self.models:
                raise ValueError(f"record of role {record.role!r}, which has no adapter here")
            by_role[record.role].append(record)
        hf = hf_tokenizer(self.tokenizer)
        metrics: dict[str, float] = {}
        for role, rows in by_role.items():
            prompts = [encode(self.tokenizer, r.messages, g.max_prompt_length) for r in rows]
            completions = [
                hf.encode(r.completion, add_special_tokens=False) or [hf.eos_token_id] for r in rows
            ]
            temps = [float(r.temperature or 1.0) for r in rows]
            optimizer = self._optimizers.setdefault(role, optim.Adam(learning_rate=g.learning_rate))
            step = policy_step(
                self.models[role], optimizer, prompts, completions,
                [float(r.advantage) for r in rows], pad=hf.eos_token_id,
                temperature=sum(temps) / len(temps),  # one role samples at one temperature
                epsilon=g.epsilon, loss_type=g.loss_type,
                max_completion_length=g.max_completion_length,
            )  # fmt: skip
            metrics[f"loss/{role}"] = round(step["loss"], 6)
            metrics[f"grad_norm/{role}"] = round(step["grad_norm"], 6)
            metrics[f"records/{role}"] = float(len(rows))
        self.version += 1
        return metrics

    def save(self, out_dir: str, meta: dict[str, Any]) -> None:
        for role, model in self.models.items():
            save_adapter(
                model,
                str(Path(out_dir) / role),
                {**meta, "base": self.base, "role": role},
                tokenizer=self.tokenizer,
            )
