"""The parts every problem family is built from: the `Draft` of one instance, the `Family`
record, conditions with their text, source and test, and the seeded input generators.

Does not cover: the families themselves (sparring.families.numeric, sparring.families.text) or
choosing tests and checking instances (sparring.families).
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from string import Template
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
    op: str = ""  # a spec family's `family/op` (sparring.families.spec): the operation drawn

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


@dataclass(frozen=True)
class Cond:
    """A yes/no property with its English (`text`, fits "... that are TEXT"), its Python
    (`expr`, `$v` stands for the variable) and its trusted test."""

    text: str
    expr: str
    test: Callable[[Any], bool]
    word: str  # for function names: sum_<word>

    def src(self, var: str) -> str:
        return Template(self.expr).substitute(v=var)


def int_cond(rng: random.Random, kind: str) -> Cond:
    """A condition on an integer list element, with a fresh random constant."""
    if kind == "even":
        return Cond("even", "$v % 2 == 0", lambda x: x % 2 == 0, "even")
    if kind == "odd":
        return Cond("odd", "$v % 2 != 0", lambda x: x % 2 == 1, "odd")
    if kind == "gt":
        t = rng.randint(0, 25)
        return Cond(f"greater than {t}", f"$v > {t}", lambda x: x > t, rng.choice(["big", "large"]))
    if kind == "lt":
        t = rng.randint(-5, 20)
        return Cond(f"less than {t}", f"$v < {t}", lambda x: x < t, rng.choice(["small", "low"]))
    if kind == "div":
        k = rng.choice([3, 4, 5])
        return Cond(f"divisible by {k}", f"$v % {k} == 0", lambda x: x % k == 0, f"div{k}")
    if kind == "pos":
        return Cond("positive", "$v > 0", lambda x: x > 0, "positive")
    if kind == "neg":
        return Cond("negative", "$v < 0", lambda x: x < 0, "negative")
    raise ValueError(kind)


def code(text: str, **names: str) -> str:
    """A reference body from an indented template: `$name` placeholders filled, four spaces in."""
    body = Template(textwrap.dedent(text).strip("\n")).substitute(names)
    return textwrap.indent(body, "    ") + "\n"


def make(
    rng: random.Random,
    names: Sequence[str],
    params: Sequence[tuple[str, str]],
    returns: str,
    templates: Sequence[str],
    fields: dict[str, Any],
    body: str,
    impl: Callable[..., Any],
    edges: Sequence[Args],
    random_input: Callable[[random.Random], Args],
) -> Draft:
    """A Draft with its function name and its phrasing chosen by the seed."""
    template = rng.choice(list(templates))
    return Draft(
        name=rng.choice(list(names)),
        params=tuple(params),
        returns=returns,
        description=template.format(**fields),
        template=template,
        body=body,
        impl=impl,
        edge_inputs=tuple(edges),
        random_input=random_input,
    )


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


# kind -> plural noun, singular noun (with article), Python test of `$v`, name word
CHAR_CLASSES: dict[str, dict[str, str]] = {
    "vowel": {
        "pl": "vowels (a, e, i, o, u, lowercase or uppercase)",
        "sg": "vowel (a, e, i, o, u, lowercase or uppercase)",
        "a": "a vowel (a, e, i, o, u in either case)",
        "expr": "$v in 'aeiouAEIOU'",
        "word": "vowels",
    },
    "upper": {
        "pl": "uppercase letters",
        "sg": "uppercase letter",
        "a": "an uppercase letter",
        "expr": "$v.isupper()",
        "word": "upper",
    },
    "lower": {
        "pl": "lowercase letters",
        "sg": "lowercase letter",
        "a": "a lowercase letter",
        "expr": "$v.islower()",
        "word": "lower",
    },
    "digit": {
        "pl": "digits",
        "sg": "digit",
        "a": "a digit",
        "expr": "$v.isdigit()",
        "word": "digits",
    },
    "space": {
        "pl": "spaces",
        "sg": "space",
        "a": "a space",
        "expr": "$v == ' '",
        "word": "spaces",
    },
}
CHAR_TESTS: dict[str, Callable[[str], bool]] = {
    "vowel": lambda c: c.lower() in "aeiou",
    "upper": lambda c: "A" <= c <= "Z",
    "lower": lambda c: "a" <= c <= "z",
    "digit": lambda c: c in DIGITS,
    "space": lambda c: c == " ",
}


def char_cond(kind: str) -> Cond:
    cls = CHAR_CLASSES[kind]
    return Cond(cls["pl"], cls["expr"], CHAR_TESTS[kind], cls["word"])
