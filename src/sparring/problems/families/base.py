"""The parts every problem family is built from: the `Draft` of one instance, the `Family`
record, the parameter names and the seeded input generators.

Does not cover: the families themselves (sparring.problems.families.catalog), drawing and rendering
(sparring.problems.families.spec), or choosing tests and checking instances
(sparring.problems.families).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Args = tuple[Any, ...]

# Names a family picks its parameters from; none of them is a local name of a reference body
# (x, ch, d, w, i, out, total, best, ...), so a body never shadows its own argument.
INT_LIST_PARAMS = ("nums", "values", "xs", "items", "data", "arr")
INT_PARAMS = ("n", "num", "number", "value")
STR_PARAMS = ("s", "text", "line", "msg")
SENTENCE_PARAMS = ("text", "s", "phrase", "line")
WORD_LIST_PARAMS = ("names", "tokens", "items", "entries")
DICT_PARAMS = ("scores", "counts", "prices", "stock", "points")


@dataclass(frozen=True)
class Draft:
    """One instance before its tests are chosen: the text the model sees, the trusted `impl`
    that computes expected values, the reference `body` that must agree with it, and where
    inputs come from (`edge_inputs` always go in; `random_input` fills up)."""

    name: str
    params: tuple[tuple[str, str], ...]  # (name, annotation)
    returns: str
    description: str
    template: str  # the unformatted description: tests count phrasings with it
    body: str  # indented four spaces
    impl: Callable[..., Any]
    edge_inputs: tuple[Args, ...]
    random_input: Callable[[random.Random], Args]
    op: str = (
        ""  # a spec family's `family/op` (sparring.problems.families.spec): the operation drawn
    )
    # a derived level's op without its stated case (levels 2 and 3): what an answer that
    # ignores the stated value computes
    plain: Callable[..., Any] | None = None
    special: Args | None = None  # level 3: the input of the stated case's test

    @property
    def signature(self) -> str:
        args = ", ".join(f"{name}: {annotation}" for name, annotation in self.params)
        return f"def {self.name}({args}) -> {self.returns}:"

    @property
    def source(self) -> str:
        return f"{self.signature}\n{self.body}"


@dataclass(frozen=True)
class Family:
    name: str
    domain: str  # lists, strings, integers or mappings
    description: str
    levels: dict[int, str]  # level -> what an instance asks at that level
    build: Callable[[random.Random, int], Draft]


def int_list(
    rng: random.Random, min_len: int = 2, max_len: int = 8, lo: int = -20, hi: int = 50
) -> list[int]:
    # a third of the lists draw from a few values, so ties and repeats show up often
    n = rng.randint(min_len, max_len)
    if rng.random() < 0.3:
        pool = [rng.randint(lo, hi) for _ in range(3)]
        return [rng.choice(pool) for _ in range(n)]
    return [rng.randint(lo, hi) for _ in range(n)]


LOWER = "abcdeiostxyz"
UPPER = "ABEIOSTXYZ"
DIGITS = "0123456789"


def mixed_text(rng: random.Random, min_len: int = 3, max_len: int = 12) -> str:
    """A short string of lowercase and uppercase letters, digits and spaces, runs included."""
    out: list[str] = []
    for _ in range(rng.randint(min_len, max_len)):
        if out and rng.random() < 0.2:
            out.append(out[-1])  # repeated characters
            continue
        pool = rng.choice([LOWER, LOWER, UPPER, DIGITS, " "])
        out.append(rng.choice(pool))
    return "".join(out)


SHORT_WORDS = (
    "a", "an", "go", "cat", "dog", "sun", "sky", "red", "oak", "tree", "moon", "fish", "book",
    "lamp", "kite", "blue", "apple", "river", "stone", "green", "hello", "world", "zebra",
    "garden", "purple",
)  # fmt: skip


def sentence(rng: random.Random, min_words: int = 2, max_words: int = 6) -> str:
    return " ".join(rng.choice(SHORT_WORDS) for _ in range(rng.randint(min_words, max_words)))
