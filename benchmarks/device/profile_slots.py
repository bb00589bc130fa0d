"""Where the slot decoder's time goes on a CUDA card: SmolLM2-135M's shape with random weights
(no model file to carry), the 32 answerer prompts of bench_gpu (ids in --prompts) x 8 = 256
rows, every row decoding exactly --new tokens (no stop rule), so both arms do the same work.

Prints, each arm after a warm-up, --reps times:
- generate: HF `model.generate` (min_new_tokens = max_new_tokens): ms per decode step;
- slots: `generate_slots` as the sampler calls it, with its parts (graph capture, prefill, the
  graph replays alone, the host's checks) timed apart;
- the eager decode step's kernels (torch.profiler) with --attention: launches per step, GPU ms
  per step, top ops;
- compiled: the decode step through torch.compile, then captured into the same CUDA graph.
A diagnostic run by hand (benchmarks/device/), not a benchmark of record: bench_gpu.py is.
Here first: `--write-prompts .gpu-kit/prompts/prompts.json` (prepare.sh does it); there, with
carry [".gpu-kit/whl", ".gpu-kit/prompts"] and the wheels installed as bench.sh does, no model
file: `python3 benchmarks/device/profile_slots.py [--parts slots,profile]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: bench_gpu's helpers
from bench_gpu import NeverStop, sync, timed


def write_prompts(path: str) -> None:
    """The token ids of bench_gpu's 32 answerer prompts (the learn config's first training
    problems, SmolLM2's chat template), for the device, where the model file is not carried."""
    import tempfile

    from sparring.backends.sampler import load_answerer
    from sparring.backends.text import render_prompt
    from sparring.config import load_config
    from sparring.phases.common import train_problems
    from sparring.phases.materialize import materialize
    from sparring.problems.prompts import answerer_messages

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            Path(__file__).resolve().parents[2] / "configs" / "learn.yaml",
            ["steps.problems_per_phase=96", f"tracking.mlflow_uri=sqlite:///{tmp}/mlflow.db"],
        )
        materialize(cfg, f"{tmp}/data")
        problems = train_problems(f"{tmp}/data")[:32]
    tok = load_answerer("smollm2-135m", rows=8).tokenizer
    ids = [
        tok(render_prompt(tok, answerer_messages(p, ("code",))), add_special_tokens=False)[
            "input_ids"
        ]
        for p in problems
    ]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"prompts": ids}))
    print(f"wrote {path}: {len(ids)} prompts of {min(map(len, ids))}-{max(map(len, ids))} tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default=".gpu-kit/prompts/prompts.json")
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--parts", default="generate,slots,profile,compiled")
    parser.add_argument(
        "--attention", default="matmul", help="the decode attention the profile part runs"
    )
    parser.add_argument(
        "--write-prompts", metavar="PATH", help="here, first: write --prompts' file and stop"
    )
    args = parser.parse_args()
    if args.write_prompts:
        write_prompts(args.write_prompts)
        return
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from sparring.backends.torch import slot_decoder as sd
    from sparring.backends.torch.generation import pick_next

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    config = LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536,
        num_hidden_layers=args.layers, num_attention_heads=9, num_key_value_heads=3,
        max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True, head_dim=64,
    )  # fmt: skip
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    with open(args.prompts) as f:
        data = json.load(f)
    prompts = [p for p in data["prompts"] for _ in range(8)]
    rows = len(prompts)
    print(f"{torch.cuda.get_device_name(0) if cuda else 'cpu'}: {rows} rows, {args.new} new")

    def pick(x):
        return pick_next(x, False, 0.7, 1.0)

    def slots():
        with torch.inference_mode():
            return sd.generate_slots(
                model, prompts, max_new_tokens=args.new, batch_size=rows, pick=pick,
                stop=NeverStop(), pad_token_id=0,
            )  # fmt: skip

    parts = args.parts.split(",")

    def part_generate() -> None:
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)

        def generate():
            with torch.inference_mode():
                return model.generate(
                    input_ids=ids, attention_mask=mask, do_sample=True, temperature=0.7,
                    top_k=0, max_new_tokens=args.new, min_new_tokens=args.new, pad_token_id=0,
                )  # fmt: skip

        timed(generate)
        for rep in range(args.reps):
            s, _ = timed(generate)
            print(f"generate rep {rep + 1}: {s:.3f} s, {1000 * s / args.new:.2f} ms/step, "
                  f"{rows * args.new / s:.0f} tokens/s", flush=True)  # fmt: skip

    def part_slots() -> None:
        spent: dict[str, float] = {}

        def clocked(name, fn):
            def wrapper(*a, **k):
                sync()
                t = time.perf_counter()
                out = fn(*a, **k)
                sync()
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
                return out

            return wrapper

        original = sd._Slots.capture, sd._Slots.admit
        timed(slots)
        for rep in range(args.reps):
            spent.clear()
            sd._Slots.capture = clocked("capture", original[0])
            sd._Slots.admit = clocked("admit", original[1])
            s, out = timed(slots)
            sd._Slots.capture, sd._Slots.admit = original
            parts_ms = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in spent.items())
            tokens = sum(map(len, out))
            print(
                f"slots rep {rep + 1}: {s:.3f} s, {tokens / s:.0f} tokens/s; {parts_ms}", flush=True
            )
        state = sd._Slots(model, rows, max(map(len, prompts)) + args.new + 9, pick)
        with torch.inference_mode():
            state.admit(list(range(rows)), prompts, 0)
            if cuda:
                state.capture(sum(map(len, prompts)) // rows + args.new // 2)
                print(f"decode attention ms per step: {state.step_ms}", flush=True)
                state.admit(list(range(rows)), prompts, 0)
            s, _ = timed(lambda: [state.run_step() for _ in range(args.new)])
            print(f"slots replay alone: {1000 * s / args.new:.2f} ms/step "
                  f"({'graph' if state.graph is not None else 'eager'})", flush=True)  # fmt: skip
            state.admit(list(range(rows)), prompts, 0)
            s2, _ = timed(lambda: [state.step() for _ in range(args.new)])
            print(f"slots eager step: {1000 * s2 / args.new:.2f} ms/step", flush=True)

    def part_profile() -> None:
        from torch.profiler import ProfilerActivity, profile

        state = sd._Slots(model, rows, max(map(len, prompts)) + args.new + 9, pick)
        state.attention = args.attention
        print(f"profile: {args.attention} attention", flush=True)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with torch.inference_mode():
            state.admit(list(range(rows)), prompts, 0)
            state.step()
            sync()
            steps = 4
            with profile(activities=activities) as prof:
                for _ in range(steps):
                    state.step()
                sync()
        events = prof.key_averages()
        if cuda:
            kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
            gpu_us = sum(e.device_time for e in kernels)
            print(f"profile: {len(kernels) / steps:.0f} kernels per step, "
                  f"{gpu_us / steps / 1000:.2f} GPU ms per step", flush=True)  # fmt: skip
            key = "self_device_time_total"
        else:
            key = "self_cpu_time_total"
        print(events.table(sort_by=key, row_limit=22, max_name_column_width=60), flush=True)

    def part_compiled() -> None:
        state = sd._Slots(model, rows, max(map(len, prompts)) + args.new + 9, pick)
        compiled = torch.compile(state.step, dynamic=False)
        with torch.inference_mode():
            state.admit(list(range(rows)), prompts, 0)
            s, _ = timed(lambda: [compiled() for _ in range(3)])
            print(f"compiled: first 3 steps (compiling) {s:.1f} s", flush=True)
            s, _ = timed(lambda: [compiled() for _ in range(args.new)])
            print(f"compiled eager-launched: {1000 * s / args.new:.2f} ms/step", flush=True)
            if cuda:
                state.positions.zero_()
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    compiled()
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    compiled()
                state.positions.zero_()
                s, _ = timed(lambda: [graph.replay() for _ in range(args.new)])
                print(f"compiled in a CUDA graph: {1000 * s / args.new:.2f} ms/step", flush=True)

    runs = {
        "generate": part_generate,
        "slots": part_slots,
        "profile": part_profile,
        "compiled": part_compiled,
    }
    for name in parts:
        try:
            runs[name]()
        except Exception:
            import traceback

            print(f"part {name} failed:", flush=True)
            traceback.print_exc()


if __name__ == "__main__":
    main()
