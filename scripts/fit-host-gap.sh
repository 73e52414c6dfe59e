#!/usr/bin/env bash
# Fits one per-kernel host-time knob of the whole-model forecasts on the training GPUs'
# whole-model labels only (issue 9: launch and host overhead of eager runs), with
# leave-one-training-GPU-out: for each training GPU, the value that minimises the mean APE of
# the other GPUs' labels, scored on the left-out one. The A100-SXM4-40GB's distributed runs
# count with the A100-PCIE-40GB (the same GA100 die, never unseen). The AMD set is fitted
# apart on its pair (MI100 <-> MI210). L4 and A100-80GB are printed for reference at the value
# chosen on all five NVIDIA training GPUs; they choose nothing.
#   scripts/fit-host-gap.sh [--param host-gap-us|call-overhead-us] [OUT] [VALUE_US ...]
# host-gap-us (default): host time added per kernel launch (predict --host-gap-us); values
#   0 1 2 4 6 8 10 15 20, OUT out/host-gap.
# call-overhead-us: host time per call that the FP32 families' isolated kernel timings include,
#   taken off each of their kernels (the weights manifest's call_overhead_us); values
#   0 5 10 15 20 25 30, OUT out/call-overhead.
# Each value's eval-models JSON is written atomically, so an interrupted run keeps them; the
# table is printed and written to OUT/summary.txt. With --param call-overhead-us, APPLY=1 then
# writes the values chosen on all the training GPUs into the weights manifests (NVIDIA:
# $WEIGHTS or weights/, AMD: its amd/ set) for the five FP32 families, each file atomically.
# WEIGHTS=DIR fits another weights folder (default: the bundled weights/).
set -euo pipefail
cd "$(dirname "$0")/.."
PARAM=host-gap-us
if [ "${1:-}" = --param ]; then PARAM="${2:?--param needs host-gap-us or call-overhead-us}"; shift 2; fi
case "$PARAM" in
  host-gap-us) DEF_OUT=out/host-gap DEF_VALUES=(0 1 2 4 6 8 10 15 20) ;;
  call-overhead-us) DEF_OUT=out/call-overhead DEF_VALUES=(0 5 10 15 20 25 30) ;;
  *) echo "fit-host-gap: --param: expected host-gap-us or call-overhead-us, got '$PARAM'" >&2; exit 2 ;;
