"""Did the run learn? Held-out gains with bootstrap intervals, and the `LEARN` lines.

Covers: paired bootstrap confidence intervals over problems (`paired_delta`), the learning
section of a run report (`learning_summary`: base -> warm start -> after self-play, on the
held-out validation problems, sampled several times each), and the lines `make learn` prints
(`learn_lines`), assembled from the report and the phases' metrics.

Measures, all on problems the run never trained on: the *discriminating* fraction (share of the
tests no trivial solution passes that an answer passes: the honest reward's measure), the strict
pass rate (every test passes), the raw fraction (trivial code earns part of it; shown, never
used to claim a gain), the bank pass rate and HumanEval pass@1.
Pure: plain Python data in and out; no model, sandbox or MLflow here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any


def paired_delta(
    before: Sequence[float], after: Sequence[float], n_boot: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Mean of after - before over paired items (problems), with a 95% percentile bootstrap
    interval (resampling problems).

    >>> d = paired_delta([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    >>> d["delta"], d["lo"], d["hi"]
    (1.0, 1.0, 1.0)
    >>> paired_delta([], [])["n"]
    0
    """
    if len(before) != len(after):
        raise ValueError(f"{len(before)} items before, {len(after)} after")
    n = len(before)
    if n == 0:
        return {"n": 0, "before": 0.0, "after": 0.0, "delta": 0.0, "lo": 0.0, "hi": 0.0}
    deltas = [a - b for a, b in zip(after, before, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(deltas, k=n)) / n for _ in range(n_boot))
    return {
        "n": n,
        "before": sum(before) / n,
        "after": sum(after) / n,
        "delta": sum(deltas) / n,
        "lo": means[int(0.025 * (n_boot - 1))],
        "hi": means[int(0.975 * (n_boot - 1))],
    }


MEASURES = ("discriminating", "strict", "raw", "pass_at_n")


def train_reward_change(
    step_rewards: Sequence[float], n_boot: int = 2000, seed: int = 0
) -> dict[str, float] | None:
    """Mean training reward of the first quarter of optimizer steps against the last quarter
    (the run's own training problems), with a 95% bootstrap interval of last - first
    (resampling steps within each quarter: different steps draw different problems, so the
    step is the unit). None with fewer than 4 steps.

    >>> d = train_reward_change([0.1, 0.1, 0.3, 0.3, 0.5, 0.5, 0.5, 0.5])
    >>> d["first"], d["last"], round(d["delta"], 3), d["lo"] > 0, d["steps"]
    (0.1, 0.5, 0.4, True, 8.0)
    >>> train_reward_change([0.2, 0.3, 0.4]) is None
    True
    """
    n = len(step_rewards)
    if n < 4:
        return None
    q = n // 4
    first, last = list(step_rewards[:q]), list(step_rewards[-q:])
    rng = random.Random(seed)
    deltas = sorted(
        sum(rng.choices(last, k=q)) / q - sum(rng.choices(first, k=q)) / q for _ in range(n_boot)
    )
    mean_first, mean_last = sum(first) / q, sum(last) / q
    return {
        "steps": float(n),
        "first": mean_first,
        "last": mean_last,
        "delta": mean_last - mean_first,
        "lo": deltas[int(0.025 * (n_boot - 1))],
        "hi": deltas[int(0.975 * (n_boot - 1))],
    }


def _per_problem(snapshot: Mapping[str, Any], measure: str) -> dict[str, float]:
    return dict((snapshot.get("val_sampled") or {}).get(measure) or {})


def stage_gain(
    before: Mapping[str, Any], after: Mapping[str, Any], measure: str, seed: int = 0
) -> dict[str, float] | None:
    """paired_delta of one measure between two evaluated snapshots, over the problems both
    were sampled on; None when either was not sampled."""
    b, a = _per_problem(before, measure), _per_problem(after, measure)
    ids = sorted(set(b) & set(a))
    if not ids:
        return None
    return paired_delta([b[i] for i in ids], [a[i] for i in ids], seed=seed)


