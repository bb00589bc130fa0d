"""The binary all-tests answerer reward (`rewards.answerer: all_tests`, the baseline arm of the
reward study): 1.0 when the answer defines the asked-for function and passes every test the
reward sees (the `data.given_tests` given tests, plus the banked ones with the bank in the
reward), else 0.0. Judged end to end as training judges it: the answerer phase's rows
(rewards.answerer_rows.answerer_rows) scored by `code_duel.AnswererRewardFn` in the real sandbox, on
real problems (bundled ones and problem-family instances) cut to their given tests as
materialization cuts them (given_tests.given_view after compute_trivial_passes).

Degenerate answers first: a constant, an echo of the first argument, every other trivial
solution (sparring.problems.trivial), an empty answer, a correct function under another name and an
always-equal object earn 0 with 3 given tests on every problem here; the reference earns 1.
With 1 given test they do not all earn 0: on these bundled problems that one test is passed by
some trivial solution (`return 0`, an echo), and all_tests pays it in full, where honest pays 0.
"""

import re
import typing

import pytest

from sparring import rewards
from sparring.config import ConfigError, RewardsConfig, from_dict, load_config
from sparring.problems import Problem, compute_trivial_passes, families, load_bundled, programs
from sparring.problems.given_tests import given_view
from sparring.problems.trivial import argument_count, trivial_family
from sparring.rewards import code_duel
from sparring.rewards.answerer_rows import answerer_rows
from sparring.sandbox import Sandbox, SandboxLimits
from sparring.sandbox.limits import INFRA_ERROR, RunReport, TestResult
from tests.unit.test_code_duel import Counted  # the real pool, counting its runs

ROOMY_S = 5.0  # wall limit per test: every run here must finish, on a machine shared with others
BUNDLED = ("count_vowel_runs", "swap_adjacent_pairs", "top_k_words", "semver_compare")
FAMILIES = ("list_stat", "str_case")  # level 0, as configs/learn.yaml trains
GIVEN = 3  # data.given_tests of configs/learn.yaml and configs/local.yaml
COLUMNS = (
    "tests", "difficulty", "function_name", "discriminating", "trivial_results", "problem_id",
    "signature",
)  # fmt: skip


@pytest.fixture(scope="module")
def pool():
    with Sandbox(SandboxLimits(timeout_s=ROOMY_S, workers=2)) as box:
        yield box


@pytest.fixture(scope="module")
def problems(pool):
    """The real problems with their trivial record over every test (as materialize has it)."""
    chosen = [p for p in load_bundled() if p.id in BUNDLED]
    chosen += families.generate(0, 1, FAMILIES, [0])
    assert len(chosen) == len(BUNDLED) + len(FAMILIES)
    return compute_trivial_passes(chosen, pool)


def fenced(code: str) -> str:
    return f"Here is the function.\n```python\n{code}```\n"


def degenerate(p: Problem) -> dict[str, str]:
    """Answer text per kind, each defining the asked-for function with its signature unless the
    kind is not to."""
    sig, name = p.function_signature, p.function_name
    first = programs.parameter_names(sig, name)[0]
    always_equal = (
        "class Anything:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    __hash__ = object.__hash__\n\n"
        f"{sig}\n    return Anything()\n"
    )
    renamed = re.sub(rf"\b{name}\b", f"{name}_solution", p.reference_solution)
    return {
        "constant": fenced(f"{sig}\n    return 0\n"),
        "echo": fenced(f"{sig}\n    return {first}\n"),
        "empty": "",
        "wrong_name": fenced(renamed),  # the correct function, under another name
        "always_equal": fenced(always_equal),
        "reference": fenced(p.reference_solution),
    }


def score(sandbox, problems, answers, reward="all_tests", bank=None):
    """Rewards of answers[i] to problems[i] as the answerer phase pays them, and the reward
    function (its `history` holds the step's metrics)."""
    rows = answerer_rows(list(problems), bank or {}, ["code"])
    columns = {k: [r[k] for r in rows] for k in COLUMNS}
    if any("withheld_tests" in r for r in rows):
        columns["withheld_tests"] = [r["withheld_tests"] for r in rows]
    fn = code_duel.AnswererRewardFn(sandbox, from_dict({"rewards": {"answerer": reward}}).rewards)
    completions = [[{"role": "assistant", "content": a}] for a in answers]
    out = fn(prompts=[r["prompt"] for r in rows], completions=completions, **columns)
    return out, fn


