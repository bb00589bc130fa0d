"""The generators measured held out (sparring.evaluation.generator_heldout): the pure core on
planted results (milliseconds), the LEARN lines it ends in, and the thin part with the real
sandbox (bubblewrap) running the tests; only the generators' sampling is faked, at
`sample_tests`."""

from __future__ import annotations

import doctest

import pytest

from sparring.config import from_dict
from sparring.evaluation import generator_heldout as gh
from sparring.evaluation import intervals, learning
from sparring.problems import Problem
from sparring.rewards import code_duel
from sparring.sandbox import Sandbox, SandboxLimits

ROOMY_S = 5.0  # wall limit per test: every run here must finish, on a machine shared with others


def test_doctests():
    result = doctest.testmod(gh)
    assert result.attempted > 0 and result.failed == 0


def test_a_valid_test_catches_a_wrong_answer_an_invalid_one_catches_nothing():
    # tests: 0 valid, 1 invalid (the reference fails it), 2 not judged (the sandbox failed)
    reference = [True, False, None]
    right = [False, False, True, True]
    passed = [
        [False, True, True],  # wrong, failed by the valid test: caught
        [True, False, False],  # wrong, failed only by tests that are not valid: not caught
        [False, True, True],  # right, failed by the valid test: a false alarm
        [True, False, None],  # right, failed only by the invalid test: no alarm
    ]
    n = gh.problem_numbers(reference, right, passed)
    assert (n.tests, n.judged, n.valid) == (3, 2, 1)
    assert n.validity == 0.5  # the unjudged test counts neither way
    assert (n.wrong, n.caught, n.catch_rate) == (2, 1, 0.5)
    assert (n.right, n.false_alarms, n.false_alarm_rate) == (2, 1, 0.5)
    # no valid test at all: nothing is caught, however much fails
    none_valid = gh.problem_numbers([False], [False], [[False]])
    assert (none_valid.validity, none_valid.catch_rate) == (0.0, 0.0)


def test_a_problem_without_a_wrong_answer_is_skipped_and_counted():
    caught = gh.problem_numbers([True], [False, True], [[False], [True]])
    all_right = gh.problem_numbers([True], [True, True], [[True], [False]])
    summary = gh.generator_summary(
        {"a": gh.problem_numbers([True], [False, True], [[True], [True]]), "b": all_right},
        {"a": caught, "b": all_right},
    )
    catch = summary["generator_catch_heldout"]
    assert (catch["before"], catch["after"], catch["n"], catch["skipped"]) == (0.0, 1.0, 1, 1.0)
    # b's right answer failed a valid test: its false alarm counts, though b has no catch rate
    assert summary["generator_false_alarms"] == {"base": 0.25, "final": 0.25}


def _numbers(catch: float, validity: float) -> gh.GeneratorOnProblem:
    """Two judged tests, two wrong answers: `catch` and `validity` each 0, 0.5 or 1."""
    return gh.GeneratorOnProblem(2, 2, int(2 * validity), 2, int(2 * catch), 0, 0)


def test_learn_lines_count_distinct_tasks_not_instances():
    # six problems, five tasks: a1 and a2 are instances of one task (A); one more problem has
    # no wrong answer in the pool
    tags = {"a1": ["task:A"], "a2": ["task:A"], "b": [], "c": [], "d": [], "e": [], "f": []}
    tasks = intervals.task_keys(tags)
    base = {pid: _numbers(0.0, 1.0) for pid in tags}
    final = {pid: _numbers(1.0, 1.0) for pid in tags}
    final["a1"] = _numbers(1.0, 0.0)  # task A's validity: the mean of its instances, 0.5
    base["f"] = final["f"] = gh.GeneratorOnProblem(2, 2, 2, 0, 0, 2, 0)
    summary = gh.generator_summary(base, final, tasks)
    lines = learning.learn_lines(summary, [], None)
    assert (
        "LEARN generator_catch_heldout base=0.000 final=1.000 ci95_delta=1.000,1.000 n=5 skipped=1"
        in lines
    )
    # over tasks: (0.5 + 5 x 1) / 6, not (0 + 6 x 1) / 7 over problems
    assert "LEARN generator_validity base=1.000 final=0.917" in lines
    assert "LEARN generator_false_alarms base=0.000 final=0.000" in lines
    # through MLflow's flat metrics and back (what `make learn` reads): the same lines
    flat = learning.flat_metrics(summary)
    assert flat["learn.generator_catch_heldout.n"] == 5.0
    back, *_ = learning.from_phase_runs([("r2-evaluate", flat)])
    assert learning.learn_lines(back, [], None) == lines


