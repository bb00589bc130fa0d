"""Training benchmarks. Each arm runs `--reps` times (at least 3), interleaved (A B A B A B), on
the same problems with the same budgets; each BENCH line gives the median, smallest and largest of
the ratios paired per repetition and their number. Prints two lines:

  BENCH frozen_reuse_speedup median=X min=Y max=Z n=N
      Reward cost of one generator GRPO step with reuse (the frozen answerer's solutions sampled
      once before the phase + the per (solution, test) result cache) against resampling the
      frozen answerer every step (generation + running every test, no cache). Same run, same
      tiny-random frozen model, same generator completions (built from mutated baseline tests,
      overlapping from step to step as a generator's samples do). Unparseable frozen samples are
      replaced by the reference solution in both arms so both run the same code. Each
      repetition of the reuse arm starts from an empty cache.
  BENCH shared_topology_memory_ratio median=X min=Y max=Z n=N
      Peak RSS of a shared-topology LoRA run (one base, adapters `answerer` and `generator`, a few
      GRPO steps of each) over a single-role LoRA run of the same model, each in a fresh
      subprocess (resource.getrusage maxrss). Model: smollm2-135m when its converted cache exists
      (or --model), else tiny-random; the line says which.

Usage: .venv/bin/python benchmarks/bench_training.py [--model NAME] [--steps N] [--reps R]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchstats

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def _completions(problems, step: int, per_problem: int) -> tuple[list[str], list[str]]:
    from sparring.phases.generator import fallback_tests

    rng = random.Random(step)
    texts, ids = [], []
    for p in problems:
        pool = fallback_tests(p, 8) + list(p.baseline_tests)
        for _ in range(per_problem):
            tests = rng.sample(pool, min(3, len(pool)))
            texts.append("```python\n" + "\n".join(tests) + "\n```")
            ids.append(p.id)
    return texts, ids


def bench_reuse(reps: int, steps: int = 3) -> list[float]:
    """The reward cost of a generator step without reuse over with it, per repetition."""
    from sparring.backends.torch import models
    from sparring.backends.torch.generation import generate
    from sparring.config import load_config
    from sparring.phases.materialize import materialize
    from sparring.problems import read_jsonl
    from sparring.problems.programs import extract_code
    from sparring.problems.prompts import answerer_messages
    from sparring.rewards import code_duel
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import untrusted_limits

    sets = [
        "data.max_problems=8",
        "data.humaneval_limit=1",
        "steps.frozen_samples=4",
        "grpo.max_completion_length=64",
    ]
    cfg = load_config(ROOT / "configs/smoke.yaml", sets)
    with tempfile.TemporaryDirectory() as tmp:
        materialize(cfg, tmp)
        problems = read_jsonl(Path(tmp) / "train.jsonl")[:4]
    model, tok = models.load_model("tiny-random")
    msgs = [answerer_messages(p) for p in problems]
    per_problem = cfg.grpo.num_generations * 2

    def sample(seed: int) -> dict[str, list[str]]:
        texts = generate(
            model,
            tok,
            msgs,
            max_new_tokens=cfg.grpo.max_completion_length,
            temperature=cfg.grpo.temperature,
            num_samples=cfg.steps.frozen_samples,
            seed=seed,
        )
        return {
            p.id: [extract_code(t, p.function_name) or p.reference_solution for t in ts]
            for p, ts in zip(problems, texts, strict=True)
        }

    def infos(sols):
        return {
            p.id: code_duel.ProblemInfo(
                p.id, p.function_name, p.reference_solution, list(p.baseline_tests), sols[p.id]
            )
            for p in problems
        }

    def reuse_step() -> float:
        # sample once (before the phase), then a cached scorer every step
        scorer = code_duel.GeneratorScorer(infos(sample(0)), sb)
        scorer.score(*_completions(problems, 0, per_problem))  # step 0: cold cache, not timed
        t = time.perf_counter()
        for step in range(1, steps + 1):
            scorer.score(*_completions(problems, step, per_problem))
        return (time.perf_counter() - t) / steps

    def resample_step() -> float:
        # resample the frozen answerer and run everything, every step
        t = time.perf_counter()
        for step in range(1, steps + 1):
            fresh = code_duel.GeneratorScorer(
                infos(sample(step)), sb, cache=code_duel.ResultCache()
            )
            fresh.cache = _NoCache()
            fresh.score(*_completions(problems, step, per_problem))
        return (time.perf_counter() - t) / steps

    arms = {"reuse": reuse_step, "resample": resample_step}
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    with Sandbox(untrusted_limits(cfg)) as sb:
        sb.run_many([(problems[0].reference_solution, problems[0].baseline_tests)])  # warm up
        for rep, name in benchstats.interleaved(list(arms), reps):
            seconds[name].append(arms[name]())
            print(f"rep {rep + 1} {name}: {seconds[name][-1]:.3f} s per step", file=sys.stderr)
    return benchstats.paired_ratios(seconds["resample"], seconds["reuse"])


class _NoCache:
    """A cache that never remembers (the no-reuse arm)."""

    hits = misses = 0

    def get(self, code, test):
        return None

    def put(self, code, test, passed):
        pass

    def __len__(self):
        return 0


# --------------------------------------------------------------------------- memory


def memory_child(mode: str, model_name: str, steps: int) -> None:
    """Run in a fresh subprocess: a few LoRA GRPO steps; print the peak RSS in MiB as JSON."""
    from datasets import Dataset

    from sparring.backends.torch import models
    from sparring.backends.torch.grpo import peak_memory_mb, run_grpo
    from sparring.config import load_config

    cfg = load_config(ROOT / "configs/smoke.yaml", ["grpo.max_completion_length=16"])

    def reward(prompts, completions, **kw):
        return [float(len(c[-1]["content"])) for c in completions]

    reward.__name__ = "length"
    ds = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": f"Tell me about {w}."}]} for w in ("cats", "dogs")]
    )
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "shared":
            model, tok = models.shared_peft_model(model_name, cfg.lora)
            for role in ("answerer", "generator"):
                models.ensure_adapter(model, role, None, cfg.lora)
                run_grpo(model, tok, ds, reward, cfg, steps, tmp, 0)
        else:
            model, tok = models.load_model(model_name)
            run_grpo(model, tok, ds, reward, cfg, steps, tmp, 0, models.peft_lora_config(cfg.lora))
    print(json.dumps({"peak_mb": peak_memory_mb()}))


def bench_memory(model_name: str, steps: int, reps: int) -> list[float]:
    """Peak RSS of the shared topology over a single role's, per repetition."""
    peaks: dict[str, list[float]] = {"single": [], "shared": []}
    for rep, mode in benchstats.interleaved(list(peaks), reps):
        cmd = [
            sys.executable,
            __file__,
            "--memory-child",
            mode,
            "--model",
            model_name,
            "--steps",
            str(steps),
        ]
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ, HF_HUB_OFFLINE="1"),
        )
        peaks[mode].append(json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"])
        print(f"rep {rep + 1} {mode}: peak RSS {peaks[mode][-1]:.0f} MiB", file=sys.stderr)
    return benchstats.paired_ratios(peaks["shared"], peaks["single"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--memory-child", choices=("single", "shared"))
    benchstats.add_reps_argument(ap)
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.model, args.steps)
        return
    from sparring.backends.torch import models

    model = args.model or (
        "smollm2-135m"
        if (models.cache_dir() / "smollm2-135m" / "config.json").is_file()
        else "tiny-random"
    )
    reps = benchstats.checked_reps(ap, args.reps)
    print(benchstats.bench_line("frozen_reuse_speedup", bench_reuse(reps)), flush=True)
    print(f"memory: {model}, {args.steps} GRPO steps per role", flush=True)
    print(
        benchstats.bench_line("shared_topology_memory_ratio", bench_memory(model, args.steps, reps))
    )


if __name__ == "__main__":
    main()
