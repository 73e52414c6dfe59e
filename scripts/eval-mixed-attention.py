#!/usr/bin/env python3
"""How tilecast costs the attention of a step that mixes a prompt chunk with decoding sequences
(chunked prefill, `predict --mode generate --max-batched-tokens`), against LLMServingSim's
measured mixed batches: vLLM's attention over one prompt chunk (`prefill_chunk` tokens after
`kv_prefill` cached ones) and `n_decode` decode requests of `kv_decode` cached tokens, one call,
Llama-3.1-8B in BF16 on an RTX 4090 (unseen for attention). tilecast's step graph costs it as
two kernels, the chunk (attention_chunk_q) and the decodes (attention_decode_q); this prints,
per number of decode requests, the MAPE and the median forecast / measured of their sum, and
the same for the decodes' own kernel measured alone in the same file (pure decode rows of the
same n_decode and kv_decode), which says how much of the gap is the mixing itself.
--no-gqa-sharing costs the decodes as if each query head had its own KV head (what a varlen kernel
that gives every decode request a query block per head reads), a variant tried in session 30.

  scripts/eval-mixed-attention.py [--build build] [--llm-dir ../shared/llm-kernels] [--no-gqa-sharing]
"""
import argparse, collections, csv, os, statistics, sys

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
ap.add_argument("--no-gqa-sharing", action="store_true", help="decodes read each KV head once per query head")
a = ap.parse_args()
path = os.path.join(a.llm_dir, "llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1/attention.csv")
if not os.path.exists(path):
    sys.exit(f"eval-mixed-attention.py: {path} not found (--llm-dir or TILECAST_LLM_KERNELS_DIR)")
sys.path.insert(0, os.path.join(a.build, "python"))
try:
    import tilecast
except ImportError as e:
    sys.exit(f"eval-mixed-attention.py: the Python module is not built in {a.build}/python ({e})")

HEADS, KV, D, GPU = 32, 8, 128, "RTX-4090"  # Llama-3.1-8B, tp 1 (the file's meta.yaml)
memo = {}


def ms(op, shape, prefix=0):
    key = (op, shape, prefix)
    if key not in memo:
        memo[key] = tilecast.predict_kernel(op=op, shape=list(shape), gpu=GPU, dtype="bf16", prefix=prefix)["latency_ms"]
    return memo[key]


rows = [{k: int(v) if k != "time_us" else float(v) for k, v in r.items()} for r in csv.DictReader(open(path))]
alone = {(r["n_decode"], r["kv_decode"]): r["time_us"] / 1e3 for r in rows if r["prefill_chunk"] == 0}
by = collections.defaultdict(list)
for r in rows:
    pc, kp, nd, kd = r["prefill_chunk"], r["kv_prefill"], r["n_decode"], r["kv_decode"]
    if pc == 0 or nd == 0 or kd == 0:
        continue
    measured = r["time_us"] / 1e3
    decode_kv = HEADS if a.no_gqa_sharing else KV
    forecast = ms("attention_prefill", (1, pc, HEADS, KV, D), kp) + ms("attention_decode", (nd, kd + 1, HEADS, decode_kv, D))
    # What the decodes alone measured: the mixing's own cost is measured - this (and the chunk).
    by[nd].append((forecast, measured, alone.get((nd, kd))))
print("n_decode,rows,mape_pct,median_forecast_over_measured,median_measured_over_decodes_alone_measured")
for nd in sorted(by):
    v = by[nd]
    mape = statistics.mean(100 * abs(f - m) / m for f, m, _ in v)
    bias = statistics.median(f / m for f, m, _ in v)
    mix = statistics.median(m / d for _, m, d in v if d)
    print(f"{nd},{len(v)},{mape:.1f},{bias:.2f},{mix:.2f}")
allv = [x for v in by.values() for x in v]
print(f"all,{len(allv)},{statistics.mean(100 * abs(f - m) / m for f, m, _ in allv):.1f},"
      f"{statistics.median(f / m for f, m, _ in allv):.2f},{statistics.median(m / d for _, m, d in allv if d):.2f}")
