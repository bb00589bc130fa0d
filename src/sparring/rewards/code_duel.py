"""The code duel: completions of either role turned into rewards through the sandbox.

Covers:
- the answerer's reward: parse the code (programs.extract_code), run it on the problem's tests
  (baseline + banked adversarial) in the sandbox, `rewards.answerer_credit` (difficulty-aware
  share of discriminating tests passed; trivial code earns 0), or with `rewards.answerer` the
  format-only control or the binary all-tests baseline (`rewards.all_tests_reward`, read off the
  same results);
- the proposer's reward (generator_mode: problems): validity gate on the proposed problem's own
  tests, then `rewards.goldilocks_reward` on the frozen solver's pass rate;
- TRL reward-function adapters (`AnswererRewardFn`, `GeneratorRewardFn`, `writer_reward`) that
  take dataset columns as keyword arguments and return one float or None per completion.

Below it, importing nothing from here: the writer's scoring on the frozen answers' cached results
(sparring.rewards.generator_scoring; its names stay reachable here, e.g. `code_duel.
GeneratorScorer`) and the result cache both roles share (sparring.sandbox.result_cache).

Pure assembly (`rewards.answerer_credit`, `generator_score`) is unit-tested apart from running.
Honest credit: an answer earns only on tests no trivial solution passes (sparring.problems
.trivial); a generated test earns break credit only when the reference passes it and every
trivial solution fails it. None means "no signal" (sandbox failure), never 0. Does not cover:
sampling (sparring.backends.sampler) or training (sparring.phases, sparring.backends).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparring import rewards
from sparring.problems import programs, prompts
from sparring.rewards.generator_scoring import (  # noqa: F401 (re-exported: callers name code_duel.X)
    GeneratorScore,
    GeneratorScorer,
    ProblemInfo,
    catch_by_problem,
    generator_score,
    problem_info,
    reference_in_domain,
    score_metrics,
)
from sparring.sandbox.result_cache import ResultCache, run_cached


def completion_text(completion: Any) -> str:
    """TRL passes conversational completions as [{"role": "assistant", "content": ...}]."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        last = completion[-1]
        if isinstance(last, dict):
            return str(last.get("content", ""))
    return ""


# --------------------------------------------------------------------------- answerer

# The answerer rewards (`rewards.answerer`; config.RewardsConfig names the same values): honest
# (the treatment), format_only (the control), all_tests (the binary all-tests baseline).
ANSWERER_REWARDS = ("honest", "format_only", "all_tests")


def answerer_credits(
    completions: Sequence[str],
    tests: Sequence[Sequence[str]],
    difficulties: Sequence[str],
    function_names: Sequence[str],
    sandbox: Any,
    weights: Mapping[str, float] | None = None,
    cache: ResultCache | None = None,
    discriminating: Sequence[Sequence[bool]] | None = None,
    trivial_results: Sequence[Sequence[Sequence[bool]]] | None = None,
    stated: Sequence[Sequence[int]] | None = None,
    stated_share: float = 0.0,
) -> list[rewards.AnswererCredit]:
    """Per completion, what it earned and why (`rewards.answerer_credit`): its code parsed
    (programs.extract_code), run on its problem's tests in the sandbox (each (solution, test)
    pair once, through `cache`). `discriminating[i]` / `trivial_results[i]` come from the
    problem's trivial baselines (`rewards.credit_view`); without them every test counts.
    `stated[i]` are the indices of the tests at problem i's stated case, weighed by
    `stated_share` (0: a test like the others)."""
    codes = [
        programs.extract_code(text, name)
        for text, name in zip(completions, function_names, strict=True)
    ]
    jobs = [(c, list(t)) for c, t in zip(codes, tests, strict=True) if c is not None]
    results = iter(run_cached(sandbox, jobs, cache) if jobs else [])
    out = []
    for i, code in enumerate(codes):
        mask = list(discriminating[i]) if discriminating is not None else [True] * len(tests[i])
        trivial = list(trivial_results[i]) if trivial_results is not None else []
        passed = next(results) if code is not None else None
        at = list(stated[i]) if stated is not None else []
        out.append(
            rewards.answerer_credit(
                passed, mask, trivial, difficulties[i], weights, at, stated_share
            )
        )
    return out


