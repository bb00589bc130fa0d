"""The non-learning generator's draws (sparring.problems.fuzz, no sandbox): the type specs read off
the
signatures the problems use, hypothesis's boundary values among the draws, the draws fixed by the
seed (the same in a fresh process that loaded less of sparring) and moved by another, every
candidate inside the parameters' declared types, and the config switch that selects it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparring.config import ConfigError, from_dict
from sparring.problems import Problem, fuzz, load_bundled
from sparring.problems.families import generate
from sparring.sandbox.domain import fits_signature

ROOT = Path(__file__).resolve().parents[2]
SIGNATURES = {
    "def f(xs: list[int]) -> int:": [{"t": "list", "of": {"t": "int"}}],
    "def f(s: str, k: int) -> str:": [{"t": "str"}, {"t": "int"}],
    "def f(d: dict[str, list[str]]) -> int:": [
        {"t": "dict", "key": {"t": "str"}, "value": {"t": "list", "of": {"t": "str"}}}
    ],
    "def f(date: tuple[int, int, int]) -> int:": [
        {"t": "tuple", "items": [{"t": "int"}, {"t": "int"}, {"t": "int"}]}
    ],
    "def f(xs: tuple[str, ...]):": [{"t": "tuple_of", "of": {"t": "str"}}],
    "def f(m: list[list[int]]) -> tuple[int, int] | None:": [
        {"t": "list", "of": {"t": "list", "of": {"t": "int"}}}
    ],
    "def f(x: Optional[List[float]]):": [
        {"t": "union", "of": [{"t": "list", "of": {"t": "float"}}, {"t": "none"}]}
    ],
    "def f(x: int | str | None):": [
        {"t": "union", "of": [{"t": "int"}, {"t": "str"}, {"t": "none"}]}
    ],
    "def f(items: list, target):": [{"t": "list", "of": None}, {"t": "any"}],
    "def f(flag: bool, s: set[int]):": [{"t": "bool"}, {"t": "set", "of": {"t": "int"}}],
}


@pytest.mark.parametrize("signature", sorted(SIGNATURES))
def test_parameter_specs_follow_the_declared_types(signature):
    assert [spec for _, _, spec in fuzz.parameter_specs(signature)] == SIGNATURES[signature]


def _problem(pid: str, signature: str) -> Problem:
    return Problem(pid, "", signature, [], f"{signature}\n    return 0\n")


# one problem per kind of parameter the bundled set and the families use, and a few more
PROBLEMS = [
    _problem("ints", "def first(xs: list[int]) -> int:"),
    _problem("text", "def shout(s: str) -> str:"),
    _problem("int", "def half(n: int) -> int:"),
    _problem("pair", "def join(words: list[str], sep: str) -> str:"),
    _problem("table", "def total(d: dict[str, int]) -> int:"),
    _problem("kw", "def pick(xs: list[int], *, last: bool) -> int:"),
]
N = 24


@pytest.fixture(scope="module")
def drawn():
    return fuzz.candidate_tests(PROBLEMS, N, seed=7)


def _arguments(test: str) -> list:
    call = ast.parse(test).body[0].test.left
    return [ast.literal_eval(a) for a in call.args] + [
        ast.literal_eval(k.value) for k in call.keywords
    ]


def test_every_problem_gets_distinct_candidates_with_the_placeholder(drawn):
    for p in PROBLEMS:
        tests = drawn[p.id]
        assert len(tests) == len(set(tests)) >= N // 2, (p.id, tests)
        assert all(t.startswith(f"assert {p.function_name}(") for t in tests), tests
        assert all(t.endswith(f" == {fuzz.PLACEHOLDER}") for t in tests), tests


def test_hypothesis_boundary_values_are_among_the_draws(drawn):
    """The simplest example first (an empty list, an empty string, 0), then negatives among
    the ints and the empty string among the texts of a two-parameter problem."""
    assert drawn["ints"][0] == "assert first([]) == None"
    assert drawn["text"][0] == "assert shout('') == None"
    assert drawn["int"][0] == "assert half(0) == None"
    assert drawn["table"][0] == "assert total({}) == None"
    ints = [_arguments(t)[0] for t in drawn["int"]]
    assert any(n < 0 for n in ints) and any(n > 0 for n in ints), ints
    lists = [_arguments(t)[0] for t in drawn["ints"]]
    assert any(len(xs) > 1 and min(xs) < 0 for xs in lists), lists
    assert "" in {_arguments(t)[1] for t in drawn["pair"]}
    assert {_arguments(t)[1] for t in drawn["kw"]} == {True, False}
    assert "last=" in drawn["kw"][0], "a keyword-only parameter is passed by name"


def test_the_same_seed_draws_the_same_tests_another_seed_others(drawn):
    again = fuzz.candidate_tests(PROBLEMS, N, seed=7)
    assert again == drawn
    other = fuzz.candidate_tests(PROBLEMS, N, seed=8)
    for p in PROBLEMS:
        assert other[p.id] != drawn[p.id], p.id
    # a problem's draws do not move when the others change: each has its own seed
    alone = fuzz.candidate_tests(PROBLEMS[:1], N, seed=7)
    assert alone["ints"] == drawn["ints"]


def test_a_fresh_process_with_less_of_sparring_loaded_draws_the_same(drawn):
    """hypothesis mixes constants from the source of the non-installed modules loaded in its
    process into its draws; this pytest process has loaded far more of sparring (and tests)
    than a fresh one that imports sparring.problems.fuzz alone, and the draws must not notice."""
    code = (
        "import json, sys; from sparring.problems import Problem, fuzz\n"
        "ps = [Problem(**p) for p in json.load(sys.stdin)]\n"
        f"print(json.dumps(fuzz.candidate_tests(ps, {N}, seed=7)))"
    )
    rows = json.dumps([p.to_dict() for p in PROBLEMS])
    out = subprocess.run(
        [sys.executable, "-c", code], input=rows, capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert json.loads(out.stdout) == drawn


def test_every_candidate_of_every_shipped_problem_fits_its_declared_types():
    """The bundled problems and one instance of every family level: each candidate parses,
    calls the function and passes only arguments inside the parameters' declared types (what
    validation checks with sparring.sandbox.domain before banking a test)."""
    problems = load_bundled() + generate(0, 1, levels=(0, 1, 2))
    drawn = fuzz.candidate_tests(problems, 8, seed=1)
    for p in problems:
        assert drawn[p.id], f"{p.id}: nothing drawn for {p.function_signature}"
        for t in drawn[p.id]:
            assert fits_signature(t, p.function_name, p.function_signature), (p.id, t)
            assert len(t) <= 2000, (p.id, t)


def test_spell_is_a_literal_that_reads_back_the_same_in_any_process():
    assert fuzz.spell({"b", "a", "c"}) == "{'a', 'b', 'c'}"  # sorted: a set's order is per run
    assert fuzz.spell([1, (2,), {"k": -0.5}]) == "[1, (2,), {'k': -0.5}]"
    assert fuzz.spell(set()) is None and fuzz.spell(float("nan")) is None
    assert fuzz.spell(["x" * 500]) is None  # longer than an expected value may be


def test_an_unparseable_signature_draws_nothing():
    p = Problem("odd", "", "lambda x: x", [], "f = lambda x: x")
    assert fuzz.candidate_tests([p], 4, seed=0) == {"odd": []}


def test_the_switch_and_its_k_are_config_fields_checked_up_front():
    cfg = from_dict({"generator_mode": "fuzz", "steps": {"fuzz_tests": 5}})
    assert (cfg.generator_mode, cfg.steps.fuzz_tests) == ("fuzz", 5)
    with pytest.raises(ConfigError, match=r"generator_mode.*'fuzzy'"):
        from_dict({"generator_mode": "fuzzy"})
    with pytest.raises(ConfigError, match=r"generator_mode: 'fuzz'.*phase_schedule"):
        from_dict({"generator_mode": "fuzz", "phase_schedule": "answerer"})
    with pytest.raises(ConfigError, match=r"steps\.fuzz_tests"):
        from_dict({"generator_mode": "fuzz", "steps": {"fuzz_tests": 0}})


def test_the_modules_examples_hold():
    import doctest

    assert doctest.testmod(fuzz).failed == 0
