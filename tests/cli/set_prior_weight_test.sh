#!/usr/bin/env bash
# scripts/llm-files.sh set_unseen_prior_weight (eval-llm-loo.sh UNSEEN_PRIOR_WEIGHT) on a copy of
# the bundled weights: MoE's blend weight becomes 0.5 and the CLI forecasts with it on an unseen
# GPU (network_weight 0.5), no other family's entry changes, and a family without the key is
# refused with one line and leaves the manifest byte-identical.
#   tests/cli/set_prior_weight_test.sh TILECAST SOURCE_DIR
set -euo pipefail
TC=$1 SRC=$2
. "$SRC/scripts/llm-files.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$SRC/weights" "$tmp/w"
m="$tmp/w/manifest.yaml"
before=$(grep -c . "$m")
set_unseen_prior_weight "$m" moe 0.5
diff <(sed 's/unseen_prior_weight: .*//' "$SRC/weights/manifest.yaml") <(sed 's/unseen_prior_weight: .*//' "$m") > /dev/null \
  || { echo "FAIL: lines other than unseen_prior_weight changed"; exit 1; }
[ "$(grep -c . "$m")" = "$before" ] || { echo "FAIL: line count changed"; exit 1; }
[ "$(grep -c '^      unseen_prior_weight: 0.5$' "$m")" = 1 ] || { echo "FAIL: moe's weight not set"; exit 1; }
out=$("$TC" predict-kernel --weights "$tmp/w" --op moe --shape 256,4096,14336,2,8 --gpu H100-SXM --format json)
# The bundled MoE also gives the stacked GEMMs 0.25 (gemm_composite_weight): the network keeps
# 0.5 of the other 0.75.
grep -q '"network_weight": 0.375' <<<"$out" || { echo "FAIL: forecast does not use 0.5: $out"; exit 1; }
# eval-llm-loo.sh GEMM_COMPOSITE_WEIGHT: the same edit of another key, rewritten in place.
set_family_config "$m" moe gemm_composite_weight 0.5
[ "$(grep -c . "$m")" = "$before" ] || { echo "FAIL: composite weight: line count changed"; exit 1; }
out=$("$TC" predict-kernel --weights "$tmp/w" --op moe --shape 256,4096,14336,2,8 --gpu H100-SXM --format json)
grep -q '"network_weight": 0.25' <<<"$out" && grep -q '"gemm_composite_weight": 0.5' <<<"$out" \
  || { echo "FAIL: forecast does not use composite weight 0.5: $out"; exit 1; }
# Decode is trained with network_gpus (twins) at the default weight 1, which the manifest does not
# write: the line is inserted after network_gpus, and an unseen GPU's decode forecast follows it.
grep -q "unseen_prior_weight" <(awk '/^  generation_attention:$/{f=1;next} /^  [A-Za-z0-9_]+:$/{f=0} f' "$m") \
  && { echo "FAIL: fixture: decode already has the key"; exit 1; }
set_unseen_prior_weight "$m" generation_attention 0.25
[ "$(grep -c . "$m")" = $((before + 1)) ] || { echo "FAIL: decode: expected one line more"; exit 1; }
[ "$(awk '/^  generation_attention:$/{f=1;next} /^  [A-Za-z0-9_]+:$/{f=0} f && /^      unseen_prior_weight: 0.25$/' "$m" | wc -l)" = 1 ] \
  || { echo "FAIL: decode's weight not inserted"; exit 1; }
out=$("$TC" predict-kernel --weights "$tmp/w" --op attention_decode --shape 64,4096,32,8,128 --gpu H100-SXM --format json)
grep -q '"network_weight": 0.75' <<<"$out" || { echo "FAIL: decode forecast does not use 0.25: $out"; exit 1; }
set_unseen_prior_weight "$m" generation_attention 0.5  # now rewritten, not inserted again
[ "$(grep -c . "$m")" = $((before + 1)) ] || { echo "FAIL: decode: second edit added a line"; exit 1; }
cp "$m" "$tmp/copy"
if err=$(set_unseen_prior_weight "$m" context_attention 0.5 2>&1); then echo "FAIL: context_attention has no key, but it passed"; exit 1; fi
[ "$(wc -l <<<"$err")" = 1 ] && grep -q "family 'context_attention' has no unseen_prior_weight" <<<"$err" \
  || { echo "FAIL: error line: $err"; exit 1; }
cmp -s "$m" "$tmp/copy" || { echo "FAIL: refused edit changed the manifest"; exit 1; }
[ ! -e "$m.tmp" ] || { echo "FAIL: temporary file left"; exit 1; }
echo ok