def test_learn_lines_print_n_a_when_the_generators_were_not_measured():
    lines = learning.learn_lines({}, [], None)
    assert "LEARN generator_catch_heldout base=n/a final=n/a ci95_delta=n/a (n=0)" in lines
    assert "LEARN generator_validity base=n/a final=n/a" in lines
    # every held-out problem skipped: no catch rate to print, but the skipped ones are counted
    all_right = {"f": gh.GeneratorOnProblem(2, 2, 2, 0, 0, 2, 0)}
    lines = learning.learn_lines(gh.generator_summary(all_right, all_right), [], None)
    assert (
        "LEARN generator_catch_heldout base=n/a final=n/a ci95_delta=n/a (n=0) skipped=1" in lines
    )


# --------------------------------------------------------------------------- with the sandbox

HALF = Problem(
    id="half",
    description="Halve an integer, rounding down.",
    function_signature="def half(n):",
    baseline_tests=["assert half(4) == 2"],
    reference_solution="def half(n):\n    return n // 2\n",
    tags=["heldout:new_tasks", "task:half"],
)
WRONG = "def half(n):\n    return n / 2\n"  # passes half(4) == 2, fails on odd numbers
RIGHT = "def half(n):\n    return n >> 1\n"
CATCHING = "```python\nassert half(5) == 2\n```"  # valid: the reference returns 2
INVALID = "```python\nassert half(5) == 3\nassert half(4) == 2.0\n```"  # first: reference fails


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxLimits(timeout_s=ROOMY_S, workers=2)) as box:
        yield box


def test_measure_generator_runs_reference_and_pool_in_the_sandbox(sandbox):
    pool = {"half": [gh.PoolAnswer(WRONG, False), gh.PoolAnswer(RIGHT, True)]}
    info = {"half": code_duel.problem_info(HALF, [])}
    scorer = code_duel.GeneratorScorer(info, sandbox)
    got = gh.measure_generator([[CATCHING, INVALID, ""]], [HALF], pool, scorer, sandbox)["half"]
    # three distinct tests, two valid; the wrong answer fails half(5) == 2, the right one none
    assert (got.tests, got.judged, got.valid) == (3, 3, 2)
    assert (got.caught, got.wrong, got.false_alarms, got.right) == (1, 1, 0, 1)
    # invalid tests alone catch nothing, though the wrong answer fails half(5) == 3 too
    alone = gh.measure_generator([[INVALID]], [HALF], pool, scorer, sandbox)["half"]
    assert (alone.valid, alone.caught) == (1, 0)  # half(4) == 2.0 is valid, catches nothing


def test_measure_generator_counts_an_off_domain_test_invalid(sandbox):
    # the reference returns 0 for None too (`n or 0`); half(None) is outside `n: int`
    typed = Problem(
        id="half", description="Halve an integer, rounding down.",
        function_signature="def half(n: int) -> int:", baseline_tests=["assert half(4) == 2"],
        reference_solution="def half(n: int) -> int:\n    return (n or 0) // 2\n",
        tags=["heldout:new_tasks", "task:half"],
    )  # fmt: skip
    pool = {"half": [gh.PoolAnswer(RIGHT, True)]}  # right on ints, raises on None
    scorer = code_duel.GeneratorScorer({"half": code_duel.problem_info(typed, [])}, sandbox)
    text = "```python\nassert half(None) == 0\nassert half(5) == 2\n```"
    got = gh.measure_generator([[text]], [typed], pool, scorer, sandbox)["half"]
    assert (got.tests, got.valid, got.false_alarms) == (2, 1, 0)


EVEN_ONLY = "```python\nassert half(6) == 4\nassert half(4) == 2\n```"  # first: reference fails


