"""The generator's (test writer's) reward: generated tests scored against the frozen answerer.

Covers: `GeneratorScorer`, which parses the tests of each completion (prompts.extract_tests;
with `rewards.reference_expected`, each rewritten to its oracle form, sandbox/oracle.py), runs
only the new tests on the reference solution (validity; a test calling the function outside its
declared parameters counts as failed, `reference_in_domain`), on the frozen answerer's cached
solutions (hardness) and on the trivial solutions (sparring.problems.trivial: break credit only on
tests
every trivial solution fails), measures near-duplicates against the baseline and earlier tests
(diversity) and whether the tests call the right function (consistency); `generator_score`, the
pure assembly of those results into `rewards.generator_reward` (unit-tested with fake results);
`ProblemInfo` / `problem_info`, what it needs about one problem; `score_metrics`, the batch
means; with `rewards.generator: catch` the frozen answers' verdicts on the given tests too (run
once per answer through the same cache), `rewards.catch_reward` in place of the weighted sum,
`catch_by_problem` (the first and last scoring call's catch, with
their standard errors over problems). None means "no signal" (sandbox failure), never 0.
Does not cover: the answerer's reward or the TRL reward-function adapter
(`sparring.rewards.code_duel.GeneratorRewardFn` wraps a `GeneratorScorer`), the result cache
(sparring.sandbox.result_cache), validation and banking of the tests (sparring.phases.validate).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparring import rewards
from sparring.problems import prompts
from sparring.sandbox.domain import fits_signature
from sparring.sandbox.result_cache import ResultCache, run_cached


@dataclass
class GeneratorScore:
    reward: float | None
    n_tests: int
    validity: float
    hardness: float
    diversity: float
    consistency: float
    tests: list[str] = field(default_factory=list)
    valid_tests: list[str] = field(default_factory=list)
    honest: float = 0.0  # share of tests valid AND failed by every trivial solution
    # rewards.generator: catch only (None otherwise, or when the sandbox failed): the core term,
    # and how many frozen answers pass the problem's given tests
    catch: float | None = None
    catchable: int | None = None
    problem_id: str = ""


def generator_score(
    all_tests: Sequence[str],
    function_name: str,
    reference_passed: Sequence[bool | None],
    solutions_passed: Sequence[Sequence[bool | None]],
    earlier_tests: Sequence[str],
    weights: Mapping[str, float] | None = None,
    duplicate_similarity: float = 0.9,
    trivial_passed: Sequence[Sequence[bool | None]] = (),
    given_passed: Sequence[bool | None] | None = None,
) -> GeneratorScore:
    """Pure: the generator's reward for one completion.

    `all_tests`: the asserts it wrote; `reference_passed[i]`: test i on the reference solution;
    `solutions_passed[s][i]`: test i on frozen solution s (parseable solutions only);
    `trivial_passed[t][i]`: test i on trivial solution t. Break credit is earned only on
    *honest* tests (valid, and failed by every trivial solution): frozen pass rate = mean over
    solutions of the share of honest tests passed; with no honest tests or no parseable frozen
    solutions it is 1 (no hardness credit). With `given_passed[s]` (frozen solution s passes
    every given test: `rewards.generator: catch`) the reward is `rewards.catch_reward`.
    """
    n = len(all_tests)
    if n == 0:
        empty = GeneratorScore(0.0, 0, 0.0, 0.0, 0.0, 0.0)
        if given_passed is not None:
            counts = rewards.catch_counts(given_passed, [[] for _ in given_passed])
            empty.catch, empty.catchable = (None, None) if counts is None else (0.0, counts[1])
        return empty
    if any(v is None for v in reference_passed):
        return GeneratorScore(None, n, 0.0, 0.0, 0.0, 0.0, list(all_tests))
    consistency = sum(_calls(t, function_name) for t in all_tests) / n
    valid_idx = [i for i, ok in enumerate(reference_passed) if ok]
    validity = len(valid_idx) / n
    honest_idx = [i for i in valid_idx if not any(row[i] is not False for row in trivial_passed)]
    frozen_rate: float | None = 1.0
    if honest_idx and solutions_passed:
        rates = []
        for row in solutions_passed:
            vals = [row[i] for i in honest_idx]
            if any(v is None for v in vals):
                frozen_rate = None
                break
            rates.append(sum(bool(v) for v in vals) / len(vals))
        else:
            frozen_rate = sum(rates) / len(rates)
    diversity = 1.0 - rewards.near_duplicate_rate(
        list(all_tests), list(earlier_tests), duplicate_similarity
    )
    honest = len(honest_idx) / n
    reward = rewards.generator_reward(
        validity, frozen_rate, diversity, consistency, weights, n, honest=honest
    )
    catch: float | None = None
    catchable: int | None = None
    if given_passed is not None:
        on_honest = [[row[i] for i in honest_idx] for row in solutions_passed]
        reward = rewards.catch_reward(given_passed, on_honest, validity, consistency, n)
        counts = rewards.catch_counts(given_passed, on_honest)
        if counts is not None:
            catch, catchable = (counts[0] / counts[1] if counts[1] else 0.0), counts[1]
    hardness = 0.0 if frozen_rate is None else (1.0 - frozen_rate) * honest
    return GeneratorScore(
        reward,
        n,
        validity,
        hardness,
        diversity,
        consistency,
        list(all_tests),
        [all_tests[i] for i in valid_idx],
        honest,
        catch,
        catchable,
    )


def reference_in_domain(
    reference_passed: Sequence[bool | None], tests: Sequence[str], function_name: str,
    signature: str,
) -> list[bool | None]:  # fmt: skip
    """The reference's results with a test that calls the function outside its declared
    parameters marked failed: validation does not bank it, so the generator earns nothing
    for it (a reference guarding with `not xs` passes `f(None) == 99`).

    >>> reference_in_domain([True, True, None], ["assert f([]) == 9", "assert f(None) == 9",
    ...                     "assert f(0) == 9"], "f", "def f(xs: list[int]) -> int:")
    [True, False, None]
    """
    if not signature:
        return list(reference_passed)
    return [
        ok if ok is None else ok and fits_signature(t, function_name, signature)
        for ok, t in zip(reference_passed, tests, strict=True)
    ]


def _calls(test: str, name: str) -> bool:
    return bool(prompts.extract_tests(test, name, limit=1)) if name else True


@dataclass
class ProblemInfo:
    """What the generator's reward needs about one problem."""

    id: str
    function_name: str
    reference_solution: str
    baseline_tests: list[str]
    frozen_solutions: list[str]  # parseable frozen answerer solutions ("" dropped)
    trivial_solutions: list[str] = field(default_factory=list)  # sparring.problems.trivial family
    # the declared parameters: a test calling outside them is invalid (sparring.sandbox.domain)
    function_signature: str = ""


