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


MEASURES = ("discriminating", "strict", "raw", "pass_at_n", "defines")
MIN_PER_SIDE = 5  # an interval resting on fewer values per side is printed as n/a, not a number


def interval_text(d: Mapping[str, float] | None, n_key: str = "n") -> str:
    """`ci95_delta=LO,HI n=N` for a gain, or `ci95_delta=n/a (n=K)` when it rests on fewer
    than MIN_PER_SIDE values per side (problems, or steps per quarter).

    >>> interval_text({"lo": -0.01, "hi": 0.05, "n": 40})
    'ci95_delta=-0.010,0.050 n=40'
    >>> interval_text({"lo": 0.6, "hi": 0.6, "n": 1})
    'ci95_delta=n/a (n=1)'
    >>> interval_text(None)
    'ci95_delta=n/a (n=0)'
    """
    n = int((d or {}).get(n_key, 0))
    if not d or n < MIN_PER_SIDE:
        return f"ci95_delta=n/a (n={n})"
    return f"ci95_delta={d['lo']:.3f},{d['hi']:.3f} n={n}"


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
        "per_side": float(q),
        "first": mean_first,
        "last": mean_last,
        "delta": mean_last - mean_first,
        "lo": deltas[int(0.025 * (n_boot - 1))],
        "hi": deltas[int(0.975 * (n_boot - 1))],
    }


def answerer_step_rewards(step_curves: Sequence[Mapping[str, Any]]) -> list[float]:
    """Every answerer optimizer step's mean reward, in run order, from the phases' per-step
    curves (`sparring.tracking.step_curves`): what train_reward and the learning figure read.

    >>> answerer_step_rewards([{"phase": "train-answerer", "run": "r1-train-answerer",
    ...                         "curves": {"reward": [[1, 0.2], [2, 0.4]]}},
    ...                        {"phase": "train-generator", "run": "r1-train-generator",
    ...                         "curves": {"reward": [[1, 0.9]]}}])
    [0.2, 0.4]
    """
    return [
        value
        for curve in step_curves
        if str(curve.get("phase", "")).startswith("train-answerer")
        or "answerer" in str(curve.get("run", ""))
        for _, value in (curve.get("curves") or {}).get("reward", [])
    ]


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


def subset_gain(
    before: Mapping[str, Any], after: Mapping[str, Any], measure: str, ids: Sequence[str],
    seed: int = 0,
) -> dict[str, float] | None:  # fmt: skip
    """stage_gain over the problems of `ids` only (a held-out set)."""
    keep = set(ids)
    b = {k: v for k, v in _per_problem(before, measure).items() if k in keep}
    a = {k: v for k, v in _per_problem(after, measure).items() if k in keep}
    both = sorted(set(b) & set(a))
    if not both:
        return None
    return paired_delta([b[i] for i in both], [a[i] for i in both], seed=seed)


