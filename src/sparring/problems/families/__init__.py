"""Problem families: procedurally generated function-writing problems, seeded and checked.

Covers: `FAMILIES` (the 16 drawn-operation families of sparring.problems.families.catalog, over
integer
lists, strings, integers and mappings, each a `FamilySpec` read by the one generator of
sparring.problems.families.spec: level 0 is one step with drawn constants, level 1 two steps, level
2
level 0 with a stated value for the empty input, level 3 level 0 with a stated value at a
special input drawn per task (sparring.problems.families.special); `TRAINED_FAMILIES` are the 14
that
configs/learn.yaml trains on, `NEW_FAMILIES` the 2 it holds out), `generate` (per_family
instances of every (family, level) pair, identical for the same seed in any process; levels 1
and 2 unless others are named), `renamed` (a task shown again under other names) and
`check_instance` (the reference passes every test, and at least 3 tests, and at least half, are
passed by no trivial solution of sparring.problems.trivial), `draft_of` (the draft an instance was
made
from: its op without the stated case, its special input), `stated_case_tests` (which of an
instance's tests are at its stated case), `family_and_level` (an instance's family and level, read
from the tags it is made with). An instance draws its task (operation and
constants) from one stream and its function and parameter names, phrasing and tests from
another; its inputs always include the edge cases.

Does not cover: the sandbox. Expected values come from each family's own Python (trusted: it
is this package's code), and the checks exec the reference and the trivial solutions
in-process. The specs themselves (sparring.problems.families.catalog), drawing and rendering
(sparring.problems.families.spec), task identity (sparring.problems.families.identity), the training
and
held-out sets (sparring.problems.families.sets); materializing datasets and scoring answers are the
pipeline's (sparring.phases).
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from sparring.errors import SparringError
from sparring.problems import Problem
from sparring.problems.families.base import Args, Draft, Family
from sparring.problems.families.catalog import NEW_FAMILIES, SPECS, TRAINED_FAMILIES
from sparring.problems.families.identity import prompt_key, task_key
from sparring.problems.families.spec import as_family, draw_task, render, trivial_callables
from sparring.problems.given_tests import edge_tag
from sparring.problems.trivial import argument_count, trivial_family

__all__ = [
    "DEFINED_LEVELS",
    "FAMILIES",
    "LEVELS",
    "NEW_FAMILIES",
    "OP_TAG",
    "SPECS",
    "TASK_TAG",
    "TRAINED_FAMILIES",
    "Draft",
    "Family",
    "FamilyError",
    "build_draft",
    "check_instance",
    "check_instances",
    "draft_of",
    "generate",
    "normalized_key",
    "renamed",
    "task_tag",
]

FAMILIES: dict[str, Family] = {name: as_family(spec) for name, spec in SPECS.items()}
LEVELS = (0, 1, 2, 3)  # the generator's vocabulary (DIFFICULTY)
# the levels some family defines: what a config or a command may ask for (a level no family
# defines would draw nothing; materialize would fail on it)
DEFINED_LEVELS = tuple(sorted({level for family in FAMILIES.values() for level in family.levels}))
TASK_TAG = "task:"  # + the instance's task key (sparring.problems.families.identity)
OP_TAG = "op:"  # + `family/op` of an instance: the operation, constants aside
DEFAULT_LEVELS = (1, 2)  # level 0 (one step with drawn constants) is asked for by name
DIFFICULTY = {0: "easy", 1: "easy", 2: "medium", 3: "hard"}
MIN_TESTS, MAX_TESTS = 8, 10
MIN_DISCRIMINATING = 3
MAX_TEST_CHARS = 300
ATTEMPTS = 40  # sub-seeds tried per instance before a family is declared broken
DRAWS = 300  # random inputs drawn per instance while looking for discriminating ones


# check_instance's findings that a fresh draw can fix (too few usable inputs); any other
# finding is a bug in the family
REDRAWABLE = ("test count ", "a test is repeated", "test over ", "discriminating tests: ")


class FamilyError(SparringError, ValueError):
    """An unknown family or level, a bad count or seed, or a family that cannot produce a
    valid instance: one line naming what is known."""


def _family(name: str) -> Family:
    if name not in FAMILIES:
        raise FamilyError(f"unknown problem family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def _level(level: Any) -> int:
    if isinstance(level, bool) or level not in LEVELS:
        raise FamilyError(f"unknown level {level!r}; known: {', '.join(map(str, LEVELS))}")
    return int(level)


def build_draft(family: str, level: int, rng: random.Random) -> Draft:
    """One draft of `family` at `level` from `rng`: names, phrasing, constants, reference
    and implementation, before tests are chosen."""
    return _build(_family(family), rng, _level(level))


def _build(family: Family, rng: random.Random, level: int) -> Draft:
    return family.build(rng, level)


def _draft(family: Family, level: int, key: str, rename: str = "") -> tuple[Draft, random.Random]:
    """The draft of one sub-seed `key` and the stream its tests are drawn from. The task is
    drawn from one stream and the names, phrasing and tests from another, so `rename` shows
    the same task under other names."""
    spec = SPECS[family.name]
    task = draw_task(spec, random.Random(key + ":task"), level)
    rng = random.Random(key + ":names" + (f":{rename}" if rename else ""))
    return render(spec, task, rng), rng


def generate(
    seed: int,
    per_family: int,
    families: Sequence[str] | None = None,
    levels: Sequence[int] = DEFAULT_LEVELS,
) -> list[Problem]:
    """`per_family` checked instances of each (family, level) pair that exists (every family
    has levels 0 to 3), families in `FAMILIES` order unless named, ids
    `fam-<family>-L<level>-s<seed>-<index>`; a family with none of `levels` is an error. The
    same arguments give the same problems in any process; an instance depends only on (seed,
    family, level, index), unless it repeats an earlier one (prompt, or task while new ones
    can be found) of the same call."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise FamilyError(f"seed {seed!r}: use a non-negative integer")
    if isinstance(per_family, bool) or not isinstance(per_family, int) or per_family < 1:
        raise FamilyError(f"per_family {per_family!r}: use an integer of at least 1")
    names = list(FAMILIES) if families is None else list(families)
    chosen = [_family(name) for name in dict.fromkeys(names)]
    if not chosen:
        raise FamilyError(f"no families named; known: {', '.join(FAMILIES)}")
    chosen_levels = list(dict.fromkeys(_level(level) for level in levels))
    if not chosen_levels:
        raise FamilyError(f"no levels named; known: {', '.join(map(str, LEVELS))}")
    for family in chosen:
        if not set(chosen_levels) & set(family.levels):
            raise FamilyError(
                f"family {family.name} has none of the levels {chosen_levels}; it has "
                f"{', '.join(map(str, family.levels))}"
            )
    seen: set[str] = set()
    tasks: set[str] = set()
    problems = []
    for family in chosen:
        for level in (lv for lv in chosen_levels if lv in family.levels):
            for index in range(per_family):
                problems.append(_instance(family, level, seed, index, seen, tasks))
    return problems


