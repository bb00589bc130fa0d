"""Level 3 of a spec family: a stated value at a special input drawn per task.

Each level-0 op, with "..., except return V if <p> is S" (or "contains S", "has the key S"):
the sentinel S and the value V are constants of the task, drawn from the menus below, so two
tasks that differ only in S or V are two functions (their task keys differ: the probe pool of a
level-3 key holds every sentinel's canonical input, `special_probes`).

Why these menus (issue 73, item 1): the issue wants a case that only a reader of the text finds.
Level 2's case (the empty input) is one a fuzzer draws by type alone; level 3's sentinel is one
that neither the family's typical inputs nor type-driven random inputs meet, except rarely:

- an integer parameter: a three-digit value (the int families draw 2..40 or -20..40, or 0..99999
  where the typical draw is redrawn when it meets the sentinel: sparring.problems.families.spec);
- a string: a word with a 'j' or a 'q', letters that neither the strings nor the sentences of
  the families contain (mixed_text's alphabet, SHORT_WORDS), as a substring;
- a list of integers: an element far outside the typical -20..50;
- a list of words: a word with a 'j' or a 'q', as an element;
- a mapping: a key that is not one of the names the mappings draw from.

The value is one that no trivial solution returns and that the op without its stated case does
not return at the special test's input (sparring.problems.families.spec.stated_case_shows, checked
when
the task is drawn and when its special input is): the test earns credit, and it fails an answer
that leaves the case out. The special test is an edge test, so K typical given tests never show
it. `scripts/special_input_rarity.py` measures how often random inputs meet it.

Covers: the menus, the triggers, the derivation (`with_stated_special`) and the probes of level
3 keys. Does not cover: drawing and rendering (sparring.problems.families.spec), task keys
(sparring.problems.families.identity).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sparring.problems.families.base import Args
from sparring.problems.families.spec import (
    OTHER_ARGUMENTS,
    FamilySpec,
    Trigger,
    canonical_args,
    guarded,
)

LEVEL = 3
LEVEL_TAG = f"level:{LEVEL}"


def _plant_in_text(value: str, sentinel: str, rng: random.Random) -> str:
    at = rng.randint(0, len(value))
    return value[:at] + sentinel + value[at:]


def _plant_in_list(value: list, sentinel: Any, rng: random.Random) -> list:
    out = list(value)
    out.insert(rng.randint(0, len(out)), sentinel)
    return out


def _plant_in_mapping(value: dict, sentinel: str, rng: random.Random) -> dict:
    items = list(value.items())
    items.insert(rng.randint(0, len(items)), (sentinel, rng.randint(-10, 40)))
    return dict(items)


def _same(value: Any, sentinel: Any, rng: random.Random) -> Any:
    return sentinel


def _listed(sentinel: Any) -> list:
    return [sentinel]


def _itself(sentinel: Any) -> Any:
    return sentinel


def _keyed(sentinel: str) -> dict:
    return {sentinel: 5}


# by the annotation of the first parameter
TRIGGERS: Mapping[str, Trigger] = {
    "int": Trigger("{p} == {s}", "{p} is {s!r}", _same, _itself),
    "str": Trigger("{s} in {p}", "{p} contains {s!r}", _plant_in_text, _itself),
    "list[int]": Trigger("{s} in {p}", "{p} contains {s!r}", _plant_in_list, _listed),
    "list[str]": Trigger("{s} in {p}", "{p} contains the word {s!r}", _plant_in_list, _listed),
    "dict[str, int]": Trigger("{s} in {p}", "{p} has the key {s!r}", _plant_in_mapping, _keyed),
}
WORDS = ("quiz", "jam", "jog", "quip", "jet", "joy", "aqua", "jab")
SENTINELS: Mapping[str, tuple[Any, ...]] = {
    "int": (137, 248, 316, 429, 583, 621, 742, 865),
    "str": WORDS,
    "list[int]": (-808, -505, -222, 111, 333, 606, 777, 909),
    "list[str]": WORDS,
    "dict[str, int]": ("quinn", "jo", "jack", "jade", "jules", "quincy", "jay", "joan"),
}
# by return annotation: none is a constant a trivial solution returns, and each is checked
# against the echoes and the length at the special input when a task is drawn
VALUES: Mapping[str, tuple[Any, ...]] = {
    "int": (42, 77, 99, 555),
    "int | None": (42, 77, 99, 555),
    "str": ("found", "stop", "special", "secret"),
    "list[int]": ([0], [99], [1, 2, 3], [-1, -1]),
    "list[str]": (["found"], ["stop"], ["special", "case"], ["none"]),
}


def with_stated_special(spec: FamilySpec) -> FamilySpec:
    """`spec` with level 3: each level-0 op whose return type has a `VALUES` entry, returning
    the drawn value {v} where its first parameter meets the trigger for the drawn sentinel
    {s}, as the phrasing now states. Unchanged when the first parameter's type has no trigger
    or no op qualifies."""
    first = spec.params[0][1]
    trigger = TRIGGERS.get(first)
    if trigger is None or any(a not in OTHER_ARGUMENTS for _, a in spec.params[1:]):
        return spec
    ops = []
    for o in spec.levels.get(0, ()):
        returns = o.returns or spec.returns
        if returns not in VALUES:
            continue
        if {"s", "v"} & set(o.consts):
            raise ValueError(f"{spec.name}/{o.key}: constants s and v are level 3's")
        code = guarded(o.code, trigger.guard, "{v}")
        texts = tuple(f"{text}, except return {{v!r}} if {trigger.when}" for text in o.texts)
        consts = {**o.consts, "s": SENTINELS[first], "v": VALUES[returns]}
        ops.append(
            replace(
                o,
                texts=texts,
                code=code,
                consts=consts,
                returns=returns,
                plain=o.code,
                trigger=trigger,
            )
        )
    if not ops:
        return spec
    return replace(spec, levels={**spec.levels, LEVEL: tuple(ops)})


def special_probes(types: tuple[str, ...]) -> tuple[Args, ...]:
    """The canonical special input of every sentinel a level-3 task of these parameter types
    can draw (none for types without a trigger): a level-3 task key probes them, so the
    sentinel and the value are part of the behaviour compared."""
    trigger = TRIGGERS.get(types[0]) if types else None
    if trigger is None or any(t not in OTHER_ARGUMENTS for t in types[1:]):
        return ()
    return tuple(canonical_args(trigger, s, types) for s in SENTINELS[types[0]])
