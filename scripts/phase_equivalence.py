"""Does a refactor of the training phases change what they compute? Run one generator phase and
one answerer phase of configs/learn.yaml at the checkout on PYTHONPATH, on the paths a filed
`sparring rerun` of configs/recur.yaml does not take, and print a digest of everything they
wrote and measured; run it at two commits and compare the two outputs line by line.

The paths: the generator with the room study's S-arm settings (the catch reward, so the draw is
cut to the catchable problems; the pool screen; 8 frozen samples a problem; final tests for every
training problem) and the answerer with the curriculum coach on (its reserve of rows) and its
own pool screen (no generator phase before it). One GRPO step each, levels 2-3 of the trained
families, one instance a family and level, smollm2-135m, one torch thread, completion cache
off. Timing metrics are left out (they never repeat); every other metric is printed, with the
sha256 of the tests, the frozen answers and each trained model's weights and record.

Usage (about 10 minutes a commit on 2 cores):
  SPARRING_COMPLETION_CACHE=0 PYTHONPATH=<checkout>/src .venv/bin/python \
      scripts/phase_equivalence.py > out-<commit>.txt
  diff out-<old>.txt out-<new>.txt
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_memory import S_ARM  # noqa: E402 (the benchmark's S-arm generator settings)

TIMING = re.compile(r"(_s$|seconds|per_s|_time|peak|cpu|wall)")
COMMON = [
    "data.families.levels=[2,3]",
    "data.families.per_family=1",
    "steps.answerer=1",
    "steps.generator=1",
    "models.answerer.name=smollm2-135m",
    "models.generator.name=smollm2-135m",
]
ANSWERER = ["coach.enabled=true"]


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def say(name: str, metrics: dict[str, float], files: dict[str, Path]) -> None:
    for key in sorted(k for k in metrics if not TIMING.search(k)):
        print(f"{name} metric {key} = {metrics[key]!r}")
    for label, path in files.items():
        print(f"{name} file {label} = {digest(path)}")


def main() -> None:
    import argparse

    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Run it at two commits (PYTHONPATH=<checkout>/src) and diff the two outputs.",
    ).parse_args()
    import torch

    from sparring.config import load_config
    from sparring.phases.answerer import train_answerer
    from sparring.phases.generator import train_generator
    from sparring.phases.materialize import materialize

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        sets = [*COMMON, f"tracking.mlflow_uri=sqlite:///{out / 'mlflow.db'}"]
        cfg = load_config(ROOT / "configs" / "learn.yaml", [*sets, *S_ARM])
        materialize(cfg, str(out / "data"))
        m = train_generator(
            cfg, 1, str(out / "data"), "", None, str(out / "gen"), str(out / "tests.jsonl"),
            str(out / "frozen.jsonl"),
        )  # fmt: skip
        files = {"tests": out / "tests.jsonl", "frozen": out / "frozen.jsonl"}
        files |= {"weights": out / "gen" / "adapter_model.safetensors"}
        files |= {"record": out / "gen" / "sparring_model.json"}
        say("generator", m, files)
        cfg = load_config(ROOT / "configs" / "learn.yaml", [*sets, *ANSWERER])
        m = train_answerer(cfg, 1, str(out / "data"), "", None, str(out / "ans"))
        files = {"weights": out / "ans" / "adapter_model.safetensors"}
        files |= {"record": out / "ans" / "sparring_model.json"}
        say("answerer", m, files)
        record = json.loads((out / "ans" / "sparring_model.json").read_text())
        print("answerer record coach =", json.dumps(record.get("coach"), sort_keys=True))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
