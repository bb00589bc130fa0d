"""The six families over a list of integers, as data: list_stat, list_count, list_map,
list_filter, list_slice, list_index (`FamilySpec`s read by sparring.problems.families.spec).

Covers: those specs. Does not cover: the other ten families and the SPECS table
(sparring.problems.families.catalog), the pieces they share (sparring.problems.families.ops).
"""

from __future__ import annotations

from sparring.problems.families.base import INT_LIST_PARAMS as LISTS
from sparring.problems.families.ops import (
    K_ANY,
    K_POS,
    K_SMALL,
    LIST_FRAMES,
    cond_ops,
    draw_int_list,
    op,
)
from sparring.problems.families.spec import FamilySpec

# fmt: off
LIST_STAT = FamilySpec(
    "list_stat", "lists", "one number from a list of integers",
    params=((LISTS, "list[int]"),), returns="int", frames=LIST_FRAMES,
    edges=(([],), ([7],), ([-3, 0, 5],), ([4, 4, 4],)),
    draw=draw_int_list,
    levels={
        0: (
            op("sum", "total list_sum", {},
               "return the sum of the elements of {p} (0 for an empty list)",
               "sum({p})"),
            op("sum_plus", "sum_plus_{k} total_plus_{k}", {"k": K_POS},
               "return the sum of the elements of {p} plus {k}",
               "sum({p}) + {k}"),
            op("sum_times", "sum_times_{k} scaled_total_{k}", {"k": K_SMALL},
               "return the sum of the elements of {p} multiplied by {k}",
               "sum({p}) * {k}"),
            op("max_or", "largest_or_{k} max_or_{k}", {"k": (0, -1, None)},
               "return the largest element of {p}, or {k} if {p} is empty",
               "max({p}) if {p} else {k}"),
            op("min_or", "smallest_or_{k} min_or_{k}", {"k": (0, -1, None)},
               "return the smallest element of {p}, or {k} if {p} is empty",
               "min({p}) if {p} else {k}"),
            op("spread", "spread value_range", {},
               "return the largest element of {p} minus the smallest one (0 for an empty list)",
               "max({p}) - min({p}) if {p} else 0"),
            op("product", "product multiply_all", {},
               "return the product of the elements of {p} (1 for an empty list)",
               "out = 1\n"
               "for x in {p}:\n"
               "    out *= x\n"
               "return out"),
            op("sum_first", "sum_first_{k} head_total_{k}", {"k": K_SMALL},
               "return the sum of the first {k} elements of {p} (of all of them if there are "
               "fewer)",
               "sum({p}[:{k}])"),
            op("sum_last", "sum_last_{k} tail_total_{k}", {"k": K_SMALL},
               "return the sum of the last {k} elements of {p} (of all of them if there are fewer)",
               "sum({p}[-{k}:])"),
            op("sum_squares", "sum_of_squares square_total", {},
               "return the sum of the squares of the elements of {p}",
               "sum(x * x for x in {p})"),
            op("sum_abs", "sum_abs total_size", {},
               "return the sum of the absolute values of the elements of {p}",
               "sum(abs(x) for x in {p})"),
            op("mean_floor", "mean_floor average_down", {},
               "return the average of the elements of {p} rounded down to an integer (0 for an "
               "empty list)",
               "sum({p}) // len({p}) if {p} else 0"),
        ),
        1: (
            *cond_ops("sum", "sum_{c} total_{c}", "return the sum of the elements of {p}",
                      "sum(x for x in {p} if {cond})"),
            op("sum_even_index", "sum_even_positions even_index_total", {},
               "return the sum of the elements of {p} at even positions (0, 2, 4, ...)",
               "sum({p}[::2])"),
            op("max_doubled", "max_times_{k} scaled_max_{k}", {"k": K_SMALL},
               "return the largest element of {p} times {k}, or 0 if {p} is empty",
               "max({p}) * {k} if {p} else 0"),
        ),
    },
)

LIST_COUNT = FamilySpec(
    "list_count", "lists", "how many elements of a list of integers",
    params=((LISTS, "list[int]"),), returns="int", frames=LIST_FRAMES,
    edges=(([],), ([7],), ([-3, 0, 5],), ([4, 4, 4],)),
    draw=draw_int_list,
    levels={
        0: (
            *cond_ops("count", "count_{c} how_many_{c} num_{c}",
                      "return how many elements of {p} are", "sum(1 for x in {p} if {cond})",
                      joiner=" "),
            op("distinct", "distinct_count num_unique", {},
               "return how many different values {p} holds",
               "len(set({p}))"),
        ),
        1: (
            op("count_gt_first", "count_above_first beats_first", {},
               "return how many elements of {p} are greater than its first element (0 for an "
               "empty list)",
               "sum(1 for x in {p} if x > {p}[0]) if {p} else 0"),
            op("count_max", "count_of_max max_count", {},
               "return how many times the largest element of {p} occurs in it (0 for an empty "
               "list)",
               "{p}.count(max({p})) if {p} else 0"),
            op("count_rises", "count_rises num_increases", {},
               "return how many elements of {p} are greater than the element just before them",
               "sum(1 for a, b in zip({p}, {p}[1:]) if b > a)"),
            op("count_between", "count_between_{k}_{j} in_range_{k}_{j}",
               {"k": (-3, 0, 2, 5), "j": (8, 10, 15, 25)},
               "return how many elements of {p} are at least {k} and at most {j}",
               "sum(1 for x in {p} if {k} <= x <= {j})"),
        ),
    },
)