def renamed(problem: Problem, rename: str) -> Problem:
    """The task of a generated instance shown in other words: other names, another phrasing
    (another prompt key) and other tests, seeded by `rename`; its id gains `-r<rename>`.
    FamilyError for an instance no family made."""
    fam, level, key = _made_by(problem)
    for tries in range(ATTEMPTS):
        draft, rng = _draft(fam, level, key, f"{rename}:{tries}")
        candidate = _problem(draft, rng, fam, level, f"{problem.id}-r{rename}")
        if prompt_key(candidate) != prompt_key(problem) and not check_instance(candidate):
            return candidate
    raise FamilyError(f"{problem.id}: no valid renamed instance in {ATTEMPTS} tries")


def _made_by(problem: Problem) -> tuple[Family, int, str]:
    """The family, level and sub-seed key `generate` made `problem` from."""
    family, level, seed, index = _origin(problem)
    if family not in FAMILIES:
        raise FamilyError(f"{problem.id}: not an instance of a known family")
    fam = FAMILIES[family]
    keys = (_sub_seed(seed, family, level, index, attempt) for attempt in range(ATTEMPTS))
    key = next(
        (k for k in keys if _draft(fam, level, k)[0].source == problem.reference_solution), None
    )
    if key is None:
        raise FamilyError(f"{problem.id}: not an instance that generate made")
    return fam, level, key


