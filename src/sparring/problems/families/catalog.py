"""The drawn-operation families, as data: sixteen `FamilySpec`s read by
sparring.problems.families.spec.

Why one module: the ten families beside the list ones and the SPECS table are one table, read
top to bottom. The six list families are in sparring.problems.families.catalog_lists, the pieces
every
spec is built from (input drawers, frames, constant ranges, `op`) in sparring.problems.families.ops.

Level 0 is one step with drawn constants (a count above k, every element plus k, the first k
characters), the kind of step SmolLM2-135M-Instruct gets right part of the time; level 1 is two
steps (filter then aggregate, transform then filter); level 2 is level 0 with a stated value for
the empty input, derived (sparring.problems.families.spec.with_stated_empty); level 3 is level 0
with a
stated value at a special input drawn per task, derived too
(sparring.problems.families.special.with_stated_special). Two families use
operations that no other family uses (digits of an integer, keys of a mapping):
`NEW_FAMILIES`, the held-out new-family set of configs/learn.yaml.

Covers: the specs. Does not cover: drawing and rendering (sparring.problems.families.spec), choosing
tests and checking instances (sparring.problems.families), task identity
(sparring.problems.families.identity).
"""

from __future__ import annotations

from sparring.problems.families.base import DICT_PARAMS as DICTS
from sparring.problems.families.base import INT_PARAMS as INTS
from sparring.problems.families.base import SENTENCE_PARAMS as SENTENCES
from sparring.problems.families.base import STR_PARAMS as TEXTS
from sparring.problems.families.base import WORD_LIST_PARAMS as WORD_LISTS
from sparring.problems.families.catalog_lists import (
    LIST_COUNT,
    LIST_FILTER,
    LIST_INDEX,
    LIST_MAP,
    LIST_SLICE,
    LIST_STAT,
)
from sparring.problems.families.ops import (
    DICT_FRAMES,
    INT_FRAMES,
    K_SMALL,
    NAMES,
    PAIR_FRAMES,
    SENTENCE_FRAMES,
    TEXT_FRAMES,
    WORDS_FRAMES,
    draw_int_range_input,
    draw_mapping,
    draw_nonneg,
    draw_pair,
    draw_sentence,
    draw_text,
    draw_words,
    op,
)
from sparring.problems.families.spec import FamilySpec, with_stated_empty
from sparring.problems.families.special import with_stated_special

# fmt: off
INT_ARITH = FamilySpec(
    "int_arith", "integers", "arithmetic on one integer",
    params=((INTS, "int"),), returns="int", frames=INT_FRAMES,
    edges=((0,), (1,), (10,)),
    draw=draw_nonneg,
    levels={
        0: (
            op("mul", "times_{k} multiply_by_{k}", {"k": range(2, 13)},
               "return {p} multiplied by {k}",
               "{p} * {k}"),
            op("add", "plus_{k} add_{k}", {"k": range(1, 21)},
               "return {p} plus {k}",
               "{p} + {k}"),
            op("floordiv", "div_{k} divide_by_{k}", {"k": K_SMALL},
               "return {p} divided by {k}, rounded down (//)",
               "{p} // {k}"),
            op("mod", "mod_{k} remainder_{k}", {"k": range(3, 11)},  # % 2: trivial 0s and 1s
               "return the remainder of {p} divided by {k}",
               "{p} % {k}"),
            op("square", "square squared", {},
               "return {p} squared",
               "{p} * {p}"),
            op("cube", "cube cubed", {},
               "return {p} to the power 3",
               "{p} ** 3"),
            op("linear", "scale_{k}_add_{j}", {"k": range(2, 6), "j": range(1, 10)},
               "return {p} times {k}, plus {j}",
               "{p} * {k} + {j}"),
            op("distance", "distance_to_{k} gap_to_{k}", {"k": range(3, 31, 3)},
               "return how far {p} is from {k} (the absolute value of the difference)",
               "abs({p} - {k})"),
        ),
        1: (
            op("round_to", "round_down_to_{k} floor_to_{k}", {"k": (3, 5, 10, 100)},
               "return {p} rounded down to a multiple of {k}",
               "{p} - {p} % {k}"),
            op("next_mult", "next_multiple_{k} ceil_to_{k}", {"k": (3, 5, 7, 10)},
               "return the smallest multiple of {k} that is at least {p}",
               "({p} + {k} - 1) // {k} * {k}"),
            op("collatz", "collatz_step hailstone_step", {},
               "return {p} // 2 if {p} is even, else 3 * {p} + 1",
               "{p} // 2 if {p} % 2 == 0 else 3 * {p} + 1"),
        ),
    },
)

