"""Run reports: PNG plots and the files of a run report from an evaluation report (the dict of
sparring.evaluation.snapshots).

Covers: reward and pass-rate curves per round (`curves.png`), per-step training curves of every
phase as MLflow recorded them (`steps.png`), the cross-play heatmap (`cross_play.png`),
HumanEval pass@1 before (round 0, the base model) and after (the selected snapshot, else the
last) (`humaneval.png`), the learning figure (`learning.png`), report.json, `report.md` written
beside them (`write_report`), and `log_to_mlflow(out_dir)` for the active MLflow run.

Does not cover: report.md's text (sparring.evaluation.report_markdown), computing any metric
(the other sparring.evaluation modules). Matplotlib runs with the Agg backend; a missing value
(None) is left out of a curve rather than drawn as 0.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparring import storage, tracking
from sparring.evaluation.intervals import MIN_PER_SIDE
from sparring.evaluation.learning import answerer_step_rewards
from sparring.evaluation.report_markdown import all_snapshots, fmt, render_markdown

CURVES = (
    ("answerer_reward", "answerer reward (val)"),
    ("bank_pass_rate", "pass rate on the adversarial bank"),
    ("humaneval_pass@1", "HumanEval pass@1"),
    ("test_validity", "generator test validity"),
)


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib  # lazy: matplotlib is heavy, and only a report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(snapshots: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Reward and pass-rate curves against the round of each snapshot."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for key, label in CURVES:
        points = [(s.get("round", i), s.get(key)) for i, s in enumerate(snapshots)]
        points = [(r, v) for r, v in points if v is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", label=label)
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib is heavy (see pyplot)

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round (0 = base model)")
    ax.set_ylabel("value")
    ax.set_ylim(-0.02, max(1.05, ax.get_ylim()[1]))
    ax.set_title("Answerer across rounds")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return Path(path)


STEP_PANELS = (
    ("reward", "reward (step mean)"),
    ("frac_reward_zero_std", "flat groups (share)"),
    ("grad_norm", "grad norm"),
)


def plot_step_curves(runs: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Per-step curves of every training phase, one after the other on a shared x axis (the
    run's optimizer steps in order), a colour per phase kind, the phase named at its start."""
    plt = pyplot()
    fig, axes = plt.subplots(len(STEP_PANELS), 1, figsize=(7.2, 6.4), sharex=True)
    colours: dict[str, str] = {}
    handles: dict[str, Any] = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    offset = 0
    for run in runs:
        curves = run.get("curves") or {}
        last = max((p[0] for pts in curves.values() for p in pts), default=0)
        kind = str(run.get("phase", ""))
        colour = colours.setdefault(kind, palette[len(colours) % len(palette)])
        for ax, (key, _) in zip(axes, STEP_PANELS, strict=True):
            points = curves.get(key) or []
            if points:
                xs = [offset + step for step, _ in points]
                ys = [value for _, value in points]
                (line,) = ax.plot(xs, ys, marker="o", markersize=3, color=colour)
                handles.setdefault(kind, line)
            ax.axvline(offset + 0.5, color="#cccccc", linewidth=0.8)
        axes[0].annotate(
            str(run.get("run", "")), (offset + 0.6, 1.0), xycoords=("data", "axes fraction"),
            fontsize=6, rotation=90, va="top", color="#666666",
        )  # fmt: skip
        offset += last
    for ax, (key, label) in zip(axes, STEP_PANELS, strict=True):
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
        if key == "frac_reward_zero_std":  # a share: 1 means the step trained nothing
            ax.set_ylim(-0.05, 1.05)
    axes[-1].set_xlabel("optimizer step (phases in run order)")
    fig.suptitle("Training steps: every phase", x=0.02, ha="left")
    if handles:
        fig.legend(list(handles.values()), list(handles), fontsize=7, loc="upper right", ncol=3)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    _save(fig, path)
    plt.close(fig)
    return Path(path)


def plot_cross_play(
    matrix: Sequence[Sequence[float | None]],
    path: str | Path,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
) -> Path:
    """Heatmap of the answerer's win rate (pass rate) per answerer snapshot x generator round."""
    plt = pyplot()
    rows = len(matrix)
    cols = max((len(r) for r in matrix), default=0)
    data = [
        [float("nan") if (j >= len(r) or r[j] is None) else float(r[j]) for j in range(cols)]
        for r in matrix
    ]
    fig, ax = plt.subplots(figsize=(max(5.0, 2.0 + 1.1 * cols), 1.6 + 0.6 * max(rows, 1)))
    if rows and cols:
        im = ax.imshow(data, vmin=0.0, vmax=1.0, cmap="RdYlGn", aspect="auto")
        for i in range(rows):
            for j in range(cols):
                value = data[i][j]
                text = "–" if value != value else f"{value:.2f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=9)
        fig.colorbar(im, ax=ax, label="answerer pass rate")
    ax.set_xticks(range(cols), col_labels or [f"gen r{j + 1}" for j in range(cols)])
    ax.set_yticks(range(rows), row_labels or [f"ans r{i}" for i in range(rows)])
    ax.set_xlabel("generator (valid tests of the round)")
    ax.set_ylabel("answerer snapshot")
    ax.set_title("Cross-play")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return Path(path)


