#!/usr/bin/env bash
# Fits the host gap per kernel launch (predict --host-gap-us) on the whole-model labels of the
# five training GPUs only (issue 9: launch and host overhead of eager runs), with
# leave-one-training-GPU-out: for each training GPU, the gap that minimises the mean APE of the
# other four, scored on the left-out one. L4 and A100-80GB are printed for reference at the
# gap chosen on all five; they choose nothing.
#   scripts/fit-host-gap.sh [OUT] [GAP_US ...]     (default OUT out/host-gap, gaps 0 1 2 4 6 8 10 15 20)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-out/host-gap}"; shift || true
GAPS=("$@"); [ ${#GAPS[@]} -gt 0 ] || GAPS=(0 1 2 4 6 8 10 15 20)
TC=./build/tilecast
NS="${TILECAST_NEUSIGHT_DIR:-../shared/neusight}"
[ -x "$TC" ] || { echo "fit-host-gap: $TC not built (run scripts/build.sh)" >&2; exit 2; }
[ -d "$NS/labels" ] || { echo "fit-host-gap: no labels under $NS (set TILECAST_NEUSIGHT_DIR)" >&2; exit 2; }
mkdir -p "$OUT"
for g in "${GAPS[@]}"; do
  echo "eval-models --host-gap-us $g" >&2
  "$TC" -q eval-models --labels "$NS/labels" --host-gap-us "$g" --format json > "$OUT/gap-$g.json.tmp"
  mv "$OUT/gap-$g.json.tmp" "$OUT/gap-$g.json"
done
python3 - "$OUT" "${GAPS[@]}" <<'EOF' | tee "$OUT/summary.txt"
import json, sys, collections
out, gaps = sys.argv[1], sys.argv[2:]
train = ["P4", "P100-PCIE-16GB", "V100-PCIE-32GB", "T4", "A100-PCIE-40GB"]
report = ["L4", "A100-80GB-PCIe"]
err = {}  # gap -> gpu -> [APE %] (single-GPU rows, every mode)
for g in gaps:
    per = collections.defaultdict(list)
    for r in json.load(open(f"{out}/gap-{g}.json"))["rows"]:
        per[r["gpu"]].append(abs(r["forecast_ms"] / r["label_ms"] - 1) * 100)
    err[g] = per
mean = lambda xs: sum(xs) / len(xs)
def pooled(g, gpus):
    xs = [x for k in gpus for x in err[g].get(k, [])]
    return mean(xs)
print("mean APE % of the whole-model labels per host gap (us)")
print("gap_us " + " ".join(f"{k:>15s}" for k in train + report) + "  train-pooled")
for g in gaps:
    print(f"{g:>6s} " + " ".join(f"{mean(err[g][k]):15.2f}" for k in train + report) + f"  {pooled(g, train):12.2f}")
z = "0" if "0" in gaps else gaps[0]
print("\nleave-one-training-GPU-out: gap chosen on the other four -> error on the left-out GPU (gap 0 beside it)")
for held in train:
    rest = [k for k in train if k != held]
    best = min(gaps, key=lambda g: pooled(g, rest))
    print(f"  {held:16s} chosen {best:>3s} us: {mean(err[best][held]):6.2f} %   (gap {z}: {mean(err[z][held]):6.2f} %)")
best = min(gaps, key=lambda g: pooled(g, train))
print(f"\nchosen on all five training GPUs: {best} us (train pooled {pooled(best, train):.2f} %)")
print("reference (not used to choose): " + ", ".join(f"{k} {mean(err[best][k]):.2f} %" for k in report))
EOF
