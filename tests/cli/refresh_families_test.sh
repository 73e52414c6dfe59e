#!/usr/bin/env bash
# scripts/llm-files.sh refresh_untrained_families (eval-llm-loo.sh EVAL_ONLY=1) on a fold made
# from a copy of the bundled weights as a fold trained before session 75 looks: its prefill
# entry lists the old input (log2_memory_l2_us) and its network file differs, its gemm entry is the
# fold's own (a marked trained_at). Before: every forecast is refused with one line naming the
# family. After: the prefill entry and its files are the bundle's, byte for byte, the trained gemm
# entry keeps the fold's mark, forecasts run, and one line names the families taken.
#   tests/cli/refresh_families_test.sh TILECAST SOURCE_DIR
set -euo pipefail
TC=$1 SRC=$2
. "$(dirname "$0")/expect.sh"  # $W, fail, manifest_family
. "$SRC/scripts/llm-files.sh"
cp -r "$SRC/weights" "$W/fold"
m="$W/fold/manifest.yaml"
sed -i -e '/^  context_attention:$/,/^  [a-z_]*:$/ s/log2_memory_l2_qo_us/log2_memory_l2_us/' \
       -e '/^  gemm:$/,/^  [a-z_]*:$/ s/^    trained_at: .*/    trained_at: 2000-01-01T00:00:00Z/' "$m"
printf 'x' >> "$W/fold/context_attention.tcmlp"
[ "$(manifest_family "$m" context_attention | grep -c 'log2_memory_l2_us')" = 1 ] || fail "fixture: prefill not made old"
if out=$("$TC" predict-kernel --weights "$W/fold" --op gemm --shape 64,4096,4096 --dtype bf16 --gpu H100-SXM 2>&1); then
  echo "FAIL: the old fold forecast: $out"; exit 1
fi
[ "$(wc -l <<<"$out")" = 1 ] && grep -q "context_attention.*feature list differs" <<<"$out" || fail "refusal: $out"
printf 'family,rows_train\ngemm,100\n' > "$W/trained.csv"
err=$(refresh_untrained_families "$W/fold" "$W/trained.csv" "$SRC/weights" 2>&1)
[ "$err" = "eval-llm-loo: $W/fold: untrained families taken from $SRC/weights: context_attention" ] \
  || fail "message: $err"
diff <(manifest_family "$m" context_attention) <(manifest_family "$SRC/weights/manifest.yaml" context_attention) > /dev/null \
  || fail "prefill entry not the bundle's"
cmp -s "$W/fold/context_attention.tcmlp" "$SRC/weights/context_attention.tcmlp" || fail "prefill network not copied"
manifest_family "$m" gemm | grep -q '^    trained_at: 2000-01-01T00:00:00Z$' || fail "the trained gemm entry was replaced"
[ "$(grep -c . "$m")" = "$(grep -c . "$SRC/weights/manifest.yaml")" ] || fail "line count"
[ ! -e "$m.tmp" ] || fail "temporary file left"
out=$("$TC" predict-kernel --weights "$W/fold" --op attention_prefill --shape 1,2048,32,8,128 --dtype bf16 --gpu H100-SXM)
grep -q "ms" <<<"$out" || fail "no forecast after the refresh: $out"
# Nothing left to take: silent, manifest unchanged.
cp "$m" "$W/copy"
err=$(refresh_untrained_families "$W/fold" "$W/trained.csv" "$SRC/weights" 2>&1)
[ -z "$err" ] && cmp -s "$m" "$W/copy" || fail "second refresh: $err"
echo ok