def false_positive_flags(
    completions: Sequence[str],
    tests: Sequence[Sequence[str]],
    withheld: Sequence[Sequence[str]],
    function_names: Sequence[str],
    sandbox: Any,
    cache: ResultCache | None = None,
) -> list[tuple[bool, bool] | None]:
    """Per answer, (passes every test the reward saw in `tests[i]`, fails a withheld test in
    `withheld[i]` as well): the second is a false positive. None where the problem withholds
    nothing. Withheld tests run only for the answers that pass every seen test."""
    rows = [i for i, w in enumerate(withheld) if w]
    codes = {i: programs.extract_code(completions[i], function_names[i]) for i in rows}
    runnable = [i for i in rows if codes[i] is not None and tests[i]]
    seen = run_cached(sandbox, [(codes[i], list(tests[i])) for i in runnable], cache)
    passes = [i for i, row in zip(runnable, seen, strict=True) if all(r is True for r in row)]
    hidden = run_cached(sandbox, [(codes[i], list(withheld[i])) for i in passes], cache)
    caught = {i for i, row in zip(passes, hidden, strict=True) if any(r is False for r in row)}
    passed = set(passes)
    out: list[tuple[bool, bool] | None] = [None] * len(completions)
    for i in rows:
        out[i] = (i in passed, i in caught)
    return out


def false_positives(flags: Sequence[tuple[bool, bool] | None]) -> dict[str, float]:
    """How often the tests a reward saw pass an answer its withheld tests fail, from
    `false_positive_flags`, over the answers to problems with withheld tests:
    `false_positive_rate` (share of those answers passing every seen test and failing a
    withheld one) and `false_positive_share_of_passes` (the same over the answers that pass
    every seen test). {} when no problem has withheld tests. Never changes a reward.

    >>> false_positives([(True, True), (True, False), (False, False), None])
    {'false_positive_rate': 0.3333333333333333, 'false_positive_share_of_passes': 0.5}
    """
    judged = [f for f in flags if f is not None]
    if not judged:
        return {}
    passes = sum(p for p, _ in judged)
    caught = sum(c for _, c in judged)
    return {
        "false_positive_rate": caught / len(judged),
        "false_positive_share_of_passes": caught / passes if passes else 0.0,
    }


def answer_code(problem: Any, text: str) -> str | None:
    """The code an answer (a completion or bare code) gives for `problem`, None when it did not
    parse: a HumanEval answer completed into the whole function, any other's asked-for function
    extracted."""
    if not problem.entry_point:
        return programs.extract_code(text, problem.function_name)
    if not text.strip():
        return None
    # a whole function, or a body continuing the prompt (the official form)
    return programs.complete_humaneval(problem.prompt, text, problem.entry_point)


def score_answers(
    problems: Sequence[Any], texts: Sequence[str], sandbox: Any, cache: ResultCache | None = None
) -> list[rewards.AnswererCredit]:
    """Honest credit of answer i (a completion or bare code) to problems[i], judged on the
    problem's answer tests (HumanEval: its `check` split into asserts). The problems must carry
    `trivial_passes` (sparring.problems.compute_trivial_passes)."""
    from sparring.problems import answer_job

    jobs, where = [], []
    for p, text in zip(problems, texts, strict=True):
        code = answer_code(p, text)
        where.append(code is not None)
        if code is not None:
            jobs.append(answer_job(p, code))
    results = iter(run_cached(sandbox, jobs, cache) if jobs else [])
    out = []
    for p, parsed in zip(problems, where, strict=True):
        passed = next(results) if parsed else None
        n_tests = len(p.baseline_tests) if not p.entry_point else len(answer_job(p, "")[1])
        mask, trivial = rewards.credit_view(n_tests, p.trivial_passes)
        out.append(rewards.answerer_credit(passed, mask, trivial, p.difficulty))
    return out


