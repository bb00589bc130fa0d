"""Task identity: which function an instance computes, and which prompt it shows, with names
and phrasing taken out.

`task_key` runs a reference solution on a fixed probe pool of inputs of its parameter types
and hashes the outputs (an exception counts as an output: its type's name), so two instances
share a key exactly when they compute the same function on the pool, whatever their function
and parameter names or their wording. A level-3 instance (a stated value at a special input,
sparring.problems.families.special) is probed on the pool plus the canonical input of every sentinel
its types can draw, so two level-3 tasks that differ only in their special input or value get
two keys; the keys of other instances are computed as before (a level-3 function never equals
one of a lower level: it differs from its own op at its special input by construction).
`prompt_key` is the description lowercased, whitespace collapsed, with the parameter names
replaced by placeholders: a renamed copy of one prompt has the same prompt key.

Covers: the probe pools and both keys. References are run in-process: only for this package's
own references (the families) and the bundled problems, never for model output. Does not
cover: what to do with the keys (sparring.problems.families.sets, sparring.phases.materialize).
"""

from __future__ import annotations

import copy
import hashlib
import random
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from sparring.problems import Problem
from sparring.problems.families.base import SHORT_WORDS
from sparring.problems.families.special import LEVEL_TAG, special_probes

# Inputs valid for every family of a type, small enough that the slowest reference (a prime
# count by trial division) runs in milliseconds, and varied enough that two constants of one
# op (a count above 3 and above 7) give different outputs.
INT_POOL = (
    *range(0, 21),
    25,
    36,
    49,
    64,
    99,
    100,
    101,
    120,
    255,
    505,
    987,
    1020,
    1203,
    -1,
    -3,
    -10,
)
STR_POOL = (
    "",
    "a",
    "A",
    "e",
    "ab",
    "aB c",
    "xyz",
    "zzz",
    "TeSt",
    "  ",
    "racecar",
    "banana",
    "hello world",
    "Hello World 42",
    "aaBB  c",
    "12 abc",
    "the cat",
    "go to the sky",
    "a b c d e",
    "sky is blue",
    "Oak tree 7",
    "iiooo",
    "x1y2z3",
    "stress test",
    "0110",
    "bob-eve_cy",
    "RIVER",
    "lamp, kite",
    # every word the sentence families draw from, so that counting one word differs from another
    *(" ".join(SHORT_WORDS[i::5] + SHORT_WORDS[i::3]) for i in range(5)),
)
INT_LIST_POOL = (
    [],
    [0],
    [7],
    [-3],
    [1, 2, 3],
    [3, 2, 1],
    [4, 4, 4],
    [-3, 0, 5],
    [10, -2, 8, 8, 1],
    [5, 1, 9, 2, 7, 3],
    [0, -1, -2],
    [2, 4, 6, 8, 10, 12],
    [1, 3, 5, 7],
    [11, -7, 3, 0, 3, 20, 14],
    [-5, -5, 8, 2],
    [9, 8, 7, 6, 5, 4, 3, 2, 1],
    [12, 30, 45],
    [6, 3, 9, 3, 6, 15, 1, 2],
    [100, -50],
    [13, 17, 19, 23, 16],
    [0, 0, 5, 0],
    [-20, 44, 7, 7, 35],
    [25, 24, 21, 18],
    [2, 2],
    [1, 14, 6, 10, 9, 5],
    [-4, 6, -5, 1],
    [-1, -2, -3, -4, -5, -6],
)
WORD_LIST_POOL = (
    [],
    ["go"],
    ["cat", "cat", "a"],
    ["apple", "river", "sky"],
    ["a", "an", "tree", "garden"],
    ["Hello", "world"],
    ["zebra", "moon", "book", "kite", "blue"],
    ["stone", "oak"],
    ["red", "green", "purple", "sun"],
    ["fish", "lamp", "to", "be", "or"],
    ["world"],
    *(list(SHORT_WORDS[i::4] + SHORT_WORDS[i::3]) for i in range(4)),
)
DICT_POOL = (
    {},
    {"ann": 5},
    {"bob": -4, "eve": 4, "cy": 4},
    {"ann": 3, "dan": 10, "ivy": -2},
    {"gus": 20, "finn": 0, "bob": 7, "eve": 7},
    {"cy": 31, "ann": 12, "dan": 6},
    {"eve": -8, "ivy": 15},
    {"finn": 2, "gus": 9, "ann": 40, "bob": 1, "cy": 11},
)
POOLS: dict[str, Sequence[Any]] = {
    "int": INT_POOL,
    "str": STR_POOL,
    "list[int]": INT_LIST_POOL,
    "list[str]": WORD_LIST_POOL,
    "dict[str, int]": DICT_POOL,
}
MULTI_ARG_PROBES = 64  # argument tuples drawn for a function of several parameters


