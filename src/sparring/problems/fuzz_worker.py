"""The hypothesis side of the non-learning test generator: argument tuples drawn from type specs.

Run only as `python -I -c <this file's source>` by `sparring.problems.fuzz.draw_arguments`, never
imported
by sparring. Why a process of its own: hypothesis mixes into its draws, now and then, constants
it reads from the source of every non-installed module loaded in the process (its "local
constants"), so the same seed drew different inputs in a process that had imported more of
sparring. Here nothing but the standard library and hypothesis is loaded and `__main__` has no
file, so a seed draws the same inputs in every runner, checkout or image (for one hypothesis
release, which requirements.lock pins).

Input (stdin, JSON): a list of jobs `{"params": [spec, ...], "n": int, "seed": int}`; a spec is
`{"t": "int" | "float" | "bool" | "str" | "none" | "any"}`, `{"t": "list" | "set", "of": spec or
null}` (null: a list of one scalar type per draw), `{"t": "tuple", "items": [spec, ...]}`,
`{"t": "tuple_of", "of": spec}`, `{"t": "dict", "key": spec, "value": spec}` or `{"t": "union",
"of": [spec, ...]}`. Output (stdout, pickle): per job, the drawn tuples (one value per param), in
draw order: hypothesis draws the simplest example first (empty lists and strings, 0), then mixes
its boundary values into random ones.

Covers: the strategies and their bounds, one seeded `@given` run per job. Does not cover: the
specs (sparring.problems.fuzz reads them off a signature) or the tests made of the drawn inputs.
"""

import json
import pickle
import sys

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

# Bounds keep a test short and the reference quick on it (a 2 s sandbox limit per test); within
# them hypothesis still draws its boundary values: 0, -1, the bounds, empty collections.
INT = st.integers(-1000, 1000)
FLOAT = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)  # nan, inf: no literal
# printable ASCII, half of its characters lowercase letters and spaces, so that words occur
PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)
TEXT = st.text(st.one_of(st.sampled_from(" abcdefghijklmnopqrstuvwxyz"), PRINTABLE), max_size=12)
MAX_ITEMS = 8
MAX_KEYS = 5


def strategy(spec):
    """The hypothesis strategy of one spec (the module docstring's grammar)."""
    kind = spec["t"]
    if kind == "int":
        return INT
    if kind == "float":
        return FLOAT
    if kind == "bool":
        return st.booleans()
    if kind == "str":
        return TEXT
    if kind == "none":
        return st.none()
    if kind == "any":  # no annotation: None and the scalars a problem's tests most often pass
        return st.one_of(st.none(), st.booleans(), INT, TEXT)
    if kind in ("list", "set"):
        collect = st.lists if kind == "list" else st.sets
        if spec["of"] is None:  # bare `list`: one element type per list, as a caller would pass
            return st.one_of(collect(INT, max_size=MAX_ITEMS), collect(TEXT, max_size=MAX_ITEMS))
        return collect(strategy(spec["of"]), max_size=MAX_ITEMS)
    if kind == "tuple":
        return st.tuples(*(strategy(s) for s in spec["items"]))
    if kind == "tuple_of":
        return st.lists(strategy(spec["of"]), max_size=MAX_ITEMS).map(tuple)
    if kind == "dict":
        key = strategy(spec["key"])
        return st.dictionaries(key, strategy(spec["value"]), max_size=MAX_KEYS)
    if kind == "union":
        return st.one_of(*(strategy(s) for s in spec["of"]))
    raise ValueError(f"unknown spec type {kind!r}")


def draw(params, n, seed_value):
    """Up to `n` argument tuples for `params`, the same for the same seed (fewer when the
    space runs out: a lone bool has two)."""
    drawn = []

    @seed(seed_value)
    @settings(
        database=None, max_examples=n, phases=[Phase.generate], deadline=None,
        suppress_health_check=list(HealthCheck), print_blob=False,
    )  # fmt: skip
    @given(st.tuples(*(strategy(p) for p in params)))
    def collect(args):
        drawn.append(args)

    collect()
    return drawn


def main():
    jobs = json.load(sys.stdin)
    out = [draw(job["params"], job["n"], job["seed"]) for job in jobs]
    sys.stdout.buffer.write(pickle.dumps(out))


if __name__ == "__main__":
    main()
