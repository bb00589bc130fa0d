"""The generator measured held out: do the trained generator's tests catch wrong answers to
problems it never trained on, better than the base generator's?

On the held-out new tasks (val.jsonl's `heldout:new_tasks` problems), a fixed pool of answers:
the base answerer's sampled answers, each labelled right (it passes every one of the problem's
own tests: the honest credit's `strict`) or wrong. The base generator (the config's
`models.generator.name`) and the final round's generator each write tests for every problem, by
the generator's prompt and sampling; per generator and problem:
- validity: the share of its distinct tests that the reference solution passes;
- catch rate: the share of the pool's wrong answers that some valid test fails (a problem
  without a wrong answer has none: it is skipped, and counted);
- false alarms: the share of the pool's right answers that some valid test fails.
The catch rate is paired base against final over tasks (`task:<key>` instances together,
`intervals.task_gain`): the `LEARN generator_catch_heldout` line; validity and false alarms are
means over tasks (`LEARN generator_validity`, `LEARN generator_false_alarms`).

Covers: the pure core (`PoolAnswer`, `labelled_pool`, `problem_numbers`, `generator_summary`),
and the thin part that samples and runs: `sample_tests` (the one call into a model: what tests
fake), `measure_generator` (tests parsed, and rewritten to the reference's expected values when
`rewards.reference_expected`, by code_duel.GeneratorScorer as in the generator phase; reference
and pool answers run in the sandbox) and `heldout_generators` (both generators, the summary).
A sandbox failure is no signal: a test the reference could not run is not judged, an answer a
test could not run on is not failed by it.
Does not cover: sampling the pool (sparring.evaluation.snapshots keeps the base model's sampled
held-out answers), when the evaluate phase measures (sparring.phases.evaluate), or the LEARN
lines (sparring.evaluation.learning).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from sparring import progress
from sparring.backends.budget import completion_tokens
from sparring.backends.sampler import load_answerer
from sparring.evaluation.intervals import task_gain
from sparring.problems.prompts import generator_messages
from sparring.rewards import code_duel
from sparring.sandbox import Sandbox
from sparring.sandbox.limits import untrusted_limits

HELDOUT_SET = "new_tasks"  # the held-out set measured: fresh tasks of the trained families
SEED_OFFSET = 2  # the generators sample with cfg.seed + 2 (the answers: + 1), base and final alike


class PoolAnswer(NamedTuple):
    """One sampled answer of the pool: its code and whether the problem's own tests all pass."""

    code: str
    right: bool


@dataclass(frozen=True)
class GeneratorOnProblem:
    """One generator's tests on one problem, counted against the problem's pool."""

    tests: int  # distinct tests written
    judged: int  # of those, the ones the reference solution ran on
    valid: int  # of those, the ones it passed
    wrong: int  # wrong answers in the pool
    caught: int  # of them, failed by at least one valid test
    right: int  # right answers in the pool
    false_alarms: int  # of them, failed by at least one valid test

    @property
    def validity(self) -> float | None:
        return self.valid / self.judged if self.judged else None

    @property
    def catch_rate(self) -> float | None:
        return self.caught / self.wrong if self.wrong else None

    @property
    def false_alarm_rate(self) -> float | None:
        return self.false_alarms / self.right if self.right else None


def labelled_pool(
    problems: Sequence[Any], texts: Sequence[str], credits: Sequence[Any]
) -> dict[str, list[PoolAnswer]]:
    """{problem id: pool answers} from sampled answers (`texts[i]` to `problems[i]`) and their
    honest credits (code_duel.score_answers): an answer that did not parse, or whose tests the
    sandbox could not run, is left out (no test can tell anything about it)."""
    out: dict[str, list[PoolAnswer]] = {}
    for p, text, credit in zip(problems, texts, credits, strict=True):
        code = code_duel.answer_code(p, text)
        if code is None or credit.reward is None:
            continue
        out.setdefault(p.id, []).append(PoolAnswer(code, bool(credit.strict)))
    return out