def learning_summary(
    report: Mapping[str, Any], seed: int = 0, sets: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """Gains per stage: base -> warm start, warm start -> final (what self-play added), and
    base -> final, for every measure, and base -> final on each named held-out set
    (`heldout_<set>`: `sets` maps a set's name to its problem ids); the bank pass rate of the
    answerer the generator attacked first (warm start, else base) and of the final one;
    HumanEval pass@1 of base and final."""
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
    for set_name, ids in (sets or {}).items():
        gains[f"heldout_{set_name}"] = {m: subset_gain(base, final, m, ids, seed) for m in MEASURES}
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


HELDOUT_FILE = "heldout.json"  # per set, per problem, base and final: logged by evaluate
HELDOUT_LINES = ("seen", "unseen", "bundled")  # the learning issue's held-out sets, in order


def _gain_line(name: str, d: Mapping[str, float] | None) -> str:
    if not d:
        return f"LEARN {name} base=n/a final=n/a {interval_text(None)}"
    return f"LEARN {name} base={d['before']:.3f} final={d['after']:.3f} {interval_text(d)}"


def learn_lines(
    summary: Mapping[str, Any],
    break_rates: Sequence[float],
    useful_group_share: float | None,
    completions_trained: float | None = None,
    train_reward: Mapping[str, float] | None = None,
) -> list[str]:
    """The lines `make learn` ends with (format fixed by the learning issues). Every interval
    carries its n, and one resting on fewer than MIN_PER_SIDE values per side is n/a."""
    gains = summary.get("gains") or {}
    trained = "n/a" if completions_trained is None else f"{completions_trained:.0f}"
    lines = [f"LEARN completions_trained {trained}"]
    if train_reward:
        lines.append(
            f"LEARN train_reward first={train_reward['first']:.3f} "
            f"last={train_reward['last']:.3f} "
            f"{interval_text(train_reward, 'per_side')}"
        )
    else:
        lines.append(f"LEARN train_reward first=n/a last=n/a {interval_text(None)}")
    lines.append(f"LEARN base_zone_share {_f(summary.get('base_zone_share'))}")
    for set_name in HELDOUT_LINES:
        d = (gains.get(f"heldout_{set_name}") or {}).get("discriminating")
        lines.append(_gain_line(f"heldout_{set_name}", d))
    defines = (gains.get("base_to_final") or {}).get("defines")
    lines.append(
        "LEARN definition_rate "
        + (f"base={defines['before']:.3f} final={defines['after']:.3f}" if defines
           else "base=n/a final=n/a")
    )  # fmt: skip
    for name, measure in (
        ("validation_pass_rate", "discriminating"),
        ("strict_pass_rate", "strict"),
        ("pass_at_n", "pass_at_n"),
    ):
        lines.append(_gain_line(name, (gains.get("base_to_final") or {}).get(measure)))
    for stage in ("base_to_warm_start", "warm_start_to_final"):
        d = (gains.get(stage) or {}).get("discriminating")
        if d:
            lines.append(f"LEARN stage {stage} delta={d['delta']:.3f} {interval_text(d)}")
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
    return lines


def heldout_per_problem(
    report: Mapping[str, Any], sets: Mapping[str, Sequence[str]], measure: str = "discriminating"
) -> dict[str, dict[str, list[float]]]:
    """{set: {problem id: [base, final]}}: what a control run is compared on, problem by
    problem (`reward_vs_control`)."""
    base = _per_problem(report.get("baseline") or {}, measure)
    snapshots = [s for s in report.get("snapshots") or [] if s.get("label") != "warm-start"]
    final = _per_problem(snapshots[-1], measure) if snapshots else {}
    return {
        name: {i: [base[i], final[i]] for i in ids if i in base and i in final}
        for name, ids in sets.items()
    }


# What a control may differ in from its treatment: the reward under test, and where the run is
# named, stored and tracked. Anything else (LoRA layers, learning rate, seeds, data) changes what
# the model learns, so a gain difference would not be the reward's alone. Library versions
# (`version.*` params) are the caller's to drop or keep.
CONTROL_MAY_DIFFER = ("name", "rewards.answerer", "tracking.", "storage.")


def control_differences(mine: Mapping[str, str], theirs: Mapping[str, str]) -> list[str]:
    """The config params (flattened, as the parent run logs them) in which a candidate control
    run differs from this one, beyond what a control may differ in; [] for a fair pair.

    >>> a = {"name": "learn", "rewards.answerer": "honest", "lora.top_layers": "0"}
    >>> control_differences(a, {**a, "name": "learn-control", "rewards.answerer": "format_only"})
    []
    >>> control_differences(a, {**a, "lora.top_layers": "8"})
    ['lora.top_layers']
    """
    keys = set(mine) | set(theirs)
    return sorted(
        k for k in keys if not k.startswith(CONTROL_MAY_DIFFER) and mine.get(k) != theirs.get(k)
    )


def heldout_pair(
    treatment: Mapping[str, Any], control: Mapping[str, Any], set_name: str = "seen"
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """The {problem id: [base, final]} of one held-out set in two runs' `heldout.json` files,
    checked for a fair pair: each holds the set, they trained different answerer rewards, and
    they share problems. ValueError names what is wrong.

    >>> t = {"reward": "honest", "sets": {"seen": {"a": [0.1, 0.5]}}}
    >>> c = {"reward": "format_only", "sets": {"seen": {"a": [0.1, 0.2]}}}
    >>> heldout_pair(t, c)
    ({'a': [0.1, 0.5]}, {'a': [0.1, 0.2]})
    >>> heldout_pair(t, t)
    Traceback (most recent call last):
    ...
    ValueError: both runs trained with the answerer reward 'honest': a control trains with another
    """
    per_run = []
    for role, data in (("treatment", treatment), ("control", control)):
        sets = data.get("sets") if isinstance(data, Mapping) else None
        if not isinstance(sets, Mapping):
            raise ValueError(f"{role}: no 'sets' in it; is it a run's heldout.json?")
        chosen = sets.get(set_name)
        if not isinstance(chosen, Mapping) or not chosen:
            raise ValueError(f"{role}: no held-out set {set_name!r} (it has: {sorted(sets)})")
        for pid, pair in chosen.items():
            if not (isinstance(pair, Sequence) and len(pair) == 2):
                raise ValueError(f"{role}: problem {pid!r} has {pair!r}, not [base, final]")
        per_run.append({str(k): [float(v) for v in pair] for k, pair in chosen.items()})
    rewards = treatment.get("reward"), control.get("reward")
    if rewards[0] is not None and rewards[0] == rewards[1]:
        raise ValueError(
            f"both runs trained with the answerer reward {rewards[0]!r}: "
            "a control trains with another"
        )
    if not set(per_run[0]) & set(per_run[1]):
        raise ValueError(
            f"no problem of the {set_name!r} set is in both: were they run on the same config?"
        )
    return per_run[0], per_run[1]


def reward_vs_control(
    treatment: Mapping[str, Sequence[float]],
    control: Mapping[str, Sequence[float]],
    seed: int = 0,
) -> str:
    """`LEARN reward_vs_control delta=X ci95_delta=LO,HI n=N`: the treatment's held-out gain
    (final - base) minus the control's, paired over the problems both measured ({problem id:
    [base, final]} each), with a bootstrap interval over problems.

    >>> t = {str(i): [0.1, 0.5] for i in range(6)}
    >>> c = {str(i): [0.1, 0.2] for i in range(6)}
    >>> reward_vs_control(t, c)
    'LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6'
    """
    ids = sorted(set(treatment) & set(control))
    gain_c = [control[i][1] - control[i][0] for i in ids]
    gain_t = [treatment[i][1] - treatment[i][0] for i in ids]
    d = paired_delta(gain_c, gain_t, seed=seed)
    if not ids:
        return f"LEARN reward_vs_control delta=n/a {interval_text(None)}"
    return f"LEARN reward_vs_control delta={d['delta']:.3f} {interval_text(d)}"


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
    latest metrics). The summary's `base_zone_share` is the first validation's share of
    problems whose frozen (base) samples differed in reward."""
    import re

    breaks: list[tuple[int, float]] = []
    useful: list[float] = []
    trained: list[float] = []
    zones: list[tuple[int, float]] = []
    flat: dict[str, float] = {}
    for name, metrics in runs:
        match = re.match(r"r(\d+)-(.*)", name)
        if not match:
            continue
        round_index, phase = int(match.group(1)), match.group(2)
        if phase == "validate-tests" and "break_rate" in metrics:
            breaks.append((round_index, float(metrics["break_rate"])))
        if phase == "validate-tests" and metrics.get("zone_estimated"):
            zones.append((round_index, metrics["zone_problems"] / metrics["zone_estimated"]))
        elif phase.startswith("train-") and "useful_group_share" in metrics:
            useful.append(float(metrics["useful_group_share"]))
            if phase.startswith("train-answerer") and "completions_trained" in metrics:
                trained.append(float(metrics["completions_trained"]))
        elif phase == "evaluate":
            flat.update({k: float(v) for k, v in metrics.items() if k.startswith("learn.")})
    share = sum(useful) / len(useful) if useful else None
    total = sum(trained) if trained else None
    summary = summary_from_metrics(flat)
    # the first round's frozen answerer is the base model (no warm start): its zone share
    summary["base_zone_share"] = min(zones)[1] if zones else None
    return summary, [b for _, b in sorted(breaks)], share, total
