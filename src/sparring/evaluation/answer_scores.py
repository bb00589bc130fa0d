"""Scoring one model's answers: what a snapshot's measures are made of.

Covers: HumanEval on one answer per eval problem (`humaneval_result`), the banked problems' and
the val problems' tests run as one batch (`run_answer_tests`), the credit of a val answer from
its tests' report (`report_credit`), a snapshot's measures from them (`answer_metrics`: HumanEval
pass@1, bank pass and strict rates, answerer reward, the val shares, trivial and special-case
shares) and the means over a problem's sampled answers (`sampled_means`).
Does not cover: generating the answers, or which problems a model answers and when
(sparring.evaluation.snapshots); the reward's arithmetic (sparring.rewards); the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sparring import progress, rewards
from sparring.evaluation.humaneval import evaluate_humaneval_samples, run_jobs
from sparring.problems.programs import defines_asked_function, humaneval_tests

if TYPE_CHECKING:
    from sparring.problems import Problem


def humaneval_result(
    eval_problems: Sequence[Problem],
    answers: Sequence[str],
    limits: Any,
    countdown: progress.Countdown,
    name: str,
) -> dict[str, Any]:
    """HumanEval's result of one answer per eval problem ({} without eval problems), said on
    `countdown`."""
    he_samples = [
        {"task_id": p.id, "completion": c} for p, c in zip(eval_problems, answers, strict=True)
    ]
    he = evaluate_humaneval_samples(he_samples, eval_problems, limits) if he_samples else {}
    if he_samples:
        score = he.get("pass@1", 0.0)
        countdown.done(f"{name}: HumanEval pass@1={score:.3g} ({len(he_samples)} tasks)")
    return he


def run_answer_tests(
    codes: Mapping[str, str],
    bank: Mapping[str, list[str]],
    val_problems: Sequence[Problem],
    limits: Any,
    countdown: progress.Countdown,
    name: str,
) -> tuple[list[Any], list[Any]]:
    """(reports of each banked problem's code on its banked tests, in problem id order; reports
    of each val problem's code on its baseline then banked tests), run as one batch."""
    bank_items = [(pid, ts) for pid, ts in sorted(bank.items()) if pid in codes]
    bank_jobs = [(codes[pid], ts) for pid, ts in bank_items]
    val_jobs = [(codes[p.id], [*p.baseline_tests, *bank.get(p.id, [])]) for p in val_problems]
    reports = run_jobs(bank_jobs + val_jobs, limits)
    countdown.done(
        f"{name}: held-out {len(val_jobs)} problems, bank {len(bank_jobs)} problems "
        f"({sum(len(ts) for _, ts in bank_jobs)} tests) run"
    )
    return reports[: len(bank_jobs)], reports[len(bank_jobs) :]


def answer_metrics(
    model_name: str,
    he: Mapping[str, Any],
    bank_reports: Sequence[Any],
    credits: Sequence[Any],
    special: float,
) -> dict[str, Any]:
    """A snapshot's measures (sparring.evaluation.snapshots.model_metrics) from HumanEval's
    result, the banked tests' reports, the val problems' credits and the special-case share."""
    passed = sum(rep.passed for rep in bank_reports)
    total = sum(rep.total for rep in bank_reports)
    judged = [c for c in credits if c.reward is not None]
    n = len(judged)
    return {
        "model": model_name,
        "humaneval_pass@1": he.get("pass@1"),
        "bank_pass_rate": passed / total if total else None,
        "bank_strict_rate": (
            sum(r.passed == r.total > 0 for r in bank_reports) / len(bank_reports)
            if bank_reports
            else None
        ),
        "answerer_reward": rewards.mean_or_none([c.reward for c in credits]),
        "val_raw_fraction": sum(c.raw_fraction for c in judged) / n if n else None,
        "val_discriminating_fraction": (
            sum(c.discriminating_fraction for c in judged) / n if n else None
        ),
        "val_strict_pass_at_1": sum(c.strict for c in judged) / n if n else None,
        "trivial_share": sum(c.trivial for c in credits) / len(credits) if credits else None,
        "special_case_share": special,
    }


def report_credit(problem: Problem, code: str, report: Any, n_banked: int, cfg: Any = None):
    """`rewards.AnswererCredit` of `code` from its RunReport on the problem's baseline tests
    followed by `n_banked` banked tests ('' code = did not parse)."""
    n_tests = len(humaneval_tests(problem)) if problem.entry_point else len(problem.baseline_tests)
    mask, trivial = rewards.credit_view(n_tests, problem.trivial_passes, n_banked)
    weights = cfg.rewards.difficulty_weights if cfg is not None else None
    if not code:
        return rewards.answerer_credit(None, mask, trivial, problem.difficulty, weights)
    if report.infra_error is not None or len(report.results) != len(mask):
        passed: list[bool | None] = [None] * len(mask)
    else:
        passed = [r.passed for r in report.results]
    return rewards.answerer_credit(passed, mask, trivial, problem.difficulty, weights)


def sampled_means(
    problems: Sequence[Problem], texts: Sequence[str], credits: Sequence[Any]
) -> dict[str, dict[str, float]]:
    """Per measure, per problem, the mean over its sampled answers (`problems[i]` answered by
    `texts[i]`, scored `credits[i]`, a rewards.AnswererCredit): discriminating, strict, raw;
    `defines` (the share defining the asked-for function with its parameters: what the
    format-only control pays); `defining` (discriminating over the answers that define it:
    what a clean `def` does not explain; absent where none does); `pass_at_n` (some answer
    passes every test). An answer the sandbox could not judge counts only in `defines`. Pure."""
    out: dict[str, dict[str, list[float]]] = {
        "discriminating": {}, "strict": {}, "raw": {}, "defines": {}, "defining": {},
    }  # fmt: skip
    for p, c, text in zip(problems, credits, texts, strict=True):
        defines = None
        if p.function_signature and not p.entry_point:  # what the format-only control pays
            defines = defines_asked_function(text, p.function_signature)
            out["defines"].setdefault(p.id, []).append(float(defines))
        if c.reward is None:
            continue  # sandbox failure: no signal
        if defines:  # what a clean `def` does not explain: correctness among defining answers
            out["defining"].setdefault(p.id, []).append(c.discriminating_fraction)
        out["discriminating"].setdefault(p.id, []).append(c.discriminating_fraction)
        out["strict"].setdefault(p.id, []).append(float(c.strict))
        out["raw"].setdefault(p.id, []).append(c.raw_fraction)
    means = {m: {pid: sum(v) / len(v) for pid, v in per.items()} for m, per in out.items()}
    # pass@n: some sample passes every test (the ceiling that sharpening the policy can reach)
    means["pass_at_n"] = {pid: max(v) for pid, v in out["strict"].items()}
    return means
