"""The pieces the family specs are built from: input drawers, phrasing frames, the ranges
constants are drawn from, and the `op` / `cond_ops` shorthands for one operation.

Covers: what sparring.problems.families.catalog and sparring.problems.families.catalog_lists share.
Does not
cover: the specs themselves (those two modules), drawing and rendering
(sparring.problems.families.spec).
"""

from __future__ import annotations

import random

from sparring.problems.families.base import SHORT_WORDS, int_list, mixed_text, sentence
from sparring.problems.families.spec import Op

LIST = "list[int]"
K_SMALL = tuple(range(2, 11))
K_ANY = tuple(range(-5, 16))
K_POS = tuple(range(1, 13))
LETTERS = tuple("abcdeiostxyz")  # the letters mixed_text draws from
NAMES = ("ann", "bob", "cy", "dan", "eve", "finn", "gus", "ivy")

LIST_FRAMES = (
    "{Task}.",
    "Given a list of integers {p}, {task}.",
    "Write a function that takes a list of integers {p} and should {task}.",
)
INT_FRAMES = (
    "{Task}. {p} is never negative.",
    "Given a non-negative integer {p}, {task}.",
    "Write a function that takes a non-negative integer {p} and should {task}.",
)
TEXT_FRAMES = (
    "{Task}.",
    "Given a string {p}, {task}.",
    "Write a function that takes a string {p} and should {task}.",
)
SENTENCE_FRAMES = ("{Task}. Words are separated by single spaces.", "Given a sentence {p}, {task}.")
WORDS_FRAMES = (
    "{Task}.",
    "Given a list of words {p}, {task}.",
    "Write a function that takes a list of strings {p} and should {task}.",
)
PAIR_FRAMES = (
    "{Task}.",
    "Given two integers {p} and {q}, {task}.",
    "Write a function that takes two integers, {p} and {q}, and should {task}.",
)
DICT_FRAMES = (
    "{Task}.",
    "Given a dict {p} that maps names to integers, {task}.",
    "Write a function that takes a dict {p} from names to integers and should {task}.",
)


def draw_int_list(rng: random.Random) -> tuple:
    # half the lists draw from a small range, so counts, ties and repeats show up often
    if rng.random() < 0.5:
        return (int_list(rng, 2, 8, -3, 12),)
    return (int_list(rng, 2, 8),)


def draw_nonneg(rng: random.Random) -> tuple:
    return (rng.choice([rng.randint(0, 30), rng.randint(10, 999), rng.randint(100, 99999)]),)


def draw_text(rng: random.Random) -> tuple:
    return (mixed_text(rng),)


def draw_sentence(rng: random.Random) -> tuple:
    return (sentence(rng, 1, 6),)


def draw_words(rng: random.Random) -> tuple:
    return ([rng.choice(SHORT_WORDS) for _ in range(rng.randint(1, 6))],)


def draw_pair(rng: random.Random) -> tuple:
    return (rng.randint(-20, 40), rng.randint(1, 30))


def draw_mapping(rng: random.Random) -> tuple:
    return ({k: rng.randint(-10, 40) for k in rng.sample(NAMES, rng.randint(2, 6))},)


def draw_int_range_input(rng: random.Random) -> tuple:
    return (rng.randint(2, 40),)


def op(key: str, names: str, consts: dict, text: str, code: str, returns: str = "") -> Op:
    """An `Op` from one row of a spec: function-name templates separated by spaces, each
    constant's choices (a range, a string of characters or a tuple), one phrasing, the code."""
    choices = {k: tuple(v) for k, v in consts.items()}
    return Op(key, tuple(names.split()), (text,), code, choices, returns)


def cond_ops(
    prefix: str, names: str, what: str, build: str, joiner: str = " that are "
) -> tuple[Op, ...]:
    """One op per element condition (greater than k, even, divisible by k, ...): `build` is
    Python with {cond} over x; the phrasing is `what` + `joiner` + the condition; in `names`,
    {c} stands for the condition's key."""
    conds = (
        ("gt", "greater than {k}", "x > {k}", {"k": K_ANY}),
        ("lt", "less than {k}", "x < {k}", {"k": K_ANY}),
        ("eq", "equal to {k}", "x == {k}", {"k": (-2, -1, *range(1, 10))}),  # 0: sum is constant
        ("even", "even", "x % 2 == 0", {}),
        ("odd", "odd", "x % 2 != 0", {}),
        ("pos", "positive", "x > 0", {}),
        ("neg", "negative", "x < 0", {}),
        ("div", "divisible by {k}", "x % {k} == 0", {"k": (3, 4, 5, 6, 7)}),
    )
    return tuple(
        op(
            f"{prefix}_{key}",
            " ".join(n.format(c=key) + ("_{k}" if consts else "") for n in names.split()),
            consts,
            what + joiner + text,
            build.format(cond=cond, p="{p}"),
        )
        for key, text, cond, consts in conds
    )


# Each op below: op(key, "function-name templates", {constant: choices}, phrasing, code).
