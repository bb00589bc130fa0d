"""Policy versions of served adapters, and what the trainer does with rollouts of old ones.

Covers (pure, no framework): the served name of a published adapter version (`answerer@v3`,
`versioned_name` / `parse_versioned`), how stale a rollout is (`staleness`), splitting a batch
of rollouts into the ones to train on and the ones older than `max_staleness` versions
(`split_stale`), and truncated importance weights for the rest (`importance_weights`,
`clip_ratio`): a rollout sampled by version k and trained on by version k + s is off-policy,
so each token's ratio pi_now / pi_then is capped (truncated importance sampling) and the
PPO-style clipped objective bounds what one step can do with it.

A rollout is anything with an integer `policy_version` attribute or key (a
`sparring.serving.client.Completion`, an engine episode record, a dict).

Does not cover: computing log-probabilities and the clipped update itself
(sparring.backends.torch.policy, which applies the same rules to tensors) or publishing adapters
(sparring.serving.publisher).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

R = TypeVar("R")

_VERSIONED = re.compile(r"^(?P<name>.+)@v(?P<version>\d+)$")


def versioned_name(name: str, version: int) -> str:
    """The served model name of adapter `name` at `version`.

    >>> versioned_name("answerer", 3)
    'answerer@v3'
    """
    if not name or "@" in name:
        raise ValueError(f"adapter name {name!r}: must be non-empty and contain no '@'")
    if version < 1:
        raise ValueError(f"version {version}: published versions start at 1")
    return f"{name}@v{version}"


def parse_versioned(model: str) -> tuple[str, int]:
    """(name, version) of a served model name; a name without `@vN` (the base model) is version 0.

    >>> parse_versioned("answerer@v12")
    ('answerer', 12)
    >>> parse_versioned("smollm2-135m")
    ('smollm2-135m', 0)
    """
    m = _VERSIONED.match(model or "")
    if m is None:
        return model, 0
    return m.group("name"), int(m.group("version"))


def version_of(record: Any) -> int:
    """The `policy_version` of a rollout (attribute or mapping key)."""
    value = record.get("policy_version") if isinstance(record, dict) else None
    if value is None:
        value = getattr(record, "policy_version", None)
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"rollout {record!r:.80}: no integer policy_version")
    return value


def staleness(record: Any, current_version: int) -> int:
    """How many versions the trainer has moved on since `record` was sampled (>= 0)."""
    version = version_of(record)
    if version > current_version:
        raise ValueError(
            f"rollout of version {version} is newer than the trainer's version {current_version}"
        )
    return current_version - version


def split_stale(
    records: Iterable[R], current_version: int, max_staleness: int
) -> tuple[list[R], list[R]]:
    """(kept, dropped): rollouts at most `max_staleness` versions behind `current_version`, and
    the older ones, each in input order. `max_staleness` 0 keeps on-policy rollouts only.

    >>> kept, dropped = split_stale([{"policy_version": v} for v in (1, 2, 3)], 3, 1)
    >>> [r["policy_version"] for r in kept], [r["policy_version"] for r in dropped]
    ([2, 3], [1])
    """
    if max_staleness < 0:
        raise ValueError(f"max_staleness {max_staleness}: must be >= 0")
    kept: list[R] = []
    dropped: list[R] = []
    for record in records:
        (kept if staleness(record, current_version) <= max_staleness else dropped).append(record)
    return kept, dropped


def importance_weights(
    current_logprobs: Sequence[float], behavior_logprobs: Sequence[float], cap: float = 2.0
) -> list[float]:
    """Per token, min(pi_now / pi_then, cap): truncated importance sampling weights of a
    completion sampled by an older policy (`behavior_logprobs`, as the server reported them)
    and scored by the current one. The weight is a constant: it scales the gradient, it does
    not carry one.

    >>> importance_weights([-1.0, -0.5], [-1.0, -2.0], cap=2.0)
    [1.0, 2.0]
    """
    if len(current_logprobs) != len(behavior_logprobs):
        raise ValueError(
            f"{len(current_logprobs)} current and {len(behavior_logprobs)} behavior log-probs"
        )
    if cap <= 0:
        raise ValueError(f"cap {cap}: must be > 0")
    return [
        min(math.exp(min(now - then, 50.0)), cap)
        for now, then in zip(current_logprobs, behavior_logprobs, strict=True)
    ]


def clip_ratio(ratio: float, epsilon: float, advantage: float) -> float:
    """The PPO-clipped surrogate of one token: min(r * A, clip(r, 1 - eps, 1 + eps) * A).

    >>> clip_ratio(1.5, 0.2, 1.0), clip_ratio(0.5, 0.2, -1.0)
    (1.2, -0.8)
    """
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon {epsilon}: must be in (0, 1)")
    clipped = min(max(ratio, 1.0 - epsilon), 1.0 + epsilon)
    return min(ratio * advantage, clipped * advantage)
