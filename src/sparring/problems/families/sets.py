"""What a run trains on and what it is measured on, from the problem families, split by task.

`configured_sets` is the families' problem source (`families` in data.train, read by
sparring.problems.sources): `family_sets` of what data.families asks for, the trained families
being data.families.families or else every family not held out (`trained_families`).

`family_sets` generates the training instances and three held-out sets:

- `new_tasks`: instances of the trained families under the held-out seed whose function no
  training instance computes (task key) and whose prompt no training instance shows (prompt
  key, names taken out): the transfer measure;
- `trained_tasks`: training tasks shown again under other names, phrasing and tests (renamed
  instances of spec families, half as many as `new_tasks` draws): what the earlier canary's
  "fresh instances" measured;
- `new_families`: instances of the held-out families whose function no task of any trained
  family computes (every task the trained spec families can draw, not only the drawn ones).

And one subset: `new_ops`, the `new_tasks` instances whose operation (`op:` tag, constants
aside) no training instance of their family uses; the rest of `new_tasks` are trained
operations with new constants. Its instances carry both tags (`heldout:new_tasks` and
`heldout:new_ops`), so they are measured in both sets and written once.

Every drop is counted (`dropped`), and `overlap` recounts, after the drops, the held-out
instances outside `trained_tasks` whose task key is a training key: it must be 0.

Covers: the split. Does not cover: other problem sources (sparring.problems.sources), writing
datasets (sparring.phases.materialize), the keys themselves (sparring.problems.families.identity).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from sparring.problems import HELDOUT_TAG, Problem, heldout_tagged
from sparring.problems.families import FAMILIES, OP_TAG, SPECS, generate, renamed, task_tag
from sparring.problems.families.identity import prompt_key, source_key
from sparring.problems.families.spec import Task, render
from sparring.problems.families.special import LEVEL

NEW_TASKS, TRAINED_TASKS, NEW_FAMILIES = "new_tasks", "trained_tasks", "new_families"
NEW_OPS = "new_ops"  # the subset of new_tasks whose operation no training instance uses


def op_of(problem: Problem) -> str:
    """The `family/op` a spec family's instance computes ("" for any other problem)."""
    return next((t[len(OP_TAG) :] for t in problem.tags if t.startswith(OP_TAG)), "")


@dataclass
class FamilySets:
    train: list[Problem]
    heldout: dict[str, list[Problem]]  # set name -> instances, each tagged heldout:<set>
    dropped: dict[str, int] = field(default_factory=dict)  # set name -> instances dropped
    overlap: int = 0  # held-out instances (trained_tasks aside) computing a training task

    def heldout_problems(self) -> list[Problem]:
        return [p for problems in self.heldout.values() for p in problems]


@lru_cache(maxsize=64)
def family_task_keys(family: str, level: int) -> frozenset[str]:
    """The task key of every (op, constants) a family can draw at `level` (empty for a level
    it does not have)."""
    spec = SPECS.get(family)
    if spec is None or level not in spec.levels:
        return frozenset()
    keys = set()
    for op in spec.levels[level]:
        for combo in itertools.product(*op.consts.values()):
            task = Task(family, level, op.key, tuple(zip(op.consts, combo, strict=True)))
            draft = render(spec, task, random.Random(0))
            keys.add(source_key(draft.source, draft.name, draft.signature, level == LEVEL))
    return frozenset(keys)


def trained_families(families: Any) -> list[str]:
    """The families a run trains on: `families.families` (a config's data.families), or every
    family not in `families.heldout_families`."""
    named = list(families.families)
    return named or [f for f in FAMILIES if f not in families.heldout_families]


def configured_sets(families: Any) -> FamilySets:
    """`family_sets` as a config's data.families section (`families`) asks for them."""
    return family_sets(
        families.seed,
        families.per_family,
        trained_families(families),
        families.levels,
        families.heldout_seed,
        families.heldout_per_family,
        families.heldout_families,
        families.heldout_families_per_family or families.heldout_per_family,
    )


def family_sets(
    seed: int,
    per_family: int,
    families: Sequence[str],
    levels: Sequence[int],
    heldout_seed: int,
    heldout_per_family: int,
    heldout_families: Sequence[str] = (),
    heldout_families_per_family: int = 0,
) -> FamilySets:
    """Training instances of `families` under `seed`, and the three held-out sets under
    `heldout_seed`: `heldout_per_family` instances of each trained family and level before
    drops (none when it is 0), and `heldout_families_per_family` (else as many) of each
    held-out family and level."""
    train = generate(seed, per_family, families, levels)
    sets = FamilySets(train=train, heldout={})
    if not heldout_per_family:
        return sets
    train_tasks = {task_tag(p) for p in train}
    train_prompts = {prompt_key(p) for p in train}

    def keep(problems: list[Problem], banned_tasks: set[str] | frozenset[str], name: str) -> None:
        kept = [
            p
            for p in problems
            if task_tag(p) not in banned_tasks and prompt_key(p) not in train_prompts
        ]
        sets.dropped[name] = len(problems) - len(kept)
        sets.heldout[name] = heldout_tagged(kept, name)

    fresh = generate(heldout_seed, heldout_per_family, families, levels)
    keep(fresh, train_tasks, NEW_TASKS)
    train_ops = {op_of(p) for p in train}
    sets.heldout[NEW_TASKS] = [
        replace(p, tags=[*p.tags, HELDOUT_TAG + NEW_OPS])
        if op_of(p) and op_of(p) not in train_ops
        else p
        for p in sets.heldout[NEW_TASKS]
    ]

    # the renamed set is kept for comparison with earlier runs: half as large is enough
    renamed_per_pair = max(1, heldout_per_family // 2)
    shown_again = []
    for family in families:
        for level in levels:
            of_pair = [
                p for p in train if f"family:{family}" in p.tags and f"level:{level}" in p.tags
            ]
            shown_again += [renamed(p, str(heldout_seed)) for p in of_pair[:renamed_per_pair]]
    clash = [p for p in shown_again if prompt_key(p) in train_prompts]
    sets.dropped[TRAINED_TASKS] = len(clash)
    kept = [p for p in shown_again if p not in clash]
    sets.heldout[TRAINED_TASKS] = heldout_tagged(kept, TRAINED_TASKS)

    if heldout_families:
        every_trained_task = set(train_tasks).union(
            *(family_task_keys(f, level) for f in families for level in levels)
        )
        per_family = heldout_families_per_family or heldout_per_family
        other = generate(heldout_seed, per_family, heldout_families, levels)
        keep(other, every_trained_task, NEW_FAMILIES)

    sets.overlap = sum(
        task_tag(p) in train_tasks
        for name, problems in sets.heldout.items()
        if name != TRAINED_TASKS
        for p in problems
    )
    return sets


def describe(problems: Sequence[Problem]) -> dict[str, int]:
    """Instances, distinct tasks (task keys) and distinct prompts (names taken out)."""
    return {
        "instances": len(problems),
        "tasks": len({task_tag(p) for p in problems}),
        "prompts": len({prompt_key(p) for p in problems}),
    }