INT_RANGE = FamilySpec(
    "int_range", "integers", "a count or sum over the integers up to n",
    params=((INTS, "int"),), returns="int", frames=INT_FRAMES,
    edges=((0,), (1,), (12,)),
    draw=draw_int_range_input,
    levels={
        0: (
            op("sum_to", "sum_to triangle", {},
               "return the sum of the integers from 1 to {p} (0 when {p} is 0)",
               "sum(range(1, {p} + 1))"),
            op("sum_from", "sum_from_{k} total_from_{k}", {"k": K_SMALL},
               "return the sum of the integers from {k} to {p}, both included (0 when {p} is "
               "less than {k})",
               "sum(range({k}, {p} + 1))"),
            op("count_not_mult", "count_not_multiples_{k} non_multiples_{k}", {"k": range(2, 13)},
               "return how many of the integers from 1 to {p} are not divisible by {k}",
               "{p} - {p} // {k}"),
            op("sum_times", "scaled_triangle_{k} triangle_times_{k}", {"k": range(2, 10)},
               "return the sum of the integers from 1 to {p}, multiplied by {k}",
               "sum(range(1, {p} + 1)) * {k}"),
            op("sum_mult", "sum_multiples_{k} multiple_total_{k}", {"k": range(2, 13)},
               "return the sum of the integers from 1 to {p} that are divisible by {k}",
               "sum(x for x in range(1, {p} + 1) if x % {k} == 0)"),
            op("sum_squares", "sum_of_squares square_sum", {},
               "return 1*1 + 2*2 + ... + {p}*{p} (0 when {p} is 0)",
               "sum(x * x for x in range(1, {p} + 1))"),
            op("factorial", "factorial fact", {},
               "return the product of the integers from 1 to {p} (1 when {p} is 0)",
               "out = 1\n"
               "for x in range(2, {p} + 1):\n"
               "    out *= x\n"
               "return out"),
            op("power", "power_of_{k} pow_{k}", {"k": K_SMALL},
               "return {k} to the power {p}",
               "{k} ** {p}"),
            op("divisors", "count_divisors num_divisors", {},
               "return how many integers from 1 to {p} divide {p} evenly (0 when {p} is 0)",
               "sum(1 for d in range(1, {p} + 1) if {p} % d == 0)"),
        ),
        1: (
            op("sum_odd", "sum_odd_to odd_total", {},
               "return the sum of the odd integers from 1 to {p}",
               "sum(range(1, {p} + 1, 2))"),
            op("count_primes", "count_primes prime_count", {},
               "return how many prime numbers are less than or equal to {p}",
               "sum(1 for x in range(2, {p} + 1) if all(x % d for d in range(2, x)))"),
        ),
    },
)

STR_CASE = FamilySpec(
    "str_case", "strings", "a string changed character by character",
    params=((TEXTS, "str"),), returns="str", frames=TEXT_FRAMES,
    edges=(("",), ("a",), ("aB c",)),
    draw=draw_text,
    levels={
        0: (
            op("upper", "to_upper shout", {},
               "return {p} with every letter in uppercase",
               "{p}.upper()"),
            op("lower", "to_lower quiet", {},
               "return {p} with every letter in lowercase",
               "{p}.lower()"),
            op("swap", "swap_case invert_case", {},
               "return {p} with uppercase letters made lowercase and lowercase letters made "
               "uppercase",
               "{p}.swapcase()"),
            op("replace", "replace_{a}_{b} {a}_to_{b}", {"a": "abcdeio", "b": "xyz_-*"},
               "return {p} with every '{a}' replaced by '{b}'",
               "{p}.replace({a}, {b})"),
            op("remove", "remove_{a} without_{a}", {"a": "abcdeiostxyz "},
               "return {p} with every '{a}' removed",
               "{p}.replace({a}, '')"),
            op("reverse", "reverse backwards", {},
               "return {p} reversed",
               "{p}[::-1]"),
            op("double", "double_chars stutter", {},
               "return {p} with every character written twice",
               "''.join(c * 2 for c in {p})"),
            op("wrap", "wrap_{a} surround_{a}", {"a": "*#<|'_"},
               "return {p} with '{a}' added at its start and at its end",
               "{a} + {p} + {a}"),
        ),
        1: (
            op("first_upper", "capitalize_first first_upper", {},
               "return {p} with its first character in uppercase and the rest unchanged",
               "{p}[:1].upper() + {p}[1:]"),
            op("vowels_upper", "shout_vowels loud_vowels", {},
               "return {p} with its lowercase vowels (a, e, i, o, u) in uppercase",
               "''.join(c.upper() if c in 'aeiou' else c for c in {p})"),
        ),
    },
)