def learning_summary(report: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    """Gains per stage: base -> warm start, warm start -> final (what self-play added), and
    base -> final, for every measure; the bank pass rate of the answerer the generator attacked
    first (warm start, else base) and of the final one; HumanEval pass@1 of base and final."""
    base = report.get("baseline") or {}
    snapshots = list(report.get("snapshots") or [])
    warm = next((s for s in snapshots if s.get("label") == "warm-start"), None)
    rounds = [s for s in snapshots if s is not warm]
    final = rounds[-1] if rounds else (warm or base)
    stages = {"base_to_final": (base, final)}
    if warm is not None:
        stages["base_to_warm_start"] = (base, warm)
        stages["warm_start_to_final"] = (warm, final)
    gains = {
        name: {m: stage_gain(b, a, m, seed) for m in MEASURES} for name, (b, a) in stages.items()
    }
    first = warm or base
    return {
        "gains": gains,
        "bank_pass_rate": {
            "before": first.get("bank_pass_rate"),
            "after": final.get("bank_pass_rate"),
        },
        "humaneval_pass_at_1": {
            "base": base.get("humaneval_pass@1"),
            "final": final.get("humaneval_pass@1"),
        },
        "trivial_share": {"base": base.get("trivial_share"), "final": final.get("trivial_share")},
        "final_model": final.get("model"),
    }


def flat_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """`learn.<stage>.<measure>.<field>` numbers for MLflow."""
    out: dict[str, float] = {}
    for stage, per in (summary.get("gains") or {}).items():
        for measure, d in per.items():
            for key, value in (d or {}).items():
                out[f"learn.{stage}.{measure}.{key}"] = float(value)
    for group in ("bank_pass_rate", "humaneval_pass_at_1", "trivial_share"):
        for key, value in (summary.get(group) or {}).items():
            if isinstance(value, (int, float)):
                out[f"learn.{group}.{key}"] = float(value)
    return out


def _f(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.3f}"


def learn_lines(
    summary: Mapping[str, Any],
    break_rates: Sequence[float],
    useful_group_share: float | None,
    completions_trained: float | None = None,
    train_reward: Mapping[str, float] | None = None,
) -> list[str]:
    """The lines `make learn` ends with (format fixed by the learning issue)."""
    gains = summary.get("gains") or {}
    lines = []
    for name, measure in (
        ("validation_pass_rate", "discriminating"),
        ("strict_pass_rate", "strict"),
        ("pass_at_n", "pass_at_n"),
    ):
        d = (gains.get("base_to_final") or {}).get(measure)
        if d:
            lines.append(
                f"LEARN {name} base={d['before']:.3f} final={d['after']:.3f} "
                f"ci95_delta={d['lo']:.3f},{d['hi']:.3f}"
            )
        else:
            lines.append(f"LEARN {name} base=n/a final=n/a ci95_delta=n/a")
    for stage in ("base_to_warm_start", "warm_start_to_final"):
        d = (gains.get(stage) or {}).get("discriminating")
        if d:
            lines.append(
                f"LEARN stage {stage} delta={d['delta']:.3f} ci95_delta={d['lo']:.3f},{d['hi']:.3f}"
            )
    first = break_rates[0] if break_rates else None
    last = break_rates[-1] if break_rates else None
    lines.append(f"LEARN generator_break_rate first={_f(first)} last={_f(last)}")
    bank = summary.get("bank_pass_rate") or {}
    lines.append(
        f"LEARN bank_pass_rate before={_f(bank.get('before'))} after={_f(bank.get('after'))}"
    )
    he = summary.get("humaneval_pass_at_1") or {}
    lines.append(f"LEARN humaneval_pass_at_1 base={_f(he.get('base'))} final={_f(he.get('final'))}")
    lines.append(f"LEARN useful_group_share {_f(useful_group_share)}")
    trained = "n/a" if completions_trained is None else f"{completions_trained:.0f}"
    lines.append(f"LEARN completions_trained {trained}")
    if train_reward:
        lines.append(
            f"LEARN train_reward first={train_reward['first']:.3f} "
            f"last={train_reward['last']:.3f} "
            f"ci95_delta={train_reward['lo']:.3f},{train_reward['hi']:.3f}"
        )
    else:
        lines.append("LEARN train_reward first=n/a last=n/a ci95_delta=n/a")
    return lines


def summary_from_metrics(flat: Mapping[str, float]) -> dict[str, Any]:
    """The inverse of `flat_metrics` (what an MLflow run holds back to a summary).

    >>> s = summary_from_metrics({"learn.base_to_final.strict.delta": 0.1,
    ...                           "learn.bank_pass_rate.after": 0.3})
    >>> s["gains"]["base_to_final"]["strict"]["delta"], s["bank_pass_rate"]["after"]
    (0.1, 0.3)
    """
    summary: dict[str, Any] = {"gains": {}}
    for key, value in flat.items():
        parts = key.split(".")
        if parts[0] != "learn":
            continue
        if len(parts) == 4:
            _, stage, measure, field = parts
            summary["gains"].setdefault(stage, {}).setdefault(measure, {})[field] = value
        elif len(parts) == 3:
            summary.setdefault(parts[1], {})[parts[2]] = value
    return summary


def from_phase_runs(
    runs: Sequence[tuple[str, Mapping[str, float]]],
) -> tuple[dict[str, Any], list[float], float | None, float | None]:
    """(learning summary, generator break rate per round, useful group share, answerer
    completions trained) from the phases' MLflow runs, given as (run name `r{round}-{phase}`,
    latest metrics)."""
    import re

    breaks: list[tuple[int, float]] = []
    useful: list[float] = []
    trained: list[float] = []
    flat: dict[str, float] = {}
    for name, metrics in runs:
        match = re.match(r"r(\d+)-(.*)", name)
        if not match:
            continue
        round_index, phase = int(match.group(1)), match.group(2)
        if phase == "validate-tests" and "break_rate" in metrics:
            breaks.append((round_index, float(metrics["break_rate"])))
        elif phase.startswith("train-") and "useful_group_share" in metrics:
            useful.append(float(metrics["useful_group_share"]))
            if phase.startswith("train-answerer") and "completions_trained" in metrics:
                trained.append(float(metrics["completions_trained"]))
        elif phase == "evaluate":
            flat.update({k: float(v) for k, v in metrics.items() if k.startswith("learn.")})
    share = sum(useful) / len(useful) if useful else None
    total = sum(trained) if trained else None
    return summary_from_metrics(flat), [b for _, b in sorted(breaks)], share, total