def trivially_solved(p: Problem) -> list[str]:
    """Trivial solutions passing every test `p` gives (its trivial record is of those tests)."""
    return sorted(n for n, hits in p.trivial_passes.items() if len(hits) == len(p.baseline_tests))


def test_degenerate_answers_earn_nothing_and_the_reference_everything(pool, problems):
    given = [given_view(p, GIVEN) for p in problems]
    # the rule's exception does not arise here: no trivial solution passes all 3 given tests
    assert {p.id: trivially_solved(p) for p in given} == {p.id: [] for p in given}
    items = [(p, kind, text) for p in given for kind, text in degenerate(p).items()]
    out, fn = score(pool, [p for p, _, _ in items], [t for _, _, t in items])
    got: dict[str, dict[str, float | None]] = {}
    for (p, kind, _), r in zip(items, out, strict=True):
        got.setdefault(kind, {})[p.id] = r
    ids = [p.id for p in given]
    for kind in ("constant", "echo", "empty", "wrong_name", "always_equal"):
        assert got[kind] == dict.fromkeys(ids, 0.0), kind
    assert got["reference"] == dict.fromkeys(ids, 1.0)  # no difficulty weight: binary
    metrics = fn.history[-1]
    assert metrics["solved_rate"] == pytest.approx(1 / 6)  # the references alone
    assert metrics["parse_rate"] == pytest.approx(4 / 6)  # not the empty and renamed answers


def test_every_trivial_solution_earns_nothing_with_3_given_tests(pool, problems):
    given = [given_view(p, GIVEN) for p in problems]
    items = [
        (p, name, fenced(code))
        for p in given
        for name, code in trivial_family(
            p.function_name, argument_count(p.function_signature)
        ).items()
    ]
    out, _ = score(pool, [p for p, _, _ in items], [t for _, _, t in items])
    paid = {(p.id, name): r for (p, name, _), r in zip(items, out, strict=True) if r != 0.0}
    assert not paid, f"trivial code earned the all-tests reward: {paid}"


def test_with_one_given_test_trivial_code_passing_it_earns_everything(pool, problems):
    """The exception: with `data.given_tests: 1` each of these bundled problems gives a test
    some trivial solution passes (the empty input), so `return 0` (count_vowel_runs,
    semver_compare) and an echo (swap_adjacent_pairs) pass every test the reward sees and
    all_tests pays them 1.0; the honest reward pays them 0. The withheld tests catch them (the
    false-positive measure), which no reward reads."""
    by_id = {p.id: given_view(p, 1) for p in problems}
    assert trivially_solved(by_id["count_vowel_runs"]) == ["const_0", "const_False", "len_first"]
    assert "echo_0" in trivially_solved(by_id["swap_adjacent_pairs"])
    assert "const_0" in trivially_solved(by_id["semver_compare"])
    assert trivially_solved(by_id["top_k_words"]) == ["const_empty_list", "list_first",
                                                       "sorted_first"]  # fmt: skip
    chosen = [by_id[i] for i in ("count_vowel_runs", "semver_compare", "swap_adjacent_pairs")]
    kinds = ("constant", "constant", "echo")
    answers = [degenerate(p)[k] for p, k in zip(chosen, kinds, strict=True)]
    out, fn = score(pool, chosen, answers)
    assert out == [1.0, 1.0, 1.0]
    assert fn.history[-1]["false_positive_rate"] == 1.0  # each fails a withheld test
    honest, _ = score(pool, chosen, answers, reward="honest")
    assert honest == [0.0, 0.0, 0.0]
    # top_k_words: `return []` passes its one given test, and `return 0` does not
    top = by_id["top_k_words"]
    empty_list = fenced(f"{top.function_signature}\n    return []\n")
    assert score(pool, [top, top], [empty_list, degenerate(top)["constant"]])[0] == [1.0, 0.0]


SQ = Problem(
    "sq", "Square x.", "def sq(x: int) -> int:", ["assert sq(2) == 4", "assert sq(3) == 9"],
    "def sq(x: int) -> int:\n    return x * x\n",
)  # fmt: skip
BANKED = "assert sq(-2) == 4"  # the reference passes it, every trivial solution fails it
HALF = fenced("def sq(x: int) -> int:\n    return x * abs(x)\n")  # right for x >= 0 only


