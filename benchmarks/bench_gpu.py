"""GPU benchmark (`make bench-gpu`): Sparring's sampler against `model.generate` on one CUDA card,
then one answerer GRPO phase of configs/learn.yaml at 256 completions per step and one snapshot
evaluation, in one run of at most 10 minutes (preparing the model included).

1. Sampling, the same prompts in every arm: the first `--rows / 8` training problems of the
   learn config, 8 completions each, at its temperature, top_p and completion budget, in rows
   of `--rows`. Arms, interleaved (`--reps` times each):
   - generate: plain HF `model.generate` on the left-padded batch (stops at EOS only);
   - refill: Sparring's refill decoder (the CPU's, and every device's before the slot decoder);
   - sampler: `sample_answers` through `load_answerer` (what evaluation and inference call),
     which on CUDA decodes with the slot decoder (static cache, CUDA graph);
   - generate_same_length, sampler_same_length: `generate` and Sparring's decoder with every
     row decoding the whole completion budget (no EOS, no fence): the same work in both.
   Each of the first three arms' tokens are its own kept tokens (generate: up to EOS; the
   others: up to EOS or the closing fence, which is all that is scored: generate is credited
   with the text it writes after the code block). Prints per repetition completions/s and
   tokens/s, then `BENCH gpu_sampler_vs_generate`, `gpu_sampler_vs_refill` and
   `gpu_sampler_vs_generate_same_length` (paired tokens/s ratios), and the share of greedy
   completions on which the slot and refill decoders agree (bf16: rounding may part them late
   in a completion).
2. One snapshot evaluation (`model_metrics` of the base model: the learn config's HumanEval
   slice greedy, its held-out problems greedy and `data.val_samples` sampled): seconds.
3. One answerer GRPO phase (`train_answerer`, `--steps` steps of `--rows` completions, groups
   of 8): seconds per step split into sampling, scoring and the update.

Writes every figure to `--out` (JSON) as it goes. Without CUDA it prints one line and exits 2;
`--allow-cpu` rehearses the harness on the CPU (with --model tiny-random and small --rows).

Usage: .venv/bin/python benchmarks/bench_gpu.py [--model smollm2-135m] [--rows 256] [--reps 3]
       [--steps 3] [--out bench-gpu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import benchstats

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
GROUP = 8


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


class Record:
    """Figures written to a JSON file after every addition (a killed run keeps what it had)."""

    def __init__(self, path: str) -> None:
        self.path, self.data = path, {}

    def add(self, key: str, value) -> None:
        self.data[key] = value
        Path(self.path).write_text(json.dumps(self.data, indent=1, sort_keys=True))


def generate_arm(model, tok, texts: list[str], cfg) -> tuple[int, int]:
    """(completions, tokens up to EOS) of plain `model.generate` on the left-padded batch."""
    import torch

    tok.padding_side = "left"
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    with torch.inference_mode():
        ids = model.generate(
            **enc, do_sample=True, temperature=cfg.grpo.temperature, top_p=cfg.grpo.top_p,
            top_k=0, max_new_tokens=cfg.grpo.max_completion_length,
            pad_token_id=tok.pad_token_id,
        )  # fmt: skip
    new = ids[:, enc["input_ids"].shape[1] :].tolist()
    eos = tok.eos_token_id
    return len(new), sum(row.index(eos) if eos in row else len(row) for row in new)


class NeverStop:
    """A stop rule that ends no row (the same-length arms: every row decodes the full budget)."""

    eos_token_ids = frozenset()

    def start(self, rows: int) -> None:
        self.ended = [False] * rows

    def add(self, row: int, token: int, generated: int) -> bool:
        return False


def same_length_arms(model, tok, texts: list[str], cfg, rows: int) -> dict:
    """`generate` and Sparring's decoder with every row decoding exactly the completion budget
    (no EOS, no fence): the same work in both, so tokens/s compares decoding speed alone."""
    import torch

    from sparring.backends.torch.generation import decode

    budget = cfg.grpo.max_completion_length
    prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    tok.padding_side = "left"
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)

    def generate():
        with torch.inference_mode():
            model.generate(
                **enc, do_sample=True, temperature=cfg.grpo.temperature, top_p=cfg.grpo.top_p,
                top_k=0, max_new_tokens=budget, min_new_tokens=budget,
                pad_token_id=tok.pad_token_id,
            )  # fmt: skip
        return len(texts), len(texts) * budget

    def sampler():
        with torch.inference_mode():
            out = decode(
                model.eval(), prompts, max_new_tokens=budget, batch_size=rows,
                temperature=cfg.grpo.temperature, top_p=cfg.grpo.top_p, stop=NeverStop(),
                pad_token_id=tok.pad_token_id,
            )  # fmt: skip
        return len(out), sum(len(r) for r in out)

    return {"generate_same_length": generate, "sampler_same_length": sampler}


def refill_arm(model, tok, texts: list[str], cfg, rows: int, greedy: bool = False):
    """(completions, kept tokens, ids) of Sparring's refill decoder on the same prompts."""
    import torch

    from sparring.backends.torch.generation import FenceStop, _generate_refill, pick_next

    prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    temperature, top_p = cfg.grpo.temperature, cfg.grpo.top_p
    with torch.inference_mode():
        out = _generate_refill(
            model.eval(), prompts, max_new_tokens=cfg.grpo.max_completion_length,
            batch_size=rows, pick=lambda x: pick_next(x, greedy, temperature, top_p),
            stop=FenceStop(tok, 0, eos_token_ids=[tok.eos_token_id]),
            pad_token_id=tok.pad_token_id,
        )  # fmt: skip
    return len(out), sum(len(r) for r in out), out


