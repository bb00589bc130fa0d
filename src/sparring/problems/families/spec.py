"""Families as data: a family is a `FamilySpec` (its parameters, its input generators, and per
level a menu of `Op`s with their constants and phrasings), and one generator (`draw_task`,
`render`) turns a spec and a seed into a `Draft`.

Why the operation is drawn, not only the names: an instance under a new seed should compute a
function that no training instance computes (the transfer issue). An op with constants is one
task per choice of constants (`count_gt` with k=3 and k=7 are two tasks); a family's menu holds
dozens of them, so eight instances rarely repeat a task and a new seed rarely meets a trained one.

Drawing is split in two streams: `draw_task` picks (op, constants) from one random stream and
`render` picks the function and parameter names and the phrasing from another, so the same task
can be shown under other names (a renamed instance: sparring.problems.families.sets'
`trained_tasks`).

Level 2 of a spec family is derived, not written (`with_stated_empty`): each level-0 op with a
clause for the family's empty input ("..., or 99 if xs is empty"), a value no trivial solution
returns, so the test of it earns credit; a family's typical inputs are never empty, so K typical
given tests never show it (sparse given tests, issue 45: where a generator's tests can add what
the given ones miss). Level 3 is derived too (sparring.problems.families.special): a stated value at
a
special input drawn per task; an op of it carries a `Trigger`, which `draw_task` and `render`
read here (the special input goes into the edge inputs, and typical inputs are redrawn until
they miss it).

Covers: the spec records, drawing and rendering, the derived level 2, what rendering does for
an op with a trigger. The reference is the op's own Python (trusted: this package's code) and
the Draft's implementation is that reference, exec'd.
Does not cover: the catalogue of families (sparring.problems.families.catalog), level 3's menus
(sparring.problems.families.special), choosing tests and checking instances
(sparring.problems.families).
"""

from __future__ import annotations

import copy
import random
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from sparring.problems.families.base import Args, Draft, Family
from sparring.problems.trivial import trivial_family

SPECIAL_TRIES = 50  # draws tried for a stated case that shows, before the canonical input


@dataclass(frozen=True)
class Trigger:
    """Where an op of level 3 returns its stated value: the inputs whose first parameter
    meets `guard` (Python over {p} and the sentinel {s}), said in words by `when` ("{p} is
    {s!r}"); `plant` puts the sentinel into a typical first argument (the special test's
    input), `probe` makes the one first argument the task key probes for a sentinel."""

    guard: str
    when: str
    plant: Callable[[Any, Any, random.Random], Any]
    probe: Callable[[Any], Any]

    def hits(self, sentinel: Any) -> Callable[[Args], bool]:
        """Whether an argument tuple meets the guard for `sentinel`."""
        test = eval(f"lambda _p, _s: {self.guard.format(p='_p', s='_s')}")  # our own template
        return lambda args: bool(test(args[0], sentinel))


# what the other parameters of a canonical special input hold (pair_math: the divisor q)
OTHER_ARGUMENTS: Mapping[str, Any] = {"int": 7, "str": "ab", "list[int]": [1, 2]}


def canonical_args(trigger: Trigger, sentinel: Any, annotations: tuple[str, ...]) -> Args:
    """The special input probed for `sentinel`: its probe, then a fixed value per other
    parameter."""
    return (trigger.probe(sentinel), *(OTHER_ARGUMENTS[a] for a in annotations[1:]))


@dataclass(frozen=True)
class Op:
    """One operation of a family: `texts` are verb phrases ("return how many elements of {p}
    are greater than {k}") framed by the family's frames; `code` is a Python expression (or
    statements ending in a return, when it holds a newline) over the parameters ({p}, {q})
    and the constants, which are filled in by repr; `names` are function-name templates."""

    key: str
    names: tuple[str, ...]
    texts: tuple[str, ...]
    code: str
    consts: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    returns: str = ""  # the family's return annotation unless set
    edges: tuple[Args, ...] = ()  # inputs this op needs beyond the family's edges
    plain: str = ""  # a derived level's code without its stated case (the level-0 code)
    trigger: Trigger | None = None  # level 3: where the stated value {v} is returned

    def tasks(self) -> int:
        """How many (op, constants) choices this op offers."""
        n = 1
        for choices in self.consts.values():
            n *= len(choices)
        return n


@dataclass(frozen=True)
class FamilySpec:
    name: str
    domain: str  # lists, strings, integers or mappings
    description: str
    params: tuple[tuple[tuple[str, ...], str], ...]  # (name choices, annotation) per parameter
    returns: str
    frames: tuple[str, ...]  # "{Task}.", "Given a list of integers {p}, {task}."
    levels: Mapping[int, tuple[Op, ...]]
    edges: tuple[Args, ...]
    draw: Callable[[random.Random], Args]