def draft_of(problem: Problem) -> Draft:
    """The draft a generated instance was made from (its `plain` function: the op without its
    stated case at levels 2 and 3; its `special` input at level 3). FamilyError for an
    instance no family made."""
    fam, level, key = _made_by(problem)
    return _draft(fam, level, key)[0]


def stated_case_tests(problem: Problem) -> list[int]:
    """Indices of `problem.baseline_tests` at its stated case: the tests the instance's op
    without its stated case (`draft_of(problem).plain`: the reference with its "or 99 if xs is
    empty" or "except return V if ..." clause left out) fails, the reference passing every
    test (the instance is checked). No tag records them (the edge tag names every edge test).
    At level 3 that is the special input's test (a draw makes sure the stated case shows
    there: sparring.problems.families.spec.stated_case_shows); at level 2 the empty input's.
    [] at the levels without a stated case and for a problem no family made."""
    try:
        plain = draft_of(problem).plain
    except FamilyError:
        return []
    if plain is None:
        return []
    name = problem.function_name
    return [i for i, t in enumerate(problem.baseline_tests) if not _passes(t, name, plain)]


def _origin(problem: Problem) -> tuple[str, int, int, int]:
    match = re.fullmatch(r"fam-(\w+)-L(\d)-s(\d+)-(\d+)", problem.id)
    if not match:
        raise FamilyError(f"{problem.id}: not a generated instance's id")
    return match.group(1), int(match.group(2)), int(match.group(3)), int(match.group(4))


def _sub_seed(seed: int, family: str, level: int, index: int, attempt: int) -> str:
    return f"{seed}:{family}:{level}:{index}" + (f":{attempt}" if attempt else "")


def _problem(
    draft: Draft, rng: random.Random, family: Family, level: int, problem_id: str
) -> Problem:
    tests, edges = _choose_tests(draft, rng)
    problem = Problem(
        id=problem_id,
        description=draft.description,
        function_signature=draft.signature,
        baseline_tests=tests,
        reference_solution=draft.source,
        difficulty=DIFFICULTY[level],
        tags=[f"family:{family.name}", f"level:{level}", family.domain],
    )
    tags = [*problem.tags, TASK_TAG + task_key(problem), edge_tag(edges)]
    if draft.op:  # which operation: held-out sets tell a new op from new constants of a trained one
        tags.append(OP_TAG + draft.op)
    return replace(problem, tags=tags)


def instance_id(family: str, level: int, seed: int, index: int) -> str:
    """A family instance's problem id; `level_of_id` reads its level back.

    >>> instance_id("int_arith", 2, 1, 4)
    'fam-int_arith-L2-s1-4'
    """
    return f"fam-{family}-L{level}-s{seed}-{index}"


def level_of_id(problem_id: str) -> int | None:
    """The level of a family instance's id (`instance_id`), None for any other problem.

    >>> level_of_id("fam-int_arith-L3-s1-4"), level_of_id("he-12")
    (3, None)
    """
    match = re.fullmatch(r"fam-.+-L(\d+)-s\d+-\d+", problem_id)
    return int(match.group(1)) if match else None


def family_and_level(tags: Sequence[str]) -> tuple[str, int]:
    """(family, level) from an instance's tags.

    >>> family_and_level(["family:digits", "level:2", "integers"])
    ('digits', 2)
    """
    family = next((t.split(":", 1)[1] for t in tags if t.startswith("family:")), "")
    level = next((int(t.split(":", 1)[1]) for t in tags if t.startswith("level:")), 0)
    return family, level


