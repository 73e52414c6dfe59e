#!/usr/bin/env bash
# Held-out shapes on the LLM-era families' training GPUs: train every family with
# `--holdout-shapes PCT` (a stable hash of op, shape and dtype leaves PCT % of the shapes out,
# on every GPU), then score exactly those rows per training GPU and dtype with
# `eval-kernels --holdout-shapes PCT` (rows of the kernel library each GPU's spec implies, as
# in training), next to the plain roofline. The in-distribution companion of eval-llm-loo.sh.
#   scripts/eval-llm-heldout.sh [OUT] [extra train args]     (OUT default out/llm-heldout; PCT=10)
# Reuses OUT/weights when it holds a finished run with the same PCT (RETRAIN=1 retrains).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/atomic.sh  # to_file
. scripts/blas-kernels.sh  # OPENBLAS_CORETYPE=Haswell on AVX2 CPUs: the figures' kernels
OUT="${1:-out/llm-heldout}"; shift || true
PCT="${PCT:-10}"
TC=./build/tilecast
LLM="${TILECAST_LLM_KERNELS_DIR:-../shared/llm-kernels}"
FAMS=(${FAMILIES:-gemm context_attention generation_attention moe memory_op})
mkdir -p "$OUT"
. scripts/llm-files.sh  # files_of, gpus_of, report_lines
W="$OUT/weights"
if [ -n "${RETRAIN:-}" ] || ! grep -q "holdout_shapes_pct: $PCT\$" "$W/manifest.yaml" 2>/dev/null; then
  # Start from the bundled weights, so that the files' other families (the vidur files also
  # hold memory ops) are forecast when FAMILIES names a subset; only those are retrained.
  rm -rf "$W"; cp -r weights "$W"
  to_file "$OUT/train.csv" "$TC" -q train --family "${FAMS[@]}" --llm-dir "$LLM" --holdout-shapes "$PCT" --out "$W" --force "$@"
else
  echo "(reusing $W; RETRAIN=1 retrains)" >&2
fi
summary="$OUT/summary.txt"; : > "$summary"
for fam in "${FAMS[@]}"; do
  while IFS= read -r gpu; do
    tag="${gpu// /_}"
    mapfile -t files < <(files_of "$fam" "$gpu")
    data=()
    for f in "${files[@]}"; do data+=(--data "$f"); done
    to_file "$OUT/$fam-eval-$tag.json" "$TC" -q eval-kernels --weights "$W" --holdout-shapes "$PCT" "${data[@]}" --format json
    report_lines "$OUT/$fam-eval-$tag.json" "$gpu" "$fam" | tee -a "$summary"
  done < <(gpus_of "$fam")
done