def problem_info(problem: Any, frozen_solutions: Sequence[str]) -> ProblemInfo:
    """ProblemInfo of a `sparring.problems.Problem`, with its trivial family."""
    from sparring.problems.trivial import argument_count, trivial_family

    family = trivial_family(problem.function_name, argument_count(problem.function_signature))
    return ProblemInfo(
        problem.id,
        problem.function_name,
        problem.reference_solution,
        list(problem.baseline_tests),
        [s for s in frozen_solutions if s],
        list(family.values()),
        problem.function_signature,
    )


class GeneratorScorer:
    """Scores generator completions against cached frozen solutions, reusing every result.

    `earlier` holds, per problem, the tests diversity is measured against: the baseline, the
    banked tests, and every test of earlier scoring calls (not of the current batch, so identical
    completions of one GRPO group are treated alike). `reward`: `rewards.generator`; with
    "catch" each frozen solution also runs the problem's `baseline_tests` (the given tests the
    answerer's reward sees: materialize stores training problems as `given_view` left them),
    once per solution through the result cache, in the batch's one sandbox call.
    """

    def __init__(
        self,
        problems: Mapping[str, ProblemInfo],
        sandbox: Any,
        weights: Mapping[str, float] | None = None,
        duplicate_similarity: float = 0.9,
        cache: ResultCache | None = None,
        max_tests: int = 8,
        reference_expected: bool = False,
        reward: str = "adversarial",
    ) -> None:
        if reward not in ("adversarial", "catch"):
            raise ValueError(f"rewards.generator: {reward!r}; use 'adversarial' or 'catch'")
        self.problems = problems
        self.reward = reward
        self.reference_expected = reference_expected
        self._rewritten: dict[tuple[str, str], str] = {}  # (problem, test) -> oracle form
        self.sandbox = sandbox
        self.weights = dict(weights or {})
        self.duplicate_similarity = duplicate_similarity
        self.cache = cache if cache is not None else ResultCache()
        self.max_tests = max_tests
        self.earlier: dict[str, list[str]] = {
            pid: list(p.baseline_tests) for pid, p in problems.items()
        }
        self.generated: dict[str, list[str]] = defaultdict(list)  # every test seen, in order

    def score(self, completions: Sequence[str], problem_ids: Sequence[str]) -> list[GeneratorScore]:
        parsed = [prompts.extract_tests(text, "", limit=self.max_tests) for text in completions]
        if self.reference_expected:
            parsed = self._with_reference_expected(parsed, problem_ids)
        jobs: list[tuple[str, list[str]]] = []
        for tests, pid in zip(parsed, problem_ids, strict=True):
            p = self.problems[pid]
            jobs.append((p.reference_solution, tests))
            jobs.extend((s, tests) for s in p.frozen_solutions)
            jobs.extend((t, tests) for t in p.trivial_solutions)
        catching = self.reward == "catch"
        batch_ids = list(dict.fromkeys(problem_ids)) if catching else []
        given_jobs = [
            (s, self.problems[pid].baseline_tests)
            for pid in batch_ids
            for s in self.problems[pid].frozen_solutions
        ]
        results = run_cached(self.sandbox, [j for j in jobs if j[1]] + given_jobs, self.cache)
        given = _given_verdicts(self.problems, batch_ids, results[len(results) - len(given_jobs) :])
        it = iter(results)
        out = []
        for tests, pid in zip(parsed, problem_ids, strict=True):
            p = self.problems[pid]
            if not tests:
                out.append(
                    generator_score([], p.function_name, [], [], [], given_passed=given.get(pid))
                )
                out[-1].problem_id = pid
                continue
            ref = reference_in_domain(next(it), tests, p.function_name, p.function_signature)
            sols = [next(it) for _ in p.frozen_solutions]
            trivial = [next(it) for _ in p.trivial_solutions]
            out.append(
                generator_score(
                    tests,
                    p.function_name,
                    ref,
                    sols,
                    self.earlier[pid],
                    self.weights,
                    self.duplicate_similarity,
                    trivial,
                    given.get(pid),
                )
            )
            out[-1].problem_id = pid
        for tests, pid in zip(parsed, problem_ids, strict=True):
            for t in tests:
                if t not in self.earlier[pid]:
                    self.earlier[pid].append(t)
                if t not in self.generated[pid]:
                    self.generated[pid].append(t)
        return out

    def _with_reference_expected(
        self, parsed: list[list[str]], problem_ids: Sequence[str]
    ) -> list[list[str]]:
        """Each test in its oracle form (sandbox/oracle.py), one sandbox request per problem;
        tests that become identical within one completion are kept once."""
        from sparring.sandbox.oracle import with_reference_expected

        todo: dict[str, list[str]] = defaultdict(list)
        for tests, pid in zip(parsed, problem_ids, strict=True):
            for t in tests:
                if (pid, t) not in self._rewritten and t not in todo[pid]:
                    todo[pid].append(t)
        for pid, tests in todo.items():
            ref = self.problems[pid].reference_solution
            for t, new in zip(
                tests, with_reference_expected(ref, tests, self.sandbox), strict=True
            ):
                self._rewritten[(pid, t)] = new
        return [
            list(dict.fromkeys(self._rewritten[(pid, t)] for t in tests))
            for tests, pid in zip(parsed, problem_ids, strict=True)
        ]


