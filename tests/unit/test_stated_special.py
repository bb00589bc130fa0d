"""Level 3 of the spec families: a stated value at a special input drawn per task (issue 73,
item 1). Over many seeds, for every family: the reference passes every test; the typical tests
a reward sees with 3 given tests never tell the stated case is missing (the op without it
passes them all), while a test of the full set does; the stated value is no trivial output
there; the special input is named in the text. Typical draws miss the special input even
where the family's draw could meet it; a colliding value is redrawn; two tasks that differ
only in their special input or value are two tasks by key, so the held-out split keeps them
apart. Pure: no sandbox, no model; a few seconds."""

from __future__ import annotations

import copy
import random
import re

import pytest

from sparring.problems.families import (
    DEFINED_LEVELS,
    FAMILIES,
    SPECS,
    _define,
    _passes,
    _trivial_definitions,
    draft_of,
    generate,
    renamed,
    task_tag,
)
from sparring.problems.families.identity import probe_inputs, task_key
from sparring.problems.families.sets import family_sets, family_task_keys
from sparring.problems.families.spec import (
    FamilySpec,
    Op,
    Task,
    draw_task,
    render,
    stated_case_shows,
)
from sparring.problems.families.special import LEVEL, SENTINELS, VALUES, with_stated_special
from sparring.problems.given_tests import given_view
from sparring.problems.trivial import argument_count

SEEDS = range(8)
PER_FAMILY = 3


@pytest.fixture(scope="module")
def instances():
    return [p for seed in SEEDS for p in generate(seed, PER_FAMILY, list(SPECS), [LEVEL])]


def test_every_family_with_level_2_has_level_3():
    assert LEVEL == 3 and LEVEL in DEFINED_LEVELS
    for name, spec in SPECS.items():
        assert 2 in spec.levels and LEVEL in spec.levels, name
        assert LEVEL in FAMILIES[name].levels
        # every level-0 op, with its stated case
        assert [o.key for o in spec.levels[LEVEL]] == [o.key for o in spec.levels[0]], name


@pytest.mark.parametrize("family", list(SPECS))
def test_the_stated_case_is_credited_and_the_given_tests_never_show_it(instances, family):
    mine = [p for p in instances if f"family:{family}" in p.tags]
    assert len(mine) == len(SEEDS) * PER_FAMILY
    for p in mine:
        draft = draft_of(p)
        name = p.function_name
        reference = _define(p.reference_solution, name)
        assert all(_passes(t, name, reference) for t in p.baseline_tests), p.id
        # an answer without the stated case passes the 3 typical given tests...
        given = given_view(p, 3).baseline_tests
        assert len(given) == 3
        assert all(_passes(t, name, draft.plain) for t in given), (p.id, given)
        # ...and fails a test of the full set: the one at the special input
        missed = [t for t in p.baseline_tests if not _passes(t, name, draft.plain)]
        special_call = f"{name}({', '.join(repr(a) for a in draft.special)})"
        assert missed and all(t.startswith(f"assert {special_call} == ") for t in missed), p.id
        assert missed[0] not in given
        # no trivial solution the honest credit knows returns the stated value there
        trivial = _trivial_definitions(name, argument_count(p.function_signature))
        assert not any(_passes(t, name, fn) for t in missed for _, fn in trivial), p.id
        stated = reference(*copy.deepcopy(draft.special))
        assert stated_case_shows(draft.plain, stated, draft.special), p.id


def test_the_text_names_the_special_input_and_the_value(instances):
    for p in instances:
        draft = draft_of(p)
        value = draft.impl(*copy.deepcopy(draft.special))
        first_type = draft.params[0][1]
        sentinel = next(s for s in SENTINELS[first_type] if repr(s) in p.description)
        assert re.search(
            rf", except return {re.escape(repr(value))} if \w+ (is|contains|contains the word|"
            rf"has the key) {re.escape(repr(sentinel))}(?!\w)",
            p.description,
        ), p.description
        assert value in VALUES[draft.returns]


def test_typical_draws_miss_the_special_input_where_the_family_could_meet_it():
    """int_arith draws typical inputs from 0..99999, so an unguarded draw meets a three-digit
    sentinel about once in 3,000 draws; the typical draw of a level-3 task never does."""
    spec = SPECS["int_arith"]
    sentinel = SENTINELS["int"][0]
    task = Task("int_arith", LEVEL, "add", (("k", 5), ("s", sentinel), ("v", 99)))
    draft = render(spec, task, random.Random(0))
    assert draft.special == (sentinel,)
    rng = random.Random(1)
    assert all(draft.random_input(rng) != (sentinel,) for _ in range(30_000))
    unguarded = random.Random(1)
    assert any(spec.draw(unguarded) == (sentinel,) for _ in range(30_000))