LIST_MAP = FamilySpec(
    "list_map", "lists", "a list of integers changed element by element",
    params=((LISTS, "list[int]"),), returns="list[int]", frames=LIST_FRAMES,
    edges=(([],), ([7],), ([-3, 0, 5],)),
    draw=draw_int_list,
    levels={
        0: (
            op("add", "add_{k} plus_{k}", {"k": K_POS},
               "return a new list with {k} added to every element of {p}",
               "[x + {k} for x in {p}]"),
            op("sub", "minus_{k} subtract_{k}", {"k": K_POS},
               "return a new list with {k} subtracted from every element of {p}",
               "[x - {k} for x in {p}]"),
            op("mul", "times_{k} scale_{k}", {"k": K_SMALL},
               "return a new list with every element of {p} multiplied by {k}",
               "[x * {k} for x in {p}]"),
            op("square", "squares squared", {},
               "return a new list with the square of every element of {p}",
               "[x * x for x in {p}]"),
            op("negate", "negated flip_signs", {},
               "return a new list with every element of {p} negated",
               "[-x for x in {p}]"),
            op("abs", "absolute abs_values", {},
               "return a new list with the absolute value of every element of {p}",
               "[abs(x) for x in {p}]"),
            op("floordiv", "div_{k} divide_by_{k}", {"k": range(2, 6)},
               "return a new list with every element of {p} divided by {k}, rounded down (//)",
               "[x // {k} for x in {p}]"),
            op("mod", "mod_{k} remainders_{k}", {"k": (2, 3, 4, 5, 7, 10)},
               "return a new list with the remainder of every element of {p} divided by {k} (%)",
               "[x % {k} for x in {p}]"),
            op("cap", "cap_at_{k} at_most_{k}", {"k": range(0, 21, 2)},
               "return a new list where every element of {p} greater than {k} is replaced by {k}",
               "[min(x, {k}) for x in {p}]"),
            op("floor", "at_least_{k} raise_to_{k}", {"k": range(0, 21, 2)},
               "return a new list where every element of {p} less than {k} is replaced by {k}",
               "[max(x, {k}) for x in {p}]"),
        ),
        1: (
            op("double_even", "double_evens twice_the_evens", {},
               "return a new list where the even elements of {p} are doubled and the odd ones "
               "stay as they are",
               "[x * 2 if x % 2 == 0 else x for x in {p}]"),
            op("zero_neg", "zero_negatives clip_and_scale_{k}", {"k": K_SMALL},
               "return a new list where the negative elements of {p} become 0 and the others are"
               " multiplied by {k}",
               "[x * {k} if x >= 0 else 0 for x in {p}]"),
            op("running", "running_total prefix_sums", {},
               "return the running totals of {p}: element i is the sum of the first i + 1 elements",
               "out = []\n"
               "total = 0\n"
               "for x in {p}:\n"
               "    total += x\n"
               "    out.append(total)\n"
               "return out"),
        ),
    },
)

LIST_FILTER = FamilySpec(
    "list_filter", "lists", "the elements of a list of integers that pass a test",
    params=((LISTS, "list[int]"),), returns="list[int]", frames=LIST_FRAMES,
    edges=(([],), ([7],), ([-3, 0, 5],)),
    draw=draw_int_list,
    levels={
        0: (
            *cond_ops("keep", "keep_{c} only_{c}", "return a new list of the elements of {p}",
                      "[x for x in {p} if {cond}]"),
            op("drop_k", "without_{k} remove_{k}", {"k": range(-2, 10)},
               "return a new list of the elements of {p} that are not equal to {k}, in order",
               "[x for x in {p} if x != {k}]"),
        ),
        1: (
            op("unique", "unique_in_order dedupe", {},
               "return the elements of {p} without repeats, each kept where it first appears",
               "out = []\n"
               "for x in {p}:\n"
               "    if x not in out:\n"
               "        out.append(x)\n"
               "return out"),
            op("above_mean", "above_average over_mean", {},
               "return the elements of {p} that are greater than the average of {p}, in order",
               "[x for x in {p} if x * len({p}) > sum({p})]"),
            op("sorted_gt", "sorted_above_{k} big_sorted_{k}", {"k": K_ANY},
               "return the elements of {p} greater than {k}, sorted from smallest to largest",
               "sorted(x for x in {p} if x > {k})"),
        ),
    },
)