def _given_verdicts(
    problems: Mapping[str, ProblemInfo],
    ids: Sequence[str],
    results: Sequence[Sequence[bool | None]],
) -> dict[str, list[bool | None]]:
    """{problem: per frozen solution, passes every given test (None: the sandbox failed)}, from
    the results of `ids`' solutions on their given tests, in that order."""
    it = iter(results)
    out: dict[str, list[bool | None]] = {}
    for pid in ids:
        rows = [next(it) for _ in problems[pid].frozen_solutions]
        out[pid] = [None if any(v is None for v in row) else all(row) for row in rows]
    return out


def score_metrics(scores: Sequence[GeneratorScore]) -> dict[str, float]:
    """Means of the generator's reward components over a batch; with the catch reward also
    `generator_catch` (the mean core term) and `generator_catchable_share` (the share of the
    batch's problems with a frozen answer passing the given tests: where a catch is possible)."""
    if not scores:
        return {}
    n = len(scores)
    kept = [s.reward for s in scores if s.reward is not None]
    return {
        "reward": sum(kept) / len(kept) if kept else 0.0,
        "validity": sum(s.validity for s in scores) / n,
        "honest_test_share": sum(s.honest for s in scores) / n,
        "hardness": sum(s.hardness for s in scores) / n,
        "diversity": sum(s.diversity for s in scores) / n,
        "consistency": sum(s.consistency for s in scores) / n,
        "tests_per_completion": sum(s.n_tests for s in scores) / n,
        **_catch_metrics(scores),
    }


def _catch_metrics(scores: Sequence[GeneratorScore]) -> dict[str, float]:
    catches = [s.catch for s in scores if s.catch is not None]
    catchable = {s.problem_id: s.catchable for s in scores if s.catchable is not None}
    if not catches:
        return {}
    return {
        "generator_catch": sum(catches) / len(catches),
        "generator_catchable_share": sum(c > 0 for c in catchable.values()) / len(catchable),
    }


def catch_by_problem(scores: Sequence[GeneratorScore]) -> dict[str, float]:
    """{problem: mean catch over its completions} of one scoring call ({} without the catch
    reward).

    >>> s = [GeneratorScore(0.1, 1, 1, 0, 1, 1, catch=c, problem_id=p)
    ...      for c, p in [(0.0, "a"), (1.0, "a"), (0.5, "b"), (None, "c")]]
    >>> catch_by_problem(s)
    {'a': 0.5, 'b': 0.5}
    """
    per: dict[str, list[float]] = defaultdict(list)
    for s in scores:
        if s.catch is not None:
            per[s.problem_id].append(s.catch)
    return {pid: sum(v) / len(v) for pid, v in per.items()}