@dataclass(frozen=True)
class Task:
    """What an instance computes, before names and phrasing: the op and its constants."""

    family: str
    level: int
    op: str
    consts: tuple[tuple[str, Any], ...]

    @property
    def label(self) -> str:
        return f"{self.family}/{self.op}" + "".join(f":{k}={v!r}" for k, v in self.consts)


PARAM_SLOTS = ("p", "q", "r")


def draw_task(spec: FamilySpec, rng: random.Random, level: int) -> Task:
    """An op of `level`, drawn in proportion to how many tasks it offers (so a family's tasks
    are about equally likely), and its constants. An op with a trigger redraws its constants
    until the stated value shows at the canonical special input (the op without its stated
    case returns something else there, and so does every trivial solution)."""
    ops = spec.levels[level]
    op = rng.choices(ops, weights=[o.tasks() for o in ops])[0]
    consts = tuple((name, rng.choice(choices)) for name, choices in op.consts.items())
    if op.trigger is not None:
        annotations = tuple(annotation for _, annotation in spec.params)
        for _ in range(SPECIAL_TRIES):
            values = dict(consts)
            plain = _plain(spec, op, values)
            if stated_case_shows(
                plain, values["v"], canonical_args(op.trigger, values["s"], annotations)
            ):
                break
            consts = tuple((name, rng.choice(choices)) for name, choices in op.consts.items())
        else:  # a menu whose every choice is vacuous for this op is a bug in the menus
            raise ValueError(f"{spec.name}/{op.key}: no stated value shows in {SPECIAL_TRIES}")
    return Task(spec.name, level, op.key, consts)


@lru_cache(maxsize=8)
def trivial_callables(n_args: int) -> tuple[Callable[..., Any], ...]:
    """The trivial solutions of sparring.problems.trivial for `n_args` arguments, defined."""
    out = []
    for source in trivial_family("trivial", n_args).values():
        namespace: dict[str, Any] = {}
        exec(compile(source, "<trivial>", "exec"), namespace)
        out.append(namespace["trivial"])
    return tuple(out)


def _outcome(fn: Callable[..., Any], args: Args) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # raising is an outcome too: not the stated value
        return exc


def stated_case_shows(plain: Callable[..., Any], value: Any, args: Args) -> bool:
    """Whether a test `f(*args) == value` fails the op without its stated case and every
    trivial solution: the test of the stated case earns credit and tells the case apart."""
    if _outcome(plain, copy.deepcopy(args)) == value:
        return False
    # trivial solutions never change their arguments: no copy needed
    return not any(_outcome(t, args) == value for t in trivial_callables(len(args)))


def _plain(spec: FamilySpec, op: Op, consts: Mapping[str, Any]) -> Callable[..., Any]:
    """The op's function without its stated case, with placeholder parameter names."""
    names = {slot: f"arg{i}" for i, slot in enumerate(PARAM_SLOTS[: len(spec.params)])}
    return _define(op.plain, names, consts, "plain")


def _define(
    code: str, names: Mapping[str, str], consts: Mapping[str, Any], name: str
) -> Callable[..., Any]:
    source_code = code.format(**names, **{k: repr(v) for k, v in consts.items()})
    if "\n" in source_code:
        body = textwrap.indent(textwrap.dedent(source_code).strip("\n"), "    ") + "\n"
    else:
        body = f"    return {source_code}\n"
    params = ", ".join(names[slot] for slot in PARAM_SLOTS if slot in names)
    namespace: dict[str, Any] = {}
    exec(compile(f"def {name}({params}):\n{body}", f"<{name}>", "exec"), namespace)
    return namespace[name]


def _op(spec: FamilySpec, task: Task) -> Op:
    return next(o for o in spec.levels[task.level] if o.key == task.op)


def _identifier(text: str) -> str:
    text = text.replace("-", "neg").replace(" ", "_")
    return re.sub(r"\W", "", text)


def render(spec: FamilySpec, task: Task, rng: random.Random) -> Draft:
    """The Draft of `task` with parameter names, function name, frame and phrasing from `rng`."""
    op = _op(spec, task)
    consts = dict(task.consts)
    names: dict[str, str] = {}
    for slot, (choices, _) in zip(PARAM_SLOTS, spec.params, strict=False):
        names[slot] = rng.choice([c for c in choices if c not in names.values()])
    params = tuple(
        (names[slot], annotation)
        for slot, (_, annotation) in zip(PARAM_SLOTS, spec.params, strict=False)
    )
    phrase = rng.choice(op.texts).format(**names, **consts)
    frame = rng.choice(spec.frames)
    description = frame.format(task=phrase, Task=phrase[:1].upper() + phrase[1:], **names)
    name = _identifier(rng.choice(op.names).format(**consts))
    source_code = op.code.format(**names, **{k: repr(v) for k, v in consts.items()})
    if "\n" in source_code:
        body = textwrap.indent(textwrap.dedent(source_code).strip("\n"), "    ") + "\n"
    else:
        body = f"    return {source_code}\n"
    returns = op.returns or spec.returns
    plain = _define(op.plain, names, consts, name) if op.plain else None
    edges, random_input, special = (*spec.edges, *op.edges), spec.draw, None
    if op.trigger is not None and plain is not None:
        special = _special_input(spec, op.trigger, plain, consts, rng)
        edges = (*edges, special)
        random_input = _missing(spec.draw, op.trigger.hits(consts["s"]))
    draft = Draft(
        name=name,
        params=params,
        returns=returns,
        description=description,
        template=frame + " | " + op.key,
        body=body,
        impl=_unset,
        edge_inputs=edges,
        random_input=random_input,
        op=f"{spec.name}/{op.key}",
        plain=plain,
        special=special,
    )
    # the reference is this package's own code, so it is also the trusted implementation
    namespace: dict[str, Any] = {}
    exec(compile(draft.source, f"<{name}>", "exec"), namespace)
    return replace(draft, impl=namespace[name])