def credit_metrics(credits: Sequence[rewards.AnswererCredit]) -> dict[str, float]:
    """Batch means: parse rate, raw and discriminating fractions, strict (all tests) rate,
    trivial share, sandbox failures. Fractions are over parsed, judged completions."""
    n = max(1, len(credits))
    judged = [c for c in credits if c.parsed and c.reward is not None]
    m = max(1, len(judged))
    return {
        "parse_rate": sum(c.parsed for c in credits) / n,
        "pass_rate": sum(c.raw_fraction for c in judged) / m,
        "discriminating_pass_rate": sum(c.discriminating_fraction for c in judged) / m,
        "solved_rate": sum(c.strict for c in credits) / n,
        "trivial_share": sum(c.trivial for c in credits) / n,
        "infra_errors": float(sum(c.parsed and c.reward is None for c in credits)),
    }


def answerer_rewards(
    completions: Sequence[str],
    tests: Sequence[Sequence[str]],
    difficulties: Sequence[str],
    function_names: Sequence[str],
    sandbox: Any,
    weights: Mapping[str, float] | None = None,
    format_bonus: float = 0.0,
    cache: ResultCache | None = None,
    discriminating: Sequence[Sequence[bool]] | None = None,
    trivial_results: Sequence[Sequence[Sequence[bool]]] | None = None,
    mode: str = "honest",
    signatures: Sequence[str] | None = None,
    stated: Sequence[Sequence[int]] | None = None,
    stated_share: float = 0.0,
) -> tuple[list[float | None], dict[str, float]]:
    """Rewards of answerer completions and batch metrics (`credit_metrics`, plus the
    definition rate when `signatures` are given). `mode` honest: the honest credit, plus
    `format_bonus` for parsed code that is not trivial; format_only (the control): 1 when the
    completion defines the asked-for function with its parameters, else 0, whatever the tests
    say (they still run, so the metrics show what the control did to correctness); all_tests
    (the baseline): 1 when the code defining the asked-for function passes every test in
    `tests[i]`, else 0 (`rewards.all_tests_reward`, from the same results as the honest credit;
    no difficulty weight, no format bonus, no trivial-code check). `stated` and
    `stated_share`: the honest credit's stated-case weight (`answerer_credits`)."""
    if mode not in ANSWERER_REWARDS:
        raise ValueError(f"answerer reward mode {mode!r}: use one of {', '.join(ANSWERER_REWARDS)}")
    if mode == "format_only" and signatures is None:
        raise ValueError("the format_only answerer reward needs each problem's signature")
    credits = answerer_credits(
        completions, tests, difficulties, function_names, sandbox, weights, cache,
        discriminating, trivial_results, stated, stated_share,
    )  # fmt: skip
    metrics = credit_metrics(credits)
    defined = None
    if signatures is not None:
        defined = [
            programs.defines_asked_function(text, sig)
            for text, sig in zip(completions, signatures, strict=True)
        ]
        metrics["definition_rate"] = sum(defined) / max(1, len(defined))
    out: list[float | None] = []
    for i, c in enumerate(credits):
        if mode == "format_only":
            out.append(float(defined[i]))  # type: ignore[index]
            continue
        if mode == "all_tests":
            out.append(rewards.all_tests_reward(c))
            continue
        bonus = format_bonus if c.parsed and not c.trivial and c.reward is not None else 0.0
        out.append(None if c.reward is None else round(c.reward + bonus, 6))
    return out, metrics


# --------------------------------------------------------------------------- proposer


