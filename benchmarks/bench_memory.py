"""Memory benchmark: the peak resident memory of one answerer phase and one generator phase of
configs/learn.yaml at the room study's levels, one training step each, before and after the
memory work, every phase in a process of its own. Each arm runs `--reps` times (at least 3),
interleaved (before, after, before, after, ...); each repetition of each arm runs both phases
on the same problems. Per repetition, arm and phase it prints the peak (the kernel's VmHWM of
the phase's process, sparring.tracking.resources), CPU and wall seconds; then per arm and
phase the peak's median, min and max, and

  BENCH answerer_peak_gib_<arm> median=X min=Y max=Z n=N
  BENCH generator_peak_gib_<arm> ...
  BENCH answerer_peak_ratio median=X min=Y max=Z n=N   (before over after, paired per rep;
                                                       _peak_ratio_parts16: parts16 over after)
  BENCH generator_peak_ratio ...

Where the peak is, measured apart (`stage peaks`: a thread samples the process's resident
memory every 20 ms, each sample labelled by the stage the phase is in): the model (fp32,
~0.5 GiB) and the libraries (~0.65 GiB after imports) are held throughout; the widest sampling
holds a KV cache of rows x tokens x 46 KiB for SmolLM2-135M (`steps.frozen_rows` rows for the
frozen answerer's samples and the trained generator's final tests, `grpo.rollout_batch_size`
in a step); the GRPO update holds the autograd graph of `grpo.loss_micro_batch` rows (all
`grpo.per_device_batch_size` rows at 0). On 2026-12-07 the update was the answerer phase's
peak at 16-row parts (6.3-6.4 GiB, its sampling 2.2-2.6), 5.4 at 8 and 3.4 at 4.

- before: configs/learn.yaml as of 2026-12-06 (the update over all 64 rows of a step at once,
  the frozen answerer and the final tests sampled 256 rows at a time).
- parts16: `grpo.loss_micro_batch=16`, `steps.frozen_rows=64` (configs/learn.yaml from
  2026-12-06 to 2026-12-07).
- after: `grpo.loss_micro_batch=4`, `steps.frozen_rows=64` (configs/learn.yaml since).

Both phases, every arm: levels 2 and 3 of the 14 trained families, one instance a family and
level (28 problems), the answerer's pool screen (28 x 4 frozen samples), one GRPO step of 64
completions (4 problems x 16); the generator with the room study's S-arm settings (catch
reward, 8 frozen samples a problem: 224 rows, stated cases first, 4 final completions a problem
for every training problem: 112 rows). Model: smollm2-135m, or --model tiny-random to check
the harness in a minute.

Usage: .venv/bin/python benchmarks/bench_memory.py [--model smollm2-135m] [--reps 3]
       [--arms before,after] [--phases answerer,generator]   (arms: before, parts16, after)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import benchstats

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]

# the room study's S arm (configs/study/2026-12-03-room.yaml): the generator phase that peaked
# at 15.97 GB (scripts/phase_equivalence.py runs its generator phase with these too)
S_ARM = [
    "rewards.generator=catch",
    "steps.frozen_samples=8",
    "steps.final_tests_all=true",
    "steps.bank_per_problem=3",
    "steps.generator_stated_cases=true",
    "steps.final_samples=4",
]
COMMON = [
    "data.families.levels=[2,3]",
    "data.families.per_family=1",
    "steps.answerer=1",
    "steps.generator=1",
    *S_ARM,
]
ARMS = {
    "before": ["grpo.loss_micro_batch=0", "steps.frozen_rows=256"],
    "parts16": ["grpo.loss_micro_batch=16", "steps.frozen_rows=64"],
    "after": ["grpo.loss_micro_batch=4", "steps.frozen_rows=64"],
}
PHASES = ("answerer", "generator")


class StagePeaks:
    """The process's resident memory sampled every 20 ms by a thread, each sample counted
    toward the stage the phase is in (`hook` wraps a function: while it runs, its stage is
    current); `peaks()` gives each stage's peak in GiB. A stage that ends within 20 ms may be
    missed; the phase's own peak is the kernel's VmHWM (PhaseCost), not this."""

    def __init__(self) -> None:
        import psutil

        self.stack = ["phase"]
        self.gib: dict[str, float] = {}
        self.process = psutil.Process()
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while self.running:
            rss = self.process.memory_info().rss / 2**30
            stage = self.stack[-1]
            self.gib[stage] = max(self.gib.get(stage, 0.0), rss)
            time.sleep(0.02)

    def hook(self, owner: object, name: str, stage: str) -> None:
        inner = getattr(owner, name)

        def staged(*args, **kwargs):
            self.stack.append(stage)
            try:
                return inner(*args, **kwargs)
            finally:
                self.stack.pop()

        setattr(owner, name, staged)

    def peaks(self) -> dict[str, float]:
        self.running = False
        self.thread.join()
        return {stage: round(gib, 2) for stage, gib in self.gib.items()}


def staged_phase() -> StagePeaks:
    """A StagePeaks over the stages of an answerer or generator phase on the torch backend: the
    pool screen's and the frozen answerer's sampling, the final tests' sampling, the model load,
    a GRPO step's generation and scoring, and its update (forward and backward of every part)."""
    from transformers import Trainer

    import sparring.phases.generator as generator
    import sparring.phases.screen as screen
    from sparring.backends.torch import TorchBackend
    from sparring.backends.torch.grpo_trainer import SparringGRPOTrainer

    stages = StagePeaks()
    stages.hook(screen, "sample_frozen_pool", "screen sampling")
    stages.hook(generator, "sample_frozen_pool", "frozen sampling")
    stages.hook(generator, "sample_final_tests", "final tests sampling")
    stages.hook(TorchBackend, "load_trainable", "model load")
    stages.hook(SparringGRPOTrainer, "_generate_and_score_completions", "step: generate+score")
    stages.hook(Trainer, "training_step", "step: update")
    return stages