STR_COUNT = FamilySpec(
    "str_count", "strings", "how many characters of a string",
    params=((TEXTS, "str"),), returns="int", frames=TEXT_FRAMES,
    edges=(("",), ("a",), ("aB c0",)),
    draw=draw_text,
    levels={
        0: (
            op("count_char", "count_{a} how_many_{a}", {"a": "abcdeiostxyzAESX 017"},
               "return how many times '{a}' appears in {p}",
               "{p}.count({a})"),
            op("not_char", "count_not_{a} others_than_{a}", {"a": "abcdeiostxyz "},
               "return how many characters of {p} are not '{a}'",
               "len({p}) - {p}.count({a})"),
            op("vowels", "count_vowels vowel_count", {},
               "return how many lowercase vowels (a, e, i, o, u) {p} contains",
               "sum(1 for c in {p} if c in 'aeiou')"),
            op("digits", "count_digits digit_count", {},
               "return how many digits {p} contains",
               "sum(1 for c in {p} if c.isdigit())"),
            op("upper", "count_upper capitals", {},
               "return how many uppercase letters {p} contains",
               "sum(1 for c in {p} if c.isupper())"),
            op("lower", "count_lower lowercase_count", {},
               "return how many lowercase letters {p} contains",
               "sum(1 for c in {p} if c.islower())"),
            op("distinct", "distinct_chars unique_count", {},
               "return how many different characters {p} contains",
               "len(set({p}))"),
            op("non_space", "count_non_space non_spaces", {},
               "return how many characters of {p} are not spaces",
               "len({p}) - {p}.count(' ')"),
        ),
        1: (
            op("runs", "count_doubles repeats", {},
               "return how many characters of {p} are equal to the character just before them",
               "sum(1 for a, b in zip({p}, {p}[1:]) if a == b)"),
            op("longest_run", "longest_run max_run", {},
               "return the length of the longest run of one repeated character in {p} (0 for an "
               "empty string)",
               "best = run = 0\n"
               "prev = None\n"
               "for c in {p}:\n"
               "    run = run + 1 if c == prev else 1\n"
               "    prev = c\n"
               "    best = max(best, run)\n"
               "return best"),
        ),
    },
)

STR_SLICE = FamilySpec(
    "str_slice", "strings", "a part of a string",
    params=((TEXTS, "str"),), returns="str", frames=TEXT_FRAMES,
    edges=(("",), ("a",), ("aB c0x",)),
    draw=draw_text,
    levels={
        0: (
            op("first", "first_{k} head_{k}", {"k": K_SMALL},
               "return the first {k} characters of {p} (all of it if it is shorter)",
               "{p}[:{k}]"),
            op("last", "last_{k} tail_{k}", {"k": K_SMALL},
               "return the last {k} characters of {p} (all of it if it is shorter)",
               "{p}[-{k}:]"),
            op("drop_first", "drop_first_{k} skip_{k}", {"k": range(1, 7)},
               "return {p} without its first {k} characters",
               "{p}[{k}:]"),
            op("drop_last", "drop_last_{k} chop_{k}", {"k": range(1, 7)},
               "return {p} without its last {k} characters",
               "{p}[:-{k}]"),
            op("char_at", "char_at_{k} letter_{k}", {"k": range(0, 7)},
               "return the character of {p} at position {k} (counting from 0), or '' if {p} is "
               "shorter",
               "{p}[{k}:{k} + 1]"),
            op("every_kth", "every_{k}th stride_{k}", {"k": (2, 3, 4)},
               "return every {k}th character of {p}, starting with the first (positions 0, {k}, "
               "2*{k}, ...)",
               "{p}[::{k}]"),
            op("substring", "piece_{k}_{j} slice_{k}_{j}", {"k": range(1, 5), "j": (2, 3, 4)},
               "return the {j} characters of {p} that start at position {k} (counting from 0; "
               "fewer if {p} ends first)",
               "{p}[{k}:{k} + {j}]"),
            op("repeat", "repeat_{k} times_{k}", {"k": range(2, 6)},
               "return {p} repeated {k} times",
               "{p} * {k}"),
            op("middle", "middle_char center_char", {},
               "return the middle character of {p} (at position len({p}) // 2), or '' if {p} is "
               "empty",
               "{p}[len({p}) // 2] if {p} else ''"),
        ),
        1: (
            op("ends", "first_and_last ends", {},
               "return the first and the last character of {p} joined, or '' if {p} is empty",
               "{p}[0] + {p}[-1] if {p} else ''"),
            op("palindrome", "mirror palindrome", {},
               "return {p} followed by {p} reversed",
               "{p} + {p}[::-1]"),
        ),
    },
)

