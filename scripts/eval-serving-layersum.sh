#!/usr/bin/env bash
# A layer-sum check of the serving forecasts (issue 8): no end-to-end TTFT/TPOT measurements
# are in ../shared, but LLMServingSim times every layer op of Llama-3.1-8B in vLLM (BF16, one
# RTX 4090, one decoder layer): dense.csv (projections, RMSNorm with the fused residual add,
# rotary, SiLU-mul, embedding, final norm, by token count), attention.csv (prefill chunks and
# decode batches over KV lengths) and per_sequence.csv (lm_head and the sampler by sequences).
# This sums them into the step a prefill or a decode would take (32 layers: 2 RMSNorm + qkv +
# rotary + attention + o + gate_up + SiLU-mul + down per layer; embedding, final norm, lm_head
# and the sampler once; the sampler's fit is on these very rows) and sets it beside
# `tilecast predict --mode prefill|decode` for the same model, GPU and shape. It checks how the
# per-kernel forecasts compose into a step; it is not an end-to-end measurement (no host gaps,
# no scheduler). The RTX 4090 is a training GPU of the gemm family (these dense rows) and an
# unseen GPU for attention.
#   scripts/eval-serving-layersum.sh [OUT]      (default out/serving-layersum)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-out/serving-layersum}"
LLM="${TILECAST_LLM_KERNELS_DIR:-../shared/llm-kernels}"
D="$LLM/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1"
TC=./build/tilecast
[ -x "$TC" ] || { echo "eval-serving-layersum: $TC not built (run scripts/build.sh)" >&2; exit 2; }
[ -f "$D/dense.csv" ] || { echo "eval-serving-layersum: $D/dense.csv not found (set TILECAST_LLM_KERNELS_DIR)" >&2; exit 2; }
mkdir -p "$OUT"
python3 - "$D" "$TC" "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import csv, json, os, subprocess, sys
d, tc, out = sys.argv[1], sys.argv[2], sys.argv[3]
LAYERS = 32
dense = {}
for r in csv.DictReader(open(os.path.join(d, "dense.csv"))):
    dense[(r["layer"], int(r["tokens"]))] = float(r["time_us"]) / 1e3
seq = {}
for r in csv.DictReader(open(os.path.join(d, "per_sequence.csv"))):
    seq[(r["layer"], int(r["sequences"]))] = float(r["time_us"]) / 1e3
attn = {}
for r in csv.DictReader(open(os.path.join(d, "attention.csv"))):
    attn[tuple(int(r[k]) for k in ("prefill_chunk", "kv_prefill", "n_decode", "kv_decode"))] = float(r["time_us"]) / 1e3


def layer_sum(tokens, sequences, attention_ms):
    per_layer = (2 * dense[("layernorm", tokens)] + dense[("qkv_proj", tokens)] + dense[("rotary_emb", tokens)] +
                 attention_ms + dense[("o_proj", tokens)] + dense[("gate_up_proj", tokens)] +
                 dense[("act_fn", tokens)] + dense[("down_proj", tokens)])
    return (LAYERS * per_layer + dense[("embedding", tokens)] + dense[("final_layernorm", tokens)] +
            seq[("lm_head", sequences)] + seq[("sampler", sequences)])


def predict(args):
    res = subprocess.run([tc, "-q", "predict", "--model", "llama-3.1-8b", "--gpu", "RTX-4090", "--dtype", "bf16",
                          "--format", "json"] + args, capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def forecast(args, key):
    return predict(args)[key]


rows = []
for n in (128, 256, 512, 1024, 2048):
    m = layer_sum(n, 1, attn[(n, 0, 0, 0)])
    f = forecast(["--mode", "prefill", "--batch", "1", "--seq", str(n)], "ttft_ms")
    rows.append(("prefill (TTFT)", "1 x %d tokens" % n, m, f))
for b in (1, 8, 32):
    for ctx in (512, 2048):
        m = layer_sum(b, b, attn[(0, 0, b, ctx)])
        f = forecast(["--mode", "decode", "--batch", str(b), "--context", str(ctx)], "tpot_ms")
        rows.append(("decode (TPOT)", "%d seq x %d cached" % (b, ctx), m, f))
print("%-15s %-22s %12s %12s %8s" % ("step", "shape", "layer_sum_ms", "forecast_ms", "err%"))
errs = []
for step, shape, m, f in rows:
    e = 100 * (f - m) / m
    errs.append(abs(e))
    print("%-15s %-22s %12.3f %12.3f %+8.1f" % (step, shape, m, f, e))
print("mean |err| %.1f %% over %d steps (prefill %.1f %%, decode %.1f %%)" % (
    sum(errs) / len(errs), len(errs), sum(errs[:5]) / 5, sum(errs[5:]) / len(errs[5:])))

# Where a decode step's difference comes from: one layer's ops, 1 sequence over 512 cached tokens.
ops = {o["name"].split(".")[-1]: 1e3 * o["forward_ms"] / o["count"]
       for o in predict(["--mode", "decode", "--batch", "1", "--context", "512"])["ops"]}
print("\ndecode, 1 sequence x 512 cached, one layer (us): op, measured, forecast")
for ours, theirs in (("qkv_proj", "qkv_proj"), ("o_proj", "o_proj"), ("gate_up_proj", "gate_up_proj"),
                     ("down_proj", "down_proj"), ("act_fn", "act_fn"), ("rotary_emb", "rotary_emb"),
                     ("input_layernorm", "layernorm")):
    print("%-16s %8.1f %8.1f" % (ours, 1e3 * dense[(theirs, 1)], ops[ours]))
print("%-16s %8.1f %8.1f" % ("attention", 1e3 * attn[(0, 0, 1, 512)], ops["attn"]))
EOF