def test_banked_tests_count_when_the_bank_is_in_the_reward(pool):
    (sq,) = compute_trivial_passes([SQ], pool)
    # a test validation banks: the reference passes it and every trivial solution fails it
    (banked,) = compute_trivial_passes(
        [Problem("b", "", SQ.function_signature, [BANKED], "")], pool
    )
    assert pool.run(SQ.reference_solution, [BANKED]).passed == 1 and not banked.trivial_passes
    answers = [HALF, fenced(SQ.reference_solution)]
    with_bank, _ = score(pool, [sq, sq], answers, bank={"sq": [BANKED]})
    assert with_bank == [0.0, 1.0]  # HALF fails the banked test
    without, _ = score(pool, [sq, sq], answers)  # rewards.answerer_bank: false
    assert without == [1.0, 1.0]
    honest, _ = score(pool, [sq, sq], answers, reward="honest", bank={"sq": [BANKED]})
    assert honest[0] == pytest.approx(2 / 3)  # the share: what all_tests does not pay


class DownSandbox:
    """A pool whose every run is an infrastructure error: the one branch the real pool does not
    reach on demand (as in tests/unit/test_code_duel.py)."""

    def run_many(self, jobs):
        return [RunReport([TestResult(t, INFRA_ERROR) for t in tests], "down") for _, tests in jobs]


def test_all_tests_reads_the_honest_credits_results_once(pool):
    """all_tests runs the sandbox as often as honest does (each parsed answer's tests once) and
    is the credits' `strict` of those same results; a sandbox failure is no signal (None), a
    problem without tests pays 0."""
    tests = [["assert f(1) == 1", "assert f(2) == 2", "assert f(0) == 0"]] * 4
    answers = [
        fenced("def f(x):\n    return x\n"),
        fenced("def f(x):\n    return min(x, 1)\n"),  # 2 of 3
        fenced("def f(x):\n    return 0\n"),  # 1 of 3
        "no code",
    ]
    kwargs = dict(tests=tests, difficulties=["hard"] * 4, function_names=["f"] * 4)
    counts = {}
    for mode in ("honest", "all_tests"):
        sb = Counted(pool)
        out, metrics = code_duel.answerer_rewards(answers, sandbox=sb, mode=mode, **kwargs)
        counts[mode] = sb.calls
        if mode == "all_tests":
            assert out == [1.0, 0.0, 0.0, 0.0]
            assert metrics["solved_rate"] == 0.25
    assert counts == {"honest": 9, "all_tests": 9}
    credits = code_duel.answerer_credits(answers, tests, ["hard"] * 4, ["f"] * 4, pool)
    assert [rewards.all_tests_reward(c) for c in credits] == [float(c.strict) for c in credits]
    down, _ = code_duel.answerer_rewards(answers, sandbox=DownSandbox(), mode="all_tests", **kwargs)
    assert down == [None, None, None, 0.0]  # no signal, never 0; unparsed code is 0
    bare = code_duel.answerer_rewards(answers[:1], [[]], ["easy"], ["f"], pool, mode="all_tests")
    assert bare[0] == [0.0]  # a problem without tests


def test_config_names_all_tests_and_refuses_other_values():
    assert from_dict({"rewards": {"answerer": "all_tests"}}).rewards.answerer == "all_tests"
    assert load_config(None, ["rewards.answerer=all_tests"]).rewards.answerer == "all_tests"
    allowed = typing.get_args(typing.get_type_hints(RewardsConfig)["answerer"])
    assert allowed == code_duel.ANSWERER_REWARDS == ("honest", "format_only", "all_tests")
    for value in allowed:
        assert from_dict({"rewards": {"answerer": value}}).rewards.answerer == value
    with pytest.raises(ConfigError) as info:
        from_dict({"rewards": {"answerer": "all_test"}})
    message = str(info.value)
    assert message.startswith("rewards.answerer: 'all_test' is not allowed")
    assert "'honest', 'format_only', 'all_tests'" in message  # the fix: the values allowed
    with pytest.raises(ValueError, match="use one of honest, format_only, all_tests"):
        code_duel.answerer_rewards([], [], [], [], None, mode="all_test")
