"""Evaluating a run's answerer snapshots: the body of the evaluate phase.

Covers: `evaluate_snapshots` (per model: HumanEval pass@1, bank pass rate, held-out answerer
reward and its honest measures, greedy and sampled, the base model's through the completion
cache; the cross-play matrix and Elo; hacking signals per snapshot; the choice of the best
(sparring.evaluation.selection); report.json and the Markdown report; on request, the base
model's sampled held-out answers, labelled: the pool the generators' held-out tests are judged
on), `model_metrics` (one model's answers, greedy and sampled, and their measures) and
`sampled_scores` (one model's held-out draw, any seed).
Does not cover: the measures' parts (answer_scores, humaneval, crossplay, hacking, rounds,
selection modules beside this one) or the labelled warm-start snapshot and the MLflow side
(sparring.phases.evaluate).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring import progress
from sparring.backends.budget import answer_target, completion_tokens
from sparring.backends.sampler import load_answerer, sample_answers
from sparring.evaluation import completion_cache
from sparring.evaluation import report as report_mod
from sparring.evaluation.answer_scores import (
    answer_metrics,
    humaneval_result,
    report_credit,
    run_answer_tests,
    sampled_means,
)
from sparring.evaluation.crossplay import cross_play, elo_ratings, solution_code, win_rates
from sparring.evaluation.generator_heldout import labelled_pool
from sparring.evaluation.hacking import hacking_signals, special_case_share
from sparring.evaluation.run_inputs import (
    Round,
    base_and_snapshots,
    problem_sets,
    problems_to_solve,
    read_rounds,
)
from sparring.evaluation.selection import choose_best
from sparring.problems.prompts import answerer_messages
from sparring.rewards import code_duel
from sparring.rewards.bank import BANK_FILE, read_bank, tests_by_problem
from sparring.sandbox import Sandbox
from sparring.sandbox.limits import trusted_limits, untrusted_limits

if TYPE_CHECKING:
    from sparring.problems import Problem

log = logging.getLogger(__name__)


def _training_metrics(model_name: str) -> dict[str, Any]:
    """Training metrics recorded in a model artifact's sparring_model.json (`metrics`, or
    top-level `flat_group_share`); {} for anything else."""
    try:
        data = json.loads((Path(model_name) / "sparring_model.json").read_text())
    except (json.JSONDecodeError, OSError):  # no such file, or not JSON
        return {}
    data = data if isinstance(data, dict) else {}
    out = dict(data["metrics"]) if isinstance(data.get("metrics"), dict) else {}
    if data.get("flat_group_share") is not None:
        out.setdefault("flat_group_share", data["flat_group_share"])
    return out


def model_metrics(
    cfg: Any,
    model_name: str,
    eval_problems: Sequence[Problem],
    val_problems: Sequence[Problem],
    solve: Mapping[str, Problem],
    bank: Mapping[str, list[str]],
    limits: Any,
    sampled: bool = True,
    countdown: progress.Countdown | None = None,
    name: str = "",
    cache: bool = False,
    pool: dict[str, list[Any]] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """HumanEval pass@1, bank pass rate, answerer reward and special-case share of one model,
    and its code per problem (one greedy completion each). With `sampled` and
    `data.val_samples` > 0, also `val_sampled`: per measure (discriminating, strict, raw), per
    val problem, the mean over that many completions sampled at the training temperature.
    A progress line per part (answers, HumanEval, held-out + bank), on `countdown` (counted in
    answers generated: `answer_units`) or on one of its own, each line naming `name`. With
    `cache` (the config's base model: the same in every run), its answers to the HumanEval and
    held-out problems come from, or go to, the completion cache. Given a `pool` (a dict), its
    sampled held-out answers are kept there, labelled (generator_heldout.labelled_pool)."""
    name = name or Path(model_name).name
    cache_model = completion_cache.identity_if_enabled(model_name) if cache else None
    if countdown is None:
        units = answer_units(cfg, eval_problems, val_problems, solve, sampled)
        countdown = progress.Countdown(units)
    samples = cfg.data.val_samples if sampled else 0
    first, val_sampled = _answers(
        cfg, model_name, eval_problems, val_problems, solve, samples, limits, countdown, name,
        cache_model, pool,
    )  # fmt: skip
    he = humaneval_result(eval_problems, first[: len(eval_problems)], limits, countdown, name)
    codes = {
        pid: solution_code(solve[pid], c)
        for pid, c in zip(solve, first[len(eval_problems) :], strict=True)
    }
    bank_reports, val_reports = run_answer_tests(codes, bank, val_problems, limits, countdown, name)
    credits = [
        report_credit(p, codes[p.id], rep, len(bank.get(p.id, [])), cfg)
        for p, rep in zip(val_problems, val_reports, strict=True)
    ]
    special = special_case_share(
        [(codes[pid], ts, solve[pid].function_name) for pid, ts in bank.items() if codes.get(pid)]
    )
    metrics = answer_metrics(model_name, he, bank_reports, credits, special)
    if val_sampled is not None:
        metrics["val_sampled"] = val_sampled
        for measure, per in val_sampled.items():
            metrics[f"val_sampled_{measure}"] = sum(per.values()) / len(per) if per else None
    return metrics, codes


def _load(cfg: Any, model_name: str) -> Any:
    """The answerer `model_name` loaded for sampling, on the answerer's device, the rollout
    batch's rows at a time."""
    device, rows = cfg.model_for("answerer").device, cfg.grpo.rollout_batch_size
    return load_answerer(model_name, device=device, rows=rows)


def _stages(cfg: Any) -> tuple[str, ...]:
    """The stages an answer is asked for: the code alone, or the config's reasoning stages."""
    return ("code",) if cfg.reasoning.direct else tuple(cfg.reasoning.stages)


def _answers(
    cfg: Any,
    model_name: str,
    eval_problems: Sequence[Problem],
    val_problems: Sequence[Problem],
    solve: Mapping[str, Problem],
    samples: int,
    limits: Any,
    countdown: progress.Countdown,
    name: str,
    cache_model: str | None,
    pool: dict[str, list[Any]] | None,
) -> tuple[list[str], dict[str, dict[str, float]] | None]:
    """(one greedy answer per problem, '' where none: the eval problems, then `solve`'s; the
    `samples` sampled answers' measures per val problem, None without samples), with the
    model loaded once for both and let go before any test runs."""
    loaded = _load(cfg, model_name)
    stages = _stages(cfg)
    # Two calls: the problems every run of a config shares (cacheable), then the training
    # problems this run's bank attacked (its own); solve lists the val problems first.
    val_ids = {p.id for p in val_problems}
    shared = [*eval_problems, *(p for pid, p in solve.items() if pid in val_ids)]
    own = [p for pid, p in solve.items() if pid not in val_ids]
    completions: list[list[str]] = []
    for part, cached, what in (
        (shared, cache_model, "greedy answers"),
        (own, None, "greedy answers to attacked training problems"),
    ):
        if part:
            completions += _generate_sized(
                cfg, model_name, part, loaded, seed=cfg.seed, stages=stages,
                countdown=countdown, what=f"{name}: {what}", cache_model=cached,
            )  # fmt: skip
    val_sampled = None
    if samples and val_problems:
        val_sampled = _sampled_measures(
            cfg, model_name, val_problems, samples, loaded, limits, countdown, name, cache_model,
            pool,
        )  # fmt: skip
    del loaded
    return [c[0] if c else "" for c in completions], val_sampled


SIZED_CHUNK = 8  # problems per budget: the torch sampler's batch


def answer_units(
    cfg: Any,
    eval_problems: Sequence[Problem],
    val_problems: Sequence[Problem],
    solve: Mapping[str, Any],
    sampled: bool = True,
) -> int:
    """Answers one model_metrics call generates (the unit of its progress lines' time left:
    generation is most of an evaluation's time)."""
    greedy = len(eval_problems) + len(solve)
    return greedy + (cfg.data.val_samples * len(val_problems) if sampled else 0)


def _generate_sized(
    cfg: Any,
    model_name: str,
    problems: Sequence[Problem],
    loaded: Any,
    countdown: progress.Countdown | None = None,
    what: str = "answers",
    cache_model: str | None = None,
    **kwargs: Any,
) -> list[list[str]]:
    """`sample_answers` with the training completion budget (grpo.max_completion_length;
    0 = sized from reference solutions, as each training phase sizes its own), so evaluation
    sees answers as long as training allowed. Sized per chunk of `SIZED_CHUNK` problems of
    similar answer length, not over the whole set: a short problem does not inherit the longest
    one's budget, and a model that never stops (the base model, often) costs tokens in
    proportion to what it was asked. With `cache_model` (a `completion_cache.model_identity`),
    each sampling call is looked up in, or stored to, the completion cache."""
    problems = list(problems)
    per = kwargs.get("num_samples", 1)

    def sample(chunk: list[Problem], n: int) -> list[list[str]]:
        def fresh() -> list[list[str]]:
            return sample_answers(loaded, chunk, max_new_tokens=n, **kwargs).texts

        if not cache_model:
            return fresh()
        settings = {"max_new_tokens": n, "rows": getattr(loaded, "rows", None),
                    **completion_cache.loaded_on(loaded), **kwargs}  # fmt: skip
        messages = [answerer_messages(p, settings.pop("stages", ("code",))) for p in chunk]
        note = f"{model_name}: {what}"
        return completion_cache.through_cache(cache_model, messages, settings, per, fresh, note)

    def say(done: int) -> None:
        if countdown is not None:
            countdown.done(f"{what} {done}/{len(problems)} problems", units=per * chunk_size)

    if cfg.grpo.max_completion_length or not problems:
        n = cfg.grpo.max_completion_length
        out = sample(problems, n)
        chunk_size = len(problems)
        if problems:
            say(len(problems))
        return out
    order = sorted(range(len(problems)), key=lambda i: len(answer_target(problems[i])))
    out: list[list[str]] = [[] for _ in problems]
    for start in range(0, len(order), SIZED_CHUNK):
        index = order[start : start + SIZED_CHUNK]
        chunk = [problems[i] for i in index]
        budget = completion_tokens(cfg, loaded.tokenizer, chunk)
        texts = sample(chunk, budget)
        for i, completions in zip(index, texts, strict=True):
            out[i] = completions
        chunk_size = len(index)
        say(start + len(index))  # a line per chunk: evaluation is never silent for long
    return out


def _sampled_measures(
    cfg: Any,
    model_name: str,
    problems: Sequence[Problem],
    samples: int,
    loaded: Any,
    limits: Any,
    countdown: progress.Countdown | None = None,
    name: str = "",
    cache_model: str | None = None,
    pool: dict[str, list[Any]] | None = None,
    seed: int | None = None,
) -> dict[str, dict[str, float]]:
    """Per measure, per problem: the mean over `samples` sampled completions (`sampled_means`),
    drawn with `seed` (else cfg.seed + 1). Given a `pool`, the answers go there too, labelled
    (generator_heldout.labelled_pool): what the generators' held-out tests are judged on."""
    completions = _generate_sized(
        cfg,
        model_name,
        problems,
        loaded,
        num_samples=samples,
        temperature=cfg.grpo.temperature,
        top_p=cfg.grpo.top_p,
        seed=cfg.seed + 1 if seed is None else seed,
        stages=_stages(cfg),
        countdown=countdown,
        what=f"{name}: sampled held-out answers",
        cache_model=cache_model,
    )
    flat_problems = [p for p, outs in zip(problems, completions, strict=True) for _ in outs]
    flat_texts = [c for outs in completions for c in outs]
    with Sandbox(limits) as sb:
        credits = code_duel.score_answers(flat_problems, flat_texts, sb)
    if pool is not None:
        pool.update(labelled_pool(flat_problems, flat_texts, credits))
    return sampled_means(flat_problems, flat_texts, credits)


def sampled_scores(
    cfg: Any, model_name: str, problems: Sequence[Problem], name: str, cache: bool = False,
    seed: int | None = None,
) -> dict:  # fmt: skip
    """`val_sampled` of one model on `problems` alone, drawn as `model_metrics` draws (or with
    another `seed`); with `cache`, through the completion cache (none drawn after a cached call)."""
    cached = completion_cache.identity_if_enabled(model_name) if cache else None
    loaded = _load(cfg, model_name)
    args = (problems, cfg.data.val_samples, loaded, trusted_limits(cfg), None, name, cached)
    return _sampled_measures(cfg, model_name, *args, seed=seed)


def evaluate_snapshots(
    cfg: Any,
    data_dir: str,
    answerer_models: list[str],
    round_tests: list[str],
    bank_path: str,
    out_dir: str,
    base_pool: dict[str, list[Any]] | None = None,
) -> dict:
    """Evaluate the answerer snapshots of a run; write out_dir/report.json, PNGs and report.md.
    Given `base_pool` (a dict), the base model's sampled held-out answers are kept there,
    labelled (`model_metrics`'s `pool`), out of the report.

    Inputs: `round_tests[j]` is round j's tests file, either validated rows (bank format, an
    optional sidecar FILE.metrics.json with `validity`, `duplicate_rate`, `flat_group_share`) or
    the generator's raw output ({"problem_id", "tests": [...]}), which is validated here against
    the reference solutions. Without files, the bank's rows grouped by `round` are the rounds.
    `answerer_models[i]` is the answerer after round i + 1, or, when there is one more model
    than rounds, the first is the base model (round 0); otherwise the base model of the config
    (`models.answerer.name`) is evaluated as the baseline ("before"). `report["snapshots"]` lists
    the non-base models, in the order given (the index choose_best returns).

    Per model, one greedy completion per problem (HumanEval eval set capped by
    data.humaneval_limit, val.jsonl, and the train/val problems the bank and rounds attack):
    HumanEval pass@1, pass rate on the bank, the mean difficulty-aware answerer reward on val
    problems (baseline + banked tests), the special-case share on banked problems, and a row of
    the cross-play matrix (columns: each round's valid tests). A snapshot of round r takes round
    r's test validity and duplicate rate, and its hacking signals are judged on rounds 1..r.
    """
    data, out = Path(data_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    eval_problems, val_problems, known = problem_sets(data, cfg.data.humaneval_limit)
    limits = trusted_limits(cfg)
    bank_rows = read_bank(bank_path or data / BANK_FILE)
    bank = tests_by_problem(bank_rows)
    rounds = read_rounds(
        round_tests, bank_rows, known, untrusted_limits(cfg), cfg.rewards.reference_expected,
        cfg.rewards.duplicate_similarity,
    )  # fmt: skip
    summaries = [{"round": n, **summary} for n, _, summary in rounds]
    base_name, models = base_and_snapshots(
        answerer_models, len(rounds), cfg.model_for("answerer").name
    )
    solve = problems_to_solve(val_problems, known, bank, rounds)
    countdown = _countdown(cfg, eval_problems, val_problems, solve, len(models))
    measure = functools.partial(
        model_metrics, cfg, eval_problems=eval_problems, val_problems=val_problems, solve=solve,
        bank=bank, limits=limits, countdown=countdown,
    )  # fmt: skip
    baseline, snapshots, all_codes = _evaluate_models(
        measure, base_name, models, rounds, summaries, cfg.selection, base_pool, countdown
    )
    report = _cross_play_report(
        baseline, snapshots, rounds, summaries, all_codes, limits, countdown
    )
    best, score, reason = choose_best(cfg, report)
    report["selection"] = {"index": best, "score": score, "reason": reason}
    report_mod.write_json(report, out)
    report_mod.write_report(report, out)
    return report


def _countdown(
    cfg: Any,
    eval_problems: Sequence[Problem],
    val_problems: Sequence[Problem],
    solve: Mapping[str, Problem],
    n_snapshots: int,
) -> progress.Countdown:
    """The evaluation's progress, counted in answers to generate (most of the time); the base
    and the final snapshot sample too."""
    units = sum(
        answer_units(cfg, eval_problems, val_problems, solve, sampled=i in (0, n_snapshots))
        for i in range(1 + n_snapshots)
    )
    return progress.Countdown(units, progress.LABEL or "evaluate")


def _evaluate_models(
    measure: Callable[..., tuple[dict[str, Any], dict[str, str]]],
    base_name: str,
    models: Sequence[str],
    rounds: Sequence[Round],
    summaries: Sequence[dict[str, Any]],
    gate: Any,
    base_pool: dict[str, list[Any]] | None,
    countdown: progress.Countdown,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, str]]]:
    """(the base model's metrics, each snapshot's with its round and hacking gate, every model's
    code per problem, base first): `measure` (model_metrics with the run's problems) of the
    base model, then of each snapshot in order, a progress line after each."""
    total = 1 + len(models)
    log.info("evaluating the base model %s", base_name)
    baseline, base_codes = measure(base_name, name="base", cache=True, pool=base_pool)
    _announce(countdown, 1, total, "base", baseline)
    baseline.update(round=0, base=True)
    snapshots, all_codes = [], [base_codes]
    for i, model_name in enumerate(models):
        log.info("evaluating snapshot %d: %s", i, model_name)
        metrics, codes = measure(
            model_name,
            sampled=i == len(models) - 1,  # base and final: the learning measures
            name=f"snapshot {i + 1}",
            cache=i == len(models) - 1,  # the next scheduled run may start from it
        )
        all_codes.append(codes)
        _announce(countdown, i + 2, total, f"snapshot {i + 1}", metrics)
        metrics.update(
            _standing(i, model_name, metrics, baseline["trivial_share"], rounds, summaries, gate)
        )
        snapshots.append(metrics)
    return baseline, snapshots, all_codes