SENTENCE_OPS = FamilySpec(
    "sentence_ops", "strings", "the words of a sentence",
    params=((SENTENCES, "str"),), returns="str", frames=SENTENCE_FRAMES,
    edges=(("",), ("one",), ("go to the sky",)),
    draw=draw_sentence,
    levels={
        0: (
            op("count", "word_count count_words", {},
               "return the number of words in {p}",
               "len({p}.split())", returns="int"),
            op("first_word", "first_word opening_word", {},
               "return the first word of {p}, or '' if it has none",
               "{p}.split()[0] if {p}.split() else ''"),
            op("last_word", "last_word closing_word", {},
               "return the last word of {p}, or '' if it has none",
               "{p}.split()[-1] if {p}.split() else ''"),
            op("reverse_words", "reverse_words words_backwards", {},
               "return the words of {p} in reverse order, joined by single spaces",
               "' '.join({p}.split()[::-1])"),
            op("join", "join_with_{a} joined_{a}",
               {"a": ("-", "_", ",", "+", "", "/", ", ", " - ")},
               "return the words of {p} joined by '{a}' instead of spaces",
               "{a}.join({p}.split())"),
            op("word_at", "word_{k} nth_word_{k}", {"k": range(1, 5)},
               "return the word of {p} at position {k} (counting from 0), or '' if {p} has fewer"
               " words",
               "{p}.split()[{k}] if len({p}.split()) > {k} else ''"),
            op("longer_than", "count_longer_{k} longer_{k}", {"k": range(1, 6)},
               "return how many words of {p} have more than {k} letters",
               "sum(1 for w in {p}.split() if len(w) > {k})", returns="int"),
            op("starts_with", "count_starting_{a} starts_{a}", {"a": "abgkrst"},
               "return how many words of {p} start with '{a}'",
               "sum(1 for w in {p}.split() if w.startswith({a}))", returns="int"),
            op("title", "title_words title_case", {},
               "return {p} with the first letter of every word in uppercase",
               "' '.join(w[:1].upper() + w[1:] for w in {p}.split())"),
        ),
        1: (
            op("longest", "longest_word longest", {},
               "return the longest word of {p} (the first one if several are as long), or '' if "
               "it has none",
               "max({p}.split(), key=len) if {p}.split() else ''"),
            op("initials", "initials acronym", {},
               "return the first letters of the words of {p}, joined",
               "''.join(w[0] for w in {p}.split())"),
        ),
    },
)

WORD_LIST = FamilySpec(
    "word_list", "lists", "a list of words",
    params=((WORD_LISTS, "list[str]"),), returns="int", frames=WORDS_FRAMES,
    edges=(([],), (["go"],), (["cat", "cat", "a"],)),
    draw=draw_words,
    levels={
        0: (
            op("total_len", "total_letters letter_total", {},
               "return the total number of letters in the words of {p}",
               "sum(len(w) for w in {p})"),
            op("join", "join_with_{a} joined_{a}", {"a": (" ", "-", ",", "+", "/", ", ", "", "_")},
               "return the words of {p} joined by '{a}'",
               "{a}.join({p})", returns="str"),
            op("lengths", "word_lengths lengths", {},
               "return the list of the lengths of the words of {p}",
               "[len(w) for w in {p}]", returns="list[int]"),
            op("of_length", "count_length_{k} length_{k}_words", {"k": range(1, 7)},
               "return how many words of {p} have exactly {k} letters",
               "sum(1 for w in {p} if len(w) == {k})"),
            op("containing", "count_with_{a} having_{a}", {"a": "aeilnorst"},
               "return how many words of {p} contain the letter '{a}'",
               "sum(1 for w in {p} if {a} in w)"),
            op("starting", "count_starting_{a} starts_{a}", {"a": "abgkrst"},
               "return how many words of {p} start with '{a}'",
               "sum(1 for w in {p} if w.startswith({a}))"),
            op("upper", "shout_all upper_words", {},
               "return a new list with every word of {p} in uppercase",
               "[w.upper() for w in {p}]", returns="list[str]"),
            op("longer", "longer_than_{k} long_words_{k}", {"k": range(1, 6)},
               "return the words of {p} that have more than {k} letters, in order",
               "[w for w in {p} if len(w) > {k}]", returns="list[str]"),
        ),
        1: (
            op("firsts", "first_letters initials", {},
               "return the first letters of the words of {p}, joined",
               "''.join(w[0] for w in {p})", returns="str"),
            op("shortest", "shortest_word shortest", {},
               "return the shortest word of {p} (the first one if several are as short), or '' "
               "if {p} is empty",
               "min({p}, key=len) if {p} else ''", returns="str"),
        ),
    },
)