def parameter_types(signature: str) -> tuple[str, ...]:
    """The annotations of a `def` line's parameters ('' for none).

    >>> parameter_types("def f(xs: list[int], d: dict[str, int]) -> int:")
    ('list[int]', 'dict[str, int]')
    """
    inside = signature[signature.index("(") + 1 : signature.rindex(")")]
    params, depth, current = [], 0, ""
    for ch in inside:
        depth += (ch in "[(") - (ch in "])")
        if ch == "," and depth == 0:
            params.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        params.append(current)
    return tuple(p.partition(":")[2].split("=")[0].strip() for p in params)


@lru_cache(maxsize=64)
def probe_inputs(types: tuple[str, ...], special: bool = False) -> tuple[tuple[Any, ...], ...]:
    """The fixed argument tuples a function of these parameter types is probed with: every
    value of the pool for one parameter, a seeded draw of combinations for several; with
    `special` (a level-3 task), then the canonical special inputs of these types. A type
    with no pool has none (the key then rests on the name of the types alone)."""
    if not types or any(t not in POOLS for t in types):
        return ()
    extra = special_probes(types) if special else ()
    if len(types) == 1:
        return (*((value,) for value in POOLS[types[0]]), *extra)
    rng = random.Random("probe:" + ",".join(types))
    drawn = tuple(tuple(rng.choice(list(POOLS[t])) for t in types) for _ in range(MULTI_ARG_PROBES))
    return (*drawn, *extra)


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    try:
        return repr(fn(*copy.deepcopy(args)))
    except Exception as exc:  # a function that raises on an input still has a behaviour there
        return "!" + type(exc).__name__


def behaviour_key(fn: Callable[..., Any], types: tuple[str, ...], special: bool = False) -> str:
    """16 hex digits from the parameter types and the outputs of `fn` on their probe pool
    (with the special inputs when `special`)."""
    outcomes = [_outcome(fn, args) for args in probe_inputs(types, special)]
    text = ",".join(types) + "\n" + "\n".join(outcomes)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=8192)
def source_key(source: str, name: str, signature: str, special: bool = False) -> str:
    """`behaviour_key` of the function `name` defined by `source` (trusted code only)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return behaviour_key(namespace[name], parameter_types(signature), special)


def task_key(problem: Problem) -> str:
    """The key of the function the problem's reference solution computes (probed at the
    special inputs too for a level-3 family instance)."""
    special = LEVEL_TAG in problem.tags
    return source_key(
        problem.reference_solution, problem.function_name, problem.function_signature, special
    )


def prompt_key(problem: Problem) -> str:
    """The description lowercased and whitespace-collapsed, each parameter name replaced by
    `<i>` and the function name by `<f>`: renamed copies of one prompt share it."""
    text = " ".join(problem.description.split())
    inside = problem.function_signature.partition("(")[2].rpartition(")")[0]
    names = [part.split(":")[0].strip() for part in re.split(r",(?![^\[]*\])", inside)]
    for i, name in enumerate(n for n in names if n):
        text = re.sub(rf"\b{re.escape(name)}\b", f"<{i}>", text)
    text = re.sub(rf"\b{re.escape(problem.function_name)}\b", "<f>", text)
    return text.lower()
