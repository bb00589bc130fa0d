"""Calibration: where a model's zone lies among the problem families, per family and level.

Covers: `calibrate` (instances of the families under a seed of their own, the answerer model
sampled k times on each at the training temperature and budget, each answer scored with the
honest credit in the sandbox and, with K given tests, checked for a false positive: passing the
K typical tests a sparse reward sees and failing one it withholds), `summarize` (per family and
level: mean reward, whole-problem pass rate, share of instances whose samples differ in reward,
i.e. where GRPO has an advantage to follow, and the false-positive rate: the answers on which
tests a generator adds could change a sparse reward), `zone_levels` (the levels whose mean
reward lies in a band, 0.2-0.8 by default) and `format_table`. A learning config trains on
the levels calibration puts in the zone. Its two steps are public for the study's pre-check
(sparring.experiments.precheck): `calibration_problems` (the instances, trivial passes computed),
`answerer_for` (the model loaded) and `sample_model` (its answers through the one sampler).

Does not cover: generating instances (sparring.problems.families) or training.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sparring.backends.sampler import load_answerer, sample_answers
from sparring.problems import compute_trivial_passes
from sparring.problems.families import family_and_level, generate
from sparring.problems.given_tests import given_view
from sparring.rewards import code_duel
from sparring.sandbox import Sandbox
from sparring.sandbox.limits import trusted_limits, untrusted_limits

ZONE_BAND = (0.2, 0.8)  # mean reward of a level worth training on: room above and below


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (family, level): instances, samples, mean reward (discriminating share), whole-problem
    pass rate, and zone share (instances whose samples earned differing rewards). `rows`: one
    per instance, with `family`, `level`, `rewards` (per sample; None = sandbox failure),
    `strict` (per sample) and, when measured, `false_positive` (per sample, 0/1):
    `false_positive_rate` is then the share of samples flagged.

    >>> rows = [{"family": "f", "level": 1, "rewards": [0.0, 1.0], "strict": [0, 1]},
    ...         {"family": "f", "level": 1, "rewards": [0.0, 0.0], "strict": [0, 0]}]
    >>> s = summarize(rows)[0]
    >>> s["mean_reward"], s["pass_rate"], s["zone_share"], s["instances"]
    (0.25, 0.25, 0.5, 2)
    """
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["family"], row["level"])].append(row)
    out = []
    for (family, level), members in sorted(groups.items()):
        rewards = [r for m in members for r in m["rewards"] if r is not None]
        strict = [float(s) for m in members for s in m["strict"]]
        judged = [[r for r in m["rewards"] if r is not None] for m in members]
        in_zone = [bool(v) and max(v) > min(v) for v in judged]
        summary = {
            "family": family,
            "level": level,
            "instances": len(members),
            "samples": len(strict),
            "mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
            "pass_rate": sum(strict) / len(strict) if strict else 0.0,
            "zone_share": sum(in_zone) / len(in_zone) if in_zone else 0.0,
        }
        flagged = [f for m in members for f in m.get("false_positive", [])]
        if flagged:
            summary["false_positive_rate"] = sum(flagged) / len(flagged)
        out.append(summary)
    return out


def by_level(summary: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, float]]:
    """Per level, over its families (weighted by samples): mean reward, pass rate, zone share.

    >>> by_level([{"level": 1, "samples": 2, "instances": 1, "mean_reward": 0.5,
    ...            "pass_rate": 0.5, "zone_share": 1.0}])[1]["mean_reward"]
    0.5
    """
    out: dict[int, dict[str, float]] = {}
    for level in sorted({s["level"] for s in summary}):
        rows = [s for s in summary if s["level"] == level]
        n = sum(s["samples"] for s in rows) or 1
        k = sum(s["instances"] for s in rows) or 1
        out[level] = {
            "mean_reward": sum(s["mean_reward"] * s["samples"] for s in rows) / n,
            "pass_rate": sum(s["pass_rate"] * s["samples"] for s in rows) / n,
            "zone_share": sum(s["zone_share"] * s["instances"] for s in rows) / k,
        }
        if all("false_positive_rate" in s for s in rows):
            out[level]["false_positive_rate"] = (
                sum(s["false_positive_rate"] * s["samples"] for s in rows) / n
            )
    return out


def zone_levels(
    summary: Sequence[Mapping[str, Any]], band: tuple[float, float] = ZONE_BAND
) -> list[int]:
    """The levels whose mean reward (over all their families) lies inside `band`.

    >>> zone_levels([{"level": 1, "samples": 1, "instances": 1, "mean_reward": 0.5,
    ...               "pass_rate": 0.4, "zone_share": 1.0},
    ...              {"level": 3, "samples": 1, "instances": 1, "mean_reward": 0.05,
    ...               "pass_rate": 0.0, "zone_share": 0.1}])
    [1]
    """
    lo, hi = band
    return [lvl for lvl, m in by_level(summary).items() if lo <= m["mean_reward"] <= hi]


