#!/usr/bin/env bash
# The AMD predictor set (issue 9), selected by MI100 <-> MI210 leave-one-out: for each of the
# two AMD training GPUs, train the AMD set on the other one alone (`train --vendor amd
# --exclude-gpu`), then forecast the left-out GPU's kernel rows and its end-to-end labels, next
# to the NVIDIA-trained set on the same rows (what AMD GPUs were forecast with before).
# Prints a summary; eval-kernels / eval-models JSON go under OUT (default out/amd-loo).
#   scripts/eval-amd-loo.sh [OUT] [extra train args, e.g. --epochs 10]
# CALL_OVERHEAD_US=x forecasts the end-to-end labels with that host time per call taken off each
# FP32 kernel (eval-models --call-overhead-us), instead of the manifests' call_overhead_us.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/atomic.sh  # to_file
. scripts/blas-kernels.sh  # OPENBLAS_CORETYPE=Haswell on AVX2 CPUs: the figures' kernels
OUT="${1:-out/amd-loo}"; shift || true
TC=./build/tilecast
NS="${TILECAST_NEUSIGHT_DIR:-../shared/neusight}"
A="$NS/kernels/amd"
mkdir -p "$OUT"
# The NVIDIA set alone (the bundled folder without its amd/ sub-folder).
NV="$OUT/nvidia-set"
rm -rf "$NV"; mkdir -p "$NV"
find weights -maxdepth 1 -type f -exec cp {} "$NV/" \;
summary="$OUT/summary.txt"; : > "$summary"
for held in MI100 MI210; do
  other=$([ $held = MI100 ] && echo MI210 || echo MI100)
  W="$OUT/amd-without-$held"
  echo "== AMD set trained on $other only -> $held" | tee -a "$summary"
  if [ -f "$W/manifest.yaml" ] && [ -z "${RETRAIN:-}" ]; then
    echo "  (reusing $W; RETRAIN=1 retrains)" | tee -a "$summary"
  else
    "$TC" -q --log-level warn train --vendor amd --exclude-gpu "AMD Instinct $held" --out "$W" "$@"
  fi
  files=()
  for f in "$A"/train/collect/*/p2.4.1/"AMD Instinct $held.csv" "$A"/test/collect/*/p2.4.1/"AMD Instinct $held.csv"; do
    files+=(--data "$f")
  done
  labels="$OUT/labels-$held"; rm -rf "$labels"; mkdir -p "$labels"
  cp -r "$NS/labels/AMD_Instinct_$held" "$labels/"
  for set in amd nvidia; do
    w=$([ $set = amd ] && echo "$W" || echo "$NV")
    to_file "$OUT/kernels-$held-$set.json" "$TC" -q --log-level error eval-kernels --weights "$w" "${files[@]}" --format json
    to_file "$OUT/models-$held-$set.json" "$TC" -q --log-level error eval-models --weights "$w" --labels "$labels" \
      --published "$NS/published/summary.csv" ${CALL_OVERHEAD_US:+--call-overhead-us "$CALL_OVERHEAD_US"} --format json
    python3 - "$OUT/kernels-$held-$set.json" "$OUT/models-$held-$set.json" "$set" <<'PY' | tee -a "$summary"
import json, sys
k = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2])); s = sys.argv[3]
fam = "  ".join("%s %.1f" % (f, v["mape_pct"]) for f, v in sorted(k["by_op"].items()))
print("  %-6s set: kernel MAPE %s (roofline %.1f overall)" % (s, fam, k["overall"]["roofline_mape_pct"]))
for g in m["by_gpu_mode"]:
    ns = [r["neusight_error_pct"] for r in m["rows"] if r["gpu"] == g["gpu"] and r["mode"] == g["mode"]
          and r["option"] == g["option"] and r["neusight_error_pct"] is not None]
    print("  %-6s set: e2e %s %s%s: %.1f %% over %d labels (NeuSight published %s)" % (
        s, g["gpu"], g["mode"], ("-" + g["option"]) if g["option"] else "", g["mean_error_pct"], g["rows"],
        "%.1f %%" % (sum(ns) / len(ns)) if ns else "n/a"))
PY
  done
done
echo "summary: $summary"
