#!/usr/bin/env bash
# Leave-one-GPU-out for the LLM-era families: for each training GPU of ../shared/llm-kernels
# (A100-SXM4-80GB, L40S, B200), train the family on the other two and forecast every row of
# the left-out GPU from its spec alone. Prints one JSON report per GPU (eval-kernels) and
# writes them under OUT (default out/llm-loo). The numbers in docs/accuracy.md come from it.
# Usage: scripts/eval-llm-loo.sh [OUT] [extra train args, e.g. --epochs 10]
# Families: $FAMILIES (default: gemm context_attention generation_attention).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-out/llm-loo}"; shift || true
TC=./build/tilecast
LLM="${TILECAST_LLM_KERNELS_DIR:-../shared/llm-kernels}"
mkdir -p "$OUT"
for fam in ${FAMILIES:-gemm context_attention generation_attention}; do
for gpu in A100-SXM4-80GB L40S B200; do
  dev="NVIDIA $gpu"
  w="$OUT/$fam-weights-without-$gpu"
  echo "== $fam: train without $dev" >&2
  "$TC" -q train --family "$fam" --llm-dir "$LLM" --exclude-gpu "$dev" --out "$w" --force "$@" > "$OUT/$fam-train-without-$gpu.csv"
  "$TC" -q eval-kernels --weights "$w" --data "$LLM/aiconfigurator/$gpu/${fam}_perf.csv" --format json \
    > "$OUT/$fam-eval-$gpu.json"
  python3 - "$OUT/$fam-eval-$gpu.json" "$gpu" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k, s in sorted(r["by_op_dtype"].items()):
    print(f"{sys.argv[2]:16s} {k:28s} rows {s['rows']:7d}  MAPE {s['mape_pct']:6.2f} %  p50 {s['p50_ape_pct']:6.2f} %  p90 {s['p90_ape_pct']:6.2f} %  roofline {s['roofline_mape_pct']:6.2f} %")
PY
done
done
