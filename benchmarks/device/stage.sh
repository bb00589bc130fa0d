#!/usr/bin/env bash
# Device call 1 of 2 (benchmarks/device/prepare.sh): keeps the GGUF's first part in /tmp, which
# outlives the call while the machine stays warm (30 s): make call 2 at once.
set -euo pipefail
KIT_TMP=${KIT_TMP:-/tmp/gpu-kit}
mkdir -p "$KIT_TMP"
cp .gpu-kit/model1/part0 "$KIT_TMP/"
ls -l "$KIT_TMP"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
