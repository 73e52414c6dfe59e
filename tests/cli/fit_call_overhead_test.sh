#!/usr/bin/env bash
# scripts/fit-host-gap.sh --param call-overhead-us with APPLY=1 on a copy of the bundled weights
# without its call_overhead_us, and the hand-made label folder (an A100-SXM4-40GB TP run, fold
# A100; an L4 run, reference only): the value it writes is the one whose eval-models forecast of
# the A100 label errs least, found here from eval-models itself; the AMD manifest (no AMD labels) and the bundled weights
# are left alone; a second fit rewrites the families an existing line lists; an unknown --param
# is one line and exit 2.
#   tests/cli/fit_call_overhead_test.sh TILECAST SOURCE_DIR
set -euo pipefail
TC=$1 SRC=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$SRC/weights" "$tmp/w"
sed -i '/^call_overhead_us:/d' "$tmp/w/manifest.yaml"  # so that the line found below was written by the fit
bundled=$(sha256sum "$SRC/weights/manifest.yaml")
amd_before=$(sha256sum < "$tmp/w/amd/manifest.yaml")
expected="" best=""
for v in 0 5 30; do
  e=$("$TC" -q eval-models --labels "$SRC/tests/data/labels" --weights "$tmp/w" --call-overhead-us "$v" --format csv |
      awk -F, '$1 == "NVIDIA_A100-SXM4-40GB" { print $10 }')
  [ -n "$e" ] || { echo "FAIL: no A100-SXM4-40GB row at $v us"; exit 1; }
  if [ -z "$best" ] || awk -v a="$e" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$e expected=$v; fi
done
TILECAST="$TC" TILECAST_NEUSIGHT_DIR="$SRC/tests/data" WEIGHTS="$tmp/w" APPLY=1 \
  bash "$SRC/scripts/fit-host-gap.sh" --param call-overhead-us "$tmp/out" 0 5 30 > "$tmp/log" 2>&1 \
  || { echo "FAIL: fit-host-gap.sh failed:"; cat "$tmp/log"; exit 1; }
grep -q "chosen on all of them: $expected " "$tmp/log" || { echo "FAIL: expected $expected us:"; cat "$tmp/log"; exit 1; }
grep -q "reference at that value (not used to choose): L4 " "$tmp/log" || { echo "FAIL: no L4 reference line"; exit 1; }
line="call_overhead_us: {bmm: $expected, elementwise: $expected, layernorm: $expected, linear: $expected, softmax: $expected}"
[ "$(grep -c "^call_overhead_us:" "$tmp/w/manifest.yaml")" = 1 ] && grep -qxF "$line" "$tmp/w/manifest.yaml" \
  || { echo "FAIL: manifest line:"; grep "^call_overhead_us" "$tmp/w/manifest.yaml"; exit 1; }
"$TC" predict --weights "$tmp/w" --model gpt2-large --gpu H100-SXM --batch 1 --seq 128 --format json > "$tmp/p.json" \
  || { echo "FAIL: the written manifest does not load"; exit 1; }
# A manifest that already lists families keeps those keys (a subset here) and takes the new value.
sed -i 's/^call_overhead_us:.*/call_overhead_us: {bmm: 3, linear: 3}/' "$tmp/w/manifest.yaml"
TILECAST="$TC" TILECAST_NEUSIGHT_DIR="$SRC/tests/data" WEIGHTS="$tmp/w" APPLY=1 \
  bash "$SRC/scripts/fit-host-gap.sh" --param call-overhead-us "$tmp/out3" 0 5 30 > "$tmp/log3" 2>&1 \
  || { echo "FAIL: second fit-host-gap.sh failed:"; cat "$tmp/log3"; exit 1; }
[ "$(grep -c "^call_overhead_us:" "$tmp/w/manifest.yaml")" = 1 ] &&
  grep -qxF "call_overhead_us: {bmm: $expected, linear: $expected}" "$tmp/w/manifest.yaml" \
  || { echo "FAIL: manifest line after the second fit:"; grep "^call_overhead_us" "$tmp/w/manifest.yaml"; exit 1; }
[ "$(sha256sum < "$tmp/w/amd/manifest.yaml")" = "$amd_before" ] || { echo "FAIL: the AMD manifest changed"; exit 1; }
[ "$(sha256sum "$SRC/weights/manifest.yaml")" = "$bundled" ] || { echo "FAIL: the bundled manifest changed"; exit 1; }
if err=$(bash "$SRC/scripts/fit-host-gap.sh" --param bogus "$tmp/out2" 2>&1); then echo "FAIL: --param bogus passed"; exit 1; fi
[ "$(wc -l <<<"$err")" = 1 ] && grep -q "expected host-gap-us or call-overhead-us, got 'bogus'" <<<"$err" \
  || { echo "FAIL: error line: $err"; exit 1; }
echo ok
