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
# EVAL_ONLY=1 re-scores the fold weights already under OUT (after a change to the forecast
# path, e.g. a clamp) without training again; a fold not trained there is an error.
# UNSEEN_PRIOR_WEIGHT=w (with EVAL_ONLY=1) first sets the family's `unseen_prior_weight` to w in
# each fold's manifest under OUT (the fold must have been trained with `network_gpus` set), so
# one training run scores several blends (docs/accuracy.md, MoE); copy OUT first to keep it.
# GEMM_COMPOSITE_WEIGHT=w (with EVAL_ONLY=1) does the same for MoE's `gemm_composite_weight`
# (the layer as two stacked GEMMs of the gemm family on an unseen GPU). A MoE fold retrains the
# gemm family without the left-out GPU too, so that those GEMMs are forecast by networks that
# never saw it either.
# EVAL_ONLY=1 takes the families a fold did not train from today's weights/ first
# (refresh_untrained_families), so that folds trained before a bundled family's inputs changed
# still score, and warns where a fold's family was trained before the last change to
# core/kernel.{h,cpp}, whose bounds its fitted roofline was fitted on (warn_older_fit).
# RESUME=1 keeps every fold already scored under OUT (after an interruption; same arguments).
# A fold counts as trained once its train CSV is in place and as scored once its eval JSON
# is: both are written to a temporary name and renamed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/atomic.sh  # to_file
. scripts/blas-kernels.sh  # OPENBLAS_CORETYPE=Haswell on AVX2 CPUs: the figures' kernels
OUT="${1:-out/llm-loo}"; shift || true
TC=./build/tilecast
LLM="${TILECAST_LLM_KERNELS_DIR:-../shared/llm-kernels}"
if [ -n "${UNSEEN_PRIOR_WEIGHT:-}${GEMM_COMPOSITE_WEIGHT:-}" ] && [ "${EVAL_ONLY:-0}" != 1 ]; then
  echo "eval-llm-loo: UNSEEN_PRIOR_WEIGHT and GEMM_COMPOSITE_WEIGHT re-score trained folds: set EVAL_ONLY=1 too" >&2
  exit 2
fi
mkdir -p "$OUT"

. scripts/llm-files.sh  # files_of, gpus_of

for fam in ${FAMILIES:-gemm context_attention generation_attention moe memory_op}; do
  while IFS= read -r gpu; do
    dev="NVIDIA $gpu"
    tag="${gpu// /_}"
    w="$OUT/$fam-weights-without-$tag"
    trained="$OUT/$fam-train-without-$tag.csv" scored="$OUT/$fam-eval-$tag.json"
    if [ "${RESUME:-0}" = 1 ] && [ -s "$scored" ]; then
      echo "== $fam: kept the scored fold without $dev" >&2
      report_lines "$scored" "$gpu" "$fam"
      continue
    fi
    echo "== $fam: $([ "${EVAL_ONLY:-0}" = 1 ] && echo "re-score" || echo "train") without $dev" >&2
    # Start from the bundled weights so that the other families (the vidur files also hold
    # GEMMs and memory ops) are forecast too; only $fam is retrained.
    if [ "${EVAL_ONLY:-0}" = 1 ]; then
      if [ ! -s "$trained" ] || [ ! -f "$w/manifest.yaml" ]; then
        echo "eval-llm-loo: EVAL_ONLY=1 but the fold without $dev was not trained in $OUT (no $trained)" >&2
        exit 1
      fi
      # The families this fold did not train come from today's bundle (they are copies of it).
      refresh_untrained_families "$w" "$trained" || exit 1
      warn_older_fit "$w/manifest.yaml" "$fam" || exit 1
      if [ -n "${UNSEEN_PRIOR_WEIGHT:-}" ]; then
        set_unseen_prior_weight "$w/manifest.yaml" "$fam" "$UNSEEN_PRIOR_WEIGHT" || exit 1
      fi
      if [ -n "${GEMM_COMPOSITE_WEIGHT:-}" ] && [ "$fam" = moe ]; then
        # The fold's gemm family must not have seen the left-out GPU (folds trained before
        # session 54 retrained moe alone).
        if ! grep -q '^gemm,' "$trained"; then
          echo "eval-llm-loo: GEMM_COMPOSITE_WEIGHT: the fold without $dev did not retrain gemm ($trained): train it again" >&2
          exit 1
        fi
        set_family_config "$w/manifest.yaml" moe gemm_composite_weight "$GEMM_COMPOSITE_WEIGHT" || exit 1
      fi
    else
      rm -rf "$w" "$trained" "$scored"; cp -r weights "$w"
      fams=("$fam")
      [ "$fam" = moe ] && fams=(gemm moe)
      to_file "$trained" "$TC" -q train --family "${fams[@]}" --llm-dir "$LLM" --exclude-gpu "$dev" --out "$w" "$@"
    fi
    mapfile -t files < <(files_of "$fam" "$gpu")
    data=()
    for f in "${files[@]}"; do data+=(--data "$f"); done
    to_file "$scored" "$TC" -q eval-kernels --weights "$w" "${data[@]}" --format json
    report_lines "$scored" "$gpu" "$fam"
  done < <(gpus_of "$fam")
done
