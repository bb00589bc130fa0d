"""Credit assignment: advantages from rewards, level by level through the episode tree.

Covers: `group_advantages` (GRPO: reward minus its group's mean, over the group's std),
`flat_group_share` (groups with no signal), `reward_metrics` (what a training phase logs of its
rewards), `side_summary` (a mean over problems with its standard error) and `catch_step_metrics`
(the test writer's catch at its first and last step), and three assigners that set
`Rollout.advantages` per role: `GRPOCredit` (top-level rollouts grouped by their request's group,
children only with their siblings under the same parent: a solver is compared with the other
solvers of the same proposed problem, never with solvers of another), `RAECredit` (role-conditioned
advantage estimation: reward minus a running mean per (episode, role), for games with no natural
group) and `ConstantCredit` (every kept step gets the same advantage: supervised learning on
filtered rollouts). `make_credit(name)` picks one by its config name.
Does not cover: which steps become training records (sparring.engine.arena). Pure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol

from sparring.engine.core import Rollout


def group_advantages(
    rewards: Sequence[float | None], groups: Sequence[Hashable], scale: bool = True
) -> list[float]:
    """GRPO advantages: reward minus its group's mean, divided by the group's std when `scale`.

    Rewards of None (no signal) get advantage 0 and do not enter their group's statistics.

    >>> group_advantages([1.0, 0.0, 5.0, 5.0], ["a", "a", "b", "b"])
    [1.0, -1.0, 0.0, 0.0]
    >>> group_advantages([1.0, None, 0.0], ["a", "a", "a"])
    [1.0, 0.0, -1.0]
    """
    members: dict[Hashable, list[float]] = defaultdict(list)
    for reward, group in zip(rewards, groups, strict=True):
        if reward is not None:
            members[group].append(reward)
    stats = {}
    for group, values in members.items():
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        stats[group] = (mean, std)
    out = []
    for reward, group in zip(rewards, groups, strict=True):
        if reward is None:
            out.append(0.0)
            continue
        mean, std = stats[group]
        adv = reward - mean
        if scale:
            adv = adv / std if std > 1e-8 else 0.0
        out.append(round(adv, 6))
    return out


def flat_group_share(rewards: Sequence[float | None], group_size: int) -> float:
    """Share of consecutive GRPO groups whose rewards are all equal (no learning signal).

    >>> flat_group_share([1, 1, 0, 1], 2)
    0.5
    """
    groups = [rewards[i : i + group_size] for i in range(0, len(rewards), group_size)]
    if not groups:
        return 0.0
    flat = sum(1 for g in groups if len({r for r in g if r is not None}) <= 1)
    return flat / len(groups)


def levels(roots: Sequence[Rollout]) -> list[list[tuple[Rollout, Hashable]]]:
    """The rollout tree level by level, each rollout with its comparison group: roots keep their
    request's group; a child's group is (its parent's identity, its episode)."""
    out: list[list[tuple[Rollout, Hashable]]] = []
    level = [(r, ("root", r.group)) for r in roots]
    while level:
        out.append(level)
        level = [
            (child, ("child", id(parent), child.episode))
            for parent, _ in level
            for child in parent.children
        ]
    return out


class CreditAssigner(Protocol):
    def assign(self, roots: Sequence[Rollout]) -> None:
        """Set `advantages` (per role) on every rollout of the trees under `roots`."""
        ...


class GRPOCredit:
    """Group-relative advantages per level and per role (std-scaled unless `scale=False`)."""

    def __init__(self, scale: bool = True) -> None:
        self.scale = scale

    def assign(self, roots: Sequence[Rollout]) -> None:
        for level in levels(roots):
            roles = sorted({role for rollout, _ in level for role in rollout.rewards})
            for role in roles:
                rewards = [r.rewards.get(role) for r, _ in level]
                groups = [g for _, g in level]
                for (rollout, _), adv in zip(
                    level, group_advantages(rewards, groups, self.scale), strict=True
                ):
                    if role in rollout.rewards:
                        rollout.advantages[role] = adv


class RAECredit:
    """Reward minus a running mean of that (episode, role)'s rewards (decay `decay`); the mean is
    updated after the batch, so a rollout is never its own baseline."""

    def __init__(self, decay: float = 0.95) -> None:
        self.decay = decay
        self.baselines: dict[tuple[str, str], float] = {}

    def assign(self, roots: Sequence[Rollout]) -> None:
        seen: dict[tuple[str, str], list[float]] = defaultdict(list)
        for level in levels(roots):
            for rollout, _ in level:
                for role, reward in rollout.rewards.items():
                    key = (rollout.episode, role)
                    rollout.advantages[role] = round(reward - self.baselines.get(key, 0.0), 6)
                    seen[key].append(reward)
        for key, values in seen.items():
            batch_mean = sum(values) / len(values)
            old = self.baselines.get(key)
            self.baselines[key] = (
                batch_mean if old is None else self.decay * old + (1 - self.decay) * batch_mean
            )


class ConstantCredit:
    """Every rewarded role gets `value` as its advantage (train on what the rubric kept)."""

    def __init__(self, value: float = 1.0) -> None:
        self.value = value

    def assign(self, roots: Sequence[Rollout]) -> None:
        for level in levels(roots):
            for rollout, _ in level:
                for role in rollout.rewards:
                    rollout.advantages[role] = self.value


CREDIT_NAMES = ("grpo", "rae", "constant")


def make_credit(name: str) -> CreditAssigner:
    if name == "grpo":
        return GRPOCredit()
    if name == "rae":
        return RAECredit()
    if name == "constant":
        return ConstantCredit()
    raise ValueError(f"unknown credit assigner {name!r}; choose one of {', '.join(CREDIT_NAMES)}")


def reward_metrics(
    values: Sequence[float | None], history: Sequence[dict[str, float]], group_size: int
) -> dict[str, float]:
    """What a training phase logs of its rewards: their mean and how many were None (no
    signal), the share of flat groups of `group_size` (`flat_group_share`), and the mean of each
    metric its reward function's calls recorded (`history`)."""
    kept = [v for v in values if v is not None]
    out = {
        "reward": sum(kept) / len(kept) if kept else 0.0,
        "reward_none": float(len(values) - len(kept)),
    }
    out["flat_group_share"] = flat_group_share(values, group_size)
    keys = {k for h in history for k in h}
    for k in sorted(keys):
        vals = [h[k] for h in history if k in h]
        out[k] = sum(vals) / len(vals)
    return out


def side_summary(values: Sequence[float]) -> dict[str, float]:
    """{"mean", "se", "n"} of one side (values over problems): `se` is the bootstrap standard
    error of the mean over problems in closed form (the ideal bootstrap's: population standard
    deviation / sqrt(n)), so a phase can log it as three numbers and the LEARN line combine
    sides that different phases logged. Empty: n 0.

    >>> side_summary([0.0, 1.0, 0.0, 1.0])
    {'mean': 0.5, 'se': 0.25, 'n': 4.0}
    >>> side_summary([])["n"]
    0.0
    """
    n = len(values)
    if not n:
        return {"mean": 0.0, "se": 0.0, "n": 0.0}
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    return {"mean": mean, "se": (var / n) ** 0.5, "n": float(n)}


def catch_step_metrics(per_process: Sequence[Sequence[Mapping[str, float]]]) -> dict[str, float]:
    """The generator phase's `generator_catch_{first,last}{,_se,_n}` (mean catch over problems at
    its first and last scoring call, with its standard error over problems and the problem
    count: `side_summary`) and `generator_catch_calls`, from
    `catch_by_problem` of each call, per training process (call i of every process together:
    each scores its share of the step's problems). {} when nothing was scored.

    >>> m = catch_step_metrics([[{"a": 0.0, "b": 0.5}, {"a": 1.0}], [{"c": 0.5}, {"c": 0.0}]])
    >>> m["generator_catch_first"], m["generator_catch_last"], m["generator_catch_last_n"]
    (0.3333333333333333, 0.5, 2.0)
    """
    calls: list[dict[str, float]] = []
    for process in per_process:
        for i, per_problem in enumerate(process):
            if i == len(calls):
                calls.append({})
            calls[i].update(per_problem)
    calls = [c for c in calls if c]
    if not calls:
        return {}
    out = {"generator_catch_calls": float(len(calls))}
    for side, call in (("first", calls[0]), ("last", calls[-1])):
        summary = side_summary(list(call.values()))
        out[f"generator_catch_{side}"] = summary["mean"]
        out[f"generator_catch_{side}_se"] = summary["se"]
        out[f"generator_catch_{side}_n"] = summary["n"]
    return out