PAIR_MATH = FamilySpec(
    "pair_math", "integers", "one number from two integers",
    params=(
        (("a", "x", "first", "left"), "int"),
        (("b", "y", "second", "right"), "int"),
    ),
    returns="int", frames=PAIR_FRAMES,
    edges=((0, 1), (5, 5), (-3, 4)),
    draw=draw_pair,
    levels={
        0: (
            op("add", "add total", {},
               "return the sum of {p} and {q}",
               "{p} + {q}"),
            op("sub", "difference subtract", {},
               "return {p} minus {q}",
               "{p} - {q}"),
            op("mul", "product multiply", {},
               "return {p} times {q}",
               "{p} * {q}"),
            op("gap", "gap distance", {},
               "return the absolute difference of {p} and {q}",
               "abs({p} - {q})"),
            op("weighted", "weighted_{k}", {"k": range(2, 13)},
               "return {p} times {k} plus {q}",
               "{p} * {k} + {q}"),
            op("weighted_sub", "weighted_diff_{k} scaled_minus_{k}", {"k": range(2, 13)},
               "return {p} times {k} minus {q}",
               "{p} * {k} - {q}"),
            op("scaled_sum", "sum_times_{k}", {"k": range(2, 13)},
               "return the sum of {p} and {q} multiplied by {k}",
               "({p} + {q}) * {k}"),
            op("floordiv", "int_divide", {},
               "return {p} divided by {q}, rounded down (//); {q} is never 0",
               "{p} // {q}"),
            op("mod", "remainder", {},
               "return the remainder of {p} divided by {q}; {q} is never 0",
               "{p} % {q}"),
            op("product_plus", "product_plus_{k} times_plus_{k}", {"k": range(1, 10)},
               "return {p} times {q}, plus {k}",
               "{p} * {q} + {k}"),
            op("squares", "sum_of_squares square_sum", {},
               "return {p} squared plus {q} squared",
               "{p} * {p} + {q} * {q}"),
        ),
        1: (
            op("between", "count_between gap_count", {},
               "return how many integers lie strictly between {p} and {q}",
               "max(abs({p} - {q}) - 1, 0)"),
            op("sum_range", "sum_range range_total", {},
               "return the sum of the integers from {p} to {q}, both included (0 when {p} is "
               "greater than {q})",
               "sum(range({p}, {q} + 1))"),
        ),
    },
)

