"""Reward assembly of the code duel: the real sandbox pool runs the code (bubblewrap, 2 workers:
seconds); no model. One stand-in remains, for the one branch the real pool does not reach on a
healthy machine (an infrastructure error)."""

import pytest

from sparring.rewards import code_duel
from sparring.sandbox import Sandbox, SandboxLimits
from sparring.sandbox.limits import INFRA_ERROR, RunReport, TestResult

ROOMY_S = 5.0  # wall limit per test: every run here must finish, on a machine shared with others


@pytest.fixture(scope="module")
def pool():
    with Sandbox(SandboxLimits(timeout_s=ROOMY_S, workers=2)) as box:
        assert box.isolation == "bwrap"
        yield box


class Counted:
    """The real pool, counting the (solution, test) pairs it is asked to run."""

    def __init__(self, pool):
        self.pool = pool
        self.calls = 0

    def run_many(self, jobs):
        self.calls += sum(len(tests) for _, tests in jobs)
        return self.pool.run_many(jobs)

    def __getattr__(self, name):
        return getattr(self.pool, name)


def report(*outcomes, infra=None):
    return RunReport([TestResult(f"t{i}", o) for i, o in enumerate(outcomes)], infra_error=infra)


def test_answerer_rewards_count_discriminating_tests_only(pool):
    """Test 0 is passed by a trivial solution: only tests 1 and 2 earn, and code whose results
    equal the trivial solution's earns nothing although it passes a test."""
    tests = ["assert f(0) == 0", "assert f(1) == 1", "assert f(2) == 2"]
    good, half, trivial = REF, "def f(x):\n    return min(x, 1)\n", BAD
    sb = pool  # good passes all 3, half the first 2 (f(2) is 1), trivial only f(0) == 0
    mask, vectors = code_duel.rewards.credit_view(3, {"const_0": [0]})
    fenced = [f"```python\n{c}```" for c in (good, half, trivial)] + ["no code"]
    out, metrics = code_duel.answerer_rewards(
        fenced, [tests] * 4, ["hard", "easy", "medium", "medium"], ["f"] * 4, sb,
        discriminating=[mask] * 4, trivial_results=[vectors] * 4,
    )  # fmt: skip
    assert out == [1.2, 0.4, 0.0, 0.0]
    assert metrics["trivial_share"] == 0.25 and metrics["parse_rate"] == 0.75
    assert metrics["solved_rate"] == 0.25
    assert metrics["pass_rate"] == pytest.approx((1 + 2 / 3 + 1 / 3) / 3)
    assert metrics["discriminating_pass_rate"] == pytest.approx((1 + 0.5 + 0) / 3)


def test_format_only_control_pays_the_asked_definition_whatever_the_tests_say(pool):
    """The control reward: 1 for an answer defining f with the asked parameters, passing tests
    or not; 0 for other parameters, another name, or no code. The tests still run, so the
    metrics show what the control does to correctness."""
    tests = ["assert f(1) == 1", "assert f(2) == 2"]
    answers = [
        f"```python\n{REF}```",  # right and correct
        "```python\ndef f(x):\n    return -1\n```",  # right definition, wrong answers
        "```python\ndef f(y):\n    return y\n```",  # correct code, other parameter name
        "```python\ndef g(x):\n    return x\n```",  # another function
        "no code",
    ]
    kwargs = dict(
        tests=[tests] * 5, difficulties=["medium"] * 5, function_names=["f"] * 5, sandbox=pool,
        signatures=["def f(x: int) -> int:"] * 5,
    )  # fmt: skip
    control, metrics = code_duel.answerer_rewards(answers, mode="format_only", **kwargs)
    assert control == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert metrics["definition_rate"] == 0.4 and metrics["solved_rate"] == 0.4
    honest, _ = code_duel.answerer_rewards(answers, **kwargs)
    assert honest == [1.0, 0.0, 1.0, 0.0, 0.0]  # the honest reward judges by the tests
    with pytest.raises(ValueError, match="needs each problem's signature"):
        code_duel.answerer_rewards(answers, mode="format_only", **{**kwargs, "signatures": None})


def test_generator_break_credit_needs_trivial_code_to_fail():
    tests = ["assert f(0) == 0", "assert f(5) == 5"]
    s = code_duel.generator_score(
        tests,
        "f",
        reference_passed=[True, True],
        solutions_passed=[[False, False]],
        earlier_tests=[],
        trivial_passed=[[True, False]],  # `return 0` passes the first test
    )
    assert s.validity == 1.0 and s.honest == 0.5
    assert s.hardness == pytest.approx(0.5)  # only the second test breaks with credit


