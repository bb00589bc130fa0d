"""The selection study's tasks (docs/results/selection-2026-12-06-plan.md): held-out new tasks,
drawn as the materialize phase draws its `new_tasks` set.

`new_tasks` calls sparring.problems.families.sets' `family_sets` (the one overlap filter, not a
copy of it): instances of the config's trained families at its trained levels, drawn at the
study's seed, less every instance whose function some training problem computes (its task key:
the outputs on shared probe inputs, whatever the names) or whose prompt one shows. The training
problems are the config's data.families at its seed, levels and per_family: what a run trains
on. A subset of the trained families or levels is that draw restricted to them; a family or
level the config does not train is refused (its new tasks are not defined). Per level it counts
the instances drawn, dropped and kept and the distinct tasks kept. `sized_new_tasks` takes the
fewest instances a family and level that keep `MIN_TASKS` tasks at every level;
`with_trivial_passes` adds what trivial code passes (the honest credit and given view read it).

Covers: `NewTasks`, `new_tasks`, `sized_new_tasks`, `with_trivial_passes`. Does not cover: the
keys and the filter themselves (sparring.problems.families.identity and .sets), training
problems of other sources than the families (data.train's files are not compared), sampling
and rows (sparring.experiments.selection_rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparring.problems import Problem
from sparring.problems.families import family_and_level, task_tag

MIN_TASKS = 100  # tasks a level after the overlap drops the study wants: --per-family is sized
SIZING_STEPS = 32  # instances a family and level `sized_new_tasks` adds at most, one at a time


@dataclass(frozen=True)
class NewTasks:
    """Held-out new tasks: the kept `problems` (no trivial passes yet), the instances a family
    and level drawn, and per level what the overlap filter did ({"drawn", "dropped", "kept",
    "tasks"}: instances, and distinct task keys kept)."""

    problems: list[Problem]
    per_family: int
    levels: dict[str, dict[str, int]]

    def short(self, tasks: int = MIN_TASKS) -> list[str]:
        """The levels keeping fewer than `tasks` tasks."""
        return [level for level, c in self.levels.items() if c["tasks"] < tasks]


def new_tasks(
    families_cfg: Any, seed: int, per_family: int, families: Sequence[str], levels: Sequence[int]
) -> NewTasks:
    """The held-out new tasks of `families` at `levels` under `seed`, `per_family` drawn a
    family and level (the module docstring), from a config's data.families (`families_cfg`); a
    ValueError naming the flag when a family or level is not trained (new tasks of the trained
    ones are what the filter defines)."""
    from sparring.problems.families import FAMILIES
    from sparring.problems.families.sets import NEW_TASKS, family_sets, trained_families

    trained, trained_levels = trained_families(families_cfg), list(families_cfg.levels)
    if outside := [f for f in families if f not in trained]:
        raise ValueError(
            f"--families: {', '.join(outside)} not trained by the config (data.families: "
            f"{', '.join(trained)}); new tasks are of trained families"
        )
    if outside := [level for level in levels if level not in trained_levels]:
        raise ValueError(
            f"--levels: {', '.join(map(str, outside))} not trained by the config "
            f"(data.families.levels {trained_levels}); set data.families.levels to what the "
            "answerer trained on, or pass --no-heldout-filter"
        )
    sets = family_sets(
        families_cfg.seed, families_cfg.per_family, trained, trained_levels, seed, per_family
    )
    kept = [p for p in sets.heldout[NEW_TASKS] if family_and_level(p.tags)[0] in families]
    kept = [p for p in kept if family_and_level(p.tags)[1] in levels]
    counts = {}
    for level in levels:
        at = [p for p in kept if family_and_level(p.tags)[1] == level]
        # `generate` draws exactly per_family instances of each family at each of its levels
        drawn = per_family * sum(level in FAMILIES[f].levels for f in families)
        counts[str(level)] = {"drawn": drawn, "dropped": drawn - len(at), "kept": len(at),
                              "tasks": len({task_tag(p) for p in at})}  # fmt: skip
    return NewTasks(kept, per_family, counts)


def sized_new_tasks(
    families_cfg: Any,
    seed: int,
    families: Sequence[str],
    levels: Sequence[int],
    per_family: int = 0,
    tasks: int = MIN_TASKS,
) -> NewTasks:
    """`new_tasks` at `per_family`, or (0) at the fewest instances a family and level, from
    the count that would give `tasks` tasks a level before any drop, up to SIZING_STEPS more,
    keeping `tasks` tasks at every level (the last tried when none does: `short` says)."""
    from sparring.experiments.precheck import per_family_for

    if per_family:
        return new_tasks(families_cfg, seed, per_family, families, levels)
    start = per_family_for(len(families), 1, tasks)
    for size in range(start, start + SIZING_STEPS + 1):
        drawn = new_tasks(families_cfg, seed, size, families, levels)
        if not drawn.short(tasks):
            break
    return drawn


def with_trivial_passes(cfg: Any, problems: Sequence[Problem]) -> list[Problem]:
    """`problems` with the trivial solutions' passes computed (as the pre-check's problems)."""
    from sparring.problems import compute_trivial_passes
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import trusted_limits

    with Sandbox(trusted_limits(cfg)) as sb:
        return compute_trivial_passes(list(problems), sb)