def child(role: str, model: str, arm: str, data_dir: str, out: str) -> None:
    """One phase in this process; prints `RESULT <json>` with its cost figures."""
    from sparring.config import load_config
    from sparring.tracking.resources import PhaseCost

    sets = [f"models.answerer.name={model}", f"models.generator.name={model}"]
    sets += ["tracking.mlflow_uri=sqlite:///" + os.path.join(out, "mlflow.db")]
    cfg = load_config(ROOT / "configs" / "learn.yaml", [*sets, *COMMON, *ARMS[arm]])
    stages = staged_phase()
    cost = PhaseCost()
    if role == "answerer":
        from sparring.phases.answerer import train_answerer

        metrics = train_answerer(cfg, 1, data_dir, "", None, os.path.join(out, "model"))
    else:
        from sparring.phases.generator import train_generator

        metrics = train_generator(
            cfg, 1, data_dir, "", None, os.path.join(out, "model"),
            os.path.join(out, "tests.jsonl"), os.path.join(out, "frozen.jsonl"),
        )  # fmt: skip
    figures = cost.figures()
    figures["stage_peaks_gib"] = stages.peaks()
    keep = ("completions_trained", "train_seconds", "generation_seconds", "step_time_s")
    figures.update({k: metrics[k] for k in keep if k in metrics})
    print("RESULT " + json.dumps(figures), flush=True)


def run_child(role: str, model: str, arm: str, data_dir: str, out: str) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", role, "--model", model, "--arm", arm]
    cmd += ["--data", data_dir, "--out", out]
    # every repetition samples: a cached frozen pool would take the widest sampling, often
    # the peak, out of every repetition after the first
    env = {**os.environ, "SPARRING_COMPLETION_CACHE": "0"}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{arm} {role}: exited {proc.returncode}")
    return json.loads(lines[-1][len("RESULT ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument(
        "--arms", default="before,after", help="comma-separated, of: " + ", ".join(ARMS)
    )
    parser.add_argument("--phases", default=",".join(PHASES), help="answerer, generator or both")
    parser.add_argument("--child", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--arm", choices=sorted(ARMS), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    benchstats.add_reps_argument(parser)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.model, args.arm, args.data, args.out)
        return
    reps = benchstats.checked_reps(parser, args.reps)
    arms = [a for a in args.arms.split(",") if a]
    phases = [p for p in args.phases.split(",") if p]
    if any(a not in ARMS for a in arms) or len(set(arms)) != len(arms):
        parser.error(f"--arms {args.arms}: different arms among {', '.join(ARMS)}")
    if not phases or any(p not in PHASES for p in phases):
        parser.error(f"--phases {args.phases}: among {', '.join(PHASES)}")

    from sparring.config import load_config
    from sparring.phases.materialize import materialize

    peaks: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(ROOT / "configs" / "learn.yaml", COMMON)
        data_dir = os.path.join(tmp, "data")
        materialize(cfg, data_dir)  # once: every phase of every arm reads these problems
        print(f"{args.model}, {reps} repetitions, arms {', '.join(arms)}", flush=True)
        for rep, arm in benchstats.interleaved(arms, reps):
            for role in phases:
                out = os.path.join(tmp, f"{arm}-{role}-{rep}")
                os.makedirs(out)
                m = run_child(role, args.model, arm, data_dir, out)
                peak = m["phase/peak_rss_mb"] / 1024
                peaks.setdefault((arm, role), []).append(peak)
                print(
                    f"  rep {rep + 1} {arm} {role}: peak {peak:.2f} GiB, cpu "
                    f"{m['phase/cpu_s']:.0f} s, wall {m['phase/wall_s']:.0f} s, trained "
                    f"{m.get('completions_trained', 0):.0f} completions in "
                    f"{m.get('train_seconds', 0):.0f} s; stage peaks (GiB) "
                    + ", ".join(f"{k} {v:.2f}" for k, v in m["stage_peaks_gib"].items()),
                    flush=True,
                )
    for (arm, role), values in peaks.items():
        print(benchstats.bench_line(f"{role}_peak_gib_{arm}", values))
    # each other arm's peak over the after arm's, paired per repetition (`_peak_ratio` for
    # before, `_peak_ratio_<arm>` for any other)
    for arm in [a for a in arms if a != "after"] if "after" in arms else []:
        suffix = "" if arm == "before" else f"_{arm}"
        for role in phases:
            ratios = benchstats.paired_ratios(peaks[(arm, role)], peaks[("after", role)])
            print(benchstats.bench_line(f"{role}_peak_ratio{suffix}", ratios))


if __name__ == "__main__":
    main()