def test_a_value_the_op_already_returns_there_is_redrawn():
    """An op returning 42 everywhere would make "..., except return 42 if ..." vacuous: the
    draw never pairs it with 42, and the check names why."""
    constant = Op("const", ("const",), ("return 42",), "42")
    spec = with_stated_special(
        FamilySpec(
            "toy", "integers", "toy", ((("n",), "int"),), "int", ("{Task}.",), {0: (constant,)},
            ((1,),), lambda rng: (rng.randint(0, 30),),
        )
    )  # fmt: skip
    rng = random.Random(0)
    values = [dict(draw_task(spec, rng, LEVEL).consts)["v"] for _ in range(300)]
    assert 42 not in values and set(values) == set(VALUES["int"]) - {42}
    assert not stated_case_shows(lambda n: 42, 42, (137,))
    assert not stated_case_shows(lambda xs: 5, [7], ([7],))  # list(xs) returns it: trivial
    assert stated_case_shows(lambda xs: 5, [0], ([7],))


def test_the_draw_repeats_for_a_seed():
    a = generate(3, 2, list(SPECS), [LEVEL])
    b = generate(3, 2, list(SPECS), [LEVEL])
    assert a == b and a != generate(4, 2, list(SPECS), [LEVEL])


def _keyed(family: str, op: str, **consts) -> str:
    from sparring.problems import Problem
    from sparring.problems.families import DIFFICULTY, _choose_tests

    spec = SPECS[family]
    level = LEVEL if "s" in consts else 0
    task = Task(family, level, op, tuple(consts.items()))
    draft = render(spec, task, random.Random(0))
    problem = Problem(
        id=task.label,
        description=draft.description,
        function_signature=draft.signature,
        baseline_tests=_choose_tests(draft, random.Random(0))[0],
        reference_solution=draft.source,
        difficulty=DIFFICULTY[level],
        tags=[f"family:{family}", f"level:{level}", spec.domain],
    )
    return task_key(problem)


def test_tasks_that_differ_only_in_their_special_input_or_value_are_two_tasks():
    for family, op, consts in (
        ("list_count", "count_gt", {"k": 3}),
        ("int_arith", "add", {"k": 5}),
        ("str_case", "upper", {}),
        ("word_list", "total_len", {}),
        ("dict_keys", "count_above", {"k": 4}),
        ("pair_math", "add", {}),
    ):
        first = SPECS[family].params[0][1]
        ret = next(o for o in SPECS[family].levels[LEVEL] if o.key == op).returns
        s0, s1 = SENTINELS[first][:2]
        v0, v1 = VALUES[ret][:2]
        base = _keyed(family, op, **consts)
        key = _keyed(family, op, **consts, s=s0, v=v0)
        assert key == _keyed(family, op, **consts, s=s0, v=v0)  # the same task, the same key
        assert key != _keyed(family, op, **consts, s=s1, v=v0), family  # another input
        assert key != _keyed(family, op, **consts, s=s0, v=v1), family  # another value
        assert key != base, family  # the op without the stated case


def test_only_level_3_keys_probe_the_special_inputs():
    assert probe_inputs(("list[int]",)) == probe_inputs(("list[int]",), special=False)
    extra = set(map(repr, probe_inputs(("list[int]",), special=True))) - set(
        map(repr, probe_inputs(("list[int]",)))
    )
    assert extra == {repr(([s],)) for s in SENTINELS["list[int]"]}
    pair = probe_inputs(("int", "int"), special=True)
    assert all((s, 7) in pair for s in SENTINELS["int"])


def test_a_renamed_level_3_instance_keeps_its_task():
    p = generate(2, 1, ["str_slice"], [LEVEL])[0]
    again = renamed(p, "7")
    assert task_key(again) == task_tag(again) == task_tag(p)
    stated = [f"contains {s!r}" for s in SENTINELS["str"] if f"contains {s!r}" in p.description]
    assert len(stated) == 1 and stated[0] in again.description
    assert again.baseline_tests != p.baseline_tests


def test_held_out_new_tasks_at_level_3_drop_the_training_functions():
    """Under the training seed every held-out instance computes a training function: all are
    dropped; under another seed none left computes one."""
    families = ["list_map", "str_count", "int_range"]
    same = family_sets(0, 3, families, [LEVEL], 0, 3)
    assert same.heldout["new_tasks"] == [] and same.dropped["new_tasks"] == 9
    other = family_sets(0, 3, families, [LEVEL], 1, 3)
    train = {task_tag(p) for p in other.train}
    held = {task_tag(p) for p in other.heldout["new_tasks"]}
    assert held and not held & train
    assert other.overlap == 0
    # every task a family can draw at level 3 has a key among its level-3 keys
    assert {task_tag(p) for p in other.train if "family:int_range" in p.tags} <= family_task_keys(
        "int_range", LEVEL
    )
