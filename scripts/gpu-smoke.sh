#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, the CUDA toolkit (CUPTI) and a CUDA-enabled PyTorch:
# build tilecast against that PyTorch's LibTorch and collect the smoke sweep through CUPTI.
# Meant to finish within 10 minutes (on an H200, 2026-12-04, the five collects' `time` lines
# added up to 35 s; each run of scripts/measure-e2e.py records its seconds in its lines).
# Output: $OUT (default out/gpu-smoke): collect*/ (<family>.csv, gpu.yaml: the local GPU's spec,
# run_config.yaml), build.log; with E2E=1 also e2e.jsonl, fused.jsonl, prefill.jsonl and
# training-bf16.jsonl (scripts/measure-e2e.py), sustained.jsonl and clocks-sustained.csv
# (scripts/measure-sustained.py: kernels alone, then back to back, with the SM clock and power).
#
# Extra CMake prefixes (e.g. yaml-cpp / Boost unpacked from Debian .debs with `dpkg -x`):
#   EXTRA_PREFIX=/path/to/root/usr scripts/gpu-smoke.sh
# or a folder of Debian .debs (yaml-cpp, Boost.Program_options, nlohmann-json, OpenSSL) that the
# script unpacks itself, for a machine with no package registry:
#   DEBS=.debs scripts/gpu-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/gpu-smoke}"
BUILD="${BUILD:-build-gpu}"
mkdir -p "$OUT"
TORCH_PREFIX="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
# PyTorch wheels state their C++ ABI; our other dependencies must match it.
ABI="$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' | tee "$OUT/torch.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/nvidia-smi.csv" || true
prefix="$TORCH_PREFIX"
cxxflags="-D_GLIBCXX_USE_CXX11_ABI=$ABI"
if [ -n "${DEBS:-}" ]; then
  deps="$PWD/$BUILD-deps"
  mkdir -p "$deps"
  for f in "$DEBS"/*.deb; do dpkg -x "$f" "$deps"; done
  EXTRA_PREFIX="$deps/usr${EXTRA_PREFIX:+;$EXTRA_PREFIX}"
  # Debian keeps OpenSSL's configuration header under the multiarch include folder.
  cxxflags="$cxxflags -idirafter $deps/usr/include/x86_64-linux-gnu"
fi
[ -n "${EXTRA_PREFIX:-}" ] && prefix="$prefix;$EXTRA_PREFIX"
gen=(); keep_going=(-k)
if command -v ninja >/dev/null; then gen=(-G Ninja); keep_going=(-k 0); fi
cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DTILECAST_BUILD_TESTS=OFF -DTILECAST_BUILD_BENCH=OFF -DTILECAST_WITH_CUPTI=ON \
  -DCMAKE_CXX_FLAGS="$cxxflags" -DTILECAST_BUILD_PYTHON=OFF -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" \
  > "$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
# -k: every compile error of this LibTorch in one run, not only the first file's.
cmake --build "$BUILD" -j "$(nproc)" --target tilecast -- "${keep_going[@]}" >> "$OUT/build.log" 2>&1 ||
  { grep -n -B2 -A6 'error' "$OUT/build.log" | head -150; tail -30 "$OUT/build.log"; exit 1; }
# One sweep into $OUT/DIR through CUPTI; the first lines of each of its CSVs.
collect_sweep() {
  rm -rf "$OUT/$2"
  time "$BUILD/tilecast" collect --sweep "configs/sweeps/$1.yaml" --out "$OUT/$2" --backend cuda
  head -3 "$OUT/$2"/*.csv
}
# The sweeps, as SWEEP:DIR under $OUT (SWEEPS overrides the list; the smoke sweep also prints
# the local GPU's spec):
#   smoke: every FP32 family, small;  llm-gpu: BF16/FP16 tensor-core GEMMs, the memory-bound layer
#   ops, attention, MoE;  llm-sampler: the sampler over FP32 logits;  llm-validate: serving-size BF16
#   kernels (tilecast eval-kernels --data $OUT/collect-validate/gemm.csv ...);  llm-validate-fp8:
#   FP8 GEMMs (fp8_static: E4M3, per-tensor scales, torch._scaled_mm), on GPUs with FP8 tensor cores;
#   validate-fp32 (not in the default list): NeuSight's FP32 families at NeuSight's sizes.
SWEEPS="${SWEEPS:-smoke:collect llm-gpu:collect-llm llm-sampler:collect-sampler llm-validate:collect-validate llm-validate-fp8:collect-validate-fp8}"
for pair in $SWEEPS; do
  collect_sweep "${pair%%:*}" "${pair#*:}"
  if [ "${pair%%:*}" = smoke ]; then cat "$OUT/${pair#*:}/gpu.yaml"; fi
done
# Whole-model labels (PyTorch + transformers on this machine), when asked: E2E=1.
if [ "${E2E:-0}" = 1 ]; then
  python3 scripts/measure-e2e.py --out "$OUT/e2e.jsonl"
  python3 scripts/measure-e2e.py --suite fused --out "$OUT/fused.jsonl"
  python3 scripts/measure-e2e.py --suite prefill --out "$OUT/prefill.jsonl"
  python3 scripts/measure-e2e.py --suite training-bf16 --out "$OUT/training-bf16.jsonl"
  python3 scripts/measure-sustained.py --out "$OUT/sustained.jsonl" --samples "$OUT/clocks-sustained.csv"
fi