def _instance(
    family: Family, level: int, seed: int, index: int, seen: set[str], tasks: set[str]
) -> Problem:
    """The first sub-seed's instance that passes `check_instance` and is new to `seen` (its
    prompt and tests) and, while the family can offer one, to `tasks` (its task key)."""
    why = ""
    for attempt in range(ATTEMPTS):
        key = _sub_seed(seed, family.name, level, index, attempt)
        draft, rng = _draft(family, level, key)
        problem = _problem(draft, rng, family, level, instance_id(family.name, level, seed, index))
        issues = check_instance(problem)
        bugs = [issue for issue in issues if not issue.startswith(REDRAWABLE)]
        if bugs:
            # a reference that disagrees with its implementation is a bug in the family, not
            # bad luck: redrawing would only hide the broken variant
            raise FamilyError(f"family {family.name} level {level} is broken: {bugs[0]}")
        if issues:
            why = next((i for i in issues if i.startswith("discriminating")), issues[0])
            continue
        norm = normalized_key(problem)
        if norm in seen:
            why = "every instance repeated an earlier one"
            continue
        task = task_tag(problem)
        if task in tasks and attempt < ATTEMPTS // 2:
            continue  # a repeated task is taken only when new ones are hard to find
        seen.add(norm)
        tasks.add(task)
        return problem
    raise FamilyError(
        f"family {family.name} level {level}: no valid instance for seed {seed} index {index} "
        f"in {ATTEMPTS} tries ({why})"
    )


def task_tag(problem: Problem) -> str:
    """The task key an instance carries (its `task:` tag), else its id: a problem from a file
    or HumanEval is a task of its own."""
    tag = next((t for t in problem.tags if t.startswith(TASK_TAG)), "")
    return tag[len(TASK_TAG) :] if tag else problem.id


def _call_repr(name: str, args: Args) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


def _choose_tests(draft: Draft, rng: random.Random) -> tuple[list[str], list[int]]:
    """The edge cases, then random inputs that no trivial solution gets right, up to 8-10
    tests, shuffled; expected values from the trusted implementation. Also the indices of the
    tests built from edge inputs (sparring.problems.given_tests puts typical inputs first)."""
    target = rng.randint(MIN_TESTS, MAX_TESTS)
    trivials = _trivial_callables(len(draft.params))
    tests: list[str] = []
    calls: set[str] = set()

    trivially_passed = 0
    edge_tests: set[str] = set()

    def add(args: Args, edge: bool) -> None:
        nonlocal trivially_passed
        call = _call_repr(draft.name, args)
        if call in calls:
            return
        expected = draft.impl(*copy.deepcopy(args))
        trivial = any(_same(t, args, expected) for t in trivials)
        if trivial and not edge:
            return
        test = f"assert {call} == {expected!r}"
        if len(test) > MAX_TEST_CHARS:
            return
        calls.add(call)
        tests.append(test)
        trivially_passed += trivial
        if edge:
            edge_tests.add(test)

    for args in draft.edge_inputs:
        add(args, edge=True)
    # edge cases that trivial code passes need as many discriminating tests beside them
    need = max(2 * trivially_passed, trivially_passed + MIN_DISCRIMINATING)
    target = min(MAX_TESTS, max(target, need))
    for _ in range(DRAWS):
        if len(tests) >= target:
            break
        add(draft.random_input(rng), edge=False)
    rng.shuffle(tests)
    return tests, [i for i, t in enumerate(tests) if t in edge_tests]


def _same(fn: Callable[..., Any], args: Args, expected: Any) -> bool:
    # trivial solutions never change their arguments: no copy needed
    try:
        return bool(fn(*args) == expected)
    except Exception:
        return False


# what a trivial solution returns does not depend on the function's name
_trivial_callables = trivial_callables


@lru_cache(maxsize=1024)
def _trivial_definitions(name: str, n_args: int) -> tuple[tuple[str, Callable[..., Any]], ...]:
    return tuple(
        (trivial, _define(source, name)) for trivial, source in trivial_family(name, n_args).items()
    )


