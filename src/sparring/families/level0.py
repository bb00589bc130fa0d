"""Level 0 of every problem family: one built-in step (a sum, a reversal, a count, a case
change), where SmolLM2-135M-Instruct still solves some instances.

Why a level below 1: sampled 8 times at temperature 0.7 on one instance of each family and
level (`sparring calibrate`, seed 2, 2026-11-26), the base model's mean reward was 0.052 at
level 1, 0.019 at level 2 and 0.028 at level 3, far below the 0.2-0.8 zone where GRPO has
something to follow: it writes the asked-for function with the right parameters and wrong logic
("return sum(arr) if arr > 4 else 0"). Level 0 asks for the step that such code almost is.

Covers: `LEVEL0` (family name -> builder of one level-0 Draft). Does not cover: choosing tests
and checking instances (sparring.families), levels 1-3 (numeric, text).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from sparring.families.base import (
    DICT_PARAMS,
    INT_LIST_PARAMS,
    INT_PARAMS,
    SENTENCE_PARAMS,
    STR_PARAMS,
    WORD_LIST_PARAMS,
    Draft,
    code,
    int_list,
    make,
    mixed_text,
    sentence,
)

LIST = "list[int]"
LIST_EDGES = ([],), ([7],), ([-3, 0, 5],), ([4, 4, 4],)
TEXT_EDGES = ("",), ("a",), ("aaBB  c",), ("Hello World 42",)
WORDS = ("a", "go", "cat", "tree", "apple", "sun", "book", "river", "sky", "zebra")
NAMES = ("ann", "bob", "cy", "dan", "eve", "finn", "gus", "ivy")


def _draw_list(r: random.Random) -> tuple:
    return (int_list(r, 2, 8),)


def _draw_text(r: random.Random) -> tuple:
    return (mixed_text(r),)


def _filter(rng: random.Random) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    return make(
        rng, ["total", "list_sum", "sum_all"], ((p, LIST),), "int",
        ["Return the sum of all the numbers in {p} (0 for an empty list).",
         "Given a list of integers {p}, add up all of its elements and return the total; the "
         "total of an empty list is 0.",
         "Return the total of the elements of {p}."],
        {"p": p}, code("return sum($p)", p=p), lambda xs: sum(xs), LIST_EDGES, _draw_list,
    )  # fmt: skip


def _adjacent(rng: random.Random) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    body = code("return max($p) - min($p) if $p else 0", p=p)
    return make(
        rng, ["spread", "value_range", "max_minus_min"], ((p, LIST),), "int",
        ["Return the largest number in {p} minus the smallest one (0 for an empty list).",
         "Given a list of integers {p}, return the difference between its maximum and its "
         "minimum; return 0 when {p} is empty.",
         "Return max({p}) - min({p}), or 0 if {p} has no elements."],
        {"p": p}, body, lambda xs: max(xs) - min(xs) if xs else 0, LIST_EDGES, _draw_list,
    )  # fmt: skip


def _window(rng: random.Random) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    k = rng.randint(2, 3)
    return make(
        rng, [f"first_{k}_sum", f"sum_first_{k}", "head_total"], ((p, LIST),), "int",
        ["Return the sum of the first {k} elements of {p} (of all of them if {p} has fewer "
         "than {k}).",
         "Given a list of integers {p}, add up its first {k} elements and return the total; a "
         "shorter list adds up whatever it has.",
         "Return sum({p}[:{k}])."],
        {"p": p, "k": k}, code(f"return sum($p[:{k}])", p=p), lambda xs: sum(xs[:k]),
        LIST_EDGES, _draw_list,
    )  # fmt: skip


def _prefix(rng: random.Random) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    return make(
        rng, ["last_or_none", "final_element", "last_item"], ((p, LIST),), "int | None",
        ["Return the last element of {p}, or None if {p} is empty.",
         "Given a list of integers {p}, return its final element; return None for an empty "
         "list.",
         "Return {p}[-1] when {p} is not empty, else None."],
        {"p": p}, code("return $p[-1] if $p else None", p=p),
        lambda xs: xs[-1] if xs else None, LIST_EDGES, _draw_list,
    )  # fmt: skip


def _rearrange(rng: random.Random) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    return make(
        rng, ["reversed_list", "backwards", "reverse_order"], ((p, LIST),), LIST,
        ["Return a new list with the elements of {p} in reverse order.",
         "Given a list of integers {p}, return the list read from the last element to the "
         "first.",
         "Return {p} reversed, as a new list."],
        {"p": p}, code("return $p[::-1]", p=p), lambda xs: xs[::-1], LIST_EDGES, _draw_list,
    )  # fmt: skip


def _clamp(rng: random.Random) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    k = rng.choice([2, 3, 10])
    return make(
        rng, [f"times_{k}", f"scale_by_{k}", f"multiply_{k}"], ((p, LIST),), LIST,
        ["Return a new list with every element of {p} multiplied by {k}.",
         "Given a list of integers {p}, return the list of each element times {k}, in the same "
         "order.",
         "Multiply each number in {p} by {k} and return the results as a list."],
        {"p": p, "k": k}, code(f"return [x * {k} for x in $p]", p=p),
        lambda xs: [x * k for x in xs], LIST_EDGES, _draw_list,
    )  # fmt: skip


def _digits(rng: random.Random) -> Draft:
    p = rng.choice(INT_PARAMS)
    return make(
        rng, ["digit_sum", "sum_of_digits", "add_digits"], ((p, "int"),), "int",
        ["Return the sum of the decimal digits of {p}. {p} is never negative.",
         "Given a non-negative integer {p}, add up its digits and return the total.",
         "Return the total of the digits of the non-negative integer {p}."],
        {"p": p}, code("return sum(int(d) for d in str($p))", p=p),
        lambda n: sum(int(d) for d in str(n)), ((0,), (7,), (10,), (999,)),
        lambda r: (r.randint(10, 99999),),
    )  # fmt: skip


def _multiples(rng: random.Random) -> Draft:
    p = rng.choice(INT_PARAMS)
    return make(
        rng, ["sum_to", "triangle", "sum_up_to"], ((p, "int"),), "int",
        ["Return 1 + 2 + ... + {p}, the sum of the integers from 1 to {p} (0 when {p} is 0). "
         "{p} is never negative.",
         "Given a non-negative integer {p}, add up every integer from 1 to {p} and return the "
         "total.",
         "Return the sum of all whole numbers from 1 up to and including {p} ({p} >= 0)."],
        {"p": p}, code("return sum(range(1, $p + 1))", p=p),
        lambda n: n * (n + 1) // 2, ((0,), (1,), (2,), (10,)), lambda r: (r.randint(3, 60),),
    )  # fmt: skip


def _char_count(rng: random.Random) -> Draft:
    p = rng.choice(STR_PARAMS)
    ch = rng.choice("abesxz")
    return make(
        rng, [f"count_{ch}", f"num_{ch}", f"how_many_{ch}"], ((p, "str"),), "int",
        ["Return how many times the lowercase letter '{ch}' appears in {p}.",
         "Given a string {p}, count the characters equal to '{ch}' (lowercase only) and return "
         "the count.",
         "Return the number of '{ch}' characters in {p}."],
        {"p": p, "ch": ch}, code(f"return $p.count('{ch}')", p=p), lambda s: s.count(ch),
        (*TEXT_EDGES, (ch * 3,), (f"x{ch}{ch.upper()}{ch}",)), _draw_text,
    )  # fmt: skip


def _char_transform(rng: random.Random) -> Draft:
    p = rng.choice(STR_PARAMS)
    upper = rng.random() < 0.5
    case = "uppercase" if upper else "lowercase"
    method = "upper" if upper else "lower"
    return make(
        rng, [f"to_{method}", f"all_{method}", f"{method}_text"], ((p, "str"),), "str",
        ["Return {p} with every letter changed to {case}.",
         "Given a string {p}, return the same string in {case} letters; other characters stay "
         "as they are.",
         "Return the {case} version of the string {p}."],
        {"p": p, "case": case}, code(f"return $p.{method}()", p=p),
        (lambda s: s.upper()) if upper else (lambda s: s.lower()), TEXT_EDGES, _draw_text,
    )  # fmt: skip


def _word_ops(rng: random.Random) -> Draft:
    p = rng.choice(SENTENCE_PARAMS)
    return make(
        rng, ["word_count", "count_words", "num_words"], ((p, "str"),), "int",
        ["Return the number of words in {p}; words are separated by spaces.",
         "Given a sentence {p}, count its space-separated words and return the count (0 for "
         "an empty string).",
         "Return how many words the string {p} has, splitting on whitespace."],
        {"p": p}, code("return len($p.split())", p=p), lambda s: len(s.split()),
        (("",), ("one",), ("two  words",), ("a b c d e",)), lambda r: (sentence(r),),
    )  # fmt: skip


def _char_freq(rng: random.Random) -> Draft:
    p = rng.choice(STR_PARAMS)
    return make(
        rng, ["distinct_chars", "unique_count", "num_distinct"], ((p, "str"),), "int",
        ["Return the number of different characters in {p}.",
         "Given a string {p}, count how many distinct characters it contains (each character "
         "counted once) and return the count.",
         "Return len(set({p})): how many unique characters {p} has."],
        {"p": p}, code("return len(set($p))", p=p), lambda s: len(set(s)),
        (*TEXT_EDGES, ("aaaa",)), _draw_text,
    )  # fmt: skip


def _group_words(rng: random.Random) -> Draft:
    p = rng.choice(WORD_LIST_PARAMS)
    return make(
        rng, ["word_lengths", "length_of_each", "lengths_by_word"], ((p, "list[str]"),),
        "dict[str, int]",
        ["Return a dict that maps each word in {p} to its length.",
         "Given a list of words {p}, return a dictionary whose keys are the words and whose "
         "values are their numbers of letters.",
         "Build and return a dict from each word in {p} to len(word)."],
        {"p": p}, code("return {w: len(w) for w in $p}", p=p),
        lambda ws: {w: len(w) for w in ws}, (([],), (["go"],), (["cat", "cat", "a"],)),
        lambda r: ([r.choice(WORDS) for _ in range(r.randint(2, 6))],),
    )  # fmt: skip


def _dict_values(rng: random.Random) -> Draft:
    p = rng.choice(DICT_PARAMS)

    def draw(r: random.Random) -> tuple:
        return ({key: r.randint(-10, 40) for key in r.sample(NAMES, r.randint(2, 6))},)

    return make(
        rng, ["values_total", "sum_values", "total_of_values"], ((p, "dict[str, int]"),), "int",
        ["Return the sum of all the values in the dict {p} (0 for an empty dict).",
         "Given a dictionary {p} mapping names to integers, add up its values and return the "
         "total.",
         "Return the total of {p}.values()."],
        {"p": p}, code("return sum($p.values())", p=p), lambda d: sum(d.values()),
        (({},), ({"ann": 5},), ({"bob": -4, "eve": 4},)), draw,
    )  # fmt: skip


SUMMARY = {
    "filter_aggregate": "sum of all the elements",
    "adjacent": "largest minus smallest element",
    "window": "sum of the first k elements",
    "prefix": "the last element, None if empty",
    "rearrange": "the list reversed",
    "clamp": "every element multiplied by k",
    "digits": "sum of the digits",
    "multiples": "sum of 1..n",
    "char_count": "occurrences of one character",
    "char_transform": "the string in upper or lower case",
    "word_ops": "number of words",
    "char_freq": "number of distinct characters",
    "group_words": "each word mapped to its length",
    "dict_values": "sum of the values",
}
LEVEL0: dict[str, Callable[[random.Random], Draft]] = {
    "filter_aggregate": _filter,
    "adjacent": _adjacent,
    "window": _window,
    "prefix": _prefix,
    "rearrange": _rearrange,
    "clamp": _clamp,
    "digits": _digits,
    "multiples": _multiples,
    "char_count": _char_count,
    "char_transform": _char_transform,
    "word_ops": _word_ops,
    "char_freq": _char_freq,
    "group_words": _group_words,
    "dict_values": _dict_values,
}