class DownSandbox:
    """A pool whose every run is an infrastructure error. A stand-in because it is the only way
    to reach the infra-error branch: the real pool reports one only when its workers cannot
    start, which this machine's sandbox does not do on demand."""

    def run_many(self, jobs):
        return [RunReport([TestResult(t, INFRA_ERROR) for t in tests], "down") for _, tests in jobs]


REF = "def f(x):\n    return x\n"
BAD = "def f(x):\n    return 0\n"


def info():
    return {"p": code_duel.ProblemInfo("p", "f", REF, ["assert f(1) == 1"], [BAD, BAD + "#"])}


def test_generator_score_hardness_validity_consistency():
    s = code_duel.generator_score(
        ["assert f(2) == 2", "assert f(3) == 4"],
        "f",
        reference_passed=[True, False],
        solutions_passed=[[False, False], [True, False]],
        earlier_tests=["assert f(1) == 1"],
    )
    assert s.validity == 0.5 and s.consistency == 1.0
    assert s.hardness == pytest.approx(0.25)  # frozen pass rate 0.5 on the valid test
    assert s.valid_tests == ["assert f(2) == 2"]
    assert s.reward == pytest.approx(1.0 * 0.25 + 0.2 * 0.5 + 0.1 * 1.0 * 0.5 + 0.1)


def test_generator_score_no_tests_and_infra():
    assert code_duel.generator_score([], "f", [], [], []).reward == 0.0
    assert code_duel.generator_score(["assert f(1) == 1"], "f", [None], [], []).reward is None


def test_scorer_caches_results_and_penalises_repeats(pool):
    sb = Counted(pool)
    scorer = code_duel.GeneratorScorer(info(), sb)
    text = "```python\nassert f(2) == 2\nassert f(0) == 0\n```"
    first = scorer.score([text, text], ["p", "p"])
    assert first[0].reward == first[1].reward  # one group's identical completions: alike
    runs = sb.calls
    assert runs == 2 * 3  # 2 new tests on the reference and on 2 frozen solutions
    again = scorer.score([text], ["p"])
    assert sb.calls == runs  # every (solution, test) came from the cache
    assert again[0].diversity == 0.0 < first[0].diversity
    assert scorer.generated["p"] == ["assert f(2) == 2", "assert f(0) == 0"]


def test_scorer_counts_a_test_outside_the_declared_parameters_invalid(pool):
    # the reference guards with `not xs`, so it passes first(None) == 99 as well as first([])
    ref = "def first(xs: list[int]) -> int:\n    return 99 if not xs else xs[0]\n"
    guard = "def first(xs: list[int]) -> int:\n    return 99 if len(xs) == 0 else xs[0]\n"
    sig = "def first(xs: list[int]) -> int:"
    infos = {"p": code_duel.ProblemInfo("p", "first", ref, [], [guard], [], sig)}
    text = "```python\nassert first([]) == 99\nassert first(None) == 99\n```"
    got = code_duel.GeneratorScorer(infos, pool).score([text], ["p"])[0]
    # a correct answer guarding with len() fails first(None): no credit for breaking it
    assert got.valid_tests == ["assert first([]) == 99"]
    assert (got.validity, got.hardness) == (0.5, 0.0)
    unsigned = {"p": code_duel.ProblemInfo("p", "first", ref, [], [guard], [])}
    loose = code_duel.GeneratorScorer(unsigned, pool).score([text], ["p"])[0]
    assert (loose.validity, loose.hardness) == (1.0, 0.5)  # what the signature takes away


def test_scorer_infra_error_is_no_signal():
    scorer = code_duel.GeneratorScorer(info(), DownSandbox())
    assert scorer.score(["assert f(2) == 2"], ["p"])[0].reward is None
    assert len(scorer.cache) == 0  # failures are not cached


def test_answerer_reward_fn_trl_columns(pool):
    from sparring.config import from_dict

    fn = code_duel.AnswererRewardFn(pool, from_dict({}).rewards)
    logged = {}
    comps = [
        [{"role": "assistant", "content": f"```python\n{REF}```"}],
        [{"role": "assistant", "content": "no code"}],
    ]
    out = fn(
        prompts=[None, None],
        completions=comps,
        tests=[["assert f(1) == 1"]] * 2,
        difficulty=["hard", "hard"],
        function_name=["f", "f"],
        log_metric=lambda k, v: logged.__setitem__(k, v),
    )
    assert out == [1.2, 0.0]
    assert logged["sparring/parse_rate"] == 0.5


