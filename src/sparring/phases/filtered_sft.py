"""The answerer phase in filtered fine-tuning mode (issue 84, item 5; `filtered_sft.samples` > 0):
sample the answerer's own answers to every training problem, keep the ones a filter confirms,
and fine-tune on them with the warm start's supervised step (expert iteration: "generate,
verify, filter, train on the survivors"). Each answerer phase of the plan is one such round, so
`rounds` rounds each start from the last one's model.

The filter (`filtered_sft.filter`): `every` keeps an answer that passes every test of the problem,
the stated case included (the oracle filter: what a perfect test writer would keep); `given`
keeps one that passes the data.given_tests given tests (what the given tests alone keep). An
answer whose code does not parse passes nothing. The answers are sampled through the one
answerer sampler at the training temperature, top-p and completion budget, with the round's
reasoning stages, under the phase's seed; the SFT rows pair that same prompt with the answer's
text as sampled. No answer kept: the phase saves its start model unchanged and says so.

Covers: `filtered_sft` (the phase), `kept_answers` and `sft_rows` (pure). Does not cover: the
SFT loop (the backend's `sft`, sparring.backends.torch.sft), GRPO (sparring.phases.answerer:
the phase table's answerer row runs this module in its place when the mode is on) or when
phases run (schedule).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sparring import backends, progress
from sparring.backends.base import copy_model, trained_record
from sparring.backends.sampler import load_answerer, sample_answers
from sparring.config import Config
from sparring.phases.common import derived_seed, train_problems
from sparring.phases.schedule import reasoning_stages
from sparring.problems import Problem, prompts
from sparring.problems.given_tests import given_view
from sparring.problems.programs import extract_code
from sparring.sandbox import Sandbox
from sparring.sandbox.gate import require_isolation
from sparring.sandbox.limits import untrusted_limits
from sparring.sandbox.result_cache import run_cached


def kept_answers(
    passed_every: Sequence[Sequence[bool]],
    passed_given: Sequence[Sequence[bool]],
    rule: str,
) -> list[list[int]]:
    """Per problem, the indexes of its answers `rule` keeps ("every" or "given").

    >>> kept_answers([[True, False]], [[True, True]], "every"), kept_answers(
    ...     [[True, False]], [[True, True]], "given")
    ([[0]], [[0, 1]])
    """
    if rule not in ("every", "given"):
        raise ValueError(f"filtered_sft.filter {rule!r}: use every or given")
    flags = passed_every if rule == "every" else passed_given
    return [[j for j, ok in enumerate(row) if ok] for row in flags]


def sft_rows(
    problems: Sequence[Problem],
    texts: Sequence[Sequence[str]],
    kept: Sequence[Sequence[int]],
    stages: Sequence[str],
) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows: the prompt the answer was sampled with, the
    answer's text as sampled (the warm start's row shape)."""
    rows = []
    for p, outs, keep in zip(problems, texts, kept, strict=True):
        prompt = prompts.answerer_messages(p, list(stages))
        for j in keep:
            completion = [{"role": "assistant", "content": outs[j]}]
            rows.append({"prompt": prompt, "completion": completion})
    return rows


def filtered_sft(
    cfg: Config,
    round_index: int,
    data_dir: str,
    init_model: str | None,
    out_model: str,
    phase: str,
) -> dict[str, float]:
    """One round: sample `filtered_sft.samples` answers a training problem, keep the filter's,
    fine-tune on them for `filtered_sft.steps` steps; writes the model, returns flat metrics."""
    fs = cfg.filtered_sft
    start = init_model or cfg.model_for("answerer").name
    problems = train_problems(data_dir)
    stages = reasoning_stages(cfg, round_index)
    meta = {"round": round_index, "phase": phase, "stages": stages, "mode": "filtered_sft",
            "filter": fs.filter, "samples": fs.samples}  # fmt: skip
    metrics: dict[str, float] = {"filtered_sft_problems": float(len(problems))}
    if cfg.dry_run:
        copy_model(start, out_model, {**meta, "role": "answerer"})
        return metrics
    require_isolation(cfg)  # before the model loads: the filter runs the answers it writes
    seed = derived_seed(cfg, round_index, phase)
    texts = _sample(cfg, start, problems, stages, seed)
    every, given = _judge(cfg, problems, texts)
    kept = kept_answers(every, given, fs.filter)
    rows = sft_rows(problems, texts, kept, stages)
    metrics.update(_kept_metrics(fs.filter, problems, texts, every, given, kept))
    meta["kept"] = {p.id: len(k) for p, k in zip(problems, kept, strict=True) if k}
    if not rows:
        copy_model(start, out_model, {**meta, "role": "answerer"})
        return metrics
    record = trained_record(cfg, "answerer", meta, init_model)
    metrics.update(_fine_tune(cfg, init_model, rows, seed, out_model, record))
    return metrics