def problem_numbers(
    reference_passed: Sequence[bool | None],
    pool_right: Sequence[bool],
    answer_passed: Sequence[Sequence[bool | None]],
) -> GeneratorOnProblem:
    """Pure: one generator's numbers on one problem. `reference_passed[i]`: test i on the
    reference solution (None: not run); `pool_right[a]`: whether pool answer a is right;
    `answer_passed[a][i]`: test i on pool answer a (None: not run). Only a valid test (one the
    reference passes) can catch an answer.

    >>> n = problem_numbers([True, False], [False, True], [[False, True], [True, False]])
    >>> n.validity, n.catch_rate, n.false_alarm_rate
    (0.5, 1.0, 0.0)
    """
    if len(answer_passed) != len(pool_right):
        raise ValueError(f"{len(answer_passed)} answers' results for {len(pool_right)} answers")
    valid = [i for i, ok in enumerate(reference_passed) if ok is True]
    failed = [any(row[i] is False for i in valid) for row in answer_passed]
    wrong = [f for f, right in zip(failed, pool_right, strict=True) if not right]
    right = [f for f, r in zip(failed, pool_right, strict=True) if r]
    return GeneratorOnProblem(
        tests=len(reference_passed),
        judged=sum(ok is not None for ok in reference_passed),
        valid=len(valid),
        wrong=len(wrong),
        caught=sum(wrong),
        right=len(right),
        false_alarms=sum(right),
    )


def _task_mean(values: Mapping[str, float | None], tasks: Mapping[str, str]) -> float | None:
    """The mean over tasks of the mean over each task's instances, of the values not None."""
    per_task: dict[str, list[float]] = {}
    for pid, value in values.items():
        if value is not None:
            per_task.setdefault(tasks.get(pid, pid), []).append(value)
    if not per_task:
        return None
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)