def proposal(body: str, tests: list[str]) -> str:
    import json

    return "```json\n" + json.dumps({
        "description": "d", "function_signature": "def g(x):",
        "reference_solution": f"def g(x):\n    return {body}\n", "baseline_tests": tests,
    }) + "\n```"  # fmt: skip


def test_proposer_goldilocks_gate(pool):
    tests = ["assert g(1) == 3", "assert g(2) == 5"]
    ref = "def g(x):\n    return 2 * x + 1\n"
    sb = pool

    def solve(problems):
        return [[f"```python\n{ref}```", "nothing"] for _ in problems]

    out, valid = code_duel.proposer_rewards(
        [proposal("2 * x + 1", tests), "garbage"], sb, solve, 0.5
    )
    assert out == [1.0, 0.0]  # solver pass rate 0.5 hits the target
    assert valid[0] and valid[1] is None


def test_proposer_earns_nothing_for_problems_trivial_code_solves(pool):
    """Identity: echoing the argument passes every test, so the proposal is no problem; and a
    solver that answers like trivial code earns the proposer no pass rate."""
    from sparring.problems.trivial import trivial_family

    echo = trivial_family("g", 1)["echo_0"]
    ident = ["assert g(1) == 1", "assert g(2) == 2"]
    mixed = ["assert g(0) == 0", "assert g(2) == 5"]  # `return 0` passes the first
    ref = "def g(x):\n    return x\n"
    half = "def g(x):\n    return 2 * x + 1 if x else 0\n"
    const0 = trivial_family("g", 1)["const_0"]
    zero = "def g(x):\n    return 0\n"
    # what the pool will find: echo and ref pass ident; half passes mixed; const_0 and zero
    # pass only mixed[0]
    cases = [(ref, ident, 2), (echo, ident, 2), (half, mixed, 2), (const0, mixed, 1)]
    for code, tests, passed in [*cases, (zero, mixed, 1)]:
        assert pool.run(code, tests).passed == passed, code
    sb = pool

    def solve(problems):
        return [[f"```python\n{zero}```", f"```python\n{half}```"] for _ in problems]

    out, valid = code_duel.proposer_rewards(
        [proposal("x", ident), proposal("2 * x + 1 if x else 0", mixed)], sb, solve, 0.5
    )
    assert valid[0] is None and out[0] == 0.0  # identity: not a problem
    # `return 0` passes a test, but only the trivial one: solver rate 0.5 (half solves it)
    assert valid[1] and out[1] == 1.0


def test_answerer_rewards_with_the_real_sandbox_give_grpo_advantages():
    from sparring.engine.credit import group_advantages
    from sparring.problems import Problem
    from sparring.rewards.code_duel import answerer_rewards
    from sparring.sandbox import Sandbox, SandboxLimits

    square = Problem(
        "sq", "Square x.", "def sq(x):", ["assert sq(2) == 4", "assert sq(3) == 9"], "", "easy"
    )
    right = "```python\ndef sq(x):\n    return x * x\n```"
    half = "```python\ndef sq(x):\n    return 4\n```"
    with Sandbox(SandboxLimits(workers=1)) as sb:
        scores, _ = answerer_rewards(
            [right, half, "no code"], [square.baseline_tests] * 3, ["easy"] * 3, ["sq"] * 3, sb,
            {"easy": 1.0},
        )  # fmt: skip
    assert scores == [1.0, 0.5, 0.0]
    assert group_advantages(scores, ["sq"] * 3) == pytest.approx([1.2247, 0.0, -1.2247], 1e-3)


def test_prefetch_runs_the_tests_the_reward_call_then_reads(pool):
    """Scoring during sampling: `prefetch` runs the sandbox now; the reward call that follows
    runs nothing more and returns what a reward without prefetch returns."""
    from sparring.config import from_dict

    cfg = from_dict({}).rewards
    wrong = "def f(x):\n    return 0\n"
    texts = [f"```python\n{REF}```", f"```python\n{wrong}```", "no code"]
    tests = [["assert f(1) == 1", "assert f(2) == 2"]] * 3
    columns = dict(tests=tests, difficulty=["hard"] * 3, function_name=["f"] * 3)
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    plain = code_duel.AnswererRewardFn(pool, cfg)(
        prompts=[None] * 3, completions=completions, **columns
    )

    sb = Counted(pool)
    fn = code_duel.AnswererRewardFn(sb, cfg)
    fn.prefetch(texts[:2], tests[:2], ["f", "f"])
    assert sb.calls == 4  # two parsed answers x two tests, run during "sampling"
    out = fn(prompts=[None] * 3, completions=completions, **columns)
    assert sb.calls == 4, "the reward call ran tests that prefetch had already run"
    assert out == plain and out[0] > out[1] == 0.0