def _announce(
    countdown: progress.Countdown, done: int, total: int, label: str, metrics: Mapping[str, Any]
) -> None:
    """`snapshot DONE/TOTAL LABEL done:` and the model's headline measures."""
    shown = " ".join(
        f"{k}={metrics[k]:.3g}"
        for k in ("humaneval_pass@1", "val_discriminating_fraction", "bank_pass_rate")
        if isinstance(metrics.get(k), (int, float))
    )
    countdown.done(f"snapshot {done}/{total} {label} done: {shown}")


def _standing(
    i: int,
    model_name: str,
    metrics: Mapping[str, Any],
    base_trivial_share: float | None,
    rounds: Sequence[Round],
    summaries: Sequence[dict[str, Any]],
    gate: Any,
) -> dict[str, Any]:
    """Snapshot `i`'s round, its round's test validity and duplicate rate, its hacking signals
    (judged on rounds 1..its own, the base model's trivial share first: the gate's reference)
    and whether it may be promoted."""
    k = min(i, len(rounds) - 1)
    number = rounds[i][0] if i < len(rounds) else i + 1
    history = [dict(s) for s in summaries[: k + 1]] if rounds else [{}]
    history[-1]["special_case_share"] = metrics["special_case_share"]
    history[-1]["trivial_share"] = metrics["trivial_share"]
    history.insert(0, {"trivial_share": base_trivial_share})  # the gate's reference
    flat = _training_metrics(model_name).get("flat_group_share")
    if flat is not None:  # the snapshot's own GRPO groups win over the round's sidecar
        history[-1]["flat_group_share"] = flat
    hacking = hacking_signals(history, gate)
    summary = summaries[k] if rounds else {}
    return {
        "round": number,
        "test_validity": summary.get("test_validity"),
        "duplicate_rate": summary.get("duplicate_rate"),
        "hacking": hacking,
        "promotable": not hacking["tripped"] and metrics["answerer_reward"] is not None,
    }


def _cross_play_report(
    baseline: dict[str, Any],
    snapshots: list[dict[str, Any]],
    rounds: Sequence[Round],
    summaries: list[dict[str, Any]],
    all_codes: list[dict[str, str]],
    limits: Any,
    countdown: progress.Countdown,
) -> dict[str, Any]:
    """The report before the selection: the models' metrics, the rounds, and the cross-play of
    every model's code against each round's valid tests with its win rates and Elo ratings."""
    columns = [tests for _, tests, _ in rounds]
    matrix = cross_play(all_codes, columns, limits) if columns else []
    if columns:
        countdown.done(f"cross-play {len(all_codes)} answerers x {len(columns)} rounds' tests run")
    answerer_elo, generator_elo = elo_ratings(matrix) if matrix else ([], [])
    return {
        "baseline": baseline,
        "snapshots": snapshots,
        "rounds": summaries,
        "cross_play": win_rates(matrix),
        "cross_play_games": [[len(cell) for cell in row] for row in matrix],
        "cross_play_rows": ["base"] + [f"round {s['round']}" for s in snapshots],
        "cross_play_columns": [f"round {n}" for n, _, _ in rounds],
        "elo": {"answerer": answerer_elo, "generator": generator_elo},
    }
