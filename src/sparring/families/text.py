"""The problem families over strings and mappings: counting character classes, per-character
transforms, word operations, character frequencies, grouping words, aggregating dict values.

Why one module: six families written the same way (a builder per level: description
templates, reference body, trusted implementation, edge cases); splitting them further would
only scatter that pattern.

Each builder returns a `Draft`; choosing tests and checking are sparring.families' job.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from sparring.families.base import (
    CHAR_CLASSES,
    CHAR_TESTS,
    DICT_PARAMS,
    LOWER,
    SENTENCE_PARAMS,
    SHORT_WORDS,
    STR_PARAMS,
    UPPER,
    WORD_LIST_PARAMS,
    Cond,
    Draft,
    Family,
    char_cond,
    code,
    int_cond,
    make,
    mixed_text,
    sentence,
)

CLASSES = tuple(CHAR_CLASSES)
# pairs of character classes no character belongs to both of, so "if A ... elif B" is the rule
DISJOINT = (
    ("vowel", "digit"), ("vowel", "space"), ("digit", "space"), ("upper", "digit"),
    ("upper", "space"), ("lower", "digit"), ("lower", "space"), ("upper", "lower"),
)  # fmt: skip


def _text_input(r: random.Random) -> tuple:
    return (mixed_text(r),)


# --- counting character classes ----------------------------------------------------------


def _char_count(rng: random.Random, level: int) -> Draft:
    p = rng.choice(STR_PARAMS)
    params = ((p, "str"),)
    edges = [("",), ("AaEe iI",), ("Hello World 2024",), ("zz9 ",)]
    draw = _text_input
    if level == 1:
        kind = rng.choice([*CLASSES, "char"])
        if kind == "char":
            c = rng.choice(LOWER + UPPER)
            cond = Cond(
                f"occurrences of the character '{c}' (case-sensitive)",
                f"$v == {c!r}",
                lambda ch: ch == c,
                f"char_{c}",
            )

            def draw(r: random.Random) -> tuple:
                # the character shows up a few times, so counts are rarely a trivial 0 or 1
                chars = list(mixed_text(r, 5))
                for _ in range(r.randint(0, 4)):
                    chars[r.randrange(len(chars))] = c
                return ("".join(chars),)

        else:
            cond = char_cond(kind)
        w = cond.word
        return make(
            rng,
            [f"count_{w}", f"{w}_count", f"num_{w}"],
            params,
            "int",
            [
                "Return the number of {pl} in the string {p}.",
                "Given a string {p}, count its {pl} and return the count (0 for an empty string).",
                "Return how many {pl} the string {p} contains.",
            ],
            {"p": p, "pl": cond.text},
            code("return sum(1 for ch in $p if $c)", p=p, c=cond.src("ch")),
            lambda s: len([ch for ch in s if cond.test(ch)]),
            edges,
            draw,
        )
    if level == 2:
        ka, kb = rng.sample(CLASSES, 2)
        ta, tb = CHAR_TESTS[ka], CHAR_TESTS[kb]
        wa, wb = CHAR_CLASSES[ka]["word"], CHAR_CLASSES[kb]["word"]
        return make(
            rng,
            [f"count_{wa}_or_{wb}", f"{wa}_{wb}_count", f"num_{wa}_or_{wb}"],
            params,
            "int",
            [
                "Return the number of characters in {p} that are either {a} or {b}.",
                "Given a string {p}, count the characters that are {a} or {b} (a character "
                "that is both counts once) and return the count.",
                "Count every character of the string {p} that is {a} or {b}, and return that "
                "number.",
            ],
            {"p": p, "a": CHAR_CLASSES[ka]["a"], "b": CHAR_CLASSES[kb]["a"]},
            code(
                "return sum(1 for ch in $p if $ca or $cb)",
                p=p,
                ca=char_cond(ka).src("ch"),
                cb=char_cond(kb).src("ch"),
            ),
            lambda s: len([ch for ch in s if ta(ch) or tb(ch)]),
            edges,
            _text_input,
        )
    if rng.random() < 0.5:
        kind = rng.choice(CLASSES)
        test = CHAR_TESTS[kind]
        body = code(
            """
            best = 0
            current = 0
            for ch in $p:
                if $c:
                    current += 1
                    best = max(best, current)
                else:
                    current = 0
            return best
            """,
            p=p,
            c=char_cond(kind).src("ch"),
        )

        def longest(s: str) -> int:
            runs = [0]
            for ch in s:
                runs.append(runs[-1] + 1 if test(ch) else 0)
            return max(runs)

        members = {"vowel": "aeiouAE", "upper": UPPER, "lower": LOWER, "digit": "0123456789"}

        def with_run(r: random.Random) -> tuple:
            # random text rarely holds a run longer than 1: plant one
            text = mixed_text(r)
            run = "".join(r.choice(members.get(kind, " ")) for _ in range(r.randint(2, 4)))
            at = r.randint(0, len(text))
            return (text[:at] + run + text[at:],)

        w = CHAR_CLASSES[kind]["word"]
        return make(
            rng,
            [f"longest_{w}_run", f"max_{w}_streak", f"{w}_run_length"],
            params,
            "int",
            [
                "Return the length of the longest block of consecutive characters of {p} that "
                "are all {pl}. Return 0 if {p} contains none.",
                "Given a string {p}, find the longest stretch of adjacent characters that are "
                "all {pl} and return its length (0 if there is none).",
                "Return the size of the longest run of {pl} in the string {p}, where a run is a "
                "sequence of neighbouring characters that are all {pl}; return 0 when there is "
                "no such character.",
            ],
            {"p": p, "pl": CHAR_CLASSES[kind]["pl"]},
            body,
            longest,
            [("",), ("AaEe iI",), ("aXeiou  uu",)],
            with_run,
        )
    ka, kb = rng.sample(CLASSES, 2)
    ta, tb = CHAR_TESTS[ka], CHAR_TESTS[kb]
    wa, wb = CHAR_CLASSES[ka]["word"], CHAR_CLASSES[kb]["word"]
    body = code(
        """
        diff = 0
        for ch in $p:
            if $ca:
                diff += 1
            if $cb:
                diff -= 1
        return diff
        """,
        p=p,
        ca=char_cond(ka).src("ch"),
        cb=char_cond(kb).src("ch"),
    )
    return make(
        rng,
        [f"{wa}_minus_{wb}", f"{wa}_vs_{wb}", f"balance_{wa}_{wb}"],
        params,
        "int",
        [
            "Return the number of {pla} in {p} minus the number of {plb} in {p}.",
            "Given a string {p}, count its {pla} and its {plb}, and return the first count "
            "minus the second (the result can be negative).",
            "Return (number of {pla} in {p}) - (number of {plb} in {p}); a character that is "
            "both counts in both.",
        ],
        {"p": p, "pla": CHAR_CLASSES[ka]["pl"], "plb": CHAR_CLASSES[kb]["pl"]},
        body,
        lambda s: sum(map(ta, s)) - sum(map(tb, s)),
        edges,
        _text_input,
    )


# --- per-character transforms ------------------------------------------------------------


def _char_op(rng: random.Random, kind: str, allow_double: bool = True, avoid: str = ""):
    """(past participle, Python expression of `ch`, trusted function) of a per-character op
    that suits the class `kind`; a replacement character is never one in `avoid`."""
    c = rng.choice([ch for ch in "*#_-." if ch not in avoid])
    ops = [
        ("removed", "''", lambda ch: ""),
        (f"replaced by '{c}'", repr(c), lambda ch: c),
    ]
    if allow_double:
        ops.append(("written twice", "ch + ch", lambda ch: ch * 2))
    if kind in ("vowel", "lower"):
        ops.append(("changed to uppercase", "ch.upper()", lambda ch: ch.upper()))
    if kind in ("vowel", "upper"):
        ops.append(("changed to lowercase", "ch.lower()", lambda ch: ch.lower()))
    return rng.choice(ops)


FINALS = {
    "collapse": "every run of identical neighbouring characters is shortened to a single character",
    "reverse": "the whole string is reversed",
}


def _char_transform(rng: random.Random, level: int) -> Draft:
    p = rng.choice(STR_PARAMS)
    params = ((p, "str"),)
    edges = [("",), ("aa  11",), ("Hello World 2024",), ("AEIOU",)]
    if level == 1 and rng.random() < 0.2:
        return make(
            rng,
            ["swap_case", "flip_case", "invert_case"],
            params,
            "str",
            [
                "Return the string {p} with the case of every letter swapped: uppercase "
                "letters become lowercase and lowercase letters become uppercase. Other "
                "characters stay the same.",
                "Given a string {p}, turn each lowercase letter into uppercase and each "
                "uppercase letter into lowercase, and return the result.",
                "Swap the case of all letters in {p} and return the new string (digits, spaces "
                "and punctuation are unchanged).",
            ],
            {"p": p},
            code("return $p.swapcase()", p=p),
            lambda s: "".join(
                ch.lower() if "A" <= ch <= "Z" else ch.upper() if "a" <= ch <= "z" else ch
                for ch in s
            ),
            edges,
            _text_input,
        )
    final = "" if level < 3 else rng.choice(list(FINALS))
    if level == 1:
        kinds = [rng.choice(CLASSES)]
    else:
        kinds = list(rng.choice(DISJOINT))
        rng.shuffle(kinds)
    ops = []
    for kind in kinds:
        # two classes replaced by the same character would read as one rule
        used = "".join(op[1].strip("'") for op in ops)
        ops.append(_char_op(rng, kind, allow_double=final != "collapse", avoid=used))
    tests = [CHAR_TESTS[kind] for kind in kinds]
    lines = ['out = ""', f"for ch in {p}:"]
    for i, (kind, op) in enumerate(zip(kinds, ops, strict=True)):
        lines.append(f"    {'if' if i == 0 else 'elif'} {char_cond(kind).src('ch')}:")
        lines.append(f"        out += {op[1]}")
    lines += ["    else:", "        out += ch"]
    if final == "collapse":
        lines += [
            'result = ""',
            "for ch in out:",
            "    if not result or result[-1] != ch:",
            "        result += ch",
            "return result",
        ]
    elif final == "reverse":
        lines.append("return out[::-1]")
    else:
        lines.append("return out")
    body = "".join(f"    {line}\n" for line in lines)

    def transform(s: str) -> str:
        pieces = []
        for ch in s:
            hit = next((i for i, t in enumerate(tests) if t(ch)), None)
            pieces.append(ch if hit is None else ops[hit][2](ch))
        out = "".join(pieces)
        if final == "reverse":
            return "".join(reversed(out))
        if final == "collapse":
            return "".join(ch for i, ch in enumerate(out) if i == 0 or out[i - 1] != ch)
        return out

    sg = [CHAR_CLASSES[kind]["sg"] for kind in kinds]
    words = [CHAR_CLASSES[kind]["word"] for kind in kinds]
    fields = {"p": p, "a": sg[0], "opa": ops[0][0], "final": FINALS.get(final, "")}
    if level == 1:
        verb = {
            "removed": "remove",
            "written twice": "double",
            "changed to uppercase": "upcase",
            "changed to lowercase": "downcase",
        }.get(ops[0][0], "replace")
        return make(
            rng,
            [f"{verb}_{words[0]}", f"{words[0]}_{verb}d", f"{verb}_all_{words[0]}"],
            params,
            "str",
            [
                "Return a copy of the string {p} in which every {a} is {opa}. All other "
                "characters stay the same.",
                "Given a string {p}, return the string you get when each {a} is {opa}; other "
                "characters are unchanged.",
                "Return {p} with each {a} {opa}, leaving every other character as it is.",
            ],
            fields,
            body,
            transform,
            edges,
            _text_input,
        )
    fields.update(b=sg[1], opb=ops[1][0])
    names = [f"fix_{words[0]}_{words[1]}", f"transform_{words[0]}_{words[1]}", "rewrite_chars"]
    if level == 2:
        templates = [
            "Return a copy of {p} in which every {a} is {opa} and every {b} is {opb}. Other "
            "characters stay the same.",
            "Given a string {p}, build a new string where each {a} is {opa}, each {b} is "
            "{opb}, and any other character is copied as it is. Return it.",
            "Transform the string {p}: every {a} is {opa}, every {b} is {opb}, and everything "
            "else is kept. Return the new string.",
        ]
    else:
        names = [f"{n}_{final}" for n in names]
        templates = [
            "Change the string {p} in two steps: first, every {a} is {opa} and every {b} is "
            "{opb} (other characters are kept); then {final}. Return the result.",
            "In the string {p}, every {a} is {opa} and every {b} is {opb}; after that, "
            "{final}. Return the final string.",
            "Return the result of two steps applied to {p}: (1) each {a} is {opa}, each {b} "
            "is {opb}, other characters unchanged; (2) {final}.",
        ]
    return make(rng, names, params, "str", templates, fields, body, transform, edges, _text_input)


# --- word operations ---------------------------------------------------------------------


def _word_cond(rng: random.Random) -> tuple[str, str, Callable[[str], bool]]:
    kind = rng.choice(["long", "short", "even"])
    if kind == "long":
        k = rng.randint(2, 4)
        return f"with more than {k} letters", f"len(w) > {k}", lambda w: len(w) > k
    if kind == "short":
        k = rng.randint(3, 5)
        return f"with fewer than {k} letters", f"len(w) < {k}", lambda w: len(w) < k
    return "with an even number of letters", "len(w) % 2 == 0", lambda w: len(w) % 2 == 0


WORD_OPS = {
    "reverse": ("reversed", "reverse", "w[::-1]", lambda w: "".join(reversed(w))),
    "upper": ("written in uppercase", "uppercase", "w.upper()", lambda w: w.upper()),
    "capital": (
        "capitalized (first letter uppercase)",
        "capitalize",
        "w[:1].upper() + w[1:]",
        lambda w: w[:1].upper() + w[1:],
    ),
}


def _word_ops(rng: random.Random, level: int) -> Draft:
    p = rng.choice(SENTENCE_PARAMS)
    params = ((p, "str"),)
    edges = [("",), ("a",), ("hello",), ("ab ba",)]

    def draw(r: random.Random) -> tuple:
        return (sentence(r),)

    if level == 1:
        kind = rng.choice(["each", "order", "capital"])
        table = {
            "each": (
                ["reverse_words", "reverse_each_word", "mirror_words"],
                'return " ".join(w[::-1] for w in $p.split(" "))',
                lambda s: " ".join("".join(reversed(w)) for w in s.split(" ")),
                [
                    "The string {p} holds words separated by single spaces. Return it with the "
                    "letters of each word reversed, keeping the words in their order.",
                    "Given a sentence {p} (words separated by single spaces), reverse every "
                    "word on its own and return the new sentence; an empty string gives ''.",
                    "Return {p} with each of its space-separated words written backwards, the "
                    "words staying in place.",
                ],
            ),
            "order": (
                ["reverse_word_order", "backwards_sentence", "words_reversed"],
                'return " ".join(reversed($p.split(" ")))',
                lambda s: " ".join(s.split(" ")[::-1]),
                [
                    "The string {p} holds words separated by single spaces. Return the words "
                    "in reverse order, joined by single spaces.",
                    "Given a sentence {p} (words separated by single spaces), return a sentence "
                    "with the same words from last to first; an empty string gives ''.",
                    "Return {p} with the order of its space-separated words reversed (the "
                    "letters inside each word are unchanged).",
                ],
            ),
            "capital": (
                ["capitalize_words", "title_words", "upper_initials"],
                'return " ".join(w[:1].upper() + w[1:] for w in $p.split(" "))',
                lambda s: " ".join(w[:1].upper() + w[1:] for w in s.split(" ")),
                [
                    "The string {p} holds lowercase words separated by single spaces. Return "
                    "it with the first letter of every word changed to uppercase.",
                    "Given a sentence {p} of lowercase words separated by single spaces, "
                    "capitalize each word (make its first letter uppercase) and return the "
                    "result; an empty string gives ''.",
                    "Return {p} with every space-separated word starting with an uppercase "
                    "letter; the rest of each word is unchanged.",
                ],
            ),
        }
        names, line, impl, templates = table[kind]
        return make(
            rng, names, params, "str", templates, {"p": p}, code(line, p=p), impl, edges, draw
        )
    cond_text, cond_src, cond_test = _word_cond(rng)
    op_text, op_verb, op_src, op_fn = WORD_OPS[rng.choice(list(WORD_OPS))]
    fields = {"p": p, "cond": cond_text, "op": op_text, "verb": op_verb}
    if level == 2:
        body = code(
            """
            out = []
            for w in $p.split(" "):
                if $c:
                    w = $o
                out.append(w)
            return " ".join(out)
            """,
            p=p,
            c=cond_src,
            o=op_src,
        )
        return make(
            rng,
            [f"{op_verb}_some_words", f"{op_verb}_selected_words", "change_some_words"],
            params,
            "str",
            [
                "Words in {p} are separated by single spaces. Return {p} with every word "
                "{cond} {op}; all other words stay as they are.",
                "Given a sentence {p} (lowercase words separated by single spaces), return it "
                "with each word {cond} {op}, keeping the other words and the word order "
                "unchanged.",
                "Return a copy of the sentence {p} in which the words {cond} are {op}. Words "
                "are separated by single spaces, which are kept.",
            ],
            fields,
            body,
            lambda s: " ".join(op_fn(w) if cond_test(w) else w for w in s.split(" ")),
            edges,
            draw,
        )

    def spaced(r: random.Random) -> tuple:
        words = [r.choice(SHORT_WORDS) for _ in range(r.randint(2, 6))]
        gaps = [" " * r.choice([0, 1, 1, 2]), *(" " * r.randint(1, 3) for _ in words[1:])]
        text = "".join(g + w for g, w in zip(gaps, words, strict=True))
        return (text + " " * r.choice([0, 0, 1, 2]),)

    body = code(
        """
        out = []
        for w in $p.split():
            if $c:
                out.append($o)
        return " ".join(out)
        """,
        p=p,
        c=cond_src,
        o=op_src,
    )
    return make(
        rng,
        [f"keep_and_{op_verb}", f"filter_{op_verb}_words", "select_words"],
        params,
        "str",
        [
            "Words in {p} are separated by one or more spaces, and there may be spaces at the "
            "start or end. Return the words {cond}, each {op}, joined by single spaces in their "
            "original order; return '' if there are none.",
            "Given a string {p} whose words are separated by runs of spaces, keep only the "
            "words {cond}, {verb} each of them, and return them joined by single spaces ('' if "
            "no word is kept).",
            "Split {p} into words (any run of spaces separates words; ignore leading and "
            "trailing spaces). Return the words {cond}, each {op}, in their original order and "
            "joined by single spaces; return '' if no word qualifies.",
        ],
        fields,
        body,
        lambda s: " ".join(op_fn(w) for w in s.split(" ") if w and cond_test(w)),
        [("",), ("   ",), ("  go  tree ",)],
        spaced,
    )


# --- character frequencies ---------------------------------------------------------------


def _char_freq(rng: random.Random, level: int) -> Draft:
    p = rng.choice(STR_PARAMS)
    params = ((p, "str"),)
    returns = "dict[str, int]"

    def lower_text(r: random.Random) -> tuple:
        return ("".join(r.choice("aabbcdeeio") for _ in range(r.randint(2, 9))),)

    def count_chars(s: str, keep: Callable[[str], bool] = lambda ch: True) -> dict[str, int]:
        keys = [ch for ch in s if keep(ch)]
        return {ch: keys.count(ch) for ch in keys}

    if level == 1:
        edges = [("",), ("a",), ("aaa",), ("abcab",)]
        if rng.random() < 0.5:
            return make(
                rng,
                ["char_counts", "count_chars", "char_frequencies"],
                params,
                returns,
                [
                    "Return a dictionary that maps each character of the string {p} to the "
                    "number of times it appears in {p}. An empty string gives an empty "
                    "dictionary.",
                    "Given a string {p}, count how often each character occurs and return the "
                    "counts as a dict from character to count.",
                    "Build and return a dict whose keys are the distinct characters of {p} and "
                    "whose values are how many times each one occurs ({{}} for '').",
                ],
                {"p": p},
                code(
                    """
                    counts = {}
                    for ch in $p:
                        counts[ch] = counts.get(ch, 0) + 1
                    return counts
                    """,
                    p=p,
                ),
                count_chars,
                edges,
                lower_text,
            )
        return make(
            rng,
            ["vowel_counts", "count_each_vowel", "vowel_frequencies"],
            params,
            returns,
            [
                "Return a dictionary that maps each vowel (a, e, i, o, u) that occurs in the "
                "lowercase string {p} to the number of times it occurs. Vowels that do not "
                "occur are left out.",
                "Given a lowercase string {p}, count each of the vowels a, e, i, o, u in it and "
                "return a dict from vowel to count, with only the vowels that appear.",
                "Return a dict mapping every vowel that appears in {p} to how many times it "
                "appears ({p} is lowercase; consonants and vowels that do not appear are not "
                "included).",
            ],
            {"p": p},
            code(
                """
                counts = {}
                for ch in $p:
                    if ch in "aeiou":
                        counts[ch] = counts.get(ch, 0) + 1
                return counts
                """,
                p=p,
            ),
            lambda s: count_chars(s, lambda ch: ch in ("a", "e", "i", "o", "u")),
            edges,
            lower_text,
        )
    letters_body = """
        counts = {}
        for ch in $p:
            if ch.isalpha():
                key = ch.lower()
                counts[key] = counts.get(key, 0) + 1
        """
    edges = [("",), ("Aa1 a",), ("xyz",), ("Hello World 2024",)]

    def letters(s: str) -> dict[str, int]:
        return count_chars("".join(ch.lower() for ch in s if ch.lower() != ch.upper()))

    if level == 2:
        return make(
            rng,
            ["letter_counts", "count_letters", "letter_frequencies"],
            params,
            returns,
            [
                "Count the letters of {p} ignoring case: return a dict mapping each lowercase "
                "letter to how many times it appears in {p} in either case. Characters that "
                "are not letters are ignored.",
                "Given a string {p}, return a dictionary from lowercase letter to count, where "
                "'A' and 'a' both count for 'a'; digits, spaces and other non-letters are "
                "skipped.",
                "Return a dict whose keys are the letters of {p} in lowercase and whose values "
                "are how often each letter occurs, uppercase and lowercase together; "
                "non-letter characters are not counted.",
            ],
            {"p": p},
            code(letters_body + "return counts", p=p),
            letters,
            edges,
            _text_input,
        )
    if rng.random() < 0.5:
        k = rng.randint(2, 3)
        return make(
            rng,
            ["frequent_letters", f"letters_at_least_{k}", "common_letter_counts"],
            params,
            returns,
            [
                "Count the letters of {p} ignoring case (non-letters are ignored) and return a "
                "dict mapping each lowercase letter that appears at least {k} times to its "
                "count. Letters that appear fewer than {k} times are left out.",
                "Given a string {p}, return a dictionary from lowercase letter to the number of "
                "times it appears in {p} in either case, keeping only letters with a count of "
                "{k} or more; digits, spaces and other non-letters are skipped.",
                "Return a dict of letter counts for {p}, where 'A' and 'a' both count as 'a', "
                "non-letters are not counted, and only letters occurring {k} or more times are "
                "included ({{}} if none).",
            ],
            {"p": p, "k": k},
            code(
                letters_body + "return {key: n for key, n in counts.items() if n >= $k}",
                p=p,
                k=str(k),
            ),
            lambda s: {ch: n for ch, n in letters(s).items() if n >= k},
            [*edges, ("aAbBbc",)],
            _text_input,
        )
    return make(
        rng,
        ["most_common_char", "most_frequent_char", "top_char"],
        params,
        "str",
        [
            "Return the character that occurs most often in {p}. If several characters are "
            "tied, return the one that appears first in {p}. Return '' for an empty string.",
            "Given a string {p}, find the most frequent character (spaces and digits count "
            "too, and case matters); on a tie pick the one whose first occurrence comes "
            "earliest. Return '' when {p} is empty.",
            "Return the most common character of {p}, breaking ties by earliest first "
            "appearance in {p}; an empty {p} gives ''.",
        ],
        {"p": p},
        code(
            """
            best = ""
            best_count = 0
            for ch in $p:
                count = $p.count(ch)
                if count > best_count:
                    best = ch
                    best_count = count
            return best
            """,
            p=p,
        ),
        lambda s: max(count_chars(s).items(), key=lambda kv: kv[1])[0] if s else "",
        [("",), ("abba",), ("z",), ("aAbB b",)],
        _text_input,
    )


# --- grouping words ----------------------------------------------------------------------

GROUP_WORDS = (
    "a", "be", "go", "ant", "arm", "apple", "bee", "bird", "book", "bread", "cat", "cow", "cup",
    "cherry", "dog", "dot", "egg", "elf", "sun", "sky", "sea", "star", "tea", "toy", "tree",
)  # fmt: skip


def _group_words(rng: random.Random, level: int) -> Draft:
    p = rng.choice(WORD_LIST_PARAMS)
    params = ((p, "list[str]"),)

    def words(r: random.Random, mixed: bool = False) -> list[str]:
        out = [r.choice(GROUP_WORDS) for _ in range(r.randint(2, 7))]
        if mixed:
            out = [w.capitalize() if r.random() < 0.4 else w for w in out]
        return out

    by_letter = rng.random() < 0.5
    key_src = "w[0]" if by_letter else "len(w)"
    returns = "dict[str, int]" if by_letter else "dict[int, int]"
    if level == 1:
        key_fn: Callable[[str], object] = (lambda w: w[:1]) if by_letter else len

        def count_by(ws: list[str]) -> dict:
            keys = [key_fn(w) for w in ws]
            return {k: keys.count(k) for k in keys}

        templates = (
            [
                "Given a list of lowercase words {p}, return a dictionary that maps each first "
                "letter to the number of words in {p} that start with that letter. An empty "
                "list gives an empty dictionary.",
                "Count the words of {p} by their first letter: return a dict whose keys are "
                "first letters and whose values are how many words start with each letter.",
                "Return a dict mapping every letter that begins some word of {p} to how many "
                "words begin with it (repeated words count each time).",
            ]
            if by_letter
            else [
                "Given a list of words {p}, return a dictionary that maps each word length to "
                "the number of words in {p} with that length. An empty list gives an empty "
                "dictionary.",
                "Count the words of {p} by length: return a dict whose keys are lengths and "
                "whose values are how many words have each length.",
                "Return a dict mapping every length that some word of {p} has to how many "
                "words have that length (repeated words count each time).",
            ]
        )
        key_word = "first_letter" if by_letter else "length"
        return make(
            rng,
            [f"count_by_{key_word}", f"{key_word}_counts", f"tally_by_{key_word}"],
            params,
            returns,
            templates,
            {"p": p},
            code(
                """
                counts = {}
                for w in $p:
                    counts[$key] = counts.get($key, 0) + 1
                return counts
                """,
                p=p,
                key=key_src,
            ),
            count_by,
            [([],), (["apple"],), (["ant", "arm", "ant"],)],
            lambda r: (words(r),),
        )
    returns = "dict[str, list[str]]" if by_letter else "dict[int, list[str]]"
    key_word = "first_letter" if by_letter else "length"
    if level == 2:
        key_src = "w[0].lower()" if by_letter else "len(w)"

        def group(ws: list[str]) -> dict:
            out: dict = {}
            for w in ws:
                out.setdefault(w[:1].lower() if by_letter else len(w), []).append(w)
            return out

        templates = (
            [
                "Given a list of non-empty words {p}, return a dict that maps each lowercase "
                "first letter to the list of words starting with that letter in either case, "
                "in their original order. For example 'Apple' and 'ant' both go under 'a'.",
                "Group the words of {p} by their first letter, ignoring case: the result is a "
                "dict from lowercase letter to the list of words (as written) that start with "
                "it, keeping the order of {p}. An empty list gives {{}}.",
                "Return a dictionary whose keys are the first letters of the words in {p}, "
                "lowercased, and whose values are lists of those words, unchanged and in input "
                "order.",
            ]
            if by_letter
            else [
                "Given a list of words {p}, return a dict that maps each word length to the "
                "list of words with that length, in their original order (repeated words are "
                "kept). An empty list gives {{}}.",
                "Group the words of {p} by length: return a dictionary from length to the list "
                "of words of that length, in the order they appear in {p}.",
                "Return a dict whose keys are the lengths of the words in {p} and whose values "
                "are lists of the words with each length, keeping the order of {p}.",
            ]
        )
        return make(
            rng,
            [f"group_by_{key_word}", f"{key_word}_groups", f"bucket_by_{key_word}"],
            params,
            returns,
            templates,
            {"p": p},
            code(
                """
                groups = {}
                for w in $p:
                    key = $key
                    if key not in groups:
                        groups[key] = []
                    groups[key].append(w)
                return groups
                """,
                p=p,
                key=key_src,
            ),
            group,
            [([],), (["Apple", "ant", "Ant"],), (["b"],)],
            lambda r: (words(r, mixed=True),),
        )
    k = rng.randint(3, 4)

    def sorted_groups(ws: list[str]) -> dict:
        out: dict = {}
        for w in sorted(set(ws)):
            if len(w) >= k:
                out.setdefault(w[:1] if by_letter else len(w), []).append(w)
        return out

    key_text = "first letter" if by_letter else "length"
    return make(
        rng,
        [f"sorted_groups_by_{key_word}", f"distinct_by_{key_word}", f"index_by_{key_word}"],
        params,
        returns,
        [
            "Given a list of lowercase words {p}, ignore the words with fewer than {k} letters "
            "and group the rest by {key}: return a dict mapping each {key} to the "
            "alphabetically sorted list of its distinct words. Return an empty dict if no word "
            "has at least {k} letters.",
            "Return a dictionary built from the words of {p} that have {k} or more letters: "
            "the keys are their {key}s and each value is the sorted list of different words "
            "with that {key} (a repeated word appears once).",
            "Group the words of {p} that are at least {k} letters long by {key}; return a dict "
            "from {key} to the list of those words in alphabetical order, without repeats ({{}} "
            "if no word qualifies).",
        ],
        {"p": p, "k": k, "key": key_text},
        code(
            """
            groups = {}
            for w in $p:
                if len(w) >= $k:
                    key = $key
                    if key not in groups:
                        groups[key] = []
                    if w not in groups[key]:
                        groups[key].append(w)
            for key in groups:
                groups[key].sort()
            return groups
            """,
            p=p,
            k=str(k),
            key=key_src,
        ),
        sorted_groups,
        [([],), (["tree", "toy", "tree", "star", "a"],), (["go", "be"],)],
        lambda r: (words(r),),
    )


# --- aggregating dict values -------------------------------------------------------------

NAMES = (
    "ann", "abe", "ava", "al", "bob", "bea", "ben", "bo", "cara", "cleo", "cy", "dan", "dora",
    "eli", "eve", "finn",
)  # fmt: skip


def _key_cond(rng: random.Random) -> tuple[Cond, str]:
    """A condition on a dict key, and its text after a plural subject ("keys that ...")."""
    kind = rng.choice(["starts", "long", "contains"])
    if kind == "starts":
        c = rng.choice("abcde")
        cond = Cond(f"starts with '{c}'", f"$v.startswith({c!r})", lambda k: k[:1] == c, c)
        return cond, f"start with '{c}'"
    if kind == "long":
        n = rng.randint(2, 3)
        cond = Cond(
            f"is longer than {n} characters", f"len($v) > {n}", lambda k: len(k) > n, "long"
        )
        return cond, f"are longer than {n} characters"
    c = rng.choice("aeo")
    cond = Cond(f"contains the letter '{c}'", f"{c!r} in $v", lambda k: c in list(k), f"with_{c}")
    return cond, f"contain the letter '{c}'"


def _dict_values(rng: random.Random, level: int) -> Draft:
    p = rng.choice(DICT_PARAMS)
    params = ((p, "dict[str, int]"),)

    def draw(r: random.Random) -> tuple:
        keys = r.sample(NAMES, r.randint(2, 6))
        return ({key: r.randint(-10, 40) for key in keys},)

    edges = [({},), ({"ann": 0},), ({"bob": -4, "abe": 7, "bea": 7},)]
    kc, kc_plural = _key_cond(rng)
    vc = int_cond(rng, rng.choice(["gt", "lt", "even", "odd", "neg"]))
    fields = {"p": p, "kc": kc.text, "kcp": kc_plural, "vc": vc.text}
    total_body = """
        total = 0
        for key, value in $p.items():
            if $c:
                total += value
        return total
        """
    if level == 1:
        if rng.random() < 0.5:
            return make(
                rng,
                [f"sum_{kc.word}_keys", f"total_for_{kc.word}", f"{kc.word}_key_total"],
                params,
                "int",
                [
                    "Given a dictionary {p} that maps names to integers, return the sum of the "
                    "values whose key {kc}. Return 0 if no key {kc}.",
                    "Return the total of the values in the dict {p} for the keys that {kcp} (0 "
                    "when there are none).",
                    "Add up {p}[key] for every key of the dictionary {p} that {kc}, and return "
                    "the sum (0 if no key qualifies).",
                ],
                fields,
                code(total_body, p=p, c=kc.src("key")),
                lambda d: sum(d[key] for key in d if kc.test(key)),
                edges,
                draw,
            )
        return make(
            rng,
            [f"sum_{vc.word}_values", f"{vc.word}_value_total", f"total_{vc.word}"],
            params,
            "int",
            [
                "Given a dictionary {p} that maps names to integers, return the sum of the "
                "values that are {vc}. Return 0 if there are none.",
                "Return the total of all values in the dict {p} that are {vc} (0 when no value "
                "is {vc}).",
                "Add up the values of the dictionary {p} that are {vc}, ignoring the keys, and "
                "return the sum (0 if none qualify).",
            ],
            fields,
            code(total_body, p=p, c=vc.src("value")),
            lambda d: sum(v for v in d.values() if vc.test(v)),
            edges,
            draw,
        )
    if level == 2:
        if rng.random() < 0.5:
            return make(
                rng,
                [f"keys_with_{vc.word}_values", f"{vc.word}_keys", f"which_{vc.word}"],
                params,
                "list[str]",
                [
                    "Given a dictionary {p} that maps names to integers, return the list of "
                    "keys whose value is {vc}, sorted alphabetically. Return [] if there are "
                    "none.",
                    "Return an alphabetically sorted list of the keys of the dict {p} whose "
                    "values are {vc} (an empty list when no value is {vc}).",
                    "Collect every key of {p} whose value is {vc} and return those keys in "
                    "alphabetical order.",
                ],
                fields,
                code("return sorted(key for key in $p if $c)", p=p, c=vc.src(f"{p}[key]")),
                lambda d: sorted([key for key, v in d.items() if vc.test(v)]),
                edges,
                draw,
            )
        return make(
            rng,
            [f"sum_{vc.word}_{kc.word}", f"{kc.word}_{vc.word}_total", "selected_total"],
            params,
            "int",
            [
                "Given a dictionary {p} that maps names to integers, return the sum of the "
                "values that are {vc} and whose key {kc}. Return 0 if there are none.",
                "Return the total of the values in the dict {p} that are {vc}, counting only "
                "the keys that {kcp} (0 when nothing qualifies).",
                "Add up {p}[key] for every key that {kc} and whose value is {vc}, and return "
                "the sum (0 if no entry qualifies).",
            ],
            fields,
            code(total_body, p=p, c=f"{kc.src('key')} and {vc.src('value')}"),
            lambda d: sum(v for key, v in d.items() if kc.test(key) and vc.test(v)),
            edges,
            draw,
        )
    biggest = rng.random() < 0.5
    which = "largest" if biggest else "smallest"

    def best_key(d: dict[str, int]) -> str | None:
        keys = [key for key in d if kc.test(key)]
        if not keys:
            return None
        target = max(d[key] for key in keys) if biggest else min(d[key] for key in keys)
        return min(key for key in keys if d[key] == target)

    return make(
        rng,
        [f"{which}_{kc.word}_key", f"best_{kc.word}_key", f"key_of_{which}"],
        params,
        "str | None",
        [
            "Given a dictionary {p} that maps names to integers, return the key with the "
            "{which} value among the keys that {kcp}. If several such keys share that value, "
            "return the alphabetically first one; return None if no key {kc}.",
            "Among the keys of the dict {p} that {kcp}, find the one whose value is the {which} "
            "and return it (on a tie, the key that comes first alphabetically; None when no key "
            "qualifies).",
            "Return the key of {p} that {kc} and has the {which} value, breaking ties by "
            "alphabetical order and returning None if no key {kc}.",
        ],
        {**fields, "which": which},
        code(
            """
            best = None
            for key in sorted($p):
                if $c and (best is None or $p[key] $op $p[best]):
                    best = key
            return best
            """,
            p=p,
            c=kc.src("key"),
            op=">" if biggest else "<",
        ),
        best_key,
        [*edges, ({"bob": 5, "ben": 5, "abe": 5, "cy": 5},)],
        draw,
    )


FAMILIES_TEXT: tuple[Family, ...] = (
    Family(
        "char_count",
        "strings",
        "count the characters of a string in a class",
        {
            1: "count vowels, uppercase, lowercase, digits, spaces or one given character",
            2: "count the characters in either of two classes",
            3: "longest run of one class, or count of one class minus another",
        },
        _char_count,
    ),
    Family(
        "char_transform",
        "strings",
        "rewrite the characters of a string class by class",
        {
            1: "remove, replace, double or re-case one class of characters, or swap case",
            2: "two classes, each with its own rewrite",
            3: "two rewrites, then collapse repeated characters or reverse",
        },
        _char_transform,
    ),
    Family(
        "word_ops",
        "strings",
        "operate on the words of a sentence",
        {
            1: "reverse each word, reverse the word order, or capitalize each word",
            2: "reverse, uppercase or capitalize only the words meeting a length condition",
            3: "irregular spacing: keep the words meeting a condition, transform, rejoin",
        },
        _word_ops,
    ),
    Family(
        "char_freq",
        "mappings",
        "character frequencies as a dict",
        {
            1: "count each character, or each vowel",
            2: "count letters ignoring case, skipping non-letters",
            3: "letters counted at least k times, or the most frequent character (ties: first)",
        },
        _char_freq,
    ),
    Family(
        "group_words",
        "mappings",
        "group a list of words into a dict by first letter or length",
        {
            1: "count the words per first letter or per length",
            2: "lists of words per first letter (ignoring case) or per length",
            3: "only words of at least k letters, lists sorted and without repeats",
        },
        _group_words,
    ),
    Family(
        "dict_values",
        "mappings",
        "aggregate the values of a str -> int dict",
        {
            1: "sum of the values whose key, or whose value, meets a condition",
            2: "sorted keys whose value meets a condition, or a sum under two conditions",
            3: "the key with the largest/smallest value among keys meeting a condition",
        },
        _dict_values,
    ),
)