def slots_greedy(model, tok, texts: list[str], cfg, rows: int):
    import torch

    from sparring.backends.torch.generation import FenceStop, decode

    prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    with torch.inference_mode():
        return decode(
            model.eval(), prompts, max_new_tokens=cfg.grpo.max_completion_length,
            batch_size=rows, temperature=0.0, top_p=1.0,
            stop=FenceStop(tok, 0, eos_token_ids=[tok.eos_token_id]),
            pad_token_id=tok.pad_token_id,
        )  # fmt: skip


def timed(fn):
    sync()
    start = time.perf_counter()
    result = fn()
    sync()
    return time.perf_counter() - start, result


def bench_sampling(cfg, model_name: str, problems, rows: int, reps: int, rec: Record) -> None:
    from sparring.backends.sampler import load_answerer, sample_answers
    from sparring.backends.text import render_prompt
    from sparring.backends.torch.generation import decoder_for
    from sparring.problems.prompts import answerer_messages

    chosen = problems[: max(1, rows // GROUP)]
    loaded = load_answerer(model_name, rows=rows)
    model, tok = loaded.model, loaded.tokenizer
    texts = [render_prompt(tok, answerer_messages(p, ("code",))) for p in chosen]
    flat = [t for t in texts for _ in range(GROUP)]
    decoder = decoder_for(model)
    print(
        f"sampling: {len(chosen)} problems x {GROUP} = {len(flat)} rows, model on "
        f"{model.device} ({model.dtype}), sampler decoder: {decoder}",
        flush=True,
    )
    rec.add("sampling_setup", {"rows": len(flat), "decoder": decoder, "dtype": str(model.dtype)})

    def sampler():
        out = sample_answers(
            loaded, chosen, max_new_tokens=cfg.grpo.max_completion_length,
            temperature=cfg.grpo.temperature, top_p=cfg.grpo.top_p, num_samples=GROUP, seed=1,
        )  # fmt: skip
        return sum(len(t) for t in out.texts), out.tokens

    arms = {
        "generate": lambda: generate_arm(model, tok, flat, cfg),
        "refill": lambda: refill_arm(model, tok, flat, cfg, rows)[:2],
        "sampler": sampler,
        **same_length_arms(model, tok, flat, cfg, rows),
    }
    for fn in arms.values():  # warm-up: CUDA context, kernels, the graph's first capture
        timed(fn)
    if decoder == "slots":
        from sparring.backends.torch.slot_decoder import _KEPT

        kept = _KEPT.get(model)
        if kept is not None:
            state = kept[1]
            print(
                f"  slot decoder: {state.attention} attention; ms per step {state.step_ms}; "
                f"Triton tiles, ms per layer {state.kernel_ms}"
            )
            rec.add(
                "decode_attention",
                {"chosen": state.attention, "ms": state.step_ms, "triton_ms": state.kernel_ms},
            )
    tps: dict[str, list[float]] = {name: [] for name in arms}
    for rep, name in benchstats.interleaved(list(arms), reps):
        seconds, (completions, tokens) = timed(arms[name])
        tps[name].append(tokens / seconds)
        line = (
            f"  rep {rep + 1} {name}: {completions} completions, {tokens} tokens in "
            f"{seconds:.2f} s: {completions / seconds:.1f} completions/s, "
            f"{tokens / seconds:.0f} tokens/s"
        )
        print(line, flush=True)
        rec.add(f"sampling_rep{rep + 1}_{name}", {"seconds": seconds, "tokens": tokens,
                                                   "completions": completions})  # fmt: skip
    for name, values in tps.items():
        print(f"  {name}: tokens/s {benchstats.spread(values, 0)}", flush=True)
    pairs = {
        "sampler_vs_generate": ("sampler", "generate"),
        "sampler_vs_refill": ("sampler", "refill"),
        "sampler_vs_generate_same_length": ("sampler_same_length", "generate_same_length"),
    }
    for name, (arm, baseline) in pairs.items():
        ratios = benchstats.paired_ratios(tps[arm], tps[baseline])
        print(benchstats.bench_line(f"gpu_{name}", ratios), flush=True)
        rec.add(name, ratios)
    if decoder == "slots":
        greedy_texts = texts[: min(len(texts), 32)]
        by_refill = refill_arm(model, tok, greedy_texts, cfg, rows, greedy=True)[2]
        by_slots = slots_greedy(model, tok, greedy_texts, cfg, rows)
        same = sum(a == b for a, b in zip(by_refill, by_slots, strict=True))
        prefix = [
            next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
            for a, b in zip(by_refill, by_slots, strict=True)
        ]
        print(
            f"  greedy: slots and refill agree on {same}/{len(greedy_texts)} completions "
            f"(first difference at token {sorted(prefix)[len(prefix) // 2]} in the median one)",
            flush=True,
        )
        rec.add("greedy_agreement", {"same": same, "n": len(greedy_texts), "prefix": prefix})


def bench_evaluation(cfg, model_name: str, data_dir: str, rec: Record) -> None:
    from sparring.evaluation.snapshots import model_metrics
    from sparring.problems import read_jsonl
    from sparring.sandbox.limits import trusted_limits

    data = Path(data_dir)
    eval_problems = read_jsonl(data / "eval.jsonl") if (data / "eval.jsonl").is_file() else []
    eval_problems = eval_problems[: cfg.data.humaneval_limit or None]
    val = read_jsonl(data / "val.jsonl")
    solve = {p.id: p for p in val}
    seconds, (metrics, _) = timed(
        lambda: model_metrics(cfg, model_name, eval_problems, val, solve, {}, trusted_limits(cfg))
    )
    print(
        f"evaluation of one snapshot ({len(eval_problems)} HumanEval greedy, {len(val)} held-out "
        f"greedy and x{cfg.data.val_samples} sampled, rows {cfg.grpo.rollout_batch_size}): "
        f"{seconds:.1f} s; held-out sampled discriminating "
        f"{metrics.get('val_sampled_discriminating') or 0:.3f}",
        flush=True,
    )
    rec.add("evaluation_seconds", seconds)


def bench_grpo(cfg, data_dir: str, tmp: str, rec: Record) -> None:
    from sparring.phases.answerer import train_answerer

    seconds, m = timed(lambda: train_answerer(cfg, 1, data_dir, "", None, os.path.join(tmp, "a")))
    steps = max(1.0, cfg.steps.answerer)
    update = m["train_seconds"] - m["generation_seconds"] - m["reward_seconds"]
    print(
        f"GRPO: {cfg.steps.answerer} steps of {cfg.grpo.per_device_batch_size} completions, "
        f"{m.get('completions_trained', 0):.0f} trained; per step {m['train_seconds'] / steps:.1f}"
        f" s: sampling {m['generation_seconds'] / steps:.1f}, scoring "
        f"{m['reward_seconds'] / steps:.1f} (and "
        f"{m.get('scoring_overlapped_seconds', 0) / steps:.1f} during sampling), update "
        f"{update / steps:.1f}; phase {seconds:.0f} s "
        f"with model load and save; peak memory {m.get('peak_memory_mb', 0):.0f} MB",
        flush=True,
    )
    rec.add("grpo", {k: v for k, v in m.items() if isinstance(v, (int, float))})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rows", type=int, default=256, help="completions decoded at once")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps of --rows completions")
    parser.add_argument("--out", default="bench-gpu.json", help="JSON file of every figure")
    parser.add_argument("--parts", default="sampling,evaluation,grpo", help="what to run")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override on top of configs/learn.yaml (repeatable)",
    )
    parser.add_argument("--allow-cpu", action="store_true", help=argparse.SUPPRESS)
    benchstats.add_reps_argument(parser)
    args = parser.parse_args()
    reps = benchstats.checked_reps(parser, args.reps)
    if args.rows < GROUP or args.rows % GROUP:
        parser.error(f"--rows {args.rows}: a positive multiple of {GROUP} (the group size)")
    import torch

    if not torch.cuda.is_available() and not args.allow_cpu:
        print(
            "bench-gpu: no CUDA device visible; this benchmark measures a GPU "
            "(on a CPU: make bench-learn)"
        )
        return 2
    from sparring.config import load_config
    from sparring.phases.common import train_problems
    from sparring.phases.materialize import materialize

    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    rec = Record(args.out)
    rec.add("card", card)
    print(f"bench-gpu on {card}, torch {torch.__version__}, model {args.model}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        overrides = [
            f"models.answerer.name={args.model}",
            f"grpo.rollout_batch_size={args.rows}",
            f"grpo.per_device_batch_size={args.rows}",
            f"steps.answerer={args.steps}",
            f"steps.problems_per_phase={args.rows // GROUP * args.steps}",
            "tracking.mlflow_uri=sqlite:///" + os.path.join(tmp, "mlflow.db"),
            *args.set,
        ]
        cfg = load_config(ROOT / "configs" / "learn.yaml", overrides)
        data_dir = os.path.join(tmp, "data")
        seconds, _ = timed(lambda: materialize(cfg, data_dir))
        print(f"materialized the learn config's problems in {seconds:.0f} s", flush=True)
        parts = args.parts.split(",")
        runs = {
            "sampling": lambda: bench_sampling(
                cfg, args.model, train_problems(data_dir), args.rows, reps, rec
            ),
            "evaluation": lambda: bench_evaluation(cfg, args.model, data_dir, rec),
            "grpo": lambda: bench_grpo(cfg, data_dir, tmp, rec),
        }
        failed = [name for name in runs if name in parts and not run_part(name, runs[name], rec)]
        if torch.cuda.is_available():
            rec.add("peak_memory_mb", torch.cuda.max_memory_allocated() / 2**20)
    return 1 if failed else 0


def run_part(name: str, fn, rec: Record) -> bool:
    """Runs one part; a failure is printed and recorded and the next part still runs (one
    broken part must not cost the others' figures). If the slot
    decoder was what broke, the later parts decode with the refill decoder, and say so."""
    import traceback

    try:
        fn()
        return True
    except Exception as exc:
        traceback.print_exc()
        rec.add(f"{name}_error", f"{type(exc).__name__}: {exc}")
        from sparring.backends.torch import slot_decoder

        frames = traceback.extract_tb(exc.__traceback__)
        if any("slot_decoder" in frame.filename for frame in frames):
            slot_decoder.slots_supported = lambda model: False
            rec.add("slots_disabled_after", name)
            print(f"bench-gpu: the slot decoder failed in {name}; the rest use refill", flush=True)
        return False


if __name__ == "__main__":
    sys.exit(main())