LIST_SLICE = FamilySpec(
    "list_slice", "lists", "a part or a rearrangement of a list of integers",
    params=((LISTS, "list[int]"),), returns="list[int]", frames=LIST_FRAMES,
    edges=(([],), ([7],), ([-3, 0, 5, 9, 2],)),
    draw=draw_int_list,
    levels={
        0: (
            op("first", "first_{k} head_{k}", {"k": range(2, 7)},
               "return the first {k} elements of {p} (all of them if there are fewer)",
               "{p}[:{k}]"),
            op("last", "last_{k} tail_{k}", {"k": range(2, 7)},
               "return the last {k} elements of {p} (all of them if there are fewer)",
               "{p}[-{k}:]"),
            op("drop_first", "drop_first_{k} skip_{k}", {"k": range(1, 5)},
               "return {p} without its first {k} elements",
               "{p}[{k}:]"),
            op("drop_last", "drop_last_{k} trim_{k}", {"k": range(1, 5)},
               "return {p} without its last {k} elements",
               "{p}[:-{k}]"),
            op("reverse", "reversed_list backwards", {},
               "return a new list with the elements of {p} in reverse order",
               "{p}[::-1]"),
            op("sort_desc", "sorted_desc largest_first", {},
               "return the elements of {p} sorted from largest to smallest",
               "sorted({p}, reverse=True)"),
            op("every_other", "every_other even_positions", {},
               "return the elements of {p} at positions 0, 2, 4, ...",
               "{p}[::2]"),
            op("odd_positions", "odd_positions odd_slots", {},
               "return the elements of {p} at positions 1, 3, 5, ...",
               "{p}[1::2]"),
            op("rotate", "rotate_{k} shift_left_{k}", {"k": (1, 2, 3)},
               "return {p} rotated left by {k}: its first {k} elements moved to the end",
               "{p}[{k}:] + {p}[:{k}]"),
            op("append", "append_{k} with_{k}", {"k": range(0, 10)},
               "return a new list: {p} followed by {k}",
               "{p} + [{k}]"),
            op("prepend", "prepend_{k}", {"k": range(0, 10)},
               "return a new list: {k} followed by the elements of {p}",
               "[{k}] + {p}"),
        ),
        1: (
            op("smallest_k", "smallest_{k} bottom_{k}", {"k": (2, 3, 4)},
               "return the {k} smallest elements of {p}, from smallest to largest",
               "sorted({p})[:{k}]"),
            op("largest_k", "largest_{k} top_{k}", {"k": (2, 3, 4)},
               "return the {k} largest elements of {p}, from largest to smallest",
               "sorted({p}, reverse=True)[:{k}]"),
            op("mirror", "mirrored palindromic", {},
               "return {p} followed by {p} reversed",
               "{p} + {p}[::-1]"),
        ),
    },
)

LIST_INDEX = FamilySpec(
    "list_index", "lists", "one element or position of a list of integers",
    params=((LISTS, "list[int]"),), returns="int | None", frames=LIST_FRAMES,
    edges=(([],), ([7],), ([3, 8, 8, 1],)),
    draw=draw_int_list,
    levels={
        0: (
            op("first", "first_or_none head", {},
               "return the first element of {p}, or None if {p} is empty",
               "{p}[0] if {p} else None"),
            op("last", "last_or_none final_element", {},
               "return the last element of {p}, or None if {p} is empty",
               "{p}[-1] if {p} else None"),
            op("at", "element_{k} item_at_{k}", {"k": range(1, 6)},
               "return the element of {p} at position {k} (counting from 0), or None if {p} is "
               "shorter",
               "{p}[{k}] if len({p}) > {k} else None"),
            op("from_end", "from_end_{k} back_{k}", {"k": range(2, 6)},
               "return the element of {p} that is {k}th from the end (the last one is 1st), or "
               "None if {p} is shorter",
               "{p}[-{k}] if len({p}) >= {k} else None"),
            op("index_of", "position_of_{k} find_{k}", {"k": range(-5, 13)},
               "return the position of the first {k} in {p} (counting from 0), or -1 if {k} is "
               "not in it",
               "{p}.index({k}) if {k} in {p} else -1", returns="int"),
            op("index_max", "argmax where_largest", {},
               "return the position of the largest element of {p} (the first one if it repeats),"
               " or -1 for an empty list",
               "{p}.index(max({p})) if {p} else -1", returns="int"),
            op("index_min", "argmin where_smallest", {},
               "return the position of the smallest element of {p} (the first one if it "
               "repeats), or -1 for an empty list",
               "{p}.index(min({p})) if {p} else -1", returns="int"),
            op("middle", "middle center", {},
               "return the middle element of {p} (at position len({p}) // 2), or None if {p} is "
               "empty",
               "{p}[len({p}) // 2] if {p} else None"),
        ),
        1: (
            op("second_largest", "second_largest runner_up", {},
               "return the second largest distinct value in {p}, or None if it has fewer than two",
               "sorted(set({p}))[-2] if len(set({p})) > 1 else None"),
            op("first_gt", "first_above_{k} first_over_{k}", {"k": K_ANY},
               "return the first element of {p} greater than {k}, or None if there is none",
               "next((x for x in {p} if x > {k}), None)"),
        ),
    },
)
# fmt: on
