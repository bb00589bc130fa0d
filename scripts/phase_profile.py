"""Where a study run's time goes, step by step, from a py-spy recording of `sparring study`.

Record it (py-spy follows the runs' phase processes; 2 samples a second cost next to nothing):

    py-spy record --subprocesses --nonblocking --rate 2 --format raw -o profile.txt -- \
        python -m sparring.cli.main study --study configs/study/<name>.yaml --jobs 2

then `python scripts/phase_profile.py profile.txt` prints, per run, the minutes its phase
processes spent active in each step: the frozen answerer sampled once (a generator phase's, or
an answerer phase's screen), the GRPO steps (their sampling and their update apart), the final
tests, the evaluation. Minutes are samples / rate: time on a core, not wall time. Standard
library only; the steps are told apart by the function names on each sampled stack.
"""

from __future__ import annotations

import argparse
import collections
import re

STEPS = (
    ("frozen answerer sampled once", r"sample_frozen\b|sample_frozen_pool|sample_frozen_solutions"),
    ("final tests", r"sample_final_tests"),
    ("GRPO steps", r"train_test_writer|grpo_trainer|GRPOTrainer|training_step|\b_train\b"),
    ("evaluate", r"evaluate_snapshots|phases/evaluate"),
)
SAMPLING = r"generation\.py|slot_decoder|grpo_sampling|decode"
UPDATE = r"backward|grpo_loss|compute_loss|optimizer"
RUN = re.compile(r"name[=:] ?([\w.-]+-t\d+)")


def records(text: str) -> list[tuple[str, int]]:
    """(stack, samples) of py-spy's raw format; a process's command line may span lines."""
    parts = re.split(r" (\d+)\n(?=process |\Z)", text)
    return [(parts[i], int(parts[i + 1])) for i in range(0, len(parts) - 1, 2)]


def profile(recs: list[tuple[str, int]]) -> dict[str, collections.Counter]:
    """Per run, samples by step (and the GRPO steps' sampling and update apart)."""
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for stack, n in recs:
        found = RUN.search(stack)
        if not found or not re.search(r"phases/(table|evaluate)\.py", stack):
            continue  # a parent waiting on its phase process, or the study's own
        frames = [f for f in stack.split(";") if not f.startswith("process ")]
        step = next((s for s, pat in STEPS if any(re.search(pat, f) for f in frames)), "other")
        counts = out[found.group(1)]
        counts[step] += n
        if step == "GRPO steps":
            sampling = any(re.search(SAMPLING, f) for f in frames)
            update = any(re.search(UPDATE, f) for f in frames)
            part = "sampling" if sampling else "update" if update else "other"
            counts[f"  GRPO {part}"] += n
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile", help="py-spy record --format raw output")
    p.add_argument("--rate", type=float, default=2.0, help="py-spy's samples a second (2)")
    args = p.parse_args()
    with open(args.profile) as f:
        found = profile(records(f.read()))
    for run, counts in sorted(found.items()):
        total = sum(n for k, n in counts.items() if not k.startswith(" "))
        print(f"{run}: {total / args.rate / 60:.1f} min active in its phases")
        steps = [(k, n) for k, n in counts.most_common() if not k.startswith(" ")]
        for step, n in steps:
            print(f"  {step:36s} {n / args.rate / 60:6.1f} min  {n / total:6.1%}")
            if step == "GRPO steps":  # its sampling and its update beneath it
                for part, m in counts.most_common():
                    if part.startswith("  GRPO"):
                        print(f"  {part:36s} {m / args.rate / 60:6.1f} min  {m / total:6.1%}")


if __name__ == "__main__":
    main()
