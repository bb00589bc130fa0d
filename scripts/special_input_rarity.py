"""How often type-driven random inputs meet a level's stated case (issue 73, item 1: level 3's
special input is one that "type-driven random inputs hit rarely"; level 2's empty input is one a
fuzzer draws by type alone).

For each level (2 and 3) it draws tasks of every spec family (`sparring.problems.families.generate`,
--seed, --per-family each: 16 x 13 = 208 by default) and, for each task, --inputs random inputs
from the declared parameter types, two ways:

- uniform: ints in [-1000, 1000]; strings of 0-10 characters from letters, digits and space;
  lists of 0-10 such ints; lists of 0-6 such strings (0-8 characters); dicts of 0-6 such
  string keys to such ints;
- hypothesis: the same bounds as `hypothesis` strategies (`integers(-1000, 1000)`,
  `text(max_size=10)`, `lists(..., max_size=10)`, ...), with their usual bias to boundary
  values, seeded (`@seed`), so a run repeats; twice: `hypothesis-typed` without the constants
  hypothesis mines from local source files (the type-driven draw the issue means; the mining is
  switched off by patching hypothesis' internal `_get_local_constants`, there is no setting
  for it), and `hypothesis-mined` as it runs here by default. Since 6.131, hypothesis draws
  now and then (p=0.05 a choice) an integer or string literal found in any module loaded
  from outside site-packages and outside tests; run from src/ or an editable install, that
  includes sparring itself, so it reads level 3's sentinel menus
  (sparring.problems.families.special.SENTINELS) and meets the stated case far more often. A
  non-learning input generator built on hypothesis (issue 73, item 2) would read them too,
  unless the mining is off or sparring is installed in site-packages.

An input meets the stated case when the task's reference and its op without the stated case
(`draft_of(problem).plain`) give different outcomes there (a raised exception counts as an
outcome: its type). Printed per level and way: the share of inputs that meet it and the share
of tasks that at least one of their inputs meets (what a fuzzer with that many inputs finds of
an answer that leaves the case out), then per parameter type.

    PYTHONPATH=src python scripts/special_input_rarity.py [--seed 0] [--per-family 13]
        [--inputs 100]
"""

from __future__ import annotations

import argparse
import copy
import random
import string
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from sparring.problems.families import SPECS, draft_of, generate
from sparring.problems.families.identity import parameter_types

ALPHABET = string.ascii_letters + string.digits + " "
POOLS_PER_TYPE = 20  # distinct input pools per parameter types (tasks share them in turn)


def _text(rng: random.Random, most: int = 10) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, most)))


UNIFORM: dict[str, Callable[[random.Random], Any]] = {
    "int": lambda rng: rng.randint(-1000, 1000),
    "str": _text,
    "list[int]": lambda rng: [rng.randint(-1000, 1000) for _ in range(rng.randint(0, 10))],
    "list[str]": lambda rng: [_text(rng, 8) for _ in range(rng.randint(0, 6))],
    "dict[str, int]": lambda rng: {
        _text(rng, 6): rng.randint(-1000, 1000) for _ in range(rng.randint(0, 6))
    },
}


def _strategy(annotation: str) -> Any:
    from hypothesis import strategies as st

    ints = st.integers(-1000, 1000)
    return {
        "int": ints,
        "str": st.text(max_size=10),
        "list[int]": st.lists(ints, max_size=10),
        "list[str]": st.lists(st.text(max_size=8), max_size=6),
        "dict[str, int]": st.dictionaries(st.text(max_size=6), ints, max_size=6),
    }[annotation]


def uniform_inputs(types: tuple[str, ...], n: int, pool: int) -> list[tuple]:
    rng = random.Random(f"uniform:{','.join(types)}:{pool}")
    return [tuple(UNIFORM[t](rng) for t in types) for _ in range(n)]


def hypothesis_inputs(types: tuple[str, ...], n: int, pool: int, mined: bool) -> list[tuple]:
    from unittest import mock

    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st
    from hypothesis.internal.conjecture import providers

    out: list[tuple] = []

    @seed(pool)
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.tuples(*(_strategy(t) for t in types)))
    def collect(args: tuple) -> None:
        out.append(args)

    providers.CONSTANTS_CACHE.cache.clear()  # it caches the local constants it drew from
    if mined:
        collect()
    else:
        with mock.patch.object(providers, "_get_local_constants", providers.Constants):
            collect()
    providers.CONSTANTS_CACHE.cache.clear()
    return out[:n]


def _outcome(fn: Callable[..., Any], args: tuple) -> str:
    try:
        return repr(fn(*copy.deepcopy(args)))
    except Exception as exc:
        return "!" + type(exc).__name__


def measure(level: int, seed: int, per_family: int, n_inputs: int, way: str) -> dict:
    draw = {
        "uniform": uniform_inputs,
        "hypothesis-typed": lambda *a: hypothesis_inputs(*a, mined=False),
        "hypothesis-mined": lambda *a: hypothesis_inputs(*a, mined=True),
    }[way]
    cache: dict[tuple, list[tuple]] = {}
    rows: dict[str, list[tuple[int, int]]] = defaultdict(list)  # types -> (hits, inputs)
    problems = generate(seed, per_family, list(SPECS), [level])
    for i, problem in enumerate(problems):
        draft = draft_of(problem)
        types = parameter_types(problem.function_signature)
        key = (types, i % POOLS_PER_TYPE)
        if key not in cache:
            cache[key] = draw(types, n_inputs, key[1])
        inputs = cache[key]
        hits = sum(_outcome(draft.impl, a) != _outcome(draft.plain, a) for a in inputs)
        rows[", ".join(types)].append((hits, len(inputs)))
    return rows


def _line(label: str, cells: list[tuple[int, int]]) -> str:
    hits = sum(h for h, _ in cells)
    inputs = sum(n for _, n in cells)
    met = sum(1 for h, _ in cells if h)
    return (
        f"{label}: {len(cells)} tasks, {inputs} inputs; inputs meeting the stated case "
        f"{hits / inputs:.2%}; tasks met by at least one input {met / len(cells):.1%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-family", type=int, default=13)
    parser.add_argument("--inputs", type=int, default=100)
    parser.add_argument("--levels", default="2,3")
    args = parser.parse_args(argv)
    ways = ["uniform"]
    try:
        import hypothesis  # noqa: F401

        ways += ["hypothesis-typed", "hypothesis-mined"]
    except ImportError:
        print("hypothesis is not installed: uniform draws only")
    for level in (int(x) for x in args.levels.split(",")):
        for way in ways:
            rows = measure(level, args.seed, args.per_family, args.inputs, way)
            print(_line(f"level {level} {way}", [c for cells in rows.values() for c in cells]))
            for types, cells in sorted(rows.items()):
                print("  " + _line(types, cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