def format_table(
    summary: Sequence[Mapping[str, Any]], band: tuple[float, float] = ZONE_BAND
) -> str:
    """A fixed-width table per family and level, then one line per level and the zone; a
    false-positive column (`fp`) when it was measured."""
    fp = bool(summary) and all("false_positive_rate" in s for s in summary)
    lines = [
        f"{'family':24s} {'level':>5s} {'inst':>5s} {'reward':>7s} {'pass':>6s} {'zone':>6s}"
        + (f" {'fp':>6s}" if fp else "")
    ]
    for s in summary:
        lines.append(
            f"{s['family']:24s} {s['level']:5d} {s['instances']:5d} {s['mean_reward']:7.3f} "
            f"{s['pass_rate']:6.3f} {s['zone_share']:6.3f}"
            + (f" {s['false_positive_rate']:6.3f}" if fp else "")
        )
    for level, m in by_level(summary).items():
        lines.append(
            f"CALIBRATE level={level} mean_reward={m['mean_reward']:.3f} "
            f"pass_rate={m['pass_rate']:.3f} zone_share={m['zone_share']:.3f}"
            + (f" false_positive_rate={m['false_positive_rate']:.3f}" if fp else "")
        )
    levels = zone_levels(summary, band)
    lines.append(
        f"CALIBRATE zone_levels={','.join(map(str, levels)) or 'none'} "
        f"(mean reward within {band[0]}-{band[1]})"
    )
    return "\n".join(lines)


def calibration_problems(
    cfg: Any,
    seed: int,
    per_family: int,
    families: Sequence[str] | None = None,
    levels: Sequence[int] = (1, 2, 3),
) -> list[Any]:
    """`per_family` instances of each family and level under `seed`, with the trivial
    solutions' passes computed (the honest credit and the given view read them)."""
    problems = generate(seed, per_family, families, levels)
    with Sandbox(trusted_limits(cfg)) as sb:
        return compute_trivial_passes(problems, sb)


def answerer_for(cfg: Any, model: str = "") -> Any:
    """`model` (default: the config's answerer) loaded to sample, decoding as many rows at
    once as the training rollout."""
    name = model or cfg.model_for("answerer").name
    return load_answerer(
        name, device=cfg.model_for("answerer").device, rows=cfg.grpo.rollout_batch_size
    )


def sample_model(
    cfg: Any,
    answerer: Any,
    problems: Sequence[Any],
    samples: int,
    seed: int,
    label: str = "calibrate",
) -> list[list[str]]:
    """`samples` answers per problem (`[i]`: problems[i]'s) of `answerer` (`answerer_for`)
    through the one answerer sampler, at the training temperature and completion budget;
    `label` heads the progress lines."""
    return sample_answers(
        answerer,
        problems,
        max_new_tokens=cfg.grpo.max_completion_length or 256,
        temperature=cfg.grpo.temperature,
        top_p=cfg.grpo.top_p,
        num_samples=samples,
        seed=seed,
        label=label,
    ).texts


def calibrate(
    cfg: Any,
    seed: int,
    per_family: int,
    samples: int,
    families: Sequence[str] | None = None,
    levels: Sequence[int] = (1, 2, 3),
    model: str = "",
    given_tests: int = 0,
) -> list[dict[str, Any]]:
    """Sample `model` (default: the config's answerer) `samples` times on `per_family`
    instances of each family and level under `seed`, at the training temperature and
    completion budget; one row per instance (`summarize` reads them). With `given_tests` K
    (sparring.problems.given_tests), each answer is also checked against the K typical tests a
    sparse
    reward would see and the tests it would withhold (`false_positive`: 1 when it passes the
    first and fails the second)."""
    problems = calibration_problems(cfg, seed, per_family, families, levels)
    texts = sample_model(cfg, answerer_for(cfg, model), problems, samples, seed)
    flat = [(p, t) for p, outs in zip(problems, texts, strict=True) for t in outs]
    with Sandbox(untrusted_limits(cfg)) as sb:
        credits = code_duel.score_answers([p for p, _ in flat], [t for _, t in flat], sb)
        flags = []
        if given_tests:
            views = {p.id: given_view(p, given_tests) for p in problems}
            seen = [views[p.id] for p, _ in flat]
            flags = code_duel.false_positive_flags(
                [t for _, t in flat],
                [v.baseline_tests for v in seen],
                [v.withheld_tests for v in seen],
                [v.function_name for v in seen],
                sb,
            )
    rows = []
    it = iter(credits)
    flagged = iter(flags)
    for p, outs in zip(problems, texts, strict=True):
        mine = [next(it) for _ in outs]
        family, level = family_and_level(p.tags)
        row = {
            "id": p.id,
            "family": family,
            "level": level,
            "rewards": [c.reward if c.reward is None else c.discriminating_fraction
                        for c in mine],
            "strict": [int(c.strict) for c in mine],
        }  # fmt: skip
        if given_tests:  # a problem with no test beyond the K counts its answers as clean
            row["false_positive"] = [int(bool(f and f[1])) for f in (next(flagged) for _ in outs)]
        rows.append(row)
    return rows