# The value an op of level 2 returns for the empty input, by return annotation: none of them is
# what a trivial solution returns for it (a constant, the input, its length:
# sparring.problems.trivial)
EMPTY_VALUES: Mapping[str, Any] = {
    "int": 99,
    "int | None": 99,
    "str": "empty",
    "list[int]": [0],
    "list[str]": ["empty"],
}
# a phrasing that already says what an empty or short input gives would contradict the clause
STATES_ITS_EDGE = ("empty", "none", "fewer", "shorter")


def guarded(code: str, guard: str, value: str) -> str:
    """An op's `code` that returns `value` where `guard` holds: a statement block gets an early
    return, an expression a conditional.

    >>> guarded("len({p})", "not {p}", "-9")
    '-9 if not {p} else (len({p}))'
    """
    if "\n" in code:
        body = textwrap.dedent(code).strip("\n")
        return f"if {guard}:\n    return {value}\n{body}"
    return f"{value} if {guard} else ({code})"


def with_stated_empty(spec: FamilySpec) -> FamilySpec:
    """`spec` with level 2: its level-0 ops whose return type has an `EMPTY_VALUES` entry and
    whose phrasing says nothing of empty input, each returning that value when the first
    parameter is empty (0 for an integer), as the phrasing now states. Unchanged when no op
    qualifies."""
    integer = spec.params[0][1] == "int"
    guard, when = ("{p} == 0", "is 0") if integer else ("not {p}", "is empty")
    ops = []
    for o in spec.levels.get(0, ()):
        returns = o.returns or spec.returns
        if returns not in EMPTY_VALUES or any(
            word in text.lower() for text in o.texts for word in STATES_ITS_EDGE
        ):
            continue
        value = repr(EMPTY_VALUES[returns])
        code = guarded(o.code, guard, value)
        texts = tuple(f"{text}, or {value} if {{p}} {when}" for text in o.texts)
        ops.append(replace(o, texts=texts, code=code, returns=returns, plain=o.code))
    if not ops:
        return spec
    return replace(spec, levels={**spec.levels, 2: tuple(ops)})


def _special_input(
    spec: FamilySpec,
    trigger: Trigger,
    plain: Callable[..., Any],
    consts: Mapping[str, Any],
    rng: random.Random,
) -> Args:
    """The special test's input: a typical input with the sentinel planted in it, drawn until
    the stated case shows there; else the canonical special input (where `draw_task` made sure
    it shows)."""
    sentinel, value = consts["s"], consts["v"]
    hits = trigger.hits(sentinel)
    for _ in range(SPECIAL_TRIES):
        first, *rest = spec.draw(rng)
        args = (trigger.plant(copy.deepcopy(first), sentinel, rng), *rest)
        if hits(args) and stated_case_shows(plain, value, args):
            return args
    return canonical_args(trigger, sentinel, tuple(a for _, a in spec.params))


def _missing(
    draw: Callable[[random.Random], Args], hits: Callable[[Args], bool]
) -> Callable[[random.Random], Args]:
    """`draw`, redrawn while it hits the special input: typical tests never show the stated
    case (a family whose typical inputs cannot hit it draws exactly as before)."""

    def typical(rng: random.Random) -> Args:
        while True:
            args = draw(rng)
            if not hits(args):
                return args

    return typical


def _unset(*args: Any) -> None:
    raise AssertionError("a Draft's implementation is set from its reference")


def as_family(spec: FamilySpec) -> Family:
    """The `Family` record sparring.problems.families keeps: its builder draws a task, then renders
    it
    from the same stream (one seed, one instance)."""

    def build(rng: random.Random, level: int) -> Draft:
        return render(spec, draw_task(spec, rng, level), rng)

    levels = {
        level: ", ".join(op.key for op in ops[:4]) + (", ..." if len(ops) > 4 else "")
        for level, ops in spec.levels.items()
    }
    return Family(spec.name, spec.domain, spec.description, levels, build)