def _define(source: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    fn = namespace.get(name)
    if not callable(fn):
        raise ValueError(f"the source does not define {name}")
    return fn


def _passes(test: Any, name: str, fn: Callable[..., Any]) -> bool:
    try:
        exec(test, {name: fn})
    except Exception:
        return False
    return True


def normalized_key(problem: Problem) -> str:
    """Lowercased, whitespace-collapsed description and tests: two instances with the same key
    ask the same thing."""
    parts = [problem.description, *problem.baseline_tests]
    return "\n".join(" ".join(part.lower().split()) for part in parts)


def check_instance(problem: Problem) -> list[str]:
    """What is wrong with one generated instance (empty when nothing): the reference fails a
    test, fewer than 8 or more than 10 tests, a repeated or over-long test, fewer than 3
    tests, or under half, that no trivial solution passes, difficulty and tags off the level.
    Runs the reference and the trivial solutions in-process: only for our own references."""
    issues: list[str] = []
    name = problem.function_name
    tests = problem.baseline_tests
    level_tags = [t for t in problem.tags if t.startswith("level:")]
    if not any(t.startswith("family:") for t in problem.tags) or len(level_tags) != 1:
        issues.append(f"tags {problem.tags}: need one family:<name> and one level:<n>")
    else:
        level = level_tags[0].partition(":")[2]
        if DIFFICULTY.get(int(level) if level.isdigit() else 0) != problem.difficulty:
            issues.append(f"difficulty {problem.difficulty!r} does not match {level_tags[0]}")
    if not MIN_TESTS <= len(tests) <= MAX_TESTS:
        issues.append(f"test count {len(tests)}; need {MIN_TESTS} to {MAX_TESTS}")
    if len(set(tests)) != len(tests):
        issues.append("a test is repeated")
    for test in tests:
        if len(test) > MAX_TEST_CHARS:
            issues.append(f"test over {MAX_TEST_CHARS} characters: {test[:60]}...")
    if not problem.reference_solution.startswith(problem.function_signature):
        issues.append("the reference solution does not start with the signature")
    try:
        compiled = [compile(test, "<test>", "exec") for test in tests]
        reference = _define(problem.reference_solution, name)
    except Exception as exc:  # a syntax error, or a def line that raises when run
        return [*issues, f"the reference or a test does not compile: {exc}"]
    for test, code in zip(tests, compiled, strict=True):
        if not _passes(code, name, reference):
            issues.append(f"the reference fails {test}")
    passed_by: list[list[str]] = [[] for _ in tests]
    n_args = argument_count(problem.function_signature)
    for trivial, fn in _trivial_definitions(name, n_args):
        for i, code in enumerate(compiled):
            if _passes(code, name, fn):
                passed_by[i].append(trivial)
    discriminating = sum(1 for names in passed_by if not names)
    if discriminating < MIN_DISCRIMINATING or 2 * discriminating < len(tests):
        passed = "; ".join(
            f"{test} ({', '.join(names)})"
            for test, names in zip(tests, passed_by, strict=True)
            if names
        )
        issues.append(
            f"discriminating tests: {discriminating} of {len(tests)} (need at least "
            f"{MIN_DISCRIMINATING} and half); trivially passed: {passed}"
        )
    return issues


def check_instances(problems: Sequence[Problem]) -> list[str]:
    """`check_instance` of each, prefixed by its id, plus repeated ids and repeated
    (normalized) description and tests across the set."""
    issues = [f"{p.id}: {issue}" for p in problems for issue in check_instance(p)]
    ids: dict[str, int] = {}
    keys: dict[str, str] = {}
    for p in problems:
        ids[p.id] = ids.get(p.id, 0) + 1
        key = normalized_key(p)
        if key in keys:
            issues.append(f"{p.id}: same description and tests as {keys[key]}")
        keys.setdefault(key, p.id)
    issues += [f"{pid}: id used {n} times" for pid, n in ids.items() if n > 1]
    return issues
