"""The problem families over integer lists and integers: filter-then-aggregate, neighbouring
elements, sliding windows, running sums, rearranging, clamping and scaling, digits, multiples.

Why one module: eight families written the same way (a builder per level: description
templates, reference body, trusted implementation, edge cases); splitting them further would
only scatter that pattern.

Each builder returns a `Draft`; choosing tests and checking are sparring.families' job.
"""

from __future__ import annotations

import itertools
import operator
import random
from collections.abc import Callable

from sparring.families.base import (
    INT_LIST_PARAMS,
    INT_PARAMS,
    Draft,
    Family,
    code,
    int_cond,
    int_list,
    make,
)

ANY_KIND = ("even", "odd", "gt", "lt", "div", "pos", "neg")
LIST = "list[int]"


def _list_input(min_len: int = 3, lo: int = -20, hi: int = 50):
    def draw(rng: random.Random) -> tuple:
        return (int_list(rng, min_len, 8, lo, hi),)

    return draw


# --- filter then aggregate ---------------------------------------------------------------


def _filter(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    params = ((p, LIST),)
    edges = [([],), ([rng.randint(-20, 50)],), ([0, -3, 0, 8],), ([6, 6, 6],)]
    draw = _list_input()
    if level == 1:
        cond = int_cond(rng, rng.choice(ANY_KIND))
        w, c = cond.word, cond.text
        if rng.random() < 0.5:
            body = code(
                """
                total = 0
                for x in $p:
                    if $c:
                        total += x
                return total
                """,
                p=p,
                c=cond.src("x"),
            )
            return make(
                rng,
                [f"sum_{w}", f"{w}_sum", f"total_{w}"],
                params,
                "int",
                [
                    "Return the sum of the numbers in {p} that are {c}. Return 0 if there are "
                    "none.",
                    "Given a list of integers {p}, add up the elements that are {c} and return "
                    "the total (0 if no element is {c}).",
                    "Return the total of all elements of {p} that are {c}; the total is 0 when "
                    "no element is {c}.",
                ],
                {"p": p, "c": c},
                body,
                lambda xs: sum(x for x in xs if cond.test(x)),
                edges,
                draw,
            )
        body = code("return sum(1 for x in $p if $c)", p=p, c=cond.src("x"))
        return make(
            rng,
            [f"count_{w}", f"num_{w}", f"how_many_{w}"],
            params,
            "int",
            [
                "Return how many numbers in {p} are {c}.",
                "Given a list of integers {p}, count the elements that are {c} and return the "
                "count (0 for an empty list).",
                "Return the number of elements of {p} that are {c}.",
            ],
            {"p": p, "c": c},
            body,
            lambda xs: len([x for x in xs if cond.test(x)]),
            edges,
            draw,
        )
    if level == 2:
        cond = int_cond(rng, rng.choice(ANY_KIND))
        conds = [cond]
        names_w = cond.word
        templates = [
            "Return the {which} number in {p} that is {c}. If no number in {p} is {c}, return "
            "None.",
            "Given a list of integers {p}, find the {which} element that is {c} and return it; "
            "return None when there is no such element.",
            "Among the elements of {p} that are {c}, return the {which} one (None if there are "
            "none).",
        ]
        c = cond.text
        cond_src = cond.src("x")
    else:
        conds = [
            int_cond(rng, rng.choice(["even", "odd", "div"])),
            int_cond(rng, rng.choice(["gt", "lt", "pos", "neg"])),
        ]
        names_w = f"{conds[0].word}_{conds[1].word}"
        c = f"{conds[0].text} and {conds[1].text}"
        cond_src = f"{conds[0].src('x')} and {conds[1].src('x')}"
        if rng.random() < 0.5:
            body = code(
                """
                total = 0
                for x in $p:
                    if $c:
                        total += x * x
                return total
                """,
                p=p,
                c=cond_src,
            )
            return make(
                rng,
                [f"square_sum_{names_w}", f"sum_squares_{names_w}", "squared_total"],
                params,
                "int",
                [
                    "Return the sum of the squares of the numbers in {p} that are {c1} and "
                    "{c2}. Return 0 if there are none.",
                    "Given a list of integers {p}, take the elements that are both {c1} and "
                    "{c2}, square each of them, and return the sum of the squares (0 if no "
                    "element qualifies).",
                    "Square every element of {p} that is {c1} and also {c2}, and return the "
                    "total of those squares; other elements are ignored, and the total is 0 "
                    "when none qualify.",
                ],
                {"p": p, "c1": conds[0].text, "c2": conds[1].text},
                body,
                lambda xs: sum(x * x for x in xs if all(k.test(x) for k in conds)),
                edges,
                draw,
            )
        templates = [
            "Return the {which} number in {p} that is both {c1} and {c2}. If there is no such "
            "number, return None.",
            "Given a list of integers {p}, find the {which} element that is {c1} and at the "
            "same time {c2}; return None when no element is both.",
            "Among the elements of {p} that are {c1} and also {c2}, return the {which} one "
            "(None if there are none).",
        ]
    biggest = rng.random() < 0.5
    which = "largest" if biggest else "smallest"
    names = (
        [f"max_{names_w}", f"largest_{names_w}", f"biggest_{names_w}"]
        if biggest
        else [f"min_{names_w}", f"smallest_{names_w}", f"lowest_{names_w}"]
    )
    body = code(
        """
        best = None
        for x in $p:
            if $c and (best is None or x $op best):
                best = x
        return best
        """,
        p=p,
        c=cond_src,
        op=">" if biggest else "<",
    )

    def impl(xs: list[int]) -> int | None:
        kept = [x for x in xs if all(k.test(x) for k in conds)]
        if not kept:
            return None
        return max(kept) if biggest else min(kept)

    fields = {"p": p, "which": which, "c": c}
    if level == 3:
        fields.update(c1=conds[0].text, c2=conds[1].text)
    return make(rng, names, params, "int | None", templates, fields, body, impl, edges, draw)


# --- neighbouring elements ---------------------------------------------------------------

RELATIONS = {
    "up": (">", operator.gt, "greater than", "rise", "larger than", "strictly increasing"),
    "down": ("<", operator.lt, "less than", "drop", "smaller than", "strictly decreasing"),
    "same": ("==", operator.eq, "equal to", "repeat", "equal to", "constant"),
}


def _adjacent(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    params = ((p, LIST),)
    edges = [([],), ([rng.randint(-20, 50)],), ([4, 4, 4],), ([5, 3, 3, 8, -2],)]
    draw = _list_input()
    if level == 1 and rng.random() < 0.25:
        body = code("return [$p[i] - $p[i - 1] for i in range(1, len($p))]", p=p)
        return make(
            rng,
            ["differences", "diffs", "neighbor_differences", "step_sizes"],
            params,
            LIST,
            [
                "Return the list of differences between neighbouring elements of {p}: for each "
                "i from 1 on, {p}[i] - {p}[i - 1]. A list with fewer than 2 elements gives [].",
                "Given a list of integers {p}, return a list where each entry is an element "
                "minus the element before it, in order (empty if {p} has fewer than 2 "
                "elements).",
                "Return [{p}[1] - {p}[0], {p}[2] - {p}[1], ...] for the list {p}; the result "
                "has one entry fewer than {p}, and is [] when {p} has fewer than 2 elements.",
            ],
            {"p": p},
            body,
            lambda xs: [b - a for a, b in itertools.pairwise(xs)],
            edges,
            draw,
        )
    kind = rng.choice(list(RELATIONS))
    op, fn, rel, noun, rel2, run = RELATIONS[kind]
    fields = {"p": p, "rel": rel, "noun": noun, "rel2": rel2, "op": op, "run": run}
    if level == 1:
        body = code(
            """
            count = 0
            for i in range(1, len($p)):
                if $p[i] $op $p[i - 1]:
                    count += 1
            return count
            """,
            p=p,
            op=op,
        )
        return make(
            rng,
            [f"count_{noun}s", f"num_{noun}s", f"{noun}_count"],
            params,
            "int",
            [
                "Return how many times an element of {p} is {rel} the element just before it. "
                "A list with fewer than 2 elements gives 0.",
                "Given a list of integers {p}, count the positions i (i >= 1) where {p}[i] {op} "
                "{p}[i - 1], and return that count.",
                "Count the {noun}s in {p}: a {noun} is a pair of neighbouring elements where the "
                "second is {rel2} the first. Return the number of {noun}s (0 for a list with "
                "fewer than 2 elements).",
            ],
            fields,
            body,
            lambda xs: sum(1 for a, b in itertools.pairwise(xs) if fn(b, a)),
            edges,
            draw,
        )
    if level == 2:
        if rng.random() < 0.5:
            t = rng.randint(5, 20)
            body = code(
                """
                count = 0
                for i in range(1, len($p)):
                    if abs($p[i] - $p[i - 1]) >= $t:
                        count += 1
                return count
                """,
                p=p,
                t=str(t),
            )
            return make(
                rng,
                ["count_jumps", "big_steps", "num_jumps"],
                params,
                "int",
                [
                    "Return how many pairs of neighbouring elements in {p} differ by at least "
                    "{t} (the larger minus the smaller is {t} or more).",
                    "Given a list of integers {p}, count the indices i >= 1 where "
                    "abs({p}[i] - {p}[i - 1]) >= {t}, and return the count.",
                    "Count the big jumps in {p}: a big jump is a step between neighbouring "
                    "elements, up or down, of size {t} or more. Return the count (0 for lists "
                    "shorter than 2).",
                ],
                {"p": p, "t": t},
                body,
                lambda xs: sum(1 for a, b in itertools.pairwise(xs) if max(a, b) - min(a, b) >= t),
                edges,
                draw,
            )
        biggest = rng.random() < 0.5
        body = code(
            """
            best = None
            for i in range(len($p) - 1):
                pair = $p[i] + $p[i + 1]
                if best is None or pair $op best:
                    best = pair
            return best
            """,
            p=p,
            op=">" if biggest else "<",
        )

        def pair_sum(xs: list[int]) -> int | None:
            sums = [a + b for a, b in itertools.pairwise(xs)]
            if not sums:
                return None
            return max(sums) if biggest else min(sums)

        which = "largest" if biggest else "smallest"
        return make(
            rng,
            [f"{'max' if biggest else 'min'}_pair_sum", f"{which}_adjacent_sum", "best_pair"],
            params,
            "int | None",
            [
                "Return the {which} sum of two neighbouring elements of {p}. If {p} has fewer "
                "than 2 elements, return None.",
                "Given a list of integers {p}, look at every pair of adjacent elements, add the "
                "two, and return the {which} such sum (None when there is no pair).",
                "Return the {which} value of {p}[i] + {p}[i + 1] over all valid i, or None if "
                "{p} has fewer than 2 elements.",
            ],
            {"p": p, "which": which},
            body,
            pair_sum,
            edges,
            draw,
        )
    body = code(
        """
        if not $p:
            return 0
        best = 1
        current = 1
        for i in range(1, len($p)):
            if $p[i] $op $p[i - 1]:
                current += 1
            else:
                current = 1
            best = max(best, current)
        return best
        """,
        p=p,
        op=op,
    )

    def longest(xs: list[int]) -> int:
        best = 0
        for start in range(len(xs)):
            end = start + 1
            while end < len(xs) and fn(xs[end], xs[end - 1]):
                end += 1
            best = max(best, end - start)
        return best

    word = {"up": "increasing", "down": "decreasing", "same": "constant"}[kind]
    return make(
        rng,
        [f"longest_{word}_run", f"{word}_run_length", f"max_{word}_streak"],
        params,
        "int",
        [
            "Return the length of the longest stretch of consecutive elements of {p} in which "
            "every element is {rel} the one before it. One element alone is a stretch of "
            "length 1; an empty list gives 0.",
            "Given a list of integers {p}, find the longest block of neighbouring elements "
            "where each element is {rel} the previous one, and return its length (0 for an "
            "empty list, at least 1 otherwise).",
            "Return the size of the longest {run} run in {p}, where a run is a sequence of "
            "adjacent elements each {rel} the element before it; a single element counts as a "
            "run of 1, and [] gives 0.",
        ],
        fields,
        body,
        longest,
        [*edges, ([1, 2, 2, 3, 4],)],
        draw,
    )


# --- sliding windows ---------------------------------------------------------------------


def _window(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    params = ((p, LIST),)
    k = rng.randint(2, 4)
    edges = [([],), ([rng.randint(-20, 50) for _ in range(k - 1)],), ([2, 0, 2, 0, 2, 0],)]
    draw = _list_input(2)

    def windows(xs: list[int]) -> list[list[int]]:
        return [xs[i : i + k] for i in range(len(xs) - k + 1)]

    fields = {"p": p, "k": k}
    if level == 1:
        if rng.random() < 0.5:
            body = code(
                "return [sum($p[i : i + $k]) for i in range(len($p) - $k + 1)]", p=p, k=str(k)
            )
            return make(
                rng,
                ["window_sums", f"sums_of_{k}", "sliding_sums"],
                params,
                LIST,
                [
                    "Return a list with the sum of every {k} consecutive elements of {p}, from "
                    "left to right. If {p} has fewer than {k} elements, return [].",
                    "Slide a window of {k} elements over {p} one step at a time and return the "
                    "list of window sums (an empty list when {p} has fewer than {k} elements).",
                    "For every i such that {p}[i:i + {k}] has {k} elements, compute "
                    "sum({p}[i:i + {k}]); return these sums in order, or [] if there are none.",
                ],
                fields,
                body,
                lambda xs: [sum(w) for w in windows(xs)],
                edges,
                draw,
            )
        body = code("return [max($p[i : i + $k]) for i in range(len($p) - $k + 1)]", p=p, k=str(k))
        return make(
            rng,
            ["window_maxes", f"max_of_each_{k}", "sliding_max"],
            params,
            LIST,
            [
                "Return a list with the largest element of every {k} consecutive elements of "
                "{p}, from left to right. If {p} has fewer than {k} elements, return [].",
                "Slide a window of {k} elements over {p} one step at a time and return the "
                "list of the window maximums (an empty list when {p} has fewer than {k} "
                "elements).",
                "For every i such that {p}[i:i + {k}] has {k} elements, compute "
                "max({p}[i:i + {k}]); return these values in order, or [] if there are none.",
            ],
            fields,
            body,
            lambda xs: [max(w) for w in windows(xs)],
            edges,
            draw,
        )
    if level == 2:
        if rng.random() < 0.5:
            body = code(
                """
                best = None
                for i in range(len($p) - $k + 1):
                    total = sum($p[i : i + $k])
                    if best is None or total > best:
                        best = total
                return best
                """,
                p=p,
                k=str(k),
            )
            return make(
                rng,
                ["max_window_sum", f"best_{k}_sum", "largest_window"],
                params,
                "int | None",
                [
                    "Return the largest sum of {k} consecutive elements of {p}. If {p} has "
                    "fewer than {k} elements, return None.",
                    "Given a list of integers {p}, consider every run of {k} neighbouring "
                    "elements and return the biggest total among them (None when {p} is "
                    "shorter than {k}).",
                    "Return the maximum of sum({p}[i:i + {k}]) over every i where the slice has "
                    "{k} elements, or None if {p} has fewer than {k} elements.",
                ],
                fields,
                body,
                lambda xs: max((sum(w) for w in windows(xs)), default=None),
                edges,
                draw,
            )
        t = rng.randint(10, 60)
        body = code(
            "return sum(1 for i in range(len($p) - $k + 1) if sum($p[i : i + $k]) > $t)",
            p=p,
            k=str(k),
            t=str(t),
        )
        return make(
            rng,
            ["count_heavy_windows", "windows_over", f"count_{k}_over_{t}"],
            params,
            "int",
            [
                "Return how many groups of {k} consecutive elements of {p} have a sum greater "
                "than {t}.",
                "Slide a window of {k} elements over {p} one step at a time and count the "
                "windows whose sum is more than {t}; return the count (0 if {p} has fewer than "
                "{k} elements).",
                "Count the indices i where {p}[i:i + {k}] has {k} elements and "
                "sum({p}[i:i + {k}]) > {t}, and return the count.",
            ],
            {**fields, "t": t},
            body,
            lambda xs: len([w for w in windows(xs) if sum(w) > t]),
            edges,
            draw,
        )
    biggest = rng.random() < 0.5
    body = code(
        """
        best = -1
        best_total = 0
        for i in range(len($p) - $k + 1):
            total = sum($p[i : i + $k])
            if best == -1 or total $op best_total:
                best = i
                best_total = total
        return best
        """,
        p=p,
        k=str(k),
        op=">" if biggest else "<",
    )

    def start_of_best(xs: list[int]) -> int:
        sums = [sum(w) for w in windows(xs)]
        if not sums:
            return -1
        return sums.index(max(sums) if biggest else min(sums))

    which = "largest" if biggest else "smallest"
    return make(
        rng,
        [f"{which}_window_start", "best_window_index", f"where_{which}_{k}"],
        params,
        "int",
        [
            "Return the index where the {k} consecutive elements of {p} with the {which} sum "
            "start. If several windows tie, return the smallest such index; if {p} has fewer "
            "than {k} elements, return -1.",
            "Given a list of integers {p}, find the run of {k} neighbouring elements whose sum "
            "is the {which} and return the index of its first element (the leftmost one on "
            "ties, -1 when {p} is shorter than {k}).",
            "Return the smallest i such that sum({p}[i:i + {k}]) is the {which} among all "
            "windows of {k} consecutive elements, or -1 if {p} has fewer than {k} elements.",
        ],
        {**fields, "which": which},
        body,
        start_of_best,
        edges,
        draw,
    )


# --- running sums ------------------------------------------------------------------------


def _prefix(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    params = ((p, LIST),)
    edges = [([],), ([rng.randint(-20, 50)],), ([0, 0, -4, -4],), ([-5, 10, -5, 10],)]
    if level == 1:
        kind = rng.choice(["sum", "sum", "max", "min"])
        if kind == "sum":
            body = code(
                """
                out = []
                total = 0
                for x in $p:
                    total += x
                    out.append(total)
                return out
                """,
                p=p,
            )
            return make(
                rng,
                ["running_sum", "prefix_sums", "cumulative_sum"],
                params,
                LIST,
                [
                    "Return the running sums of {p}: a list whose i-th entry is the sum of "
                    "{p}[0] through {p}[i]. An empty list gives [].",
                    "Given a list of integers {p}, return a list of the same length where each "
                    "entry is the total of all elements up to and including that position.",
                    "Return the prefix sums of {p}, i.e. [{p}[0], {p}[0] + {p}[1], "
                    "{p}[0] + {p}[1] + {p}[2], ...] ([] for an empty list).",
                ],
                {"p": p},
                body,
                lambda xs: [sum(xs[: i + 1]) for i in range(len(xs))],
                edges,
                _list_input(),
            )
        fn = max if kind == "max" else min
        body = code(
            """
            out = []
            for x in $p:
                if not out or x $op out[-1]:
                    out.append(x)
                else:
                    out.append(out[-1])
            return out
            """,
            p=p,
            op=">" if kind == "max" else "<",
        )
        which = "maximum" if kind == "max" else "minimum"
        return make(
            rng,
            [f"running_{kind}", f"prefix_{kind}", f"{kind}_so_far"],
            params,
            LIST,
            [
                "Return the running {which} of {p}: a list whose i-th entry is the {which} of "
                "{p}[0] through {p}[i]. An empty list gives [].",
                "Given a list of integers {p}, return a list of the same length where each "
                "entry is the {which} of the elements seen so far, including the current one.",
                "Return [{fn}({p}[:1]), {fn}({p}[:2]), ..., {fn}({p})], the {which} of each "
                "prefix of {p} ([] for an empty list).",
            ],
            {"p": p, "which": which, "fn": kind},
            body,
            lambda xs: [fn(xs[: i + 1]) for i in range(len(xs))],
            edges,
            _list_input(),
        )
    if level == 2:
        if rng.random() < 0.5:
            t = rng.randint(10, 60)
            body = code(
                """
                total = 0
                for i, x in enumerate($p):
                    total += x
                    if total >= $t:
                        return i
                return -1
                """,
                p=p,
                t=str(t),
            )

            def reach(xs: list[int]) -> int:
                for i in range(len(xs)):
                    if sum(xs[: i + 1]) >= t:
                        return i
                return -1

            return make(
                rng,
                ["first_reach", f"index_reaching_{t}", "when_total_reaches"],
                params,
                "int",
                [
                    "Add up the elements of {p} from left to right and return the first index "
                    "at which the running total is at least {t}. Return -1 if the total never "
                    "reaches {t}.",
                    "Given a list of integers {p}, return the smallest i such that "
                    "sum({p}[:i + 1]) >= {t}, or -1 if there is no such i.",
                    "Return the position of the element of {p} that first brings the running "
                    "sum (starting from 0) to {t} or more; -1 if that never happens.",
                ],
                {"p": p, "t": t},
                body,
                reach,
                edges,
                _list_input(),
            )
        body = code(
            """
            count = 0
            total = 0
            for x in $p:
                total += x
                if total < 0:
                    count += 1
            return count
            """,
            p=p,
        )
        return make(
            rng,
            ["count_negative_prefixes", "times_below_zero", "negative_totals"],
            params,
            "int",
            [
                "Add up the elements of {p} from left to right and return how many times the "
                "running total is negative right after adding an element.",
                "Given a list of integers {p}, return the number of indices i for which "
                "sum({p}[:i + 1]) < 0.",
                "Count the prefixes {p}[:1], {p}[:2], ..., {p} whose sum is below 0 and return "
                "that count (0 for an empty list).",
            ],
            {"p": p},
            body,
            lambda xs: len([i for i in range(len(xs)) if sum(xs[: i + 1]) < 0]),
            edges,
            _list_input(3, -20, 20),
        )
    if rng.random() < 0.5:
        body = code(
            """
            out = []
            total = 0
            for x in $p:
                total += x
                if total < 0:
                    total = 0
                out.append(total)
            return out
            """,
            p=p,
        )

        def floored(xs: list[int]) -> list[int]:
            out: list[int] = []
            for x in xs:
                out.append(max(0, (out[-1] if out else 0) + x))
            return out

        return make(
            rng,
            ["running_sum_floor", "nonnegative_totals", "reset_running_sum"],
            params,
            LIST,
            [
                "Keep a running total that starts at 0: for each element of {p}, add it to the "
                "total, and if the total is then below 0, set it to 0. Return the list of "
                "totals after each element ([] for an empty list).",
                "Return a list of the same length as {p} where entry i is a running sum that "
                "never goes negative: add {p}[i] to the previous entry (0 before the first), "
                "and use 0 instead whenever the result is negative.",
                "Compute running sums of {p} starting from 0, but reset the sum to 0 every time "
                "it drops below 0. Return the sums after each element, in order.",
            ],
            {"p": p},
            body,
            floored,
            edges,
            _list_input(3, -20, 20),
        )
    cap = rng.randint(20, 60)
    body = code(
        """
        out = []
        total = 0
        for x in $p:
            total += x
            if total > $c:
                total = $c
            out.append(total)
        return out
        """,
        p=p,
        c=str(cap),
    )

    def capped(xs: list[int]) -> list[int]:
        out: list[int] = []
        for x in xs:
            out.append(min(cap, (out[-1] if out else 0) + x))
        return out

    return make(
        rng,
        ["running_sum_capped", f"totals_capped_at_{cap}", "capped_running_sum"],
        params,
        LIST,
        [
            "Keep a running total that starts at 0: for each element of {p}, add it to the "
            "total, and if the total is then above {c}, set it to {c}. Return the list of "
            "totals after each element ([] for an empty list).",
            "Return a list of the same length as {p} where entry i is a running sum capped at "
            "{c}: add {p}[i] to the previous entry (0 before the first), and use {c} instead "
            "whenever the result is greater than {c}.",
            "Compute running sums of {p} starting from 0, but whenever the sum goes over {c} "
            "lower it to exactly {c}. Return the sums after each element, in order.",
        ],
        {"p": p, "c": cap},
        body,
        capped,
        edges,
        _list_input(),
    )


# --- rearranging -------------------------------------------------------------------------


def _rearrange(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    kp = rng.choice(["k", "steps", "shift", "times"])
    if level == 1:
        params = ((p, LIST),)
        edges = [([],), ([7],), ([3, 3, 5],)]
        kind = rng.choice(["left", "right", "swap"])
        if kind == "swap":
            body = code(
                """
                out = list($p)
                if len(out) >= 2:
                    out[0], out[-1] = out[-1], out[0]
                return out
                """,
                p=p,
            )
            return make(
                rng,
                ["swap_ends", "swap_first_last", "exchange_ends"],
                params,
                LIST,
                [
                    "Return a copy of {p} with its first and last elements swapped. A list "
                    "with fewer than 2 elements is returned unchanged.",
                    "Given a list {p}, exchange the first and the last element and return the "
                    "new list (lists of length 0 or 1 come back as they are).",
                    "Return {p} with the element at index 0 and the element at index -1 trading "
                    "places; if {p} has fewer than 2 elements, return it unchanged.",
                ],
                {"p": p},
                body,
                lambda xs: xs[-1:] + xs[1:-1] + xs[:1] if len(xs) >= 2 else list(xs),
                edges,
                _list_input(2),
            )
        left = kind == "left"
        body = code(
            "return $p[1:] + $p[:1]" if left else "return $p[-1:] + $p[:-1]",
            p=p,
        )
        templates = (
            [
                "Return a new list with the first element of {p} moved to the end. An empty "
                "list gives [].",
                "Rotate the list {p} one step to the left (the first element goes to the back) "
                "and return the result; [] stays [].",
                "Given a list {p}, return all its elements except the first, followed by the "
                "first one ([] for an empty list).",
            ]
            if left
            else [
                "Return a new list with the last element of {p} moved to the front. An empty "
                "list gives [].",
                "Rotate the list {p} one step to the right (the last element goes to the "
                "front) and return the result; [] stays [].",
                "Given a list {p}, return its last element followed by all the others in "
                "order ([] for an empty list).",
            ]
        )
        return make(
            rng,
            [f"rotate_{kind}", f"rotate_{kind}_once", f"shift_{kind}"],
            params,
            LIST,
            templates,
            {"p": p},
            body,
            lambda xs: ([*xs[1:], xs[0]] if left else [xs[-1], *xs[:-1]]) if xs else [],
            edges,
            _list_input(2),
        )
    if level == 2:
        params = ((p, LIST), (kp, "int"))
        edges = [([], 3), ([1, 2, 3, 4], 6), ([7, 7, 1], 0)]

        def draw(r: random.Random) -> tuple:
            return (int_list(r, 2, 8), r.randint(1, 12))

        left = rng.random() < 0.5
        body = code(
            """
            if not $p:
                return []
            $k = $k % len($p)
            return $p[$k:] + $p[:$k]
            """
            if left
            else """
            if not $p:
                return []
            $k = $k % len($p)
            return $p[len($p) - $k :] + $p[: len($p) - $k]
            """,
            p=p,
            k=kp,
        )

        def rotate(xs: list[int], steps: int) -> list[int]:
            out = list(xs)
            for _ in range(steps if out else 0):
                if left:
                    out.append(out.pop(0))
                else:
                    out.insert(0, out.pop())
            return out

        side = "left" if left else "right"
        templates = (
            [
                "Rotate the list {p} to the left by {k} steps and return the result: each step "
                "moves the first element to the end. {k} is never negative and may be larger "
                "than the length of {p}; an empty list gives [].",
                "Return {p} rotated {k} positions to the left, so the element at index "
                "{k} % len({p}) comes first. {k} >= 0 can exceed the length; return [] for an "
                "empty list.",
                "Given a list {p} and a non-negative integer {k}, move the first element to the "
                "back {k} times and return the resulting list ([] when {p} is empty).",
            ]
            if left
            else [
                "Rotate the list {p} to the right by {k} steps and return the result: each step "
                "moves the last element to the front. {k} is never negative and may be larger "
                "than the length of {p}; an empty list gives [].",
                "Return {p} rotated {k} positions to the right, so the last {k} % len({p}) "
                "elements come first, in order. {k} >= 0 can exceed the length; return [] for "
                "an empty list.",
                "Given a list {p} and a non-negative integer {k}, move the last element to the "
                "front {k} times and return the resulting list ([] when {p} is empty).",
            ]
        )
        return make(
            rng,
            [f"rotate_{side}", f"rotate_{side}_by", f"shift_{side}"],
            params,
            LIST,
            templates,
            {"p": p, "k": kp},
            body,
            rotate,
            edges,
            draw,
        )
    if rng.random() < 0.5:
        kp = rng.choice(["k", "n", "count"])  # "the first steps elements" would read oddly
        params = ((p, LIST), (kp, "int"))
        edges = [([], 2), ([1, 2, 3], 5), ([4, 4, 9, 1], 0)]

        def draw3(r: random.Random) -> tuple:
            return (int_list(r, 3, 8), r.randint(1, 7))

        body = code("return $p[:$k][::-1] + $p[$k:][::-1]", p=p, k=kp)

        def reverse_parts(xs: list[int], k: int) -> list[int]:
            k = min(k, len(xs))
            return list(reversed(xs[:k])) + list(reversed(xs[k:]))

        return make(
            rng,
            ["reverse_parts", "reverse_two_parts", "flip_halves"],
            params,
            LIST,
            [
                "Reverse the first {k} elements of {p} and, separately, reverse the remaining "
                "elements; return the new list with the two reversed parts in that order. {k} "
                "is never negative; if it is larger than the length of {p}, the whole list is "
                "reversed.",
                "Given a list {p} and an integer {k} >= 0, return {p}[:{k}] reversed followed by "
                "{p}[{k}:] reversed (when {k} exceeds the length, {p}[{k}:] is empty).",
                "Split {p} after its first {k} elements (all of them if {k} is larger than the "
                "length), reverse each of the two parts, and return the first reversed part "
                "followed by the second.",
            ],
            {"p": p, "k": kp},
            body,
            reverse_parts,
            edges,
            draw3,
        )
    cond = int_cond(rng, rng.choice(ANY_KIND))
    body = code(
        """
        keep = [x for x in $p if not ($c)]
        moved = [x for x in $p if $c]
        return keep + moved
        """,
        p=p,
        c=cond.src("x"),
    )

    def partition(xs: list[int]) -> list[int]:
        front: list[int] = []
        back: list[int] = []
        for x in xs:
            (back if cond.test(x) else front).append(x)
        return front + back

    return make(
        rng,
        [f"{cond.word}_to_end", f"move_{cond.word}_last", "partition_list"],
        ((p, LIST),),
        LIST,
        [
            "Return a new list with every element of {p} that is {c} moved to the end. Elements "
            "keep their original order within each group.",
            "Given a list of integers {p}, return the elements that are not {c} followed by the "
            "elements that are {c}, each group in its original order.",
            "Reorder {p} so that all elements that are {c} come last, keeping the relative order "
            "of the elements in each group, and return the result ([] for an empty list).",
        ],
        {"p": p, "c": cond.text},
        body,
        partition,
        [([],), ([4],), ([2, 2, 3],), ([0, -1, 9, 12],)],
        _list_input(4),
    )


# --- clamping and scaling ----------------------------------------------------------------


def _clamp(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_LIST_PARAMS)
    params = ((p, LIST),)
    edges = [([],), ([rng.randint(-20, 50)],), ([0, -7, 0, 45],)]
    draw = _list_input()
    lo = rng.randint(-5, 5)
    hi = lo + rng.randint(5, 25)
    if level == 1:
        kind = rng.choice(["clamp", "cap", "scale", "floor"])
        k = rng.randint(2, 5)
        t = rng.randint(5, 30)
        table = {
            "clamp": (
                ["clamp_all", "clamp_values", "limit_values"],
                f"min(max(x, {lo}), {hi})",
                lambda x: lo if x < lo else hi if x > hi else x,
                [
                    "Return a new list where every element of {p} is clamped into the range "
                    "{lo} to {hi}: elements below {lo} become {lo}, elements above {hi} become "
                    "{hi}, the rest stay the same.",
                    "Given a list of integers {p}, replace each element smaller than {lo} by "
                    "{lo} and each element larger than {hi} by {hi}, and return the new list.",
                    "Return a copy of {p} in which every element is limited to the interval "
                    "[{lo}, {hi}]: values under {lo} are raised to {lo} and values over {hi} are "
                    "lowered to {hi}.",
                ],
            ),
            "cap": (
                [f"cap_at_{t}", "cap_values", "limit_high"],
                f"min(x, {t})",
                lambda x: t if x > t else x,
                [
                    "Return a new list where every element of {p} that is greater than {t} is "
                    "replaced by {t}; other elements stay the same.",
                    "Given a list of integers {p}, cap each element at {t} and return the new "
                    "list (elements above {t} become {t}).",
                    "Return a copy of {p} in which no element exceeds {t}: each value larger "
                    "than {t} is lowered to {t}.",
                ],
            ),
            "scale": (
                [f"times_{k}", "scale_all", f"multiply_by_{k}"],
                f"x * {k}",
                lambda x: x * k,
                [
                    "Return a new list with every element of {p} multiplied by {k}.",
                    "Given a list of integers {p}, return the list of its elements each times "
                    "{k}, in the same order.",
                    "Multiply each number in {p} by {k} and return the results as a new list "
                    "([] for an empty list).",
                ],
            ),
            "floor": (
                ["zero_negatives", "clip_negatives", "no_negatives"],
                "max(x, 0)",
                lambda x: 0 if x < 0 else x,
                [
                    "Return a new list where every negative element of {p} is replaced by 0; "
                    "other elements stay the same.",
                    "Given a list of integers {p}, return a copy in which each number below "
                    "zero becomes 0.",
                    "Return {p} with all negative numbers changed to 0 (zero and positive "
                    "numbers are kept).",
                ],
            ),
        }
        names, expr, each, templates = table[kind]
        body = code("return [$e for x in $p]", p=p, e=expr)
        return make(
            rng,
            names,
            params,
            LIST,
            templates,
            {"p": p, "lo": lo, "hi": hi, "t": t, "k": k},
            body,
            lambda xs: [each(x) for x in xs],
            edges,
            draw,
        )
    if level == 2:
        cond = int_cond(rng, rng.choice(["even", "odd", "gt", "lt", "neg", "div"]))
        k = rng.randint(2, 5)
        ops = {
            "mul": (f"multiplied by {k}", f"x * {k}", lambda x: x * k, "scale", "scaled"),
            "add": (f"increased by {k}", f"x + {k}", lambda x: x + k, "bump", "bumped"),
            "zero": ("replaced by 0", "0", lambda x: 0, "zero", "zeroed"),
            "negate": ("negated (x becomes -x)", "-x", lambda x: -x, "negate", "negated"),
        }
        op_text, op_src, op_fn, verb, done = ops[rng.choice(list(ops))]
        body = code("return [$o if $c else x for x in $p]", p=p, o=op_src, c=cond.src("x"))
        return make(
            rng,
            [f"{verb}_{cond.word}", f"{verb}_if_{cond.word}", f"{cond.word}_{done}"],
            params,
            LIST,
            [
                "Return a new list in which every element of {p} that is {c} is {op}, and every "
                "other element stays the same.",
                "Given a list of integers {p}, return a copy where the elements that are {c} "
                "are {op} while the rest are left unchanged.",
                "Go through {p} and build a new list: an element that is {c} is {op}; any other "
                "element is copied as it is. Return the new list.",
            ],
            {"p": p, "c": cond.text, "op": op_text},
            body,
            lambda xs: [op_fn(x) if cond.test(x) else x for x in xs],
            edges,
            draw,
        )
    if rng.random() < 0.5:
        cap = rng.randint(5, 30)
        body = code(
            """
            if not $p:
                return []
            low = min($p)
            return [min(x - low, $c) for x in $p]
            """,
            p=p,
            c=str(cap),
        )
        return make(
            rng,
            ["shift_and_cap", "normalize_capped", f"shift_cap_{cap}"],
            params,
            LIST,
            [
                "Subtract the smallest element of {p} from every element, then replace every "
                "result greater than {c} by {c}. Return the new list ([] for an empty list).",
                "Given a list of integers {p}, return a list where each element x becomes "
                "x - min({p}), capped at {c} (results above {c} become {c}); an empty list "
                "gives [].",
                "Shift {p} so that its smallest element becomes 0 (subtract the minimum from "
                "each element), then lower every value above {c} to {c}, and return the "
                "resulting list.",
            ],
            {"p": p, "c": cap},
            body,
            lambda xs: [c if c < cap else cap for c in (x - min(xs) for x in xs)],
            edges,
            draw,
        )
    body = code(
        """
        out = []
        for x in $p:
            y = min(max(x, $lo), $hi)
            if not out or out[-1] != y:
                out.append(y)
        return out
        """,
        p=p,
        lo=str(lo),
        hi=str(hi),
    )

    def clamp_dedupe(xs: list[int]) -> list[int]:
        clamped = [sorted([lo, x, hi])[1] for x in xs]
        return [y for i, y in enumerate(clamped) if i == 0 or clamped[i - 1] != y]

    return make(
        rng,
        ["clamp_and_squeeze", "clamp_dedupe", "limit_and_collapse"],
        params,
        LIST,
        [
            "Clamp every element of {p} into the range {lo} to {hi} (below {lo} becomes {lo}, "
            "above {hi} becomes {hi}), then remove each element that is equal to the element "
            "just before it in the clamped list. Return the result.",
            "Given a list of integers {p}, first limit each element to the interval "
            "[{lo}, {hi}], then collapse every run of equal neighbouring values into one value. "
            "Return the final list ([] for an empty list).",
            "Return {p} after two steps: (1) values under {lo} are raised to {lo} and values "
            "over {hi} are lowered to {hi}; (2) consecutive duplicates are dropped, keeping the "
            "first of each run.",
        ],
        {"p": p, "lo": lo, "hi": hi},
        body,
        clamp_dedupe,
        [*edges, ([-30, -40, 60, 70, 60],)],
        draw,
    )


# --- digits ------------------------------------------------------------------------------

DIGIT_WORDS = ("zeros", "ones", "twos", "threes", "fours", "fives", "sixes", "sevens", "eights")


def _digit_cond(rng: random.Random) -> tuple[str, str, Callable[[int], bool], str]:
    """(text, expr on `d`, test, name word) of a condition on one digit."""
    kind = rng.choice(["gt", "lt", "even", "odd", "eq"])
    if kind == "gt":
        t = rng.randint(2, 7)
        return f"greater than {t}", f"d > {t}", lambda d: d > t, "big"
    if kind == "lt":
        t = rng.randint(3, 8)
        return f"less than {t}", f"d < {t}", lambda d: d < t, "small"
    if kind == "eq":
        t = rng.randint(2, 8)  # products and maxima of 0s and 1s are all trivially 0 or 1
        return f"equal to {t}", f"d == {t}", lambda d: d == t, DIGIT_WORDS[t]
    if kind == "even":
        return "even", "d % 2 == 0", lambda d: d % 2 == 0, "even"
    return "odd", "d % 2 == 1", lambda d: d % 2 == 1, "odd"


def _digits_of(n: int) -> list[int]:
    n = abs(n)
    out = [n % 10]
    while n >= 10:
        n //= 10
        out.append(n % 10)
    return out[::-1]


def _digits(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_PARAMS)
    params = ((p, "int"),)
    text, expr, test, w = _digit_cond(rng)
    fields = {"p": p, "c": text}
    if level == 1:
        edges = [(0,), (rng.randint(1, 9),), (50505,)]

        def draw(r: random.Random) -> tuple:
            return (r.randint(10, 99999),)

        var = ""
    else:
        edges = [(0,), (-rng.randint(1, 9),), (-50505,)]

        def draw(r: random.Random) -> tuple:
            return (r.randint(10, 99999) * r.choice([1, -1]),)

        var = "abs"
    digits = f"str({var}({p}))" if var else f"str({p})"
    kind = rng.choice(["sum", "count", "max"] if level == 2 else ["sum", "count"])
    if level <= 2 and kind == "sum":
        body = code(
            """
            total = 0
            for ch in $s:
                d = int(ch)
                if $c:
                    total += d
            return total
            """,
            s=digits,
            c=expr,
        )
        templates = (
            [
                "Return the sum of the digits of {p} that are {c}. {p} is never negative. "
                "Return 0 if no digit is {c}.",
                "Given a non-negative integer {p}, add up its digits that are {c} and return "
                "the total (0 if there are none).",
                "Look at each decimal digit of the non-negative integer {p} and return the sum "
                "of the digits that are {c}; the sum is 0 when none are {c}.",
            ]
            if level == 1
            else [
                "Return the sum of the digits of {p} that are {c}. If {p} is negative, ignore "
                "the minus sign. Return 0 if no digit is {c}.",
                "Given an integer {p} (possibly negative: use its absolute value), add up its "
                "digits that are {c} and return the total, or 0 if there are none.",
                "Return the total of the decimal digits of abs({p}) that are {c} (0 when there "
                "are none).",
            ]
        )
        return make(
            rng,
            [f"sum_{w}_digits", f"{w}_digit_sum", f"digit_sum_{w}"],
            params,
            "int",
            templates,
            fields,
            body,
            lambda n: sum(d for d in _digits_of(n) if test(d)),
            edges,
            draw,
        )
    if level <= 2 and kind == "count":
        body = code(
            "return sum(1 for ch in $s if $c)",
            s=digits,
            c=expr.replace("d", "int(ch)", 1),
        )
        templates = (
            [
                "Return how many digits of {p} are {c}. {p} is never negative.",
                "Given a non-negative integer {p}, count its decimal digits that are {c} and "
                "return the count.",
                "Return the number of decimal digits of the non-negative integer {p} that are {c}.",
            ]
            if level == 1
            else [
                "Return how many digits of {p} are {c}. If {p} is negative, ignore the minus sign.",
                "Given an integer {p} (possibly negative: use its absolute value), count its "
                "decimal digits that are {c} and return the count.",
                "Return the number of decimal digits of abs({p}) that are {c}.",
            ]
        )
        return make(
            rng,
            [f"count_{w}_digits", f"num_{w}_digits", f"{w}_digit_count"],
            params,
            "int",
            templates,
            fields,
            body,
            lambda n: len([d for d in _digits_of(n) if test(d)]),
            edges,
            draw,
        )
    if level == 2:
        body = code(
            """
            best = -1
            for ch in $s:
                d = int(ch)
                if $c and d > best:
                    best = d
            return best
            """,
            s=digits,
            c=expr,
        )
        return make(
            rng,
            [f"max_{w}_digit", f"largest_{w}_digit", f"top_{w}_digit"],
            params,
            "int",
            [
                "Return the largest digit of {p} that is {c}. If {p} is negative, ignore the "
                "minus sign. Return -1 if no digit is {c}.",
                "Given an integer {p} (possibly negative: use its absolute value), find the "
                "biggest of its digits that are {c} and return it, or -1 if there is none.",
                "Return the maximum decimal digit of abs({p}) that is {c} (-1 when no digit is "
                "{c}).",
            ],
            fields,
            body,
            lambda n: max((d for d in _digits_of(n) if test(d)), default=-1),
            edges,
            draw,
        )
    if rng.random() < 0.5:
        body = code(
            """
            product = 1
            found = False
            for ch in str(abs($p)):
                d = int(ch)
                if $c:
                    product *= d
                    found = True
            return product if found else 0
            """,
            p=p,
            c=expr,
        )

        def product(n: int) -> int:
            kept = [d for d in _digits_of(n) if test(d)]
            out = 1
            for d in kept:
                out *= d
            return out if kept else 0

        return make(
            rng,
            [f"product_{w}_digits", f"{w}_digit_product", f"multiply_{w}_digits"],
            params,
            "int",
            [
                "Return the product of the digits of {p} that are {c}, ignoring the sign of "
                "{p}. If no digit is {c}, return 0.",
                "Given an integer {p}, multiply together the digits of its absolute value that "
                "are {c} and return the product; return 0 when no digit is {c}.",
                "Take the decimal digits of abs({p}) that are {c} and return their product, or "
                "0 if there are none.",
            ],
            fields,
            body,
            product,
            edges,
            draw,
        )
    body = code(
        """
        kept = ""
        for ch in str(abs($p)):
            d = int(ch)
            if $c:
                kept += ch
        return int(kept) if kept else 0
        """,
        p=p,
        c=expr,
    )

    def formed(n: int) -> int:
        out = 0
        for d in _digits_of(n):
            if test(d):
                out = out * 10 + d
        return out

    return make(
        rng,
        [f"keep_{w}_digits", f"only_{w}_digits", f"filter_{w}_digits"],
        params,
        "int",
        [
            "Keep only the digits of {p} that are {c} (ignore the sign of {p}) and return the "
            "integer they form, in their original order. Return 0 if no digit is {c}.",
            "Given an integer {p}, build a new integer from the digits of abs({p}) that are "
            "{c}, keeping their order, and return it (0 when none are {c}).",
            "Return the number made of the digits of abs({p}) that are {c}, read left to right; "
            "leading zeros disappear, and the result is 0 if no digit is {c}.",
        ],
        fields,
        body,
        formed,
        edges,
        draw,
    )


# --- multiples ---------------------------------------------------------------------------


def _multiples(rng: random.Random, level: int) -> Draft:
    p = rng.choice(INT_PARAMS)
    params = ((p, "int"),)
    a, b = rng.sample(range(2, 8), 2)
    if level == 1:
        which = f"divisible by {a}"
        src = f"i % {a} == 0"

        def test(i: int) -> bool:
            return i % a == 0

    elif level == 2:
        which = f"divisible by {a} or by {b}"
        src = f"i % {a} == 0 or i % {b} == 0"

        def test(i: int) -> bool:
            return i % a == 0 or i % b == 0

    elif rng.random() < 0.5:
        which = f"divisible by {a} or by {b}, but not by both"
        src = f"(i % {a} == 0) != (i % {b} == 0)"

        def test(i: int) -> bool:
            return (i % a == 0) ^ (i % b == 0)

    else:
        which = f"divisible by {a} but not by {b}"
        src = f"i % {a} == 0 and i % {b} != 0"

        def test(i: int) -> bool:
            return i % a == 0 and i % b != 0

    edges = [(0,), (1,), (a,), (a * b,)]

    def draw(r: random.Random) -> tuple:
        return (r.randint(2, 60),)

    fields = {"p": p, "c": which}
    tag = f"{a}" if level == 1 else f"{a}_{b}"
    if rng.random() < 0.5:
        body = code(
            """
            total = 0
            for i in range(1, $p + 1):
                if $c:
                    total += i
            return total
            """,
            p=p,
            c=src,
        )
        return make(
            rng,
            ["sum_of_multiples", f"sum_multiples_{tag}", "multiples_total"],
            params,
            "int",
            [
                "Return the sum of all integers from 1 to {p} (inclusive) that are {c}. If {p} "
                "is less than 1, return 0.",
                "Given a non-negative integer {p}, add up the numbers 1, 2, ..., {p} that are "
                "{c} and return the total (0 if there are none).",
                "Return the total of every whole number i with 1 <= i <= {p} that is {c}; the "
                "total is 0 when no such number exists.",
            ],
            fields,
            body,
            lambda n: sum(filter(test, range(1, n + 1))),
            edges,
            draw,
        )
    body = code("return sum(1 for i in range(1, $p + 1) if $c)", p=p, c=src)
    return make(
        rng,
        ["count_multiples", f"count_multiples_{tag}", "how_many_multiples"],
        params,
        "int",
        [
            "Return how many integers from 1 to {p} (inclusive) are {c}. If {p} is less than "
            "1, return 0.",
            "Given a non-negative integer {p}, count the numbers 1, 2, ..., {p} that are {c} and "
            "return the count.",
            "Return the number of whole numbers i with 1 <= i <= {p} that are {c} (0 when there "
            "are none).",
        ],
        fields,
        body,
        lambda n: len(list(filter(test, range(1, n + 1)))),
        edges,
        draw,
    )


FAMILIES_NUMERIC: tuple[Family, ...] = (
    Family(
        "filter_aggregate",
        "lists",
        "aggregate the elements of an integer list that meet a condition",
        {
            1: "sum or count of the elements meeting one condition",
            2: "largest or smallest element meeting a condition, None if none",
            3: "two conditions: sum of squares, or largest/smallest, of the elements meeting both",
        },
        _filter,
    ),
    Family(
        "adjacent",
        "lists",
        "compare or combine neighbouring elements of an integer list",
        {
            1: "count rises, drops or repeats between neighbours, or the list of differences",
            2: "count jumps of at least t, or the largest/smallest neighbour-pair sum (None)",
            3: "length of the longest increasing, decreasing or constant run",
        },
        _adjacent,
    ),
    Family(
        "window",
        "lists",
        "sliding windows of k consecutive elements",
        {
            1: "list of window sums or window maximums",
            2: "largest window sum (None if too short), or count of windows with sum > t",
            3: "start index of the largest/smallest-sum window, leftmost on ties, -1 if none",
        },
        _window,
    ),
    Family(
        "prefix",
        "lists",
        "running sums and prefixes",
        {
            1: "running sum, running maximum or running minimum",
            2: "first index where the running sum reaches t, or count of negative prefix sums",
            3: "running sum reset to 0 when negative, or capped at c",
        },
        _prefix,
    ),
    Family(
        "rearrange",
        "lists",
        "reorder the elements of a list",
        {
            1: "rotate by one step, or swap the first and last elements",
            2: "rotate by k steps given as an argument (k may exceed the length)",
            3: "reverse the first k and the rest separately, or move elements meeting a "
            "condition to the end (stable)",
        },
        _rearrange,
    ),
    Family(
        "clamp",
        "lists",
        "transform each element of an integer list",
        {
            1: "clamp into [lo, hi], cap at t, multiply by k, or zero the negatives",
            2: "change only the elements meeting a condition (scale, add, zero, negate)",
            3: "shift by the minimum then cap, or clamp then drop consecutive duplicates",
        },
        _clamp,
    ),
    Family(
        "digits",
        "integers",
        "arithmetic on the decimal digits of an integer",
        {
            1: "sum or count of the digits meeting a condition (n >= 0)",
            2: "sum, count or largest of the digits meeting a condition; negatives use abs",
            3: "product of such digits, or the number they form (0 if none)",
        },
        _digits,
    ),
    Family(
        "multiples",
        "integers",
        "sum or count the integers from 1 to n with divisibility conditions",
        {
            1: "divisible by a",
            2: "divisible by a or b",
            3: "divisible by exactly one of a and b, or by a but not b",
        },
        _multiples,
    ),
)