def proposer_rewards(
    completions: Sequence[str],
    sandbox: Any,
    solve: Callable[[list[dict[str, Any]]], list[list[str]]],
    target: float = 0.5,
) -> tuple[list[float | None], list[dict[str, Any] | None]]:
    """Goldilocks rewards of proposed problems: 0 when unparseable or when the reference fails
    its own tests; else goldilocks on the frozen solver's pass rate (`solve` samples solutions
    for a list of proposed problems)."""
    proposed = [prompts.extract_problem(text) for text in completions]
    gate_jobs = [(p["reference_solution"], p["baseline_tests"]) for p in proposed if p]
    gate = iter(sandbox.run_many(gate_jobs) if gate_jobs else [])
    valid: list[dict[str, Any] | None] = []
    for p in proposed:
        if not p:
            valid.append(None)
            continue
        report = next(gate)
        ok = bool(p["baseline_tests"]) and report.pass_rate == 1.0
        valid.append(p if ok else None)
    # honest credit: a proposal whose every test some trivial solution passes is no problem at
    # all, and the solver's rate counts only what trivial code cannot earn
    views: dict[int, tuple[list[bool], list[list[bool]]]] = {}
    for i, p in enumerate(valid):
        if p is None:
            continue
        view = _trivial_view(p, sandbox)
        if view is None or not any(view[0]):
            valid[i] = None
        else:
            views[i] = view
    todo = [p for p in valid if p]
    solutions = iter(solve(todo) if todo else [])
    out: list[float | None] = []
    for i, p in enumerate(valid):
        if p is None:
            out.append(0.0)
            continue
        name = prompts_function_name(p["function_signature"])
        codes = [programs.extract_code(s, name) for s in next(solutions)]
        mask, trivial = views[i]
        it = iter(sandbox.run_many([(c, p["baseline_tests"]) for c in codes if c]))
        credits = [
            rewards.answerer_credit(_pass_vector(next(it)) if c else None, mask, trivial).reward
            for c in codes
        ]
        if any(r is None for r in credits):
            out.append(None)
            continue
        out.append(rewards.goldilocks_reward(sum(credits) / len(credits), target))
    return out, valid


def _pass_vector(report: Any) -> list[bool | None]:
    """Per test: passed or not; None everywhere on a sandbox failure (no signal)."""
    if report.infra_error:
        return [None] * len(report.results)
    return [r.passed for r in report.results]


def _trivial_view(
    proposal: dict[str, Any], sandbox: Any
) -> tuple[list[bool], list[list[bool]]] | None:
    """(discriminating mask, trivial pass vectors) of a proposal's tests; None on a sandbox
    failure."""
    from sparring.problems import function_name_of
    from sparring.problems.trivial import argument_count, trivial_family

    signature = proposal["function_signature"]
    family = trivial_family(function_name_of(signature), argument_count(signature))
    tests = proposal["baseline_tests"]
    reports = sandbox.run_many([(code, tests) for code in family.values()])
    if any(r.infra_error for r in reports):
        return None
    vectors = [[r.passed for r in rep.results] for rep in reports]
    mask = [not any(v[k] for v in vectors) for k in range(len(tests))]
    return mask, vectors


def prompts_function_name(signature: str) -> str:
    from sparring.problems import function_name_of

    return function_name_of(signature)


# --------------------------------------------------------------------------- TRL adapters


