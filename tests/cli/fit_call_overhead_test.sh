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
. "$(dirname "$0")/expect.sh"  # $W, fail
cp -r "$SRC/weights" "$W/w"
sed -i '/^call_overhead_us:/d' "$W/w/manifest.yaml"  # so that the line found below was written by the fit
bundled=$(sha256sum "$SRC/weights/manifest.yaml")
amd_before=$(sha256sum < "$W/w/amd/manifest.yaml")
expected="" best=""
for v in 0 5 30; do
  e=$("$TC" -q eval-models --labels "$SRC/tests/data/labels" --weights "$W/w" --call-overhead-us "$v" --format csv |
      awk -F, '$1 == "NVIDIA_A100-SXM4-40GB" { print $10 }')
  [ -n "$e" ] || fail "no A100-SXM4-40GB row at $v us"
  if [ -z "$best" ] || awk -v a="$e" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$e expected=$v; fi
done
TILECAST="$TC" TILECAST_NEUSIGHT_DIR="$SRC/tests/data" WEIGHTS="$W/w" APPLY=1 \
  bash "$SRC/scripts/fit-host-gap.sh" --param call-overhead-us "$W/out" 0 5 30 > "$W/log" 2>&1 \
  || { cat "$W/log"; fail "fit-host-gap.sh failed:"; }
grep -q "chosen on all of them: $expected " "$W/log" || { cat "$W/log"; fail "expected $expected us:"; }
grep -q "reference at that value (not used to choose): L4 " "$W/log" || fail "no L4 reference line"
line="call_overhead_us: {bmm: $expected, elementwise: $expected, layernorm: $expected, linear: $expected, softmax: $expected}"
[ "$(grep -c "^call_overhead_us:" "$W/w/manifest.yaml")" = 1 ] && grep -qxF "$line" "$W/w/manifest.yaml" \
  || { grep "^call_overhead_us" "$W/w/manifest.yaml"; fail "manifest line:"; }
"$TC" predict --weights "$W/w" --model gpt2-large --gpu H100-SXM --batch 1 --seq 128 --format json > "$W/p.json" \
  || fail "the written manifest does not load"
# A manifest that already lists families keeps those keys (a subset here) and takes the new value.
sed -i 's/^call_overhead_us:.*/call_overhead_us: {bmm: 3, linear: 3}/' "$W/w/manifest.yaml"
TILECAST="$TC" TILECAST_NEUSIGHT_DIR="$SRC/tests/data" WEIGHTS="$W/w" APPLY=1 \
  bash "$SRC/scripts/fit-host-gap.sh" --param call-overhead-us "$W/out3" 0 5 30 > "$W/log3" 2>&1 \
  || { cat "$W/log3"; fail "second fit-host-gap.sh failed:"; }
[ "$(grep -c "^call_overhead_us:" "$W/w/manifest.yaml")" = 1 ] &&
  grep -qxF "call_overhead_us: {bmm: $expected, linear: $expected}" "$W/w/manifest.yaml" \
  || { grep "^call_overhead_us" "$W/w/manifest.yaml"; fail "manifest line after the second fit:"; }
[ "$(sha256sum < "$W/w/amd/manifest.yaml")" = "$amd_before" ] || fail "the AMD manifest changed"
[ "$(sha256sum "$SRC/weights/manifest.yaml")" = "$bundled" ] || fail "the bundled manifest changed"
if err=$(bash "$SRC/scripts/fit-host-gap.sh" --param bogus "$W/out2" 2>&1); then fail "--param bogus passed"; fi
[ "$(wc -l <<<"$err")" = 1 ] && grep -q "expected host-gap-us or call-overhead-us, got 'bogus'" <<<"$err" \
  || fail "error line: $err"
echo ok
