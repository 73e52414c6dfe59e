#!/usr/bin/env bash
# Leave-one-training-GPU-out for NeuSight's five FP32 families (bmm, linear, elementwise,
# softmax, layernorm) on its five NVIDIA training GPUs (P4, P100, V100, T4, A100-PCIE-40GB): for
# each GPU, train the families on the other four (`train --exclude-gpu`, which also keeps its
# rows out of the tile table), then forecast that GPU's rows of NeuSight's test split
# (kernels/nvidia/test) and its whole-model labels. The selection protocol of issue 9: a design
# for these families is kept only if it helps here; L4 and A100-80GB are never used to choose.
# Prints one line per left-out GPU and family (MAPE, bias) and per GPU and mode (whole models);
# JSON reports go under OUT (default out/neusight-loo), each written atomically.
#   scripts/eval-neusight-loo.sh [OUT] [extra train args, e.g. --epochs 10 --config-dir DIR]
# RESUME=1 keeps the folds already scored under OUT (after an interruption; same arguments).
# EVAL_ONLY=1 re-scores the fold weights already under OUT with the current build (after a
# change to the forecast path, e.g. the graph's backward) without training again.
# CALL_OVERHEAD_US=x forecasts the whole models with that host time per call taken off each FP32
# kernel (eval-models --call-overhead-us) instead of the fold manifests' call_overhead_us; with
# EVAL_ONLY=1 it re-scores trained folds so (scripts/fit-host-gap.sh fits it on bundled weights).
# BASE=DIR starts each fold from DIR's fold weights (an earlier run's weights-without-<GPU>)
# instead of the bundled ones, so that FAMILIES trained there stay left out too: e.g. the vector
# families trained on top of a bmm/linear study give a fold with all five families unseen.
# FAMILIES="elementwise softmax" retrains only those (the others stay as bundled, trained with
# every GPU: then read the kernel lines of the retrained families, not the whole-model ones).
# Compare designs (and seeds) with scripts/loo-summary.py NAME=OUT[,OUT...] ... [--models].
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/atomic.sh  # to_file
. scripts/blas-kernels.sh  # OPENBLAS_CORETYPE=Haswell on AVX2 CPUs: the figures' kernels
OUT="${1:-out/neusight-loo}"; shift || true
TC=./build/tilecast
NS="${TILECAST_NEUSIGHT_DIR:-../shared/neusight}"
[ -x "$TC" ] || { echo "eval-neusight-loo: $TC not built (run scripts/build.sh)" >&2; exit 2; }
[ -d "$NS/kernels/nvidia/test" ] || { echo "eval-neusight-loo: no NeuSight data under $NS (set TILECAST_NEUSIGHT_DIR)" >&2; exit 2; }
mkdir -p "$OUT"
KT="$NS/kernels/nvidia/test"
FAMS=(${FAMILIES:-bmm linear elementwise softmax layernorm})
for gpu in "Tesla P4" "Tesla P100-PCIE-16GB" "Tesla V100-PCIE-32GB" "Tesla T4" "NVIDIA A100-PCIE-40GB"; do
  tag="${gpu// /_}"
  w="$OUT/weights-without-$tag" kernels="$OUT/kernels-$tag.json" models="$OUT/models-$tag.json"
  if [ "${RESUME:-0}" = 1 ] && [ -s "$kernels" ] && [ -s "$models" ]; then
    echo "== kept the scored fold without $gpu" >&2
  else
    if [ "${EVAL_ONLY:-0}" = 1 ]; then
      [ -f "$w/manifest.yaml" ] || { echo "eval-neusight-loo: EVAL_ONLY=1 but $w was not trained" >&2; exit 1; }
      echo "== re-score without $gpu" >&2
    else
      echo "== train without $gpu" >&2
      # Start from the bundled weights (the AMD set and the LLM-era families stay as bundled:
      # eval-models also forecasts the AMD labels); only the five families are retrained.
      rm -rf "$w" "$kernels" "$models"
      if [ -n "${BASE:-}" ]; then
        [ -f "$BASE/weights-without-$tag/manifest.yaml" ] || { echo "eval-neusight-loo: BASE=$BASE has no weights-without-$tag" >&2; exit 1; }
        cp -r "$BASE/weights-without-$tag" "$w"
      else
        cp -r weights "$w"
      fi
      to_file "$OUT/train-without-$tag.csv" "$TC" -q train --family "${FAMS[@]}" --neusight-dir "$NS" \
        --exclude-gpu "$gpu" --out "$w" "$@"
    fi
    to_file "$kernels" "$TC" -q eval-kernels --weights "$w" --data "$KT/bmm.csv" "$KT/linear.csv" "$KT/elem.csv" \
      "$KT/softmax.csv" "$KT/ln.csv" --format json
    to_file "$models" "$TC" -q --log-level error eval-models --weights "$w" --neusight-dir "$NS" \
      ${CALL_OVERHEAD_US:+--call-overhead-us "$CALL_OVERHEAD_US"} --format json
  fi
  python3 - "$kernels" "$models" "$gpu" <<'PY'
import json, sys, collections, statistics
kernels, models, gpu = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for fam, s in sorted(kernels["by_device_op"].get(gpu, {}).items()):
    print(f"kernels  {gpu:24s} {fam:12s} rows {s['rows']:6d}  MAPE {s['mape_pct']:7.2f} %  "
          f"roofline {s['roofline_mape_pct']:7.2f} %  bias {s['bias_median']:5.2f}")
# Whole models: the labels measured on the left-out GPU, per mode.
per = collections.defaultdict(list)
for r in models["rows"]:
    if r["device"] == gpu.replace(" ", "_"):
        per[r["mode"] + (f" {r['option']}" if r.get("option") else "")].append(r)
for mode, rows in sorted(per.items()):
    ratios = sorted(r["forecast_ms"] / r["label_ms"] for r in rows)
    print(f"models   {gpu:24s} {mode:12s} labels {len(rows):4d}  MAPE {statistics.mean(r['error_pct'] for r in rows):7.2f} %  "
          f"bias {statistics.median(ratios):5.2f}")
PY
done