@pytest.mark.parametrize("oracle", [False, True])
def test_heldout_generators_compares_base_and_final_on_one_pool(monkeypatch, oracle, capsys):
    written = {"base-gen": [EVEN_ONLY, ""], "final-gen": [CATCHING, EVEN_ONLY]}
    calls = []

    def fake_sample_tests(cfg, model_name, problems, samples, seed):
        calls.append((model_name, samples, seed))
        return [written[model_name] for _ in problems]

    monkeypatch.setattr(gh, "sample_tests", fake_sample_tests)
    cfg = from_dict({"seed": 3, "data": {"generator_samples": 2}, "sandbox": {"timeout_s": 5.0},
                     "rewards": {"reference_expected": oracle}})  # fmt: skip
    pool = {"half": [gh.PoolAnswer(WRONG, False), gh.PoolAnswer(RIGHT, True)]}
    models = {"base": "base-gen", "final": "final-gen"}
    out = gh.heldout_generators(cfg, [HALF], pool, models, {"half": "half"})
    assert calls == [("base-gen", 2, 5), ("final-gen", 2, 5)]  # one seed for both
    # even inputs cannot tell n / 2 from n // 2; half(5) can
    catch = out["generator_catch_heldout"]
    assert (catch["before"], catch["after"], catch["n"], catch["skipped"]) == (0.0, 1.0, 1, 0.0)
    # as in the generator phase, rewards.reference_expected takes each expected value from the
    # reference: half(6) == 4 becomes half(6) == 3, valid
    validity = {"base": 1.0, "final": 1.0} if oracle else {"base": 0.5, "final": 2 / 3}
    assert out["generator_validity"] == validity
    assert out["generator_heldout"]["final"]["half"]["catch_rate"] == 1.0
    assert out["generator_heldout"]["models"] == models
    said = [line for line in capsys.readouterr().out.splitlines() if "generators held out" in line]
    assert [line.split(" ", 2)[2] for line in said] == [  # minutes of sampling each: a line each
        "generators held out: the base generator writes tests for 1 problems x 2",
        "generators held out: the final generator writes tests for 1 problems x 2",
    ]


def test_labelled_pool_keeps_parsed_judged_answers_with_their_label():
    credits = [
        code_duel.rewards.answerer_credit([True], [True]),  # right
        code_duel.rewards.answerer_credit([False], [True]),  # wrong
        code_duel.rewards.answerer_credit([None], [True]),  # the sandbox failed: left out
    ]
    texts = [f"```python\n{RIGHT}```", f"```python\n{WRONG}```", f"```python\n{RIGHT}```"]
    texts.append("no code here")
    credits.append(code_duel.rewards.answerer_credit(None, [True]))  # did not parse: left out
    pool = gh.labelled_pool([HALF] * 4, texts, credits)
    assert [a.right for a in pool["half"]] == [True, False]
    assert "return n / 2" in pool["half"][1].code


def test_sample_tests_samples_a_real_model_through_the_generators_prompt(monkeypatch):
    """The one call into a model, on the built-in tiny random model: a completion per sample,
    through the prompt the generator phase trains on (its steps.generator_* settings)."""
    import sparring.backends.sampler

    asked = []
    real_load = sparring.backends.sampler.load_answerer

    def load_answerer(*args, **kwargs):
        loaded = real_load(*args, **kwargs)
        real_sample = loaded.sample

        def sample(messages, **kw):
            asked.extend(m[-1]["content"] for m in messages)
            return real_sample(messages, **kw)

        loaded.sample = sample
        return loaded

    monkeypatch.setattr(gh, "load_answerer", load_answerer)
    cfg = from_dict({"grpo": {"max_completion_length": 8},
                     "steps": {"generator_tests": 5, "generator_stated_cases": True}})  # fmt: skip
    texts = gh.sample_tests(cfg, cfg.model_for("generator").name, [HALF, HALF], 2, seed=0)
    assert [len(per) for per in texts] == [2, 2]
    assert all(isinstance(t, str) for per in texts for t in per)
    assert len(asked) == 2 and all("Write 5 new" in a and "special case" in a for a in asked)
