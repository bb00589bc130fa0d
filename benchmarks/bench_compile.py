"""Seconds to compile a config's pipeline to KFP IR: KFP's task setters as shipped against
Sparring's `fast_setters()` (pipelines.common), which names a setter from its frame instead of
KFP's `inspect.stack()`, a call that reads the source file of every frame on the stack.

Both arms compile the same config to IR in the same process, interleaved (kfp, fast, kfp, fast,
...; at least 3 repetitions), and each repetition prints the seconds spent building the DAG and
writing the YAML; then

  BENCH compile_speedup median=X min=Y max=Z n=N

the shipped setters' total seconds over fast_setters', paired per repetition. The arms' IR files
are compared byte for byte (a difference exits 1). `inspect.stack()` costs in proportion to the
modules loaded (it searches sys.modules for each frame), so `--ml-imports` first imports what a
test session, a notebook or the local runner holds (torch, transformers, trl, peft, mlflow), and
the line is then `compile_speedup_ml_imports`. Usage:
python benchmarks/bench_compile.py [--config configs/cluster-qwen7b.yaml] [--reps 3] [--ml-imports]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

import benchstats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the pipelines package lives at the repository root

from kfp import compiler  # noqa: E402

from pipelines import selfplay  # noqa: E402
from sparring.config import load_config  # noqa: E402


def compile_once(cfg, fast: bool, out: Path) -> tuple[float, float]:
    """(seconds building the DAG, seconds writing the IR) of one compile of `cfg` to `out`."""
    start = time.perf_counter()
    pipeline = selfplay.build_pipeline(cfg) if fast else selfplay._build_pipeline(cfg, False)
    built = time.perf_counter()
    compiler.Compiler().compile(pipeline, package_path=str(out))
    return built - start, time.perf_counter() - built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/cluster-qwen7b.yaml", help="config to compile")
    parser.add_argument("--ml-imports", action="store_true",
                        help="import torch, transformers, trl, peft and mlflow first")  # fmt: skip
    benchstats.add_reps_argument(parser)
    args = parser.parse_args()
    reps = benchstats.checked_reps(parser, args.reps)
    if args.ml_imports:
        for module in ("torch", "transformers", "trl", "peft", "mlflow"):
            importlib.import_module(module)
    cfg = load_config(ROOT / args.config if not Path(args.config).is_absolute() else args.config)
    print(f"{args.config}: compile, KFP's setters vs fast_setters, {reps} repetitions, "
          f"{len(sys.modules)} modules loaded", flush=True)  # fmt: skip
    seconds: dict[str, list[float]] = {"kfp": [], "fast": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep, arm in benchstats.interleaved(["kfp", "fast"], reps):
            out = Path(tmp) / f"{arm}.yaml"
            build, write = compile_once(cfg, arm == "fast", out)
            seconds[arm].append(build + write)
            print(f"  rep {rep + 1} {arm}: {build + write:.1f} s (build {build:.1f} s, "
                  f"write {write:.1f} s)", flush=True)  # fmt: skip
        if (Path(tmp) / "kfp.yaml").read_bytes() != (Path(tmp) / "fast.yaml").read_bytes():
            print("the two arms wrote different IR", file=sys.stderr)
            return 1
    for arm, values in seconds.items():
        print(f"  {arm}: seconds per compile {benchstats.spread(values, 1)}")
    name = "compile_speedup_ml_imports" if args.ml_imports else "compile_speedup"
    print(benchstats.bench_line(name, benchstats.paired_ratios(seconds["kfp"], seconds["fast"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
