#!/usr/bin/env bash
# scripts/llm-files.sh set_unseen_prior_weight (eval-llm-loo.sh UNSEEN_PRIOR_WEIGHT) on a copy of
# the bundled weights: MoE's blend weight becomes 0.7 (0.6 bundled) and the CLI forecasts with it
# on an unseen GPU (network_weight 0.3), no other family's entry changes; MoE's
# gemm_composite_weight, at its default 0 in the bundle, is inserted and the forecast takes the
# stacked GEMMs; and a family without the key is refused with one line and leaves the manifest
# byte-identical.
#   tests/cli/set_prior_weight_test.sh TILECAST SOURCE_DIR
set -euo pipefail
TC=$1 SRC=$2
. "$(dirname "$0")/expect.sh"  # $W, fail, manifest_family
. "$SRC/scripts/llm-files.sh"
cp -r "$SRC/weights" "$W/w"
m="$W/w/manifest.yaml"
before=$(grep -c . "$m")
set_unseen_prior_weight "$m" moe 0.7
diff <(sed 's/unseen_prior_weight: .*//' "$SRC/weights/manifest.yaml") <(sed 's/unseen_prior_weight: .*//' "$m") > /dev/null \
  || fail "lines other than unseen_prior_weight changed"
[ "$(grep -c . "$m")" = "$before" ] || fail "line count changed"
[ "$(grep -c '^      unseen_prior_weight: 0.7$' "$m")" = 1 ] || fail "moe's weight not set"
out=$("$TC" predict-kernel --weights "$W/w" --op moe --shape 256,4096,14336,2,8 --gpu H100-SXM --format json)
grep -q '"network_weight": 0.3' <<<"$out" || fail "forecast does not use 0.7: $out"
grep -q '"forecast_by": "network+fitted_roofline",' <<<"$out" && grep -q '"gemm_composite_weight": 0.0,' <<<"$out" \
  || fail "bundled MoE gave the stacked GEMMs a share: $out"
# eval-llm-loo.sh GEMM_COMPOSITE_WEIGHT: another key, at its default (0, not written) in the
# bundle, so inserted after network_gpus; the layer as two stacked GEMMs then takes 0.5 and the
# network keeps 0.3 of the other 0.5.
grep -q "gemm_composite_weight" <(manifest_family "$m" moe) && fail "fixture: moe already has the key"
set_family_config "$m" moe gemm_composite_weight 0.5
[ "$(grep -c . "$m")" = $((before + 1)) ] || fail "composite weight: expected one line more"
set_family_config "$m" moe gemm_composite_weight 0.5  # now rewritten, not inserted again
[ "$(grep -c . "$m")" = $((before + 1)) ] || fail "composite weight: second edit added a line"
before=$((before + 1))
out=$("$TC" predict-kernel --weights "$W/w" --op moe --shape 4096,4096,14336,2,8 --gpu H100-SXM --dtype bf16 --format json)
grep -q '"network_weight": 0.15' <<<"$out" && grep -q '"gemm_composite_weight": 0.5' <<<"$out" \
  || fail "forecast does not use composite weight 0.5: $out"
grep -q '"forecast_by": "network+fitted_roofline+gemm_composite"' <<<"$out" || fail "forecast_by: $out"
tr -d ' \n' <<<"$out" | grep -q '"stacked_gemms":\["1024,4096,229376","1024,14336,32768"\]' \
  || fail "stacked GEMMs (Mixtral's gate_up and down on 1,024 tokens per expert): $out"
out=$("$TC" predict-kernel --weights "$W/w" --op moe --shape 4096,4096,14336,2,8 --gpu H100-SXM --dtype bf16)
grep -Eq 'gemms +[0-9.]+ ms: the layer as two stacked GEMMs \(gate_up, down\) forecast by the gemm family, weight 0\.50' <<<"$out" \
  && grep -Eq 'network\^0\.15 x fitted roofline\^0\.35 x stacked GEMMs\^0\.50' <<<"$out" || fail "text basis: $out"
# Decode is trained with network_gpus (twins) at the default weight 1, which the manifest does not
# write: the line is inserted after network_gpus, and an unseen GPU's decode forecast follows it.
grep -q "unseen_prior_weight" <(manifest_family "$m" generation_attention) \
  && fail "fixture: decode already has the key"
set_unseen_prior_weight "$m" generation_attention 0.25
[ "$(grep -c . "$m")" = $((before + 1)) ] || fail "decode: expected one line more"
[ "$(manifest_family "$m" generation_attention | grep -c '^      unseen_prior_weight: 0.25$')" = 1 ] \
  || fail "decode's weight not inserted"
out=$("$TC" predict-kernel --weights "$W/w" --op attention_decode --shape 64,4096,32,8,128 --gpu H100-SXM --format json)
grep -q '"network_weight": 0.75' <<<"$out" || fail "decode forecast does not use 0.25: $out"
set_unseen_prior_weight "$m" generation_attention 0.5  # now rewritten, not inserted again
[ "$(grep -c . "$m")" = $((before + 1)) ] || fail "decode: second edit added a line"
cp "$m" "$W/copy"
if err=$(set_unseen_prior_weight "$m" context_attention 0.5 2>&1); then fail "context_attention has no key, but it passed"; fi
[ "$(wc -l <<<"$err")" = 1 ] && grep -q "family 'context_attention' has no unseen_prior_weight" <<<"$err" \
  || fail "error line: $err"
cmp -s "$m" "$W/copy" || fail "refused edit changed the manifest"
[ ! -e "$m.tmp" ] || fail "temporary file left"
echo ok
