"""Issue 45's arms pooled over training seeds run from more than one starting model: each
start's self-play and given runs, paired over the held-out new tasks, the starts weighed
equally (`arms.pooled_by_start_line`: the interval resamples tasks, and runs within each
start and arm), beside every run's own numbers.

A manifest (docs/results/selfplay-seeds-*.json) names each start's runs by the prefix of their
files (`<prefix>-heldout.json`, the evaluate phase's heldout.json; `<prefix>-generator.json`,
where kept, its report's `generator_heldout`: the base and final generators' numbers per
held-out problem):

    {"starts": [{"start": "the format-only control's adapter", "code": "3c5307a",
                 "treatment": ["docs/results/learn-l2-gen4d-dev-t1-2026-11-29"],
                 "control": ["docs/results/learn-given-screen-l2-dev-t1-2026-11-29"]}]}

The generator's held-out catch rate is pooled over a start's self-play runs that kept their
`-generator.json` (`intervals.task_gain`: one base generator and one pool of answers per start,
so the base numbers agree; the interval resamples tasks and runs), one line per start.

What it leaves out: running anything, and choosing (every run of the manifest counts).

With `--figure PNG` it also draws issue 45's figure: each run's every-test-passed final on the
held-out new tasks by arm and start, and each self-play run's generator catch rate on them, base
against trained (from its `-learn.txt`).

Usage: .venv/bin/python scripts/selfplay_pool.py docs/results/selfplay-seeds-2026-11-30.json
       [--figure docs/img/selfplay-seeds.png]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from sparring.evaluation.arms import ARM_MEASURES, pooled_by_start_line
from sparring.evaluation.heldout import Heldout
from sparring.evaluation.intervals import interval_text, task_gain


def load(prefix: str) -> tuple[str, Heldout]:
    return Path(prefix).name, Heldout.load(f"{prefix}-heldout.json")


def strict_final(data: Heldout) -> float:
    """The run's mean every-test-passed final over its new-task problems."""
    finals = [pair[1] for pair in data.set_pairs("run", "new_tasks", "strict").values()]
    return sum(finals) / len(finals)


def catch_pairs(prefix: str) -> dict[str, list[float]] | None:
    """{problem id: [base, final] catch rate} of a run's `-generator.json`, over the problems
    whose pool holds a wrong answer (as generator_heldout.generator_summary); None if not kept."""
    path = Path(f"{prefix}-generator.json")
    if not path.exists():
        return None
    numbers = json.loads(path.read_text())
    base, final = numbers["base"], numbers["final"]
    return {
        pid: [base[pid]["catch_rate"], final[pid]["catch_rate"]]
        for pid in sorted(set(base) & set(final))
        if base[pid]["wrong"]
    }


def catch_line(start: dict) -> str | None:
    runs = [pairs for p in start["treatment"] if (pairs := catch_pairs(p)) is not None]
    if not runs:
        return None
    tasks = Heldout.load(f"{start['treatment'][0]}-heldout.json").tasks or {}
    gain = task_gain(runs, tasks)
    return (
        f"LEARN generator_catch_heldout base={gain['before']:.3f} final={gain['after']:.3f} "
        f"{interval_text(gain)} start={start['start']!r}"
    )


def learn_catch(prefix: str) -> tuple[float, float] | None:
    """(base, final) of the `LEARN generator_catch_heldout` line a run printed, if it did."""
    path = Path(f"{prefix}-learn.txt")
    text = path.read_text() if path.exists() else ""
    match = re.search(r"^LEARN generator_catch_heldout base=([\d.]+) final=([\d.]+)", text, re.M)
    return (float(match.group(1)), float(match.group(2))) if match else None


def figure(manifest: dict, starts: list, out: str) -> None:
    """Left: each run's every-test-passed final by arm (a start a marker); right: each
    self-play run's generator catch rate, base -> trained."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    markers = "os^D"
    for k, (start, (treated, control)) in enumerate(zip(manifest["starts"], starts, strict=True)):
        for x, runs in ((0, control), (1, treated)):
            ys = [strict_final(data) for _, data in runs]
            xs = [x + 0.08 * (k - 0.5) for _ in ys]
            label = start["start"] if x == 1 else None
            left.scatter(xs, ys, marker=markers[k % 4], color=f"C{k}", label=label)
        for i, prefix in enumerate(start["treatment"]):
            catch = learn_catch(prefix)
            if catch:
                label = start["start"] if i == 0 else None
                right.plot([0, 1], catch, marker=markers[k % 4], color=f"C{k}", label=label)
    left.set_xticks([0, 1], ["given tests (screened)", "self-play"])
    left.set_ylabel("held-out new tasks: every test passed (final)")
    left.set_xlim(-0.5, 1.5)
    left.set_ylim(bottom=0)
    left.legend(fontsize=7, title="start", title_fontsize=7)
    right.set_xticks([0, 1], ["base generator", "trained generator"])
    right.set_ylabel("held-out catch rate (wrong answers caught)")
    right.set_xlim(-0.3, 1.3)
    right.set_ylim(bottom=0)
    right.legend(fontsize=7, title="start", title_fontsize=7)
    fig.suptitle("Issue 45 on the development split: one point or line per training seed")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str]) -> int:
    figure_out = None
    if len(argv) == 3 and argv[1] == "--figure":
        argv, figure_out = argv[:1], argv[2]
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    manifest = json.loads(Path(argv[0]).read_text())
    starts = [
        ([load(p) for p in start["treatment"]], [load(p) for p in start["control"]])
        for start in manifest["starts"]
    ]
    print("| start | arm | run | new tasks every test passed, final (mean over problems) |")
    print("| --- | --- | --- | --- |")
    for start, (treated, control) in zip(manifest["starts"], starts, strict=True):
        for arm, runs in (("self-play", treated), ("given", control)):
            for name, data in runs:
                print(f"| {start['start']} | {arm} | {name} | {strict_final(data):.3f} |")
    print()
    for measure, suffix in ARM_MEASURES:
        try:
            print(pooled_by_start_line("selfplay_vs_given" + suffix, starts, measure=measure))
        except ValueError as exc:
            print(f"selfplay_vs_given{suffix}: {exc}", file=sys.stderr)
            return 1
    for start in manifest["starts"]:
        line = catch_line(start)
        print(line or f"generator_catch_heldout: no -generator.json kept for {start['start']!r}")
    if figure_out:
        figure(manifest, starts, figure_out)
        print(f"figure: {figure_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
