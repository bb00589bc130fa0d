"""The one entry point of a training phase in every process that trains it.

    python -m sparring.cluster.entry train-answerer --config C --data D --bank B --out O
    torchrun --nproc-per-node 8 -m sparring.cluster.entry train-answerer ...      (one node)
    accelerate launch --num_processes 8 -m sparring.cluster.entry ...            (the same)
    torchrun -m sparring.cluster.entry ...   on every node of a TrainJob (PET_* set by the runtime)

Inputs and outputs are local paths or `s3://` URIs (artifact URIs on the cluster). Each process:
1. joins the process group (`sparring.distributed.ranks`; gloo on CPUs, NCCL on GPUs),
2. reads the config (file or URI; `--set key=value` overrides), and the first process of each
   node fetches the inputs into a node-local work folder while the others wait,
3. runs the phase from the phase table (`sparring.phases.table`: train-answerer or
   train-generator, their inputs and outputs declared there); TRL/Accelerate train
   data-parallel over all processes, the generator's frozen solutions are sampled once in
   shares and shared,
4. compares the trained weights of every process: each writes its own copy (rank 0 into the
   output, the others into `WORKDIR/rank-N/out`), and with DDP replicas (not FSDP/ZeRO-3
   shards) different fingerprints fail the run (LoRA adapters are written by every rank; a
   full model only by rank 0 under transformers 5, so there is nothing to compare),
5. on rank 0: writes `metrics.json` (the phase's metrics plus `world_size` and `nodes`) and
   `distributed.json` (each rank's fingerprint) beside the outputs, and uploads them when the
   output is an S3 prefix.
With `--mlflow-run-id`, rank 0 logs into that MLflow run (TRL's per-step metrics included).

Output layout under `--out` (the same for one process and many): `model/`, for the generator
`tests.jsonl` and `frozen_solutions.jsonl`, then `metrics.json` and `distributed.json`.
Does not cover: creating TrainJobs (`sparring.cluster.launch`), the phases themselves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from sparring import storage
from sparring.cluster.trainjob import METRICS_FILE, PHASE_INPUTS, RANKS_FILE
from sparring.config import Config, apply_overrides, from_dict, load_config
from sparring.distributed import ranks, recipes
from sparring.errors import SparringError

WEIGHT_SUFFIXES = (".safetensors", ".bin")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sparring.cluster.entry",
        description="Run one training phase in this process (alone, under torchrun or "
        "accelerate launch, or on a TrainJob node).",
    )
    p.add_argument("phase", choices=sorted(PHASE_INPUTS))
    p.add_argument("--config", required=True, help="experiment YAML: a file or s3:// URI")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override")
    p.add_argument("--round", type=int, default=1, help="round number (1-based)")
    p.add_argument("--out", required=True, help="output folder or s3:// prefix")
    p.add_argument("--data", required=True, help="the materialized dataset folder")
    p.add_argument("--bank", default="", help="train-answerer: the test bank (file or folder)")
    p.add_argument("--frozen-answerer", default="", help="train-generator: the frozen answerer")
    p.add_argument("--init-model", default="", help="model to start from (empty: the base)")
    p.add_argument(
        "--phase", dest="phase_name", default="",
        help="the phase's name in the config's plan (e.g. r01-p03-answerer): its steps and seeds",
    )  # fmt: skip
    p.add_argument("--mlflow-run-id", default="", help="rank 0 logs into this MLflow run")
    p.add_argument("--workdir", default="", help="node-local scratch folder (default: a temp)")
    return p


def load(config: str, overrides: list[str]) -> Config:
    """The config from a local file or an S3 URI, with overrides."""
    if not storage.is_s3(config):
        return load_config(config, overrides)
    data = yaml.safe_load(storage.read_text(config)) or {}
    return from_dict(apply_overrides(data, overrides))


def fetch(uri: str, dest: Path) -> str:
    """A local path holding `uri`: local paths as they are; an S3 object (a file artifact)
    or prefix (a folder artifact) copied under `dest`."""
    if not uri or not storage.is_s3(uri):
        return uri
    if storage.exists(uri):
        target = dest / Path(storage.split_s3(uri)[1]).name
        storage.write_bytes(str(target), storage.read_bytes(uri))
        return str(target)
    # inputs are KFP artifacts, uploaded by KFP's launcher: they never carry Sparring's manifest
    storage.download_dir(uri, dest, require_manifest=False)
    return str(dest)


def fetch_inputs(args: argparse.Namespace, work: Path, w: ranks.World) -> dict[str, str]:
    """The phase's inputs as local paths; the first process of each node fetches them."""
    listing = work / "in" / "inputs.json"
    if w.local_main:
        for sub in ("in", "out", *(p.name for p in work.glob("rank-*"))):
            shutil.rmtree(work / sub, ignore_errors=True)
        local = {
            key: fetch(getattr(args, key), work / "in" / key) for key in PHASE_INPUTS[args.phase]
        }
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(json.dumps(local))
    ranks.barrier()
    return json.loads(listing.read_text())