def generator_summary(
    base: Mapping[str, GeneratorOnProblem],
    final: Mapping[str, GeneratorOnProblem],
    tasks: Mapping[str, str] | None = None,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """Pure: the base and final generators' numbers ({problem id: GeneratorOnProblem} each)
    summed up over the problems both were measured on. `generator_catch_heldout`: the catch
    rate paired over tasks (`intervals.task_gain`: before = base, after = final, n = tasks) over
    the problems with a wrong answer in the pool, and `skipped`, the problems without one;
    `generator_validity` and `generator_false_alarms`: {base, final}, means over tasks (None
    where a side has no value).

    >>> one = GeneratorOnProblem(2, 2, 1, 1, 0, 1, 0)
    >>> s = generator_summary({"a": one}, {"a": GeneratorOnProblem(2, 2, 2, 1, 1, 1, 0)})
    >>> s["generator_catch_heldout"]["before"], s["generator_catch_heldout"]["after"]
    (0.0, 1.0)
    >>> s["generator_validity"]
    {'base': 0.5, 'final': 1.0}
    """
    tasks = tasks or {}
    ids = sorted(set(base) & set(final))
    pairs = {
        pid: [base[pid].catch_rate, final[pid].catch_rate]
        for pid in ids
        if base[pid].wrong  # one pool: the same wrong answers for both generators
    }
    catch = dict(task_gain([pairs], tasks, seed=seed))
    catch["skipped"] = float(len(ids) - len(pairs))

    def means(measure: str) -> dict[str, float | None]:
        return {
            side: _task_mean({pid: getattr(numbers[pid], measure) for pid in ids}, tasks)
            for side, numbers in (("base", base), ("final", final))
        }

    return {
        "generator_catch_heldout": catch,
        "generator_validity": means("validity"),
        "generator_false_alarms": means("false_alarm_rate"),
    }


# --------------------------------------------------------------------------- with the models


def sample_tests(
    cfg: Any, model_name: str, problems: Sequence[Any], samples: int, seed: int
) -> list[list[str]]:
    """`samples` completions per problem (`[i]`: problems[i]'s) of the generator `model_name`
    (a name or a model artifact), through the generator's prompt (prompts.generator_messages)
    and budget, at the training temperature and top_p: as the generator phase samples."""
    loaded = load_answerer(
        model_name, device=cfg.model_for("generator").device, rows=cfg.grpo.rollout_batch_size
    )
    return loaded.sample(
        [
            generator_messages(p, cfg.steps.generator_tests, cfg.steps.generator_stated_cases)
            for p in problems
        ],
        max_new_tokens=completion_tokens(cfg, loaded.tokenizer, list(problems), "generator"),
        temperature=cfg.grpo.temperature,
        top_p=cfg.grpo.top_p,
        num_samples=samples,
        seed=seed,
    ).texts


def measure_generator(
    texts: Sequence[Sequence[str]],
    problems: Sequence[Any],
    pool: Mapping[str, Sequence[PoolAnswer]],
    scorer: code_duel.GeneratorScorer,
    sandbox: Any,
) -> dict[str, GeneratorOnProblem]:
    """{problem id: numbers} of one generator's completions (`texts[i]`: problems[i]'s): the
    tests parsed by `scorer` (the generator reward's parsing), each problem's distinct tests
    run on its reference solution and on every pool answer (through the scorer's result
    cache: a pair already run is not run again). A test calling the function outside its
    declared parameters counts invalid, as in the generator's reward."""
    flat = [(p.id, text) for p, outs in zip(problems, texts, strict=True) for text in outs]
    scores = scorer.score([text for _, text in flat], [pid for pid, _ in flat])
    written: dict[str, list[str]] = {p.id: [] for p in problems}
    for (pid, _), score in zip(flat, scores, strict=True):
        written[pid].extend(t for t in score.tests if t not in written[pid])
    jobs: list[tuple[str, list[str]]] = []
    for p in problems:
        if written[p.id]:
            jobs.append((p.reference_solution, written[p.id]))
            jobs.extend((a.code, written[p.id]) for a in pool.get(p.id, []))
    results = iter(code_duel.run_cached(sandbox, jobs, scorer.cache) if jobs else [])
    out = {}
    for p in problems:
        answers = pool.get(p.id, [])
        if written[p.id]:
            reference = code_duel.reference_in_domain(
                next(results), written[p.id], p.function_name, p.function_signature
            )
            rows = [next(results) for _ in answers]
        else:  # no test: nothing valid, nothing caught
            reference, rows = [], [[] for _ in answers]
        out[p.id] = problem_numbers(reference, [a.right for a in answers], rows)
    return out


def heldout_generators(
    cfg: Any,
    problems: Sequence[Any],
    pool: Mapping[str, Sequence[PoolAnswer]],
    models: Mapping[str, str],
    tasks: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The generator held-out measures of `models` ({"base": name, "final": artifact}) on
    `problems` against `pool`: `generator_summary`'s groups, and `generator_heldout` (the
    models and, per side, per problem, the numbers) for the report."""
    seed = cfg.seed + SEED_OFFSET
    samples = cfg.data.generator_samples
    # both models sample before the sandbox starts: one model in memory at a time
    texts = {}
    for side, name in models.items():
        # a line per side: each is minutes of sampling that says nothing else
        progress.say(
            f"generators held out: the {side} generator writes tests for {len(problems)} "
            f"problems x {samples}"
        )
        texts[side] = sample_tests(cfg, name, problems, samples, seed)
    infos = {  # no frozen or trivial solutions: only the reference judges a test here
        p.id: code_duel.ProblemInfo(
            p.id,
            p.function_name,
            p.reference_solution,
            list(p.baseline_tests),
            [],
            function_signature=p.function_signature,
        )
        for p in problems
    }
    with Sandbox(untrusted_limits(cfg)) as sb:  # model-written tests, as the generator phase
        scorer = code_duel.GeneratorScorer(
            infos, sb, reference_expected=cfg.rewards.reference_expected
        )
        numbers = {
            side: measure_generator(texts[side], problems, pool, scorer, sb) for side in models
        }
    summary: dict[str, Any] = generator_summary(numbers["base"], numbers["final"], tasks, cfg.seed)
    summary["generator_heldout"] = {
        "models": dict(models),
        **{
            side: {
                pid: {**asdict(n), "validity": n.validity, "catch_rate": n.catch_rate,
                      "false_alarm_rate": n.false_alarm_rate}
                for pid, n in per.items()
            }
            for side, per in numbers.items()
        },
    }  # fmt: skip
    return summary
