#!/usr/bin/env bash
# Leave-one-GPU-out for the LLM-era families: for each training GPU of a family, train it on
# the others and forecast every row of the left-out GPU from its spec alone. Prints one line
# per GPU and dtype and writes the eval-kernels JSON reports under OUT (default out/llm-loo).
# The numbers in docs/accuracy.md come from it.
#   gemm:                 A100-SXM4-80GB, L40S, B200 (aiconfigurator) + A100, A40 (vidur) + RTX 4090 (LLMServingSim)
#   context_attention, generation_attention, moe: A100-SXM4-80GB, L40S, B200 (aiconfigurator)
#   memory_op:            A100, A40 (vidur) + RTX 4090 (LLMServingSim)
# Usage: scripts/eval-llm-loo.sh [OUT] [extra train args, e.g. --epochs 10]
# Families: $FAMILIES (default: gemm context_attention generation_attention moe memory_op).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-out/llm-loo}"; shift || true
TC=./build/tilecast
LLM="${TILECAST_LLM_KERNELS_DIR:-../shared/llm-kernels}"
mkdir -p "$OUT"

# Files holding a GPU's rows of a family.
files_of() {  # family gpu
  local fam=$1 gpu=$2
  case "$gpu" in
    A100-SXM4-80GB)
      [ "$fam" != memory_op ] && echo "$LLM/aiconfigurator/$gpu/${fam}_perf.csv"
      if [ "$fam" = gemm ] || [ "$fam" = memory_op ]; then ls "$LLM"/vidur/a100/*/*/mlp.csv; fi ;;
    L40S|B200) echo "$LLM/aiconfigurator/$gpu/${fam}_perf.csv" ;;
    A40) ls "$LLM"/vidur/a40/*/*/mlp.csv ;;
    "GeForce RTX 4090") ls "$LLM"/llmservingsim/RTX4090/*/*/*/tp*/dense.csv ;;
  esac
}
gpus_of() {  # family
  case "$1" in
    gemm) printf '%s\n' A100-SXM4-80GB L40S B200 A40 "GeForce RTX 4090" ;;
    memory_op) printf '%s\n' A100-SXM4-80GB A40 "GeForce RTX 4090" ;;
    *) printf '%s\n' A100-SXM4-80GB L40S B200 ;;
  esac
}

for fam in ${FAMILIES:-gemm context_attention generation_attention moe memory_op}; do
  while IFS= read -r gpu; do
    dev="NVIDIA $gpu"
    tag="${gpu// /_}"
    w="$OUT/$fam-weights-without-$tag"
    echo "== $fam: train without $dev" >&2
    # Start from the bundled weights so that the other families (the vidur files also hold
    # GEMMs and memory ops) are forecast too; only $fam is retrained.
    rm -rf "$w"; cp -r weights "$w"
    "$TC" -q train --family "$fam" --llm-dir "$LLM" --exclude-gpu "$dev" --out "$w" "$@" > "$OUT/$fam-train-without-$tag.csv"
    mapfile -t files < <(files_of "$fam" "$gpu")
    data=()
    for f in "${files[@]}"; do data+=(--data "$f"); done
    "$TC" -q eval-kernels --weights "$w" "${data[@]}" --format json > "$OUT/$fam-eval-$tag.json"
    python3 - "$OUT/$fam-eval-$tag.json" "$gpu" "$fam" "$dev" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
gpu, fam, dev = sys.argv[2], sys.argv[3], sys.argv[4]
ops = {"memory_op": ("rmsnorm", "silu_mul", "rope", "residual_add")}.get(fam, (fam,))
for k, s in sorted(r["by_op_dtype"].items()):
    if k.split("/")[0] in ops:
        print(f"{fam:20s} {gpu:16s} {k:24s} rows {s['rows']:7d}  MAPE {s['mape_pct']:7.2f} %  p50 {s['p50_ape_pct']:6.2f} %  "
              f"p90 {s['p90_ape_pct']:7.2f} %  roofline {s['roofline_mape_pct']:7.2f} %")
PY
  done < <(gpus_of "$fam")
done