def run_phase(cfg: Config, args: argparse.Namespace, inputs: dict[str, str], out: Path):
    """Call the phase (from the phase table) with local paths; outputs go under `out`."""
    from sparring.phases.table import outputs_in, run

    out.mkdir(parents=True, exist_ok=True)
    outputs = outputs_in(args.phase, out)
    return run(args.phase, cfg, args.round, inputs, outputs, phase=args.phase_name)


def fingerprint(model_dir: Path) -> str:
    """sha256 over the weight files of a model folder (names and bytes, sorted by name); ""
    when it holds none (transformers 5 saves a full model on rank 0 only; PEFT adapters are
    written by every rank)."""
    h = hashlib.sha256()
    files = sorted(p for p in model_dir.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        return ""
    for path in files:
        h.update(path.relative_to(model_dir).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _mlflow_run(cfg: Config, run_id: str) -> Any:
    """Resume the phase's MLflow run in this process (rank 0), so TRL logs its steps there."""
    import mlflow

    from sparring import tracking

    mlflow.set_tracking_uri(tracking.tracking_uri(cfg))
    return mlflow.start_run(run_id=run_id)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    w = ranks.init()
    try:
        cfg = load(args.config, args.set)
        storage.configure(cfg)
        key = hashlib.sha256(args.out.encode()).hexdigest()[:12]
        work = Path(args.workdir or Path(tempfile.gettempdir()) / f"sparring-entry-{key}")
        inputs = fetch_inputs(args, work, w)
        remote = storage.is_s3(args.out)
        out = work / f"rank-{w.rank}" / "out"  # every rank writes its own copy (compared below)
        if w.main:
            out = work / "out" if remote else Path(args.out)
        run = _mlflow_run(cfg, args.mlflow_run_id) if (w.main and args.mlflow_run_id) else None
        try:
            metrics = dict(run_phase(cfg, args, inputs, out))
        finally:
            if run is not None:
                import mlflow

                mlflow.end_run()
        prints = ranks.all_gather(fingerprint(out / "model"))
        sharded = recipes.sharded(cfg, w.size)
        nodes = len(set(ranks.all_gather(w.node_rank)))
        written = {p for p in prints if p}  # transformers writes a full model on rank 0 only
        if not sharded and len(written) > 1:
            raise SparringError(
                f"{args.phase}: the {w.size} processes finished with different weights "
                f"(fingerprints {', '.join(p[:12] for p in prints)}); data-parallel replicas "
                "must agree, so the outputs were not written"
            )
        if w.main:
            metrics.update(world_size=float(w.size), nodes=float(nodes))
            (out / METRICS_FILE).write_text(json.dumps(metrics, indent=1, sort_keys=True))
            report = {"world_size": w.size, "nodes": nodes, "sharded": sharded,
                      "strategy": cfg.distributed.strategy, "fingerprints": prints}  # fmt: skip
            (out / RANKS_FILE).write_text(json.dumps(report, indent=1))
            if remote:
                storage.upload_dir(out, args.out)
            print(f"{args.phase}: done on {w.size} process(es), {nodes} node(s)", flush=True)
        ranks.barrier()
    finally:
        ranks.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SparringError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