DIGIT_OPS = FamilySpec(
    "digit_ops", "integers", "the decimal digits of an integer",
    params=((INTS, "int"),), returns="int", frames=INT_FRAMES,
    edges=((0,), (7,), (1020,)),
    draw=draw_nonneg,
    levels={
        0: (
            op("digit_sum", "digit_sum sum_of_digits", {},
               "return the sum of the digits of {p}",
               "sum(int(d) for d in str({p}))"),
            op("digit_count", "num_digits digit_count", {},
               "return how many digits {p} has",
               "len(str({p}))"),
            op("last_digit", "last_digit units_digit", {},
               "return the last digit of {p}",
               "{p} % 10"),
            op("first_digit", "first_digit leading_digit", {},
               "return the first digit of {p}",
               "int(str({p})[0])"),
            op("reverse", "reverse_digits flip_digits", {},
               "return the number whose digits are those of {p} in reverse order (120 gives 21)",
               "int(str({p})[::-1])"),
            op("count_digit", "count_{k}s how_many_{k}s", {"k": range(0, 10)},
               "return how many times the digit {k} appears in {p}",
               "str({p}).count(str({k}))"),
            op("max_digit", "largest_digit max_digit", {},
               "return the largest digit of {p}",
               "max(int(d) for d in str({p}))"),
            op("has_digit_times", "digit_sum_times_{k} scaled_digit_sum_{k}", {"k": range(2, 10)},
               "return the sum of the digits of {p} multiplied by {k}",
               "sum(int(d) for d in str({p})) * {k}"),
            op("min_digit", "smallest_digit min_digit", {},
               "return the smallest digit of {p}",
               "min(int(d) for d in str({p}))"),
            op("even_digits", "count_even_digits even_digit_count", {},
               "return how many digits of {p} are even",
               "sum(1 for d in str({p}) if int(d) % 2 == 0)"),
            op("digit_product", "digit_product multiply_digits", {},
               "return the product of the digits of {p}",
               "out = 1\n"
               "for d in str({p}):\n"
               "    out *= int(d)\n"
               "return out"),
        ),
        1: (
            op("alternating", "alternating_digit_sum alt_digit_sum signed_digit_sum", {},
               "return the first digit of {p} minus the second plus the third minus the fourth, "
               "and so on",
               "sum(int(d) * (1 if i % 2 == 0 else -1) for i, d in enumerate(str({p})))"),
        ),
    },
)

DICT_KEYS = FamilySpec(
    "dict_keys", "mappings", "the keys of a mapping chosen by their values",
    params=((DICTS, "dict[str, int]"),), returns="str", frames=DICT_FRAMES,
    edges=(({},), ({"ann": 5},), ({"bob": -4, "eve": 4, "cy": 4},)),
    draw=draw_mapping,
    levels={
        0: (
            op("argmax", "best_name top_key", {},
               "return the name with the largest value in {p} (the first such name in order if "
               "several tie), or '' for an empty dict",
               "max({p}, key={p}.get) if {p} else ''"),
            op("argmin", "worst_name bottom_key", {},
               "return the name with the smallest value in {p} (the first such name in order if "
               "several tie), or '' for an empty dict",
               "min({p}, key={p}.get) if {p} else ''"),
            op("by_value", "names_by_value ranked_names", {},
               "return the names of {p} ordered from the smallest value to the largest (ties "
               "keep their order in {p})",
               "sorted({p}, key={p}.get)", returns="list[str]"),
            op("above", "names_above_{k} above_{k}", {"k": range(0, 31, 3)},
               "return the names whose value in {p} is greater than {k}, in the order of {p}",
               "[k for k, v in {p}.items() if v > {k}]", returns="list[str]"),
            op("count_above", "count_above_{k} at_least_{k}", {"k": range(1, 29, 3)},
               "return how many names in {p} have a value of at least {k}",
               "sum(1 for v in {p}.values() if v >= {k})", returns="int"),
            op("get", "value_of_{a} lookup_{a}", {"a": NAMES, "k": (0, -1)},
               "return the value of '{a}' in {p}, or {k} if '{a}' is not in it",
               "{p}.get({a}, {k})", returns="int"),
            op("even_keys", "names_with_even even_names", {},
               "return the names whose value in {p} is even, in the order of {p}",
               "[k for k, v in {p}.items() if v % 2 == 0]", returns="list[str]"),
        ),
        1: (
            op("invert", "by_score invert owner_of_value", {},
               "return a dict from each value of {p} to the name that has it (the last such name"
               " if several share it)",
               "{{v: k for k, v in {p}.items()}}", returns="dict[int, str]"),
        ),
    },
)
# fmt: on

SPECS: dict[str, FamilySpec] = {
    s.name: with_stated_special(with_stated_empty(s))
    for s in (
        LIST_STAT,
        LIST_COUNT,
        LIST_MAP,
        LIST_FILTER,
        LIST_SLICE,
        LIST_INDEX,
        INT_ARITH,
        INT_RANGE,
        STR_CASE,
        STR_COUNT,
        STR_SLICE,
        SENTENCE_OPS,
        WORD_LIST,
        PAIR_MATH,
        DIGIT_OPS,
        DICT_KEYS,
    )
}
NEW_FAMILIES = ("digit_ops", "dict_keys")  # operations no other family uses
# the families configs/learn.yaml trains on (data.families.families), in SPECS order: the
# default of `sparring problems families`
TRAINED_FAMILIES = tuple(name for name in SPECS if name not in NEW_FAMILIES)
