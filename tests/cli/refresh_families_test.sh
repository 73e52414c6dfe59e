#!/usr/bin/env bash
# scripts/llm-files.sh refresh_untrained_families (eval-llm-loo.sh EVAL_ONLY=1) on a fold made
# from a copy of the bundled weights as a fold trained before session 62 looks: its prefill
# entry lists the old input (log2_memory_us) and its network file differs, its gemm entry is the
# fold's own (a marked trained_at). Before: every forecast is refused with one line naming the
# family. After: the prefill entry and its files are the bundle's, byte for byte, the trained gemm
# entry keeps the fold's mark, forecasts run, and one line names the families taken.
#   tests/cli/refresh_families_test.sh TILECAST SOURCE_DIR
set -euo pipefail
TC=$1 SRC=$2
. "$SRC/scripts/llm-files.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$SRC/weights" "$tmp/fold"
m="$tmp/fold/manifest.yaml"
block() { awk -v fam="  $2:" '/^  [A-Za-z0-9_]+:$/ { f = ($0 == fam) } /^[^ ]/ { f = 0 } f' "$1"; }
sed -i -e '/^  context_attention:$/,/^  [a-z_]*:$/ s/log2_memory_l2_us/log2_memory_us/' \
       -e '/^  gemm:$/,/^  [a-z_]*:$/ s/^    trained_at: .*/    trained_at: 2000-01-01T00:00:00Z/' "$m"
printf 'x' >> "$tmp/fold/context_attention.tcmlp"
[ "$(block "$m" context_attention | grep -c 'log2_memory_us')" = 1 ] || { echo "FAIL: fixture: prefill not made old"; exit 1; }
if out=$("$TC" predict-kernel --weights "$tmp/fold" --op gemm --shape 64,4096,4096 --dtype bf16 --gpu H100-SXM 2>&1); then
  echo "FAIL: the old fold forecast: $out"; exit 1
fi
[ "$(wc -l <<<"$out")" = 1 ] && grep -q "context_attention.*feature list differs" <<<"$out" || { echo "FAIL: refusal: $out"; exit 1; }
printf 'family,rows_train\ngemm,100\n' > "$tmp/trained.csv"
err=$(refresh_untrained_families "$tmp/fold" "$tmp/trained.csv" "$SRC/weights" 2>&1)
[ "$err" = "eval-llm-loo: $tmp/fold: untrained families taken from $SRC/weights: context_attention" ] \
  || { echo "FAIL: message: $err"; exit 1; }
diff <(block "$m" context_attention) <(block "$SRC/weights/manifest.yaml" context_attention) > /dev/null \
  || { echo "FAIL: prefill entry not the bundle's"; exit 1; }
cmp -s "$tmp/fold/context_attention.tcmlp" "$SRC/weights/context_attention.tcmlp" || { echo "FAIL: prefill network not copied"; exit 1; }
block "$m" gemm | grep -q '^    trained_at: 2000-01-01T00:00:00Z$' || { echo "FAIL: the trained gemm entry was replaced"; exit 1; }
[ "$(grep -c . "$m")" = "$(grep -c . "$SRC/weights/manifest.yaml")" ] || { echo "FAIL: line count"; exit 1; }
[ ! -e "$m.tmp" ] || { echo "FAIL: temporary file left"; exit 1; }
out=$("$TC" predict-kernel --weights "$tmp/fold" --op attention_prefill --shape 1,2048,32,8,128 --dtype bf16 --gpu H100-SXM)
grep -q "ms" <<<"$out" || { echo "FAIL: no forecast after the refresh: $out"; exit 1; }
# Nothing left to take: silent, manifest unchanged.
cp "$m" "$tmp/copy"
err=$(refresh_untrained_families "$tmp/fold" "$tmp/trained.csv" "$SRC/weights" 2>&1)
[ -z "$err" ] && cmp -s "$m" "$tmp/copy" || { echo "FAIL: second refresh: $err"; exit 1; }
echo ok
