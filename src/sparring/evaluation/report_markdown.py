"""report.md's text: the Markdown page of a run report, from an evaluation report (the dict of
sparring.evaluation.snapshots) and the names of the images beside it.

Covers: `render_markdown` and its sections in order (the selection, the images, the snapshots'
table, the learning section's gains with their intervals, the training steps per phase, the Elo
ratings, the generator rounds), and the formatting they share with the plots (`fmt`,
`all_snapshots`).
Does not cover: drawing the PNGs, writing any file or logging to MLflow
(sparring.evaluation.report), computing any metric (the other sparring.evaluation modules).
Pure: plain Python data in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparring.evaluation.intervals import MIN_PER_SIDE


def render_markdown(report: Mapping[str, Any], images: Mapping[str, str]) -> str:
    """The run report as Markdown; `images` maps a title to a PNG file name beside report.md."""
    lines = ["# Sparring run report", ""]
    lines += _selection_lines(report.get("selection") or {}, report.get("snapshots") or [])
    lines += _image_lines(images)
    lines += _snapshot_lines(all_snapshots(report))
    lines += _learning_lines(report.get("learning") or {})
    lines += _step_lines(report.get("step_curves") or [])
    lines += _elo_lines(
        report.get("elo") or {},
        report.get("cross_play_rows") or [],
        report.get("cross_play_columns") or [],
    )
    lines += _round_lines(report.get("rounds") or [])
    return "\n".join(lines)


def _selection_lines(
    selection: Mapping[str, Any], snapshots: Sequence[Mapping[str, Any]]
) -> list[str]:
    """`**Selection:** ...`: the snapshot selected (or nothing promoted) and why; none without
    a selection."""
    if not selection:
        return []
    index = selection.get("index")
    chosen = (snapshots or [{}] * ((index or 0) + 1))[index or 0]
    label = _label(chosen) if index is not None else ""
    verdict = "nothing promoted" if index is None else f"{label} selected"
    return [f"**Selection:** {verdict}. {selection.get('reason', '')}", ""]


def _image_lines(images: Mapping[str, str]) -> list[str]:
    """A section per image: its title, then the image."""
    lines: list[str] = []
    for title, name in images.items():
        lines += [f"## {title}", "", f"![{title}]({name})", ""]
    return lines


def _snapshot_lines(snapshots: Sequence[Mapping[str, Any]]) -> list[str]:
    """The snapshots' table (base first) and the model each one is."""
    if not snapshots:
        return []
    lines = [
        "## Snapshots",
        "",
        "Held-out (val) measures: *discriminating* = share of the tests no trivial solution "
        "passes that the answer passes; *strict* = every test passes; *raw* = share of all "
        "tests (trivial code earns some); *trivial* = share of answers that behave like a "
        "trivial solution.",
        "",
        "| snapshot | HumanEval pass@1 | val discriminating | val strict | val raw | "
        "trivial | bank pass rate | answerer reward | test validity | hacking | promotable |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in snapshots:
        hacking = s.get("hacking") or {}
        flag = "; ".join(hacking.get("reasons") or []) or ("n/a" if s.get("base") else "none")
        lines.append(
            f"| {_label(s)} | {fmt(s.get('humaneval_pass@1'))} | "
            f"{fmt(s.get('val_discriminating_fraction'))} | "
            f"{fmt(s.get('val_strict_pass_at_1'))} | {fmt(s.get('val_raw_fraction'))} | "
            f"{fmt(s.get('trivial_share'))} | {fmt(s.get('bank_pass_rate'))} | "
            f"{fmt(s.get('answerer_reward'))} | {fmt(s.get('test_validity'))} | {flag} | "
            f"{fmt(s.get('promotable'))} |"
        )
    lines.append("")
    lines += ["Models: " + ", ".join(f"{_label(s)} `{s.get('model')}`" for s in snapshots)]
    lines.append("")
    return lines


def _learning_lines(learning: Mapping[str, Any]) -> list[str]:
    """The learning section: per stage and measure, the held-out mean before and after and the
    95% bootstrap interval of the paired gain."""
    gains = learning.get("gains") or {}
    if not gains:
        return []
    lines = [
        "## Learning on held-out problems",
        "",
        "Each held-out problem sampled several times; gain = paired mean over problems, with a "
        "95% bootstrap interval. An interval that excludes 0 is a gain (or loss) beyond noise.",
        "",
        "| stage | measure | problems | before | after | gain | 95% interval |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for stage, per in gains.items():
        for measure, d in per.items():
            if d:
                interval = (
                    f"[{d['lo']:+.3f}, {d['hi']:+.3f}]"
                    if d["n"] >= MIN_PER_SIDE
                    else f"n/a (n={int(d['n'])})"  # too few problems to rest an interval on
                )
                lines.append(
                    f"| {stage.replace('_', ' ')} | {measure} | {int(d['n'])} | "
                    f"{d['before']:.3f} | {d['after']:.3f} | {d['delta']:+.3f} | {interval} |"
                )
    lines.append("")
    return lines


def _step_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per phase: steps, first and last reward, mean flat-group share and grad norm."""
    if not runs:
        return []
    lines = [
        "## Training steps",
        "",
        "Per phase, from the per-step values in MLflow: a flat-group share of 1 or a grad norm "
        "of 0 means the step trained nothing.",
        "",
        "| phase | steps | reward first | reward last | flat groups (mean) | grad norm (mean) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        curves = run.get("curves") or {}

        def values(key: str, curves: Mapping[str, Any] = curves) -> list[float]:
            return [v for _, v in curves.get(key) or []]

        reward, flat, grad = values("reward"), values("frac_reward_zero_std"), values("grad_norm")
        steps = max((len(v) for v in curves.values()), default=0)
        lines.append(
            f"| {run.get('run')} | {steps} | {fmt(reward[0] if reward else None)} | "
            f"{fmt(reward[-1] if reward else None)} | "
            f"{fmt(sum(flat) / len(flat) if flat else None)} | "
            f"{fmt(sum(grad) / len(grad) if grad else None)} |"
        )
    lines.append("")
    return lines


def _elo_lines(elo: Mapping[str, Any], rows: Sequence[str], cols: Sequence[str]) -> list[str]:
    """The Elo ratings' table: answerers named by the cross-play's rows, generators by its
    columns; none without a rating."""
    if not (elo.get("answerer") or elo.get("generator")):
        return []
    lines = ["## Elo ratings", "", "| role | snapshot | rating |", "| --- | --- | --- |"]
    for i, r in enumerate(elo.get("answerer") or []):
        lines.append(f"| answerer | {rows[i] if i < len(rows) else i} | {r:.0f} |")
    for j, r in enumerate(elo.get("generator") or []):
        lines.append(f"| generator | {cols[j] if j < len(cols) else j + 1} | {r:.0f} |")
    lines.append("")
    return lines


def _round_lines(rounds: Sequence[Mapping[str, Any]]) -> list[str]:
    """The generator rounds' table: tests, validity, duplicate rate, flat GRPO groups."""
    if not rounds:
        return []
    lines = [
        "## Generator rounds",
        "",
        "| round | tests | validity | duplicate rate | flat GRPO groups |",
        "| --- | --- | --- | --- | --- |",
    ]
    for j, r in enumerate(rounds):
        lines.append(
            f"| {r.get('round', j + 1)} | {r.get('tests')} | {fmt(r.get('test_validity'))} | "
            f"{fmt(r.get('duplicate_rate'))} | {fmt(r.get('flat_group_share'))} |"
        )
    lines.append("")
    return lines


def _label(snapshot: Mapping[str, Any]) -> str:
    """`base`, `warm start` or `round N`: what a reader compares."""
    if snapshot.get("base"):
        return "base"
    if snapshot.get("label"):
        return str(snapshot["label"])
    return f"round {snapshot.get('round')}"


def all_snapshots(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The baseline (round 0), when the report has one, followed by the snapshots."""
    baseline = report.get("baseline")
    return ([baseline] if baseline else []) + list(report.get("snapshots") or [])


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: n/a for None, yes/no for a bool, a float to `digits` places."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)
