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

The varlen model (session 33; what `predict --mode generate` now does for vLLM's mixed steps on
FlashAttention-2 GPUs, predictor/graph_predictor.h varlen_decode_ms): FA2's varlen kernel gives
each decode request one CTA per query head, which walks its whole cache in 128-key blocks
without splitting it, so the decodes take waves x blocks x a per-block time, waves =
ceil(requests x heads / SMs), blocks = ceil((cached + 1) / 128). The per-block time is the
median over the mixed rows of (measured - the chunk's forecast) / (waves x blocks), in SM
cycles; --fit prints it (the constant kVarlenCyclesPerKeyBlock must equal it), and the held-out
splits below fit it on one part of the rows and score the other.

  scripts/eval-mixed-attention.py [--build build] [--llm-dir ../shared/llm-kernels] [--no-gqa-sharing] [--fit]
"""
import argparse, collections, csv, math, os, statistics, sys

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
ap.add_argument("--no-gqa-sharing", action="store_true", help="decodes read each KV head once per query head")
ap.add_argument("--fit", action="store_true", help="print the varlen model's fitted SM cycles per 128-key block")
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
SMS, CLOCK_MHZ = 128, 2520  # configs/gpus/RTX-4090.yaml
memo = {}


def ms(op, shape, prefix=0):
    key = (op, shape, prefix)
    if key not in memo:
        memo[key] = tilecast.predict_kernel(op=op, shape=list(shape), gpu=GPU, dtype="bf16", prefix=prefix)["latency_ms"]
    return memo[key]


rows = [{k: int(v) if k != "time_us" else float(v) for k, v in r.items()} for r in csv.DictReader(open(path))]
alone = {(r["n_decode"], r["kv_decode"]): r["time_us"] / 1e3 for r in rows if r["prefill_chunk"] == 0}
mixed = [r for r in rows if r["prefill_chunk"] > 0 and r["n_decode"] > 0 and r["kv_decode"] > 0]


def chunk_ms(r):
    return ms("attention_prefill", (1, r["prefill_chunk"], HEADS, KV, D), r["kv_prefill"])


def two_kernels_ms(r):
    decode_kv = HEADS if a.no_gqa_sharing else KV
    return chunk_ms(r) + ms("attention_decode", (r["n_decode"], r["kv_decode"] + 1, HEADS, decode_kv, D))


def block_waves(r):  # waves of decode CTAs x 128-key blocks each walks
    return math.ceil(r["n_decode"] * HEADS / SMS) * math.ceil((r["kv_decode"] + 1) / 128)


def fit_cycles(part):
    return statistics.median((r["time_us"] / 1e3 - chunk_ms(r)) / block_waves(r) for r in part) * CLOCK_MHZ * 1e3


def varlen_ms(r, cycles):
    return chunk_ms(r) + block_waves(r) * cycles / (CLOCK_MHZ * 1e3)


cycles = fit_cycles(mixed)
if a.fit:
    print(f"varlen decode: {cycles:.0f} SM cycles per 128-key block (median over {len(mixed)} mixed calls)")
    sys.exit(0)


def summary(pairs):
    return (statistics.mean(100 * abs(f - m) / m for f, m in pairs), statistics.median(f / m for f, m in pairs))


print("n_decode,rows,two_kernels_mape_pct,two_kernels_median_forecast_over_measured,varlen_mape_pct,"
      "varlen_median_forecast_over_measured,median_measured_over_decodes_alone_measured")
by = collections.defaultdict(list)
for r in mixed:
    by[r["n_decode"]].append(r)
for nd in sorted(by) + ["all"]:
    v = mixed if nd == "all" else by[nd]
    two = summary([(two_kernels_ms(r), r["time_us"] / 1e3) for r in v])
    var = summary([(varlen_ms(r, cycles), r["time_us"] / 1e3) for r in v])
    mix = statistics.median(r["time_us"] / 1e3 / alone[(r["n_decode"], r["kv_decode"])] for r in v
                            if (r["n_decode"], r["kv_decode"]) in alone)
    print(f"{nd},{len(v)},{two[0]:.1f},{two[1]:.2f},{var[0]:.1f},{var[1]:.2f},{mix:.2f}")
print(f"\nvarlen model fitted on one part of the rows, scored on the other ({cycles:.0f} cycles a block on all):")
for name, sel in (("cached <= 1,024 -> > 1,024", lambda r: r["kv_decode"] <= 1024),
                  ("cached > 1,024 -> <= 1,024", lambda r: r["kv_decode"] > 1024),
                  ("requests <= 16 -> >= 32", lambda r: r["n_decode"] <= 16),
                  ("chunk <= 256 -> > 256", lambda r: r["prefill_chunk"] <= 256)):
    train = [r for r in mixed if sel(r)]
    test = [r for r in mixed if not sel(r)]
    c = fit_cycles(train)
    var = summary([(varlen_ms(r, c), r["time_us"] / 1e3) for r in test])
    two = summary([(two_kernels_ms(r), r["time_us"] / 1e3) for r in test])
    print(f"  {name}: {c:.0f} cycles, {len(test)} rows scored: varlen {var[0]:.1f} % ({var[1]:.2f}), "
          f"two kernels {two[0]:.1f} % ({two[1]:.2f})")