esac
OUT="${1:-$DEF_OUT}"; shift || true
VALUES=("$@"); [ ${#VALUES[@]} -gt 0 ] || VALUES=("${DEF_VALUES[@]}")
TC="${TILECAST:-./build/tilecast}"  # TILECAST: another tilecast binary (the tests pass theirs)
NS="${TILECAST_NEUSIGHT_DIR:-../shared/neusight}"
[ -x "$TC" ] || { echo "fit-host-gap: $TC not built (run scripts/build.sh)" >&2; exit 2; }
[ -d "$NS/labels" ] || { echo "fit-host-gap: no labels under $NS (set TILECAST_NEUSIGHT_DIR)" >&2; exit 2; }
mkdir -p "$OUT"
for v in "${VALUES[@]}"; do
  echo "eval-models --$PARAM $v" >&2
  "$TC" -q eval-models --labels "$NS/labels" "--$PARAM" "$v" ${WEIGHTS:+--weights "$WEIGHTS"} --format json \
    > "$OUT/value-$v.json.tmp"
  mv "$OUT/value-$v.json.tmp" "$OUT/value-$v.json"
done
python3 - "$OUT" "$PARAM" "${VALUES[@]}" <<'EOF' | tee "$OUT/summary.txt.tmp"
import json, sys, collections
out, param, values = sys.argv[1], sys.argv[2], sys.argv[3:]
# Fold -> the GPUs whose labels it holds.
nvidia = {"P4": ["P4"], "P100": ["P100-PCIE-16GB"], "V100": ["V100-PCIE-32GB"], "T4": ["T4"],
          "A100": ["A100-PCIE-40GB", "A100-SXM4-40GB"]}
amd = {"MI100": ["MI100"], "MI210": ["MI210"]}
report = ["L4", "A100-80GB-PCIe"]
err = {}  # value -> gpu -> [APE %] (every mode and option)
for v in values:
    per = collections.defaultdict(list)
    for r in json.load(open(f"{out}/value-{v}.json"))["rows"]:
        per[r["gpu"]].append(abs(r["forecast_ms"] / r["label_ms"] - 1) * 100)
    err[v] = per
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
def pooled(v, folds, names):
    return mean([x for f in names for g in folds[f] for x in err[v].get(g, [])])
def fit(title, folds, zero):
    names = [k for k in folds if any(err[zero].get(g) for g in folds[k])]  # folds with labels
    print(f"\n{title}: mean APE % of the whole-model labels per {param}")
    print(f"{'value':>6s} " + " ".join(f"{k:>8s}" for k in names) + "   pooled")
    for v in values:
        print(f"{v:>6s} " + " ".join(f"{pooled(v, folds, [k]):8.2f}" for k in names) + f" {pooled(v, folds, names):8.2f}")
    print(f"leave one GPU out: the value chosen on the others -> error on the left-out GPU ({zero} beside it)")
    for held in names:
        rest = [k for k in names if k != held]
        if not rest:
            print(f"  {held:8s} no other GPU's labels to choose on")
            continue
        best = min(values, key=lambda v: pooled(v, folds, rest))
        print(f"  {held:8s} chosen {best:>4s}: {pooled(best, folds, [held]):6.2f} %   ({zero}: {pooled(zero, folds, [held]):6.2f} %)")
    best = min(values, key=lambda v: pooled(v, folds, names))
    print(f"chosen on all of them: {best} (pooled {pooled(best, folds, names):.2f} %)")
    return best
zero = "0" if "0" in values else values[0]
best = fit("NVIDIA training GPUs (the A100 fold holds the A100-SXM4-40GB's DP/TP/PP runs)", nvidia, zero)
print("reference at that value (not used to choose): " +
      ", ".join(f"{k} {mean(err[best][k]):.2f} % ({zero}: {mean(err[zero][k]):.2f} %)" for k in report if err[zero].get(k)))
chosen = {"nvidia": best}
if any(err[zero].get(g) for f in amd.values() for g in f):
    chosen["amd"] = fit("AMD set (MI100 <-> MI210)", amd, zero)
with open(f"{out}/chosen.txt.tmp", "w") as f:
    f.write("".join(f"{k} {v}\n" for k, v in chosen.items()))
EOF
mv "$OUT/summary.txt.tmp" "$OUT/summary.txt"
mv "$OUT/chosen.txt.tmp" "$OUT/chosen.txt"
if [ "${APPLY:-0}" = 1 ]; then
  [ "$PARAM" = call-overhead-us ] || { echo "fit-host-gap: APPLY=1 writes call_overhead_us only" >&2; exit 2; }
  W="${WEIGHTS:-weights}"
  while read -r vendor value; do
    m="$W/manifest.yaml"; [ "$vendor" = amd ] && m="$W/amd/manifest.yaml"
    [ -f "$m" ] || { echo "fit-host-gap: $m not found" >&2; exit 1; }
    # One top-level flow-map line (the form tilecast writes). An existing line keeps its
    # families and takes the new value; a manifest without one gets NeuSight's five FP32
    # families (the ones whose isolated timings carry the host time), after tile_table.
    if grep -q '^call_overhead_us: *{' "$m"; then
      awk -v v="$value" '/^call_overhead_us: *\{/ {
          line = $0; sub(/^call_overhead_us: */, "", line); gsub(/[{} ]/, "", line)
          n = split(line, kv, ","); out = ""
          for (i = 1; i <= n; i++) { split(kv[i], p, ":"); out = out (i > 1 ? ", " : "") p[1] ": " v }
          $0 = "call_overhead_us: {" out "}" }
        { print }' "$m" > "$m.tmp"
    else
      awk -v v="$value" '{ print } /^tile_table:/ { print "call_overhead_us: {bmm: " v ", elementwise: " v ", layernorm: " v ", linear: " v ", softmax: " v "}" }' "$m" > "$m.tmp"
    fi
    grep -q '^call_overhead_us:' "$m.tmp" || { rm -f "$m.tmp"; echo "fit-host-gap: $m has neither a call_overhead_us nor a tile_table line" >&2; exit 1; }
    mv "$m.tmp" "$m"
    echo "fit-host-gap: $m: call_overhead_us $value us" >&2
  done < "$OUT/chosen.txt"
fi