def _sample(
    cfg: Config, start: str, problems: Sequence[Problem], stages: list[str], seed: int
) -> list[list[str]]:
    """`filtered_sft.samples` answers a problem of `start` through the one answerer sampler, at
    the training temperature, top-p and completion budget."""
    answerer = load_answerer(
        start, device=cfg.model_for("answerer").device, rows=cfg.grpo.rollout_batch_size
    )
    return sample_answers(
        answerer, problems, max_new_tokens=cfg.grpo.max_completion_length or 256,
        temperature=cfg.grpo.temperature, top_p=cfg.grpo.top_p,
        num_samples=cfg.filtered_sft.samples, seed=seed, stages=stages, label="filtered-sft",
    ).texts  # fmt: skip


def _kept_metrics(
    rule: str,
    problems: Sequence[Problem],
    texts: Sequence[Sequence[str]],
    every: Sequence[Sequence[bool]],
    given: Sequence[Sequence[bool]],
    kept: Sequence[Sequence[int]],
) -> dict[str, float]:
    """What the round sampled, passed and kept, also said as a progress line."""
    answers = sum(len(t) for t in texts)
    n_kept, kept_on = sum(map(len, kept)), sum(1 for k in kept if k)
    progress.say(
        f"filtered sft ({rule} filter): {n_kept} of {answers} answers kept, on {kept_on} of "
        f"{len(problems)} problems"
        + ("" if n_kept else "; nothing to train on, the model is saved unchanged")
    )
    return {
        "filtered_sft_answers": float(answers),
        "filtered_sft_passed_every": float(sum(map(sum, every))),
        "filtered_sft_passed_given": float(sum(map(sum, given))),
        "filtered_sft_kept": float(n_kept),
        "filtered_sft_problems_kept": float(kept_on),
    }


def _fine_tune(
    cfg: Config,
    init_model: str | None,
    rows: list[dict[str, Any]],
    seed: int,
    out_model: str,
    record: dict[str, Any],
) -> dict[str, float]:
    """The warm start's SFT step for `filtered_sft.steps` steps on `rows`; saves the model."""
    steps = dataclasses.replace(cfg.warm_start, steps=cfg.filtered_sft.steps)
    backend = backends.get(cfg.backend)
    model, tok, peft_config = backend.load_trainable(cfg, "answerer", init_model)
    model, sft_metrics = backend.sft(
        dataclasses.replace(cfg, warm_start=steps), model, tok, rows, peft_config, seed
    )
    backend.save_trained(cfg, model, tok, out_model, record)
    return {f"filtered_sft_{k}": float(v) for k, v in sft_metrics.items()}


def _judge(
    cfg: Config, problems: Sequence[Problem], texts: Sequence[Sequence[str]]
) -> tuple[list[list[bool]], list[list[bool]]]:
    """(passes every test, passes the given tests) per problem per answer: every test of the
    problem runs once on each answer, in one sandbox."""
    pairs = list(zip(problems, texts, strict=True))
    codes = [[extract_code(t, p.function_name) for t in outs] for p, outs in pairs]
    jobs = [(c, list(p.baseline_tests)) for p, cs in zip(problems, codes, strict=True) for c in cs]
    jobs = [(c, tests) for c, tests in jobs if c]
    with Sandbox(untrusted_limits(cfg)) as sb:
        ran = iter(run_cached(sb, jobs, None) if jobs else [])
    k = cfg.data.given_tests
    every, given = [], []
    for p, cs in zip(problems, codes, strict=True):
        # data.given_tests 0: the reward sees every test, so every test is given
        shown = set(given_view(p, k).baseline_tests if k else p.baseline_tests)
        every.append([])
        given.append([])
        for c in cs:
            result = dict(zip(p.baseline_tests, next(ran), strict=True)) if c else {}
            every[-1].append(bool(result) and all(v is True for v in result.values()))
            given[-1].append(bool(result) and all(result.get(t) is True for t in shown))
    return every, given