class AnswererRewardFn:
    """TRL reward function of the answerer: dataset columns `tests`, `difficulty`,
    `function_name` arrive as keyword lists; returns one reward (or None) per completion, the
    one `rewards_cfg.answerer` names (`answerer_rewards`' mode: honest, format_only, all_tests).
    With a `coach` (sparring.problems.coach.Coach), each reward is also counted for its row's
    `family`
    and `level` columns and the families' levels are logged (`coach_level/<family>`) with the
    step's metrics; with a `reserve` too, `reselect` swaps the groups of a family whose level
    moved for rows at its new level (the trainer calls it before sampling a batch). A
    `withheld_tests` column (data.given_tests) is never scored: it only measures false
    positives (`false_positives`), logged with the step's metrics. The `stated_tests` column
    (each row's stated-case test indices) is weighed by `rewards_cfg.stated_case_share`."""

    __name__ = "answerer_reward"

    def __init__(
        self, sandbox: Any, rewards_cfg: Any, coach: Any = None, reserve: Any = None
    ) -> None:
        self.sandbox = sandbox
        self.cfg = rewards_cfg
        self.coach = coach
        self.reserve = reserve
        self.cache = ResultCache()
        self.history: list[dict[str, float]] = []
        self.rewards: list[float | None] = []
        self.by_problem: dict[str, list[float]] = defaultdict(list)  # rollout rewards seen

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        tests: Sequence[Sequence[str]],
        difficulty: Sequence[str],
        function_name: Sequence[str],
        discriminating: Sequence[Sequence[bool]] | None = None,
        trivial_results: Sequence[Sequence[Sequence[bool]]] | None = None,
        problem_id: Sequence[str] | None = None,
        signature: Sequence[str] | None = None,
        stated_tests: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        texts = [completion_text(c) for c in completions]
        out, metrics = answerer_rewards(
            texts,
            tests,
            difficulty,
            function_name,
            self.sandbox,
            dict(self.cfg.difficulty_weights),
            self.cfg.format_bonus,
            self.cache,
            discriminating,
            trivial_results,
            getattr(self.cfg, "answerer", "honest"),
            signature,
            stated_tests,
            getattr(self.cfg, "stated_case_share", 0.0),
        )
        withheld = kwargs.get("withheld_tests")
        if withheld is not None:  # measured beside the reward, never part of it
            metrics.update(
                false_positives(
                    false_positive_flags(
                        texts, tests, withheld, function_name, self.sandbox, self.cache
                    )
                )
            )
        for pid, value in zip(problem_id or [], out, strict=False):
            if value is not None:
                self.by_problem[pid].append(value)
        log_metric = kwargs.get("log_metric")
        if log_metric:
            for k, v in metrics.items():
                log_metric(f"sparring/{k}", v)
        if self.coach is not None and "family" in kwargs:
            self.coach.record_batch(kwargs["family"], out, kwargs.get("level"))
            if log_metric:
                for family, level in self.coach.levels().items():
                    log_metric(f"coach_level/{family}", float(level))
        self.history.append(metrics)
        self.rewards.extend(out)
        return out

    def reselect(self, rows: list[dict], group: int, fits: Any = None) -> list[dict]:
        """`rows` (GRPO groups of `group` copies) with the groups of a family the coach has
        moved off their level swapped for reserve rows at its level (unchanged without a coach
        and a reserve); `fits(row)` says whether a row's prompt may be used."""
        if self.coach is None or self.reserve is None:
            return rows
        return self.reserve.swap(rows, group, self.coach.levels(), fits)

    def prefetch(
        self,
        completions: Sequence[str],
        tests: Sequence[Sequence[str]],
        function_name: Sequence[str],
    ) -> None:
        """Run these completions' tests now, into the cache this reward reads: called while the
        rest of the batch still samples (sparring.backends.scoring_overlap), so the reward call that
        follows finds its results there. Rewards do not change; only when the sandbox runs."""
        codes = [
            programs.extract_code(text, name)
            for text, name in zip(completions, function_name, strict=True)
        ]
        jobs = [(c, list(t)) for c, t in zip(codes, tests, strict=True) if c is not None]
        if jobs:
            run_cached(self.sandbox, jobs, self.cache)


class GeneratorRewardFn:
    """TRL reward function of the test writer: column `problem_id` names the problem.
    `catch_calls`: with the catch reward, each call's {problem: mean catch}
    (sparring.engine.credit.catch_step_metrics reads its first and last)."""

    __name__ = "generator_reward"

    def __init__(self, scorer: GeneratorScorer) -> None:
        self.scorer = scorer
        self.history: list[dict[str, float]] = []
        self.rewards: list[float | None] = []
        self.catch_calls: list[dict[str, float]] = []

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        problem_id: Sequence[str],
        **kwargs: Any,
    ) -> list[float | None]:
        texts = [completion_text(c) for c in completions]
        scores = self.scorer.score(texts, list(problem_id))
        metrics = score_metrics(scores)
        log_metric = kwargs.get("log_metric")
        if log_metric:
            for k, v in metrics.items():
                log_metric(f"sparring/{k}", v)
        self.history.append(metrics)
        if self.scorer.reward == "catch":
            self.catch_calls.append(catch_by_problem(scores))
        out = [s.reward for s in scores]
        self.rewards.extend(out)
        return out


def writer_reward(
    w: Any, sandbox: Any, solutions: dict[str, list[str]], problems: Sequence[Any]
) -> GeneratorRewardFn:
    """The test writer's reward (`rewards:` as `w`): its tests on each of `problems` scored
    against the frozen answers `solutions` of it (sparring.rewards.generator_scoring)."""
    weights = {k: getattr(w, k) for k in ("validity", "hardness", "diversity", "consistency")}
    infos = {p.id: problem_info(p, solutions[p.id]) for p in problems}
    kind = {"reference_expected": w.reference_expected, "reward": w.generator}
    return GeneratorRewardFn(
        GeneratorScorer(infos, sandbox, weights, w.duplicate_similarity, **kind)
    )
