#!/usr/bin/env bash
# Bad input and faults, as a hostile user would try them: every case checks the exit code,
# the one error line on stderr, and that no input, weights folder or earlier output changed.
# Usage: reliability_test.sh TILECAST_BIN
set -euo pipefail
TC="$1"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
D="$SRC/tests/data"
SMOKE="$SRC/configs/sweeps/smoke.yaml"
W="$(mktemp -d)"
trap 'jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$W"' EXIT
T() { "$TC" -q --log-level error "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
# expect RC REGEX CMD...: exit code RC, and (for RC != 0) exactly one stderr line matching REGEX.
expect() {
  local want="$1" re="$2"; shift 2
  set +e; "$@" > "$W/stdout" 2> "$W/stderr"; local rc=$?; set -e
  [ "$rc" = "$want" ] || { cat "$W/stderr"; fail "$* -> exit $rc, expected $want"; }
  if [ "$want" != 0 ]; then
    grep -Eq -- "$re" "$W/stderr" || { cat "$W/stderr"; fail "$* -> stderr lacks '$re'"; }
    [ "$(wc -l < "$W/stderr")" -eq 1 ] || { cat "$W/stderr"; fail "$* -> more than one stderr line"; }
  fi
  echo "ok   exit $rc  $(head -c 160 "$W/stderr")"
}
snapshot() { (cd "$1" && find . -type f ! -name .lock -print0 | sort -z | xargs -0 -r sha256sum); }
# small_disk KIB CMD...: runs CMD with a file-size limit; writes past it fail (EFBIG), as on a
# full disk.
small_disk() { local kib="$1"; shift; bash -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$kib" "$@"; }

echo "== stdout that cannot be written is an error (exit 3)"
expect 3 "stdout: write failed" bash -c "\"$TC\" gpus > /dev/full"
expect 3 "stdout: write failed" bash -c "\"$TC\" predict-kernel --op add --shape 8,8 --gpu T4 --format json > /dev/full"
expect 3 "stdout: write failed" bash -c "\"$TC\" predict --model gpt2-large --gpu T4 --batch 1 --seq 64 > /dev/full"

echo "== collect folders: one writer at a time, --resume only with the same sweep"
LONG="$W/long.yaml"
cat > "$LONG" <<'YAML'
name: long
warmup: 1
repeats: 5
families:
  layernorm:
    samples_per_cell: 20000
    b: {edges: [64, 129]}
    h: {edges: [256, 513]}
YAML
T collect --sweep "$SMOKE" --out "$W/A" --backend cpu --limit 40 > /dev/null
T collect --sweep "$SMOKE" --out "$W/B" --backend cpu --shard 1/2 --limit 40 > /dev/null
"$TC" -q collect --sweep "$LONG" --out "$W/busy" --backend cpu > /dev/null 2>&1 &
busy=$!
for _ in $(seq 50); do [ -s "$W/busy/layernorm.csv" ] && break; sleep 0.1; done
expect 1 "in use by another tilecast process" T collect --sweep "$LONG" --out "$W/busy" --backend cpu
expect 1 "in use by another tilecast process" T collect --sweep "$LONG" --out "$W/busy" --backend cpu --resume
kill -9 "$busy"; wait "$busy" 2>/dev/null || true
expect 1 "differs from the sweep this folder was collected with" T collect --sweep "$SMOKE" --out "$W/busy" --backend cpu --resume
expect 1 "--shard 1/2 differs" T collect --sweep "$LONG" --out "$W/busy" --backend cpu --resume --shard 1/2

echo "== numbers are parsed whole and range-checked"
for s in 1.5/2 0/2/3 0x1/2 "-1/2" 2/2; do
  expect 1 "--shard" T collect --sweep "$SMOKE" --out "$W/never" --backend cpu --shard "$s"
done
expect 1 "--limit: expected >= 0" T collect --sweep "$SMOKE" --out "$W/never" --backend cpu --limit -5
expect 1 "--epochs: expected 1" T train --out "$W/never" --epochs 0
expect 1 "--epochs: expected 1" T train --out "$W/never" --epochs -3
expect 1 "--max-rows: expected >= 4" T train --out "$W/never" --max-rows -5
expect 1 "--top: expected >= 0" T predict --model gpt2-large --gpu T4 --batch 1 --seq 16 --top -1
expect 1 "file name field 'batch'" T eval-models --labels "$D/bad_labels_name"
[ ! -e "$W/never" ] || fail "a refused command created its --out folder"
EDGES=$(seq -s, 1 2000)
printf 'name: huge\nfamilies:\n  bmm:\n    samples_per_cell: 100000\n    b: {edges: [%s]}\n    m: {edges: [%s]}\n    n: {edges: [%s]}\n    k: {edges: [%s]}\n' \
  "$EDGES" "$EDGES" "$EDGES" "$EDGES" > "$W/huge.yaml"
expect 1 "huge.yaml: sweep has more than" T collect --sweep "$W/huge.yaml" --out "$W/never" --backend cpu --limit 1

echo "== values out of physical range, wrong JSON types, missing inputs"
expect 1 "huge_latency.csv:2: column 'Latency'" T eval-kernels --data "$D/bad/huge_latency.csv"
expect 1 "fp16_rows.csv:3: column 'dtype': 'fp16'" T eval-kernels --data "$D/bad/fp16_rows.csv"
expect 1 "activation_int.json: field 'activation_function': expected a string" T predict --model "$D/bad_config/activation_int.json" --gpu T4 --batch 1 --seq 16
expect 1 "negative_sms.yaml" T gpus --show "$D/gpus_bad/negative_sms.yaml"
expect 1 "is a folder, expected a file" T eval-kernels --data "$D"
expect 1 "data: model config not found" T predict --model "$D" --gpu T4 --batch 1 --seq 16
expect 1 "gpus_bad" T predict-kernel --op add --shape 8,8 --gpu "$D/gpus_bad"
expect 1 "--pp 11: .*36 layers do not split evenly" T predict --model gpt2-large --gpu T4 --batch 8 --seq 64 --mode training --pp 11 --microbatches 8
expect 1 "--in '$W/missing': folder not found" T merge --in "$W/A" "$W/missing" --out "$W/never"
expect 1 "nowhere.csv: cannot open file" T eval-models --labels "$D/labels" --published "$W/nowhere.csv"
expect 1 "--opgraphs '$W/nowhere': folder not found" T eval-models --labels "$D/labels" --opgraphs "$W/nowhere"
expect 1 "gpt2_large-inf-1024-4.csv:3: column 'latency'" T eval-models --labels "$D/neg_label_csv/labels"

echo "== an output never overwrites an input"
snapshot "$W/A" > "$W/A.sum"
expect 1 "--out '$W/A': would overwrite the input" T merge --in "$W/A" "$W/B" --out "$W/A"
expect 1 "would overwrite the input" T merge --in "$W/A" "$W/B" --out "$W/A/sub"
expect 1 "would overwrite the input" T merge --in "$W/A" "$W/B" --out "$W/A/../A/"
snapshot "$W/A" | diff - "$W/A.sum" > /dev/null || fail "merge changed an input folder"
cp "$D/vec_small.csv" "$W/vec.csv"
expect 1 "--rows-csv '$W/vec.csv': would overwrite the input" T eval-kernels --data "$W/vec.csv" --rows-csv "$W/vec.csv"
cmp -s "$D/vec_small.csv" "$W/vec.csv" || fail "eval-kernels changed its --data file"

echo "== a failed write leaves nothing half-written (a file-size limit stands in for a full disk)"
T merge --in "$W/A" "$W/B" --out "$W/M" > /dev/null
snapshot "$W/M" > "$W/M.sum"
expect 0 "" T merge --in "$W/A" "$W/B" --out "$W/M"
T collect --sweep "$SMOKE" --out "$W/big" --backend cpu > /dev/null
expect 3 "write failed: File too large \(nothing written\)" small_disk 2 "$TC" -q --log-level error merge --in "$W/big" --out "$W/M"
snapshot "$W/M" | diff - "$W/M.sum" > /dev/null || fail "a failed merge changed the earlier output"
[ -z "$(find "$W/M" -name '*.tmp.*')" ] || fail "a failed merge left temp files"
{ head -1 "$D/vec_small.csv"; for _ in $(seq 40); do tail -n +2 "$D/vec_small.csv"; done; } > "$W/vec_many.csv"
expect 3 "rows.csv: write failed" small_disk 2 bash -c '"$0" -q --log-level error eval-kernels --data "$1" --rows-csv "$2" > /dev/null' "$TC" "$W/vec_many.csv" "$W/rows.csv"
[ ! -e "$W/rows.csv" ] || fail "a failed --rows-csv left a file"

echo "== two executables: forecasting without LibTorch, training handed over to tilecast-torch"
if ldd "$TC" | grep -q libtorch; then fail "tilecast links LibTorch: forecasting must not load it"; fi
mkdir -p "$W/lone"; cp "$TC" "$W/lone/tilecast"
expect 2 "'train' runs in .*/lone/tilecast-torch, which was not built" "$W/lone/tilecast" train --out "$W/never"
expect 0 "" "$W/lone/tilecast" predict-kernel --op gemm --shape 64,4096,4096 --dtype bf16 --gpu H100-SXM
grep -q "latency_ms" "$W/stdout" || fail "a lone tilecast binary cannot forecast"
[ ! -e "$W/never" ] || fail "a train that could not start created its --out"

echo "== weights folders: verified at load, replaced only by a finished run"
cp -r "$SRC/weights" "$W/w"
# A folder from before the torch-free networks: one line saying how to complete it, and
# export-weights completes it with the same networks as the bundled ones.
cp -r "$SRC/weights" "$W/old"; rm "$W/old"/*.tcmlp
sed -i '/^    net_files:/,/^    layer_widths:/{/^    layer_widths:/!d}' "$W/old/manifest.yaml"
expect 1 "family 'bmm' has no torch-free network files .*tilecast export-weights --weights" T predict-kernel --weights "$W/old" --op add --shape 8,64 --gpu T4
expect 0 "" T export-weights --weights "$W/old"
for f in "$SRC"/weights/*.tcmlp; do cmp -s "$f" "$W/old/$(basename "$f")" || fail "export-weights wrote another $(basename "$f")"; done
expect 0 "" T predict-kernel --weights "$W/old" --op add --shape 8,64 --gpu T4
expect 0 "" T predict-kernel --op bmm --shape 8,64,64,64 --gpu T4
# The training GPUs' recorded specs (gpus/): a malformed or out-of-range one is one line naming it.
cp -r "$SRC/weights" "$W/specs"; echo "num_sms: [oops" >> "$W/specs/gpus/A40.yaml"
expect 1 "gpus/A40.yaml: malformed YAML" T predict-kernel --weights "$W/specs" --op gemm --shape 64,64,64 --gpu H100-SXM
cp "$SRC/weights/gpus/A40.yaml" "$W/specs/gpus/A40.yaml"; sed -i 's/^mem_bw_gbps: .*/mem_bw_gbps: -5/' "$W/specs/gpus/A40.yaml"
expect 1 "gpus/A40.yaml: field 'mem_bw_gbps': value -5 outside" T predict-kernel --weights "$W/specs" --op gemm --shape 64,64,64 --gpu H100-SXM
# The leave-one-GPU-out errors a forecast quotes (forecast_errors.json): malformed, one line
# naming the file and field; absent, the forecast without them.
cp "$SRC/weights/gpus/A40.yaml" "$W/specs/gpus/A40.yaml"
echo '{"families": {"gemm": {"trained_at": "x", "data_hash": "y", "cells": [{"left_out": "A", "key": "gemm/bf16", "rows": 5, "mape_pct": "ten", "bias": 1}]}}}' > "$W/specs/forecast_errors.json"
expect 1 "forecast_errors.json: field 'families.gemm.cells\\[0\\].mape_pct': expected a number" T predict-kernel --weights "$W/specs" --op gemm --shape 64,64,64 --gpu H100-SXM
echo '{"families": ' > "$W/specs/forecast_errors.json"
expect 1 "forecast_errors.json: not valid JSON" T predict --weights "$W/specs" --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 1 --context 64
rm "$W/specs/forecast_errors.json"
expect 0 "" T predict-kernel --weights "$W/specs" --op gemm --shape 64,64,64 --gpu H100-SXM
python3 - "$W/w/bmm.s1.tcmlp" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1; open(p, 'wb').write(b)
PY
expect 1 "bmm.s1.tcmlp: sha256 differs from manifest.yaml" T predict-kernel --weights "$W/w" --op bmm --shape 8,64,64,64 --gpu T4
cp "$SRC/weights/bmm.s1.tcmlp" "$W/w/bmm.s1.tcmlp"
cp "$SRC/weights/softmax.tcmlp" "$W/w/layernorm.tcmlp"
expect 1 "layernorm.tcmlp: sha256 differs" T predict-kernel --weights "$W/w" --op ln --shape 8,64 --gpu T4
cp "$SRC/weights/layernorm.tcmlp" "$W/w/layernorm.tcmlp"
sed -i '0,/num_layers: 8/s//num_layers: 6/' "$W/w/manifest.yaml"
expect 1 "manifest.yaml: family 'bmm': field 'config': num_layers 6" T predict-kernel --weights "$W/w" --op add --shape 8,64 --gpu T4
expect 1 "is the bundled weights folder; pass --force" T train --out "$SRC/weights" --family softmax
expect 1 "is the bundled weights folder" T train --out "$SRC/weights/" --family softmax
expect 1 "not a tilecast weights folder" T train --out "$W/A/.." --data "$W/big"
# A real (tiny) weights folder trained on the CPU-collected data, then runs that fail.
expect 0 "" T train --data "$W/big" --out "$W/tw" --epochs 1
snapshot "$W/tw" > "$W/tw.sum"
mkdir -p "$W/hdr"; head -1 "$W/big/bmm.csv" > "$W/hdr/bmm.csv"; cp "$W/big/gpu.yaml" "$W/hdr/"
expect 1 "hdr/bmm.csv: too few rows to train bmm" T train --data "$W/hdr" --out "$W/tw"
snapshot "$W/tw" | diff - "$W/tw.sum" > /dev/null || fail "a failed train (header-only data) changed the weights folder"
expect 3 "write failed|cannot copy file" small_disk 64 "$TC" -q --log-level error train --data "$W/big" --out "$W/tw" --epochs 1
snapshot "$W/tw" | diff - "$W/tw.sum" > /dev/null || fail "a failed train (disk full) changed the weights folder"
expect 3 "fresh.staging/bmm.pt: write failed: File too large" small_disk 64 "$TC" -q --log-level error train --data "$W/big" --out "$W/fresh" --epochs 1
[ ! -e "$W/fresh" ] && [ ! -e "$W/.fresh.staging" ] || fail "a failed train into a new folder left files"
"$TC" -q train --data "$W/big" --out "$W/tw" --epochs 100000 > /dev/null 2>&1 &
tr=$!
for _ in $(seq 100); do [ -n "$(find "$W/.tw.staging" -name '*.pt' -newer "$W/tw.sum" 2>/dev/null)" ] && break; sleep 0.1; done
kill -9 "$tr"; wait "$tr" 2>/dev/null || true
snapshot "$W/tw" | diff - "$W/tw.sum" > /dev/null || fail "kill -9 during train changed the weights folder"
[ -d "$W/.tw.staging" ] || fail "expected the killed run's staging folder"
expect 0 "" T train --data "$W/big" --out "$W/tw" --epochs 1 --family softmax
[ ! -e "$W/.tw.staging" ] || fail "the next train did not clear the stale staging folder"
snapshot "$W/tw" > "$W/tw.sum"
# Ctrl-C: exit 130, the weights folder unchanged, the finished part kept beside it.
"$TC" -q train --data "$W/big" --out "$W/tw" --epochs 100000 > /dev/null 2>&1 &
tr=$!
for _ in $(seq 100); do [ -n "$(find "$W/.tw.staging" -name '*.pt' -newer "$W/tw.sum" 2>/dev/null)" ] && break; sleep 0.1; done
kill -INT "$tr"
set +e; wait "$tr"; rc=$?; set -e
[ "$rc" = 130 ] || fail "Ctrl-C during train: exit $rc, expected 130"
snapshot "$W/tw" | diff - "$W/tw.sum" > /dev/null || fail "Ctrl-C during train changed the weights folder"
[ -f "$W/tw.interrupted/manifest.yaml" ] || fail "Ctrl-C during train did not keep the finished part"
echo "ok   exit 130 (Ctrl-C during train; weights unchanged, partial run in tw.interrupted)"
expect 0 "" T predict-kernel --weights "$W/tw" --op softmax --shape 8,64 --gpu "$W/big/gpu.yaml"
echo "all reliability cases passed"