def plot_humaneval(
    before: float | None, after: float | None, path: str | Path, after_label: str = "after"
) -> Path:
    """Two bars: HumanEval pass@1 of the base model and of the chosen snapshot."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.0, 3.6))
    labels = ["base (round 0)", after_label]
    values = [before or 0.0, after or 0.0]
    bars = ax.bar(labels, values, color=["#999999", "#2a7ab9"])
    for bar, value in zip(bars, (before, after), strict=True):
        ax.text(
            bar.get_x() + bar.get_width() / 2,
            bar.get_height() + 0.01,
            fmt(value),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    ax.set_ylim(0, max(0.1, max(values) * 1.25))
    ax.set_ylabel("pass@1")
    ax.set_title("HumanEval (held out)")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return Path(path)


def _after_index(report: Mapping[str, Any]) -> int | None:
    snapshots = report.get("snapshots") or []
    if not snapshots:
        return None
    chosen = (report.get("selection") or {}).get("index")
    return chosen if isinstance(chosen, int) else len(snapshots) - 1


def _save(fig: Any, path: str | Path) -> None:
    """A figure as PNG, written atomically (a killed writer leaves the previous file)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    storage.write_bytes(str(path), buf.getvalue())


def write_json(report: Mapping[str, Any], out_dir: str | Path) -> Path:
    """report.json in out_dir, written atomically; returns its path."""
    path = Path(out_dir) / "report.json"
    storage.write_text(str(path), json.dumps(report, indent=1, default=str))
    return path


def moving_average(values: Sequence[float], window: int = 8) -> list[float]:
    """Trailing mean over up to `window` values (shorter at the start).

    >>> moving_average([0.0, 1.0, 2.0, 3.0], 2)
    [0.0, 0.5, 1.5, 2.5]
    """
    out = []
    for i in range(len(values)):
        part = values[max(0, i - window + 1) : i + 1]
        out.append(sum(part) / len(part))
    return out


def plot_learning(
    step_rewards: Sequence[float], gains: Mapping[str, Any], path: str | Path
) -> Path:
    """The learning figure: the answerer's training reward per step with its moving average,
    and the held-out sets' base and final discriminating share with the gain's 95% interval."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0))
    steps = list(range(1, len(step_rewards) + 1))
    left.plot(steps, step_rewards, alpha=0.35, label="per step")
    left.plot(steps, moving_average(step_rewards), label="moving average (8 steps)")
    left.set_xlabel("answerer optimizer step")
    left.set_ylabel("mean reward of the step's completions")
    left.set_title("Training reward")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    sets = [k for k in gains if k.startswith("heldout_") and (gains[k] or {}).get("discriminating")]
    for i, key in enumerate(sets):
        d = gains[key]["discriminating"]
        right.plot([i - 0.15, i + 0.15], [d["before"], d["after"]], color="grey", alpha=0.5)
        right.plot(i - 0.15, d["before"], "o", color="tab:blue", label="base" if i == 0 else None)
        enough = d["n"] >= MIN_PER_SIDE
        err = [[d["delta"] - d["lo"]], [d["hi"] - d["delta"]]] if enough else None
        right.errorbar(
            i + 0.15, d["after"], yerr=err, fmt="o", color="tab:orange", capsize=4,
            label="final (bar: 95% interval of the gain)" if i == 0 else None,
        )  # fmt: skip
    right.set_xticks(range(len(sets)))
    right.set_xticklabels(
        [f"{k.removeprefix('heldout_')}\n(n={int(gains[k]['discriminating']['n'])})" for k in sets]
    )
    right.set_ylabel("share of discriminating tests passed")
    right.set_title("Held-out problems, 8 samples each")
    right.grid(alpha=0.3)
    if sets:
        right.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return Path(path)


def write_report(report: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the PNG plots and report.md into out_dir; returns the files written. Each file is
    replaced atomically: a reader (or a killed writer) finds every file whole, each one from
    this report or an earlier one (the folder as a whole is not swapped at once)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    snapshots = all_snapshots(report)
    images: dict[str, str] = {}
    written: list[Path] = []
    if snapshots:
        written.append(plot_curves(snapshots, out / "curves.png"))
        images["Reward and pass rate per round"] = "curves.png"
        after = _after_index(report)
        after_snap = (report.get("snapshots") or [])[after] if after is not None else {}
        written.append(
            plot_humaneval(
                snapshots[0].get("humaneval_pass@1"),
                after_snap.get("humaneval_pass@1"),
                out / "humaneval.png",
                after_label=f"round {after_snap.get('round', after)}",
            )
        )
        images["HumanEval before and after"] = "humaneval.png"
    if report.get("step_curves"):
        written.append(plot_step_curves(report["step_curves"], out / "steps.png"))
        images["Training steps: reward, flat groups, grad norm"] = "steps.png"
    gains = (report.get("learning") or {}).get("gains") or {}
    if any(k.startswith("heldout_") for k in gains):
        rewards = answerer_step_rewards(report.get("step_curves") or [])
        written.append(plot_learning(rewards, gains, out / "learning.png"))
        images["Learning: training reward and held-out sets"] = "learning.png"
    matrix = report.get("cross_play") or []
    if matrix and any(matrix):
        written.append(
            plot_cross_play(
                matrix,
                out / "cross_play.png",
                report.get("cross_play_rows"),
                report.get("cross_play_columns"),
            )
        )
        images["Cross-play: answerer snapshots against generator rounds"] = "cross_play.png"
    md = out / "report.md"
    storage.write_text(str(md), render_markdown(report, images))
    written.append(md)
    return written


def log_to_mlflow(out_dir: str | Path, artifact_path: str = "report") -> int:
    """Log report.md and the PNGs of out_dir as artifacts of the phase's MLflow run (buffered
    through an outage) or of MLflow's active run; returns how many files were handed over (0
    when no run is active)."""
    files = sorted(Path(out_dir).glob("*.png"))
    md = Path(out_dir) / "report.md"
    if md.is_file():
        files.append(md)
    return tracking.log_artifacts(files, artifact_path)
