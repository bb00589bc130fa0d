"""The honest reward with the stated case weighed on its own (`rewards.stated_case_share`): on a
family problem at level 2 or 3 every test given (the room study's D arm), an answer's share of
its other tests times (1 - share) + share x its stated-case pass. Judged as training judges
it: the answerer phase's rows (rewards.answerer_rows.answerer_rows, whose `stated_tests` column says
which tests are the stated case's) scored by `code_duel.AnswererRewardFn` in the real sandbox.

Degenerate answers first: a constant returning the stated value (the statement names it, so it
is the hack a stated-case weight invites), a constant 0, an echo and an empty answer earn 0 with
the weight on; the reference earns its difficulty's full weight; an answer right everywhere but
at the stated case earns (1 - share) of it.
"""

from __future__ import annotations

import ast

import pytest

from sparring.config import ConfigError, from_dict
from sparring.problems import compute_trivial_passes, programs
from sparring.problems.families import generate, stated_case_tests
from sparring.rewards import code_duel
from sparring.rewards.answerer_rows import answerer_rows
from sparring.sandbox import Sandbox, SandboxLimits
from tests.unit.test_precheck import _wrong_at

FAMILIES = ("list_stat", "int_arith")
WEIGHT = {2: 1.0, 3: 1.2}  # rewards.difficulty_weights: level 2 is medium, level 3 hard
COLUMNS = ("tests", "difficulty", "function_name", "discriminating", "trivial_results",
           "problem_id", "signature", "stated_tests")  # fmt: skip


@pytest.fixture(scope="module")
def pool():
    with Sandbox(SandboxLimits(timeout_s=5.0)) as box:
        yield box


@pytest.fixture(scope="module")
def problems(pool):
    """One instance of each family at levels 2 and 3 (seed 2), every test given."""
    return compute_trivial_passes(generate(2, 1, FAMILIES, [2, 3]), pool)


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def stated_value(problem) -> object:
    test = problem.baseline_tests[stated_case_tests(problem)[0]]
    return ast.literal_eval(ast.parse(test).body[0].test.comparators[0])


def answers(problem) -> dict[str, str]:
    sig = problem.function_signature
    first = programs.parameter_names(sig, problem.function_name)[0]
    return {
        "stated_constant": fenced(f"{sig}\n    return {stated_value(problem)!r}\n"),
        "constant": fenced(f"{sig}\n    return 0\n"),
        "echo": fenced(f"{sig}\n    return {first}\n"),
        "empty": "",
        "wrong_at_stated": _wrong_at(
            problem, problem.baseline_tests[stated_case_tests(problem)[0]]
        ),
        "reference": fenced(problem.reference_solution),
    }


def score(pool, problems, texts, share):
    rows = answerer_rows(list(problems), {}, ["code"])
    columns = {k: [r[k] for r in rows] for k in COLUMNS}
    cfg = from_dict({"rewards": {"stated_case_share": share}}).rewards
    fn = code_duel.AnswererRewardFn(pool, cfg)
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    return fn(prompts=[r["prompt"] for r in rows], completions=completions, **columns)


def level(problem) -> int:
    return int(problem.id.split("-L")[1][0])


def test_rows_name_the_stated_case_tests(problems):
    rows = answerer_rows(list(problems), {}, ["code"])
    for p, row in zip(problems, rows, strict=True):
        assert row["stated_tests"] == stated_case_tests(p) != [], p.id
    assert answerer_rows(generate(2, 1, ["list_stat"], [0]), {}, ["code"])[0]["stated_tests"] == []


def test_degenerate_answers_earn_nothing_and_missing_the_stated_case_costs_its_share(
    pool, problems
):
    items = [(p, kind, text) for p in problems for kind, text in answers(p).items()]
    got: dict[str, dict[str, float | None]] = {}
    out = score(pool, [p for p, _, _ in items], [t for _, _, t in items], 0.5)
    for (p, kind, _), r in zip(items, out, strict=True):
        got.setdefault(kind, {})[p.id] = r
    ids = [p.id for p in problems]
    for kind in ("stated_constant", "constant", "echo", "empty"):
        assert got[kind] == dict.fromkeys(ids, 0.0), kind
    assert got["reference"] == {p.id: WEIGHT[level(p)] for p in problems}
    assert got["wrong_at_stated"] == {p.id: pytest.approx(0.5 * WEIGHT[level(p)]) for p in problems}


def test_without_the_weight_the_stated_case_is_one_test_like_the_others(pool, problems):
    """share 0 (the default): the answer that misses the stated case loses one test's share,
    and the constant returning the stated value earns that one test's share where no trivial
    solution passes it: what the weight's product form takes away."""
    texts = [answers(p)[kind] for p in problems for kind in ("wrong_at_stated", "stated_constant")]
    out = score(pool, [p for p in problems for _ in range(2)], texts, 0.0)
    for i, p in enumerate(problems):
        n_disc = sum(answerer_rows([p], {}, ["code"])[0]["discriminating"])
        missed, constant = out[2 * i], out[2 * i + 1]
        assert missed == pytest.approx(WEIGHT[level(p)] * (n_disc - 1) / n_disc, abs=1e-6), p.id
        assert constant == pytest.approx(WEIGHT[level(p)] / n_disc, abs=1e-6), p.id


def test_a_share_outside_0_to_1_is_refused_by_name():
    with pytest.raises(ConfigError, match="stated_case_share"):
        from_dict({"rewards": {"stated_case_share": 1.5}})
