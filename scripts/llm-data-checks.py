#!/usr/bin/env python3
"""Seventeen checks of the aiconfigurator data that tilecast's modelling choices rest on.

1. Does decode latency grow with the cached context? For every generation_attention file: per (window_size, kv_cache_dtype), the latency at the longest
context over the latency at the shortest, for shapes measured up to >= 4,096 cached tokens
(median and 10th/90th percentiles over shapes). A kernel that reads the KV cache takes longer
as it grows; a ratio near 1 says the rows did not run the attention they describe.

With --rows-csv R (eval-kernels --rows-csv of exactly one aiconfigurator or LLMServingSim file, given as --data;
rows eval-kernels skipped, e.g. dtypes it does not model, are matched out in order), also
prints, per value of the --by columns (default window_size; e.g. --by kernel_source,moe_dtype),
MAPE and the median forecast/measured of those forecasts. Two derived columns group a gemm
file's rows by the shapes models run: m_range (tokens: 1-16, 17-64, 65-256, 257-2048, >2048)
and weights (n x k: "model" from 4,096 x 4,096 = 16,777,216 elements up, as every projection of
a 7B+ model at tp <= 2; "small" below); a third, l2_fit, groups an attention file's rows by
tilecast's bytes of the row against its GPU's L2 (configs/gpus `l2_cache_mb`): <=L2/4, <=L2,
<=4xL2, >4xL2; a fourth, latency_us, by the measured latency's power-of-two bucket in microseconds
(16-32, 32-64, ...); a fifth, group, an attention file's rows by query heads per KV head
(num_heads / num_key_value_heads: 1 is multi-head attention); a sixth, tokens_pow2, a moe or gemm
file's rows by the largest power of two at most their tokens (num_tokens, or m; M in a GEMM file
of `tilecast collect`). With --prior,
each group also prints the median prior_ms / measured of its rows (the family's fitted roofline
alone, as eval-kernels writes it; blank where no row has one).

2. What does a dynamic FP8 activation scale cost? For every gemm file with both fp8 and
fp8_static rows of the same shapes: per power-of-two bucket of M (tokens), the median of
fp8 - fp8_static (us) and of fp8_static / fp8.

3. Do the launch floors agree in time or in clock cycles? Per family file and GPU, the 1st
percentile of the latencies (a robust fastest row), in microseconds and in thousands of SM
cycles at the boost clock of the GPU's sheet in configs/gpus/ (`prior_floor: cycles`; decode's
floor per kernel library, `prior_floor_by_library`: FlashAttention's on the A100 and the L40S).

4. Is a window-0 (full attention) row slower than the same shape with a sliding window? Per
attention file, kernel library and window w: over the pairs whose span (prompt length, or
context in decode) is >= 16 w, the median and 90th percentile of t(window 0) / t(window w), and
the pooled median that tilecast's `not_full_attention` rule (core/kernel_dataset.h) compares
with 1.25; pairs of equal latencies (one measurement filed twice) are counted apart. Where it
is below, the window-0 rows are SGLang's window 0 taken as written: each query against its own
key alone (FlashAttention, TRT-LLM's prefill), which eval-kernels forecasts them as and training
leaves out (sglang_window_zero_is_own_key, core/kernel.h; docs/accuracy.md, "What SGLang's window 0
measured": with --rows-csv, --by window_size shows those rows' forecasts).

5. What share of its sheet's tensor peak does each GPU's GEMM reach? For every gemm file, per
gemm_dtype, over the shapes with m, n and k all >= 4,096: the median TFLOP/s (2 m n k / latency)
and its fraction of the sheet's dense tensor peak for the dtype (configs/gpus
`tensor_peak_gflops`: bfloat16 -> bf16, fp8 / fp8_static / fp8_block -> fp8, nvfp4 -> fp4).

6. Which prefill rows are SGLang's Triton fallback, and what work does it do? Per prefill file:
the rows per kernel library, head_dim and whether windowed; and over the Triton rows, per pair
of the same shape, t(window 1,024) / t(window 128) (a kernel that honours the window takes far
longer at 1,024 keys on long prompts) and t(FP8 attention, FP8 cache) / t(BF16, BF16) (a kernel
that computes FP8 at the FP8 rate takes about half): 10th, 50th and 90th percentiles
(tilecast's `fallback_physics_query`, core/kernel.h).

7. Which MoE rows ran which kernel library, and could a forecast tell them apart from the
shape? Per moe file: the rows per moe_dtype and kernel_source; the shapes (every column but
the library and the latency) that two libraries share; and, where a GPU ran more than one
library, each model shape (hidden_size, inter_size, topk, num_experts) with the library and rows
of each dtype (SGLang picks the B200's MoE library per model: `moe_library` can only follow the
GPU's spec).

8. Do two sources agree on the same GEMM on the same GPU? vidur's A100-SXM4-80GB projections
(FP16, Sarathi's cuBLAS calls, the median of its timings) against aiconfigurator's BF16 GEMMs of
the same M, N and K on the same GPU (SGLang's F.linear, the mean of its timed calls): per range of
M (tokens), the pairs (one per vidur row), the 10th/50th/90th percentiles of the ratio vidur /
aiconfigurator and the median
of |vidur / aiconfigurator - 1| in per cent. No forecast can sit within x % of both sources where
they differ by more than 2x %: a floor under a held-out GPU's error that the 3 % between two
versions of one source does not show.

9. What share of its DRAM bandwidth does a decode kernel reach once its bytes are beyond the
L2, and is the rest an SM-side rate? For every generation_attention file, per kernel library,
over the rows whose bytes (tilecast's: the attended KV cache, and each query's Q and output)
exceed 4x the GPU's L2 (SGLang's window-0 rows of a FlashAttention GPU, each query against its
own key, left out): the rows, the GPU's DRAM bytes per SM-cycle (bandwidth / (SMs x boost
clock)), the median time at DRAM speed / measured, and the median rate in bytes per SM-cycle
that the time beyond DRAM speed is (bytes / ((measured - time at DRAM speed) x SMs x clock)):
the rows' reading of `prior_sm_rate_by_library` (docs/accuracy.md, "A rate of loads per SM").

10. Does a tensor-core GEMM pay for a partial last wave? For every gemm file, per gemm_dtype,
over the compute-bound rows (2 m n k at the dtype's tensor peak at least 3x the bytes of A, B
and C at DRAM bandwidth, operands at the dtype's bytes and C in BF16, and 2 m n k >= 2e10): per
bucket of the wave padding tilecast's launch model would charge (waves x SMs / CTAs; the tile of
`tensor_core_tile`, core/kernel.cpp: M tile the next power of two 16-128, 128 output columns,
256 on Hopper and datacenter Blackwell, cuBLAS's BF16/FP16 reduction split while the tiles leave
SMs idle, none for the scaled FP8/NVFP4 kernels), the rows, the median fraction of the sheet's
peak reached (2 m n k / latency / peak) and the median of that fraction times the padding
(what a bound charging the padding sees). A kernel that pays for its last wave keeps the second
flat; one whose library spreads the work (tile choice, stream-K) keeps the first.

11. Does a prefill kernel run FP8 attention at the FP8 rate? For every context_attention file,
per kernel library and window, over the shapes timed both in BF16 (attention and KV cache) and
in another precision: the pairs and the 10th/50th/90th percentiles of t(FP8 attention, FP8
cache) / t(BF16) and of t(BF16 attention, FP8 cache) / t(BF16). A kernel bound by its tensor
cores takes about half the time in FP8; one bound by the softmax's exponentials (16 a clock per
SM, which datacenter Blackwell's tensor cores outrun: tilecast's prefill bound) takes the same.

12. What do MXFP8 activations buy a 4-bit MoE layer? For every moe file, per kernel library,
over the layers timed both with MXFP4 weights and BF16 activations (w4a16_mxfp4) and with MXFP8
activations (w4a8_mxfp4_mxfp8), same shape, routing and parallel sizes: per bucket of tokens
(1-16, 17-256, 257-2048, >2048) the pairs and the 10th/50th/90th percentiles of t(W4A8) /
t(W4A16). Where the tensor cores bound the layer, FP8's doubled rate halves it (tilecast's
mxfp4_mxfp8 takes the FP8 peak).

13. Does an FP8 GEMM's time hold its activation's cast? For every gemm file, per gemm_dtype
with an FP8 activation, over the rows whose BF16 activation (m x k, k the reduction) is at
least 4x the GPU's L2 (so that a repeated call cannot keep it there): the rows, the median and
90th percentile of t(cast) / measured, t(cast) the least a separate cast kernel moves (the
activation read in BF16, written in FP8: 3 bytes an element) at DRAM bandwidth, and the share
of rows measured faster than that cast alone. A dtype whose rows run faster than their own
cast cannot have timed it (tilecast's `activation_quant_bytes`, core/kernel.cpp).

14. What does one more key block cost a prefill? For every context_attention file, per kernel
library, head_dim d and attention dtype, over the shapes timed with windows of 1,024 and of 128
keys (same batch, prompt of >= 4,096 tokens, heads and dtypes): the extra (query block, key
block) pairs of the longer window on the busiest SM (tilecast's count: sum over the prompt's
128-query blocks of min(block, window / 128), times batch x heads, over the SMs) and the extra
time in SM cycles at the sheet's boost clock: the cycles one more 128 x 128 block pair costs. Beside
it, what a 128 x 128 pair asks of each unit of one SM: its MMA at the sheet's dense tensor
peak (4 x 128 x 128 x d FLOPs), its 16,384 exponentials at 16 a clock (`sfu_exp_per_sm_clock`
where a sheet states it), and its softmax arithmetic on the FP32 lanes (`cores_per_sm`): 3.5 + d /
128 instructions an element (FlashAttention-2's row max, the exponential's scale-and-subtract
FFMA, the row sum, half a pack to 16 bits, and rescaling the output block); the 10th/50th/90th
percentiles of measured / (the three in series) and the median of measured / the larger of the
MMA and the exponentials (tilecast's prefill compute bound, prefill_bounds). And what the 128-key
row takes beyond its block pairs at that cost (its launch, each CTA's prologue and epilogue,
its bytes): the median of that time in thousands of cycles per CTA of the busiest SM (ceil(batch x
heads x query blocks / SMs)), and of the share of it that tilecast's bytes of the row
(attention_row_bytes) take at the sheet's DRAM bandwidth.

15. How did the MoE collector route its tokens? For every moe file, per kernel library, over the
layers timed at tp 1 and ep 1 with balanced routing: per shape (dtype, hidden, inter, top-k K,
experts E), the time at T x K / E = 0.25, 0.5, 1 and 2 (T tokens; the nearest T timed, within
10 %) over the time at 4: the shapes and the median of each ratio. Weight reads dominate these
layers, so each ratio follows the share of experts hit: min(1, r) where every pick is a different
expert until all are hit (aiconfigurator's balanced_logits; tilecast's `moe_load` for balanced
routing at ep 1 since session 82), 1 - e^-r for picks drawn at random (its balanced load over
expert-parallel ranks; docs/accuracy.md, "The data's routings" and "Balanced as the collector
routes it, on one rank"). And per ep (1, 2, 4, >= 8) and
assignments per expert (T x K / E: <= 1, 1-4, 4-32, 32-256, >= 256), over the layers timed with
both a power law and balanced routing (tp 1, same shape and tokens): the pairs and the median
t(power law) / t(balanced). At <= 1 (no more picks than experts: the collector draws each
expert's load from [0.01, 2] and rounds nearly all to 0) the power law rows run as their
balanced twins (tilecast's `moe_load` forecasts them so; docs/accuracy.md, "Few picks under a
power law").

  scripts/llm-data-checks.py [--llm-dir ../shared/llm-kernels] [--gpu-dir configs/gpus] [--rows-csv R --data CSV [--by COLS]]

16. Does a MoE layer whose working set fits the L2 run from it? For every moe file, per kernel
library and moe_dtype, over the layers timed at ep 1 with balanced routing whose tokens pick
fewer experts than there are (T x K < E; aiconfigurator's balanced routing makes every pick a
different expert, check 15): the working set, the hit experts' weights (T x K experts x 3 x
hidden x inter / tp at the dtype's bytes per weight, scales included), against the GPU's L2
(configs/gpus `l2_cache_mb`, MiB), in buckets (<= L2/2, L2/2-L2, L2-2xL2, 2-4xL2, > 4xL2): the
layers and the median rate (working set / latency) over the sheet's DRAM bandwidth. Above 1,
the layer read its experts from the L2: a benchmark repeating one call with one routing keeps a
working set that fits (tilecast's `moe_l2_scale`, core/kernel.cpp). A GPU whose launch floor
(check 3) outlasts a full L2 read at DRAM speed cannot show it: L2 / bandwidth is 21 us on the
A100 against its 36 us floor, 16.5 on the B200 against 16.6, and 117 on the L40S against 20.
Beside it, for every gemm file, per gemm_dtype, over the rows of at most 16 tokens (m <= 16:
the weights' read dominates): the weights (n x k at the dtype's bytes, check 10's) against
the L2 in buckets (<= L2/16, L2/16-L2/8, L2/8-L2/4, L2/4-L2/2, L2/2-L2, L2-2xL2, > 2xL2), the rows and the
median rate (weight bytes / latency) over DRAM bandwidth: where a GEMM's weights run from the L2.

17. What share of its sheet's BF16 tensor peak does a MoE layer reach on many tokens? For every
moe file, per kernel library, over the BF16 layers timed at ep 1 with balanced routing and
16,384 tokens: per model shape (hidden_size, inter_size, topk, num_experts), each tp degree's
share, 2 x tokens x topk x 3 x hidden x inter / tp FLOPs / latency over the sheet's dense BF16
peak (configs/gpus `tensor_peak_gflops`; a layer timed twice: the median). A library whose shares fall in two groups at one
model shape (a tp degree or two far above the rest, on no trend with inter / tp) ran two kernel
configurations: SGLang's Triton fused MoE reads a tuned tile configuration per (experts, inter
/ tp, device name) where it ships one, and a default one otherwise, which the GPU spec cannot
tell apart (docs/accuracy.md, "Fused MoE", "Tuned and default Triton configurations").
"""
import argparse, collections, csv, math, os, re, statistics, sys

from gpu_sheets import DEFAULT_DIR, sheet_fields, sheet_groups, sheet_numbers
from percentile import pct


def family_files(root, fam):
    """(GPU folder, path) of each GPU's <fam>_perf.csv under root, in name order."""
    for gpu in sorted(os.listdir(root)):
        path = os.path.join(root, gpu, f"{fam}_perf.csv")
        if os.path.exists(path):
            yield gpu, path


def scaling(path):
    series = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        key = (r.get("window_size") or "0", r["kv_cache_dtype"], r["batch_size"], r["num_heads"],
               r["num_key_value_heads"], r["head_dim"], r.get("beam_width", "1"))
        series[key][int(r["step"])] = float(r["latency"])
    ratios = collections.defaultdict(list)
    for key, by_step in series.items():
        if max(by_step) >= 4095:
            ratios[key[:2]].append(by_step[max(by_step)] / by_step[min(by_step)])
    return ratios


def window_pairs(path, fam, gpu):
    """Prints one line per library and window; yields (library, pooled ratios)."""
    full, windowed = {}, []
    for r in csv.DictReader(open(path)):
        w = int(r.get("window_size") or 0)
        key = (r["kernel_source"], r["batch_size"], r["isl"], r["step"], r["num_heads"], r["num_key_value_heads"],
               r["head_dim"], r["attn_dtype"], r["kv_cache_dtype"])
        span = int(r["isl"]) if fam == "context_attention" else int(r["step"]) + 1
        if w == 0:
            full[key] = float(r["latency"])
        elif span >= 16 * w:
            windowed.append((key, w, float(r["latency"])))
    per = collections.defaultdict(list)
    equal = collections.Counter()
    for key, w, t in windowed:
        if key in full:
            if full[key] == t:
                equal[(key[0], w)] += 1
            else:
                per[(key[0], w)].append(full[key] / t)
    for (lib, w) in sorted(set(per) | set(equal)):
        v = per[(lib, w)]
        p50 = f"{statistics.median(v):.2f}" if v else ""
        p90 = f"{pct(v, 90):.2f}" if v else ""
        print(f"{fam},{gpu},{lib},{w},{len(v)},{equal[(lib, w)]},{p50},{p90}")
    for lib in sorted({lib for lib, _ in per} | {lib for lib, _ in equal}):
        yield lib, [x for (l, _), v in per.items() if l == lib for x in v]


def boost_clocks_mhz(gpu_dir):
    """CUDA device name -> boost_clock_mhz."""
    return {n: float(v) for n, v in sheet_fields(gpu_dir, r"^boost_clock_mhz:\s*([0-9.]+)").items()}


def tensor_peaks_gflops(gpu_dir):
    """CUDA device name -> {dtype: dense tensor peak in GFLOP/s}, from the sheets' flow-style
    `tensor_peak_gflops: {bf16: ..., fp8: ...}` line."""
    return {n: {k.strip(): float(v) for k, v in (kv.split(":") for kv in line.split(",") if ":" in kv)}
            for n, line in sheet_fields(gpu_dir, r"^tensor_peak_gflops:\s*\{([^}]*)\}").items()}


GEMM_PEAK_KEY = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "fp8": "fp8",
                 "fp8_static": "fp8", "fp8_block": "fp8", "nvfp4": "fp4"}


def gemm_peak_fractions(path, peaks, gpu_dir):
    """Prints check 5's lines for one gemm file."""
    tflops = collections.defaultdict(list)
    device = None
    for r in csv.DictReader(open(path)):
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        device = r["device"]
        if min(m, n, k) >= 4096:
            tflops[r["gemm_dtype"]].append(2.0 * m * n * k / (float(r["latency"]) * 1e-3) / 1e12)
    if device is not None and device not in peaks:
        sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states tensor peaks for '{device}'")
    for dtype, v in sorted(tflops.items()):
        peak = peaks[device].get(GEMM_PEAK_KEY.get(dtype, ""))
        share = f"{statistics.median(v) / (peak / 1e3):.2f}" if peak else ""
        print(f"{os.path.basename(os.path.dirname(path))},{dtype},{len(v)},{statistics.median(v):.0f},{share}")


def moe_peak_shares(path, peaks, gpu_dir):
    """Check 17 for one moe file: (library, (hidden, inter, topk, experts), [(tp, share)])."""
    shares = collections.defaultdict(list)
    device = None
    for r in csv.DictReader(open(path)):
        if (r["moe_dtype"] != "bfloat16" or r["moe_ep_size"] != "1" or r["distribution"] != "balanced"
                or r["num_tokens"] != "16384"):
            continue
        device = r["device"]
        h, i, k, e, tp = (int(r[c]) for c in ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size"))
        flops = 2.0 * 16384 * k * 3 * h * i / tp
        shares[(r["kernel_source"], (h, i, k, e))].append((tp, flops / (float(r["latency"]) * 1e-3) / 1e9))
    if device is None:
        return []
    peak = peaks.get(device, {}).get("bf16")
    if not peak:
        sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states a bf16 tensor peak for '{device}'")
    out = []
    for (lib, model), v in sorted(shares.items()):
        by_tp = collections.defaultdict(list)  # a layer timed twice (the A100's file has some): their median
        for tp, g in v:
            by_tp[tp].append(g)
        out.append((lib, model, [(tp, statistics.median(g) / peak) for tp, g in sorted(by_tp.items())]))
    return out


# vidur's GPU folders and the aiconfigurator GPU each is (the data's README: A100 = A100-SXM4-80GB).
VIDUR_AIC_GPU = {"a100": "A100-SXM4-80GB"}
L2_FIT = ((0.25, "<=L2/4"), (1, "<=L2"), (4, "<=4xL2"), (float("inf"), ">4xL2"))
L2_LABELS = [label for _, label in L2_FIT]
M_RANGES = ((16, "1-16"), (64, "17-64"), (256, "65-256"), (2048, "257-2048"), (float("inf"), ">2048"))


def m_range(m):
    return next(label for top, label in M_RANGES if m <= top)


def vidur_gemms(path):
    """[((m, out-features, in-features), ms)] of one vidur mlp.csv's four projections, per
    tensor-parallel rank (the shapes core/kernel_dataset.cpp reads them as)."""
    out = []
    for r in csv.DictReader(open(path)):
        t, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
        heads, kv, h, ffn = (int(r[c]) for c in ("n_head", "n_kv_head", "n_embd", "n_expanded_embd"))
        hd = h // heads
        gated = r["use_gated_mlp"] == "True"
        for op, shape in (("attn_pre_proj", ((heads + 2 * kv) * hd // tp, h)), ("attn_post_proj", (h, heads * hd // tp)),
                          ("mlp_up_proj", ((2 if gated else 1) * ffn // tp, h)), ("mlp_down_proj", (h, ffn // tp))):
            out.append(((t,) + shape, float(r[f"time_stats.{op}.median"])))
    return out


def source_agreement(llm_dir):
    """Rows of check 8: (gpu, m range, pairs, ratio p10, p50, p90, median |ratio - 1| %)."""
    rows = []
    for vgpu, agpu in sorted(VIDUR_AIC_GPU.items()):
        aic_path = os.path.join(llm_dir, "aiconfigurator", agpu, "gemm_perf.csv")
        vroot = os.path.join(llm_dir, "vidur", vgpu)
        if not (os.path.exists(aic_path) and os.path.isdir(vroot)):
            continue
        aic = {(int(r["m"]), int(r["n"]), int(r["k"])): float(r["latency"])
               for r in csv.DictReader(open(aic_path)) if r["gemm_dtype"] == "bfloat16"}
        vid = []
        for dirpath, _, files in sorted(os.walk(vroot)):
            if "mlp.csv" in files:
                vid += vidur_gemms(os.path.join(dirpath, "mlp.csv"))
        ratios = collections.defaultdict(list)
        for key, ms in vid:
            if key in aic:
                ratios[m_range(key[0])].append(ms / aic[key])
                ratios["all"].append(ms / aic[key])
        for label in [l for _, l in M_RANGES] + ["all"]:
            v = ratios.get(label)
            if v:
                rows.append((agpu, label, len(v), pct(v, 10), statistics.median(v), pct(v, 90),
                             100 * statistics.median(abs(x - 1) for x in v)))
    return rows


DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1}
def attention_row_bytes(r):
    """tilecast's bytes of an aiconfigurator attention row (core/kernel.cpp, attention_bytes): each
    query's Q in its dtype and output in BF16, and K and V of the span once per sequence (a prompt:
    its isl tokens; a decode: the keys it attends, step + 1 within the window); None for a dtype
    tilecast does not model."""
    e, kve = DTYPE_BYTES.get(r["attn_dtype"]), DTYPE_BYTES.get(r["kv_cache_dtype"])
    if e is None or kve is None:
        return None
    b, h, kv, d = (int(r[c]) for c in ("batch_size", "num_heads", "num_key_value_heads", "head_dim"))
    window = int(r.get("window_size") or 0)
    if r["op_name"] == "context_attention":
        queries = keys = int(r["isl"])
    else:
        queries, ctx = 1, int(r["step"]) + 1
        keys = min(ctx, window) if window > 0 else ctx
    return b * (queries * h * d * (e + 2) + 2 * keys * kv * d * kve)


SHEET_KEYS = ("mem_bw_gbps", "num_sms", "boost_clock_mhz", "l2_cache_mb")


def decode_sm_rates(path, sheets, gpu_dir):
    """Rows of check 9 for one generation_attention file: (gpu, library, rows, bytes per SM-cycle,
    DRAM share p50, SM-side bytes per SM-cycle p50); sheets: CUDA name -> {SHEET_KEYS: value}."""
    per = collections.defaultdict(list)
    sm_cycles_per_s = None
    for r in csv.DictReader(open(path)):
        sheet = sheets.get(r["device"])
        if sheet is None:
            sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states {', '.join(SHEET_KEYS)} for '{r['device']}'")
        if r.get("window_size") == "0" and r["kernel_source"] == "flash_attention":
            continue  # SGLang's window 0 on a FlashAttention GPU: each query against its own key
        nbytes = attention_row_bytes(r)
        if nbytes is None or nbytes <= 4 * sheet["l2_cache_mb"] * 2**20:
            continue
        bw_bytes_s = sheet["mem_bw_gbps"] * 1e9
        sm_cycles_per_s = sheet["num_sms"] * sheet["boost_clock_mhz"] * 1e6
        measured_s, dram_s = float(r["latency"]) * 1e-3, nbytes / bw_bytes_s
        beyond_cycles = (measured_s - dram_s) * sm_cycles_per_s
        per[r["kernel_source"]].append((dram_s / measured_s, nbytes / beyond_cycles if beyond_cycles > 0 else float("inf")))
    gpu = os.path.basename(os.path.dirname(path))
    return [(gpu, lib, len(v), bw_bytes_s / sm_cycles_per_s, statistics.median(x for x, _ in v),
             statistics.median(y for _, y in v)) for lib, v in sorted(per.items())]


# Check 10's buckets of wave padding (upper ends).
WAVE_PAD = ((1.1, "<1.1"), (1.3, "1.1-1.3"), (2.0, "1.3-2"), (float("inf"), ">=2"))
GEMM_SHEET = {"num_sms": r"^num_sms:\s*([0-9]+)", "mem_bw_gbps": r"^mem_bw_gbps:\s*([0-9.]+)",
              "arch": r"^arch:\s*(\w+)", "cc": r'^compute_capability:\s*"?([0-9.]+)"?'}
# Bytes of an operand element per gemm_dtype (nvfp4: 4 bits and an FP8 scale per 16), and the
# dtypes cuBLAS runs (it splits the reduction; the scaled kernels do not).
OPERAND_BYTES = {"bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "fp8_static": 1.0, "fp8_block": 1.0, "nvfp4": 0.5625}
CUBLAS_DTYPES = ("bfloat16", "float16")


def wave_padding(m, n, k, sms, async_tc, split):
    """The wave padding tilecast's tensor-core launch charges a GEMM of m tokens, n output
    features and a k-long reduction (tensor_core_tile, tc_output_tiles, launch_info)."""
    tm = min(128, max(16, 1 << max(0, (m - 1).bit_length())))
    tiles = -(-m // tm) * -(-n // (256 if async_tc else 128))
    splits = max(1, min(sms // tiles if tiles < sms else 1, k // 256)) if split else 1
    ctas = tiles * splits
    return -(-ctas // sms) * sms / ctas


def gemm_wave_rows(path, sheets, peaks, gpu_dir):
    """Rows of check 10 for one gemm file: (gpu, dtype, padding bucket, rows, peak fraction p50,
    peak fraction x padding p50); sheets: CUDA name -> GEMM_SHEET's fields, peaks: CUDA name ->
    tensor peaks (tensor_peaks_gflops)."""
    buckets = collections.defaultdict(list)
    gpu = os.path.basename(os.path.dirname(path))
    for r in csv.DictReader(open(path)):
        dtype = r["gemm_dtype"]
        if r["device"] not in sheets or r["device"] not in peaks:
            sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states num_sms, mem_bw_gbps, arch, "
                     f"compute_capability and tensor peaks for '{r['device']}'")
        sh = sheets[r["device"]]
        peak = peaks[r["device"]].get(GEMM_PEAK_KEY.get(dtype, ""))
        if not peak or dtype not in OPERAND_BYTES:
            continue
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        flops, nbytes = 2.0 * m * n * k, OPERAND_BYTES[dtype] * (m * k + n * k) + 2.0 * m * n
        if flops < 2e10 or flops / (peak * 1e9) < 3 * nbytes / (float(sh["mem_bw_gbps"]) * 1e9):
            continue
        async_tc = sh["arch"] == "hopper" or (sh["arch"] == "blackwell" and float(sh["cc"]) < 12)
        pad = wave_padding(m, n, k, int(sh["num_sms"]), async_tc, dtype in CUBLAS_DTYPES)
        frac = flops / (float(r["latency"]) * 1e-3) / (peak * 1e9)
        buckets[(dtype, next(label for top, label in WAVE_PAD if pad < top))].append((frac, frac * pad))
    return [(gpu, dtype, label, len(v), statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
            for dtype in sorted({d for d, _ in buckets}) for _, label in WAVE_PAD
            for v in [buckets.get((dtype, label))] if v]


def prefill_key(r):
    """A prefill row's (library, window, batch, prompt, heads, KV heads, head_dim, dtype, cache dtype)."""
    return (r["kernel_source"], int(r.get("window_size") or 0), r["batch_size"], r["isl"], r["num_heads"],
            r["num_key_value_heads"], r["head_dim"], r["attn_dtype"], r["kv_cache_dtype"])


def fp8_prefill_ratios(t):
    """Check 11 for one prefill file's latencies by prefill_key: per kernel library and window,
    the ratios over the shapes timed in BF16 (attention and cache) and in the other precisions:
    t(FP8, FP8 cache) / t(BF16) and t(BF16, FP8 cache) / t(BF16)."""
    ratios = collections.defaultdict(list)
    for k, v in t.items():
        kind = {("fp8", "fp8"): "fp8_over_bf16", ("bfloat16", "fp8"): "fp8_cache_over_bf16"}.get(k[7:])
        base = t.get(k[:7] + ("bfloat16", "bfloat16"))
        if kind and base:
            ratios[(k[0], k[1], kind)].append(v / base)
    for (lib, win, kind), v in sorted(ratios.items()):
        yield lib, win, kind, v


TOKEN_BUCKETS = ((16, "1-16"), (256, "17-256"), (2048, "257-2048"), (float("inf"), ">2048"))


def w4a8_ratios(layers):
    """Check 12 for one moe file's 4-bit layers ((library, shape...) -> {dtype: (tokens, latency)}):
    per library and token bucket, t(w4a8_mxfp4_mxfp8) / t(w4a16_mxfp4) over the layers timed both ways."""
    ratios = collections.defaultdict(list)
    for key, v in layers.items():
        if len(v) == 2:
            tokens, w4a8 = v["w4a8_mxfp4_mxfp8"]
            label = next(name for top, name in TOKEN_BUCKETS if tokens <= top)
            ratios[(key[0], label)].append(w4a8 / v["w4a16_mxfp4"][1])
    order = [name for _, name in TOKEN_BUCKETS]
    for (lib, label), v in sorted(ratios.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        yield lib, label, v


FP8_ACTIVATION_DTYPES = ("fp8", "fp8_static", "fp8_block")


def cast_shares(path, sheets, gpu_dir):
    """Check 13 for one gemm file: (gpu, dtype, [t(cast at DRAM) / measured per row])."""
    per = collections.defaultdict(list)
    gpu = os.path.basename(os.path.dirname(path))
    for r in csv.DictReader(open(path)):
        if r["gemm_dtype"] not in FP8_ACTIVATION_DTYPES:
            continue
        if r["device"] not in sheets:
            sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states {', '.join(SHEET_KEYS)} for '{r['device']}'")
        sh = sheets[r["device"]]
        elems = int(r["m"]) * int(r["k"])
        if 2.0 * elems < 4 * sh["l2_cache_mb"] * 2**20:
            continue
        per[r["gemm_dtype"]].append(3.0 * elems / (sh["mem_bw_gbps"] * 1e9) / (float(r["latency"]) * 1e-3))
    return [(gpu, dtype, v) for dtype, v in sorted(per.items())]


PREFILL_SHEET = ("num_sms", "boost_clock_mhz", "cores_per_sm", "mem_bw_gbps")
SOFTMAX_FP32_OPS = 3.5  # per score element, beside d / 128 for the output's rescaling (check 14)


def causal_block_pairs(nb, wb):
    """(query block, key block) pairs of nb causal 128-query blocks under a window of wb blocks."""
    return nb * (nb + 1) // 2 if nb <= wb else wb * (wb + 1) // 2 + (nb - wb) * wb


def prefill_block_costs(rows, sheets, peaks, exp_rates, gpu_dir):
    """Check 14 for one prefill file's rows by prefill_key: (library, head_dim, attn dtype) ->
    [(measured cycles per extra block pair, MMA, exponential and FP32 cycles of one pair, the
    128-key row's time beyond its block pairs in cycles per CTA of the busiest SM, its bytes' time
    at DRAM bandwidth over that time)] over its 1,024 / 128-key pairs."""
    out = collections.defaultdict(list)
    if not rows:
        return out
    t = {k: float(r["latency"]) for k, r in rows.items()}
    device = next(iter(rows.values()))["device"]
    if device not in sheets or device not in peaks:
        sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states {', '.join(PREFILL_SHEET)} and tensor peaks for '{device}'")
    sh = sheets[device]
    clock_hz, sms = sh["boost_clock_mhz"] * 1e6, sh["num_sms"]
    for k, long_ms in t.items():
        short_ms = t.get((k[0], 128) + k[2:])
        if k[1] != 1024 or short_ms is None or int(k[3]) < 4096 or k[7] not in GEMM_PEAK_KEY:
            continue
        peak = peaks[device].get(GEMM_PEAK_KEY[k[7]])
        if not peak:
            continue
        b, s, h, d = int(k[2]), int(k[3]), int(k[4]), int(k[6])
        nb = -(-s // 128)
        short_pairs = causal_block_pairs(nb, 1) * b * h / sms
        extra = causal_block_pairs(nb, 8) * b * h / sms - short_pairs
        measured = (long_ms - short_ms) * 1e-3 * clock_hz / extra
        rest_cycles = short_ms * 1e-3 * clock_hz - short_pairs * measured  # the 128-key row beyond its pairs
        row_bytes = attention_row_bytes(rows[(k[0], 128) + k[2:]])
        if row_bytes is None:  # a cache dtype tilecast does not model
            continue
        dram_cycles = row_bytes / (sh["mem_bw_gbps"] * 1e9) * clock_hz
        mma = 4.0 * 128 * 128 * d / (peak * 1e9 / sms / clock_hz)
        exp = 128.0 * 128 / exp_rates.get(device, 16.0)
        fp32 = (SOFTMAX_FP32_OPS + d / 128.0) * 128 * 128 / sh["cores_per_sm"]
        out[(k[0], d, k[7])].append((measured, mma, exp, fp32, rest_cycles / math.ceil(b * h * nb / sms),
                                     dram_cycles / rest_cycles if rest_cycles > 0 else float("inf")))
    return out


def moe_routing_checks(path):
    """Check 15's rows for one moe file: (library, ratio label, shapes, median) for balanced
    layers, and (ep bucket, assignments bucket, pairs, median) for power law / balanced."""
    bal = collections.defaultdict(dict)  # (library, shape) -> tokens -> latency
    pairs = collections.defaultdict(dict)  # (layer, tokens, ep) -> distribution -> latency
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["moe_tp_size"] != "1":
                continue
            shape = (r["moe_dtype"], r["hidden_size"], r["inter_size"], int(r["topk"]), int(r["num_experts"]))
            t, ep, lat = int(r["num_tokens"]), int(r["moe_ep_size"]), float(r["latency"])
            if r["distribution"] == "balanced" and ep == 1:
                bal[(r["kernel_source"], shape)][t] = lat
            pairs[(r["kernel_source"], shape, t, ep)][r["distribution"]] = lat
    ratios = collections.defaultdict(list)
    for (lib, (_, _, _, k, e)), times in bal.items():
        def at(r):  # the time at T x K / E = r, from the nearest T timed within 10 %
            t = min(times, key=lambda x: abs(x * k / e - r))
            return times[t] if abs(t * k / e - r) <= 0.1 * r else None
        top = at(4)
        if top:
            for r in (0.25, 0.5, 1, 2):
                if at(r):
                    ratios[(lib, r)].append(at(r) / top)
    balanced_rows = [(lib, r, len(v), statistics.median(v)) for (lib, r), v in sorted(ratios.items())]
    pl = collections.defaultdict(list)
    for (lib, (_, _, _, k, e), t, ep), d in pairs.items():
        b = d.get("balanced")
        per_expert = t * k / e
        bucket = ("<=1" if per_expert <= 1 else "1-4" if per_expert < 4 else "4-32" if per_expert < 32
                  else "32-256" if per_expert < 256 else ">=256")
        for dist, lat in d.items():
            if dist != "balanced" and b:
                pl[(lib, ep if ep <= 4 else ">=8", bucket)].append(lat / b)
    order = {"<=1": 0, "1-4": 1, "4-32": 2, "32-256": 3, ">=256": 4}
    power_rows = [(lib, ep, bk, len(v), statistics.median(v))
                  for (lib, ep, bk), v in sorted(pl.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), order[kv[0][2]]))]
    return balanced_rows, power_rows


# Bytes per weight element, scales included, of the moe_dtype spellings (core/kernel.cpp
# weight_bytes_per_elem); check 16 skips any other.
MOE_WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0 + 4.0 / (128 * 128), "int4_wo": 0.5 + 2.0 / 128,
                    "w4a16_mxfp4": 0.5 + 1.0 / 32, "w4a8_mxfp4_mxfp8": 0.5 + 1.0 / 32, "nvfp4": 0.5 + 1.0 / 16}
L2_FIT_MOE = ((0.5, "<=L2/2"), (1.0, "L2/2-L2"), (2.0, "L2-2xL2"), (4.0, "2-4xL2"), (math.inf, ">4xL2"))


def moe_l2_rows(path, sheets, gpu_dir):
    """Check 16's rows for one moe file: (library, dtype, bucket, layers, median rate over DRAM
    bandwidth); sheets: CUDA name -> {SHEET_KEYS: value}."""
    per = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        w = MOE_WEIGHT_BYTES.get(r["moe_dtype"])
        t, k, e = int(r["num_tokens"]), int(r["topk"]), int(r["num_experts"])
        if w is None or r["moe_ep_size"] != "1" or r["distribution"] != "balanced" or t * k >= e:
            continue
        if r["device"] not in sheets:
            sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states {', '.join(SHEET_KEYS)} for '{r['device']}'")
        sh = sheets[r["device"]]
        ws = t * k * 3.0 * int(r["hidden_size"]) * (int(r["inter_size"]) / int(r["moe_tp_size"])) * w
        fit = ws / (sh["l2_cache_mb"] * 2**20)
        label = next(lab for top, lab in L2_FIT_MOE if fit <= top)
        per[(r["kernel_source"], r["moe_dtype"], label)].append(ws / (float(r["latency"]) * 1e-3) / (sh["mem_bw_gbps"] * 1e9))
    order = {lab: i for i, (_, lab) in enumerate(L2_FIT_MOE)}
    return [(lib, dt, lab, len(v), statistics.median(v))
            for (lib, dt, lab), v in sorted(per.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]]))]


L2_FIT_GEMM = ((0.0625, "<=L2/16"), (0.125, "L2/16-L2/8"), (0.25, "L2/8-L2/4"), (0.5, "L2/4-L2/2"), (1.0, "L2/2-L2"), (2.0, "L2-2xL2"),
               (math.inf, ">2xL2"))


def gemm_l2_rows(path, sheets, gpu_dir):
    """Check 16's GEMM rows for one gemm file: (dtype, bucket, rows, median rate over DRAM
    bandwidth) over the rows of at most 16 tokens."""
    per = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        w = OPERAND_BYTES.get(r["gemm_dtype"])
        if w is None or int(r["m"]) > 16:
            continue
        if r["device"] not in sheets:
            sys.exit(f"llm-data-checks.py: no sheet in {gpu_dir} states {', '.join(SHEET_KEYS)} for '{r['device']}'")
        sh = sheets[r["device"]]
        wb = int(r["n"]) * int(r["k"]) * w
        label = next(lab for top, lab in L2_FIT_GEMM if wb / (sh["l2_cache_mb"] * 2**20) <= top)
        per[(r["gemm_dtype"], label)].append(wb / (float(r["latency"]) * 1e-3) / (sh["mem_bw_gbps"] * 1e9))
    order = {lab: i for i, (_, lab) in enumerate(L2_FIT_GEMM)}
    return [(dt, lab, len(v), statistics.median(v)) for (dt, lab), v in sorted(per.items(), key=lambda kv: (kv[0][0], order[kv[0][1]]))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
    ap.add_argument("--rows-csv")
    ap.add_argument("--by", default="window_size", help="--rows-csv: columns of --data to group by, comma-separated")
    ap.add_argument("--data")
    ap.add_argument("--gpu-dir", default=DEFAULT_DIR)
    ap.add_argument("--prior", action="store_true",
                    help="--rows-csv: also the median prior_ms / measured per group (the fitted roofline alone)")
    a = ap.parse_args()
    if bool(a.rows_csv) != bool(a.data):
        sys.exit("llm-data-checks.py: --rows-csv and --data go together")
    if a.prior and not a.rows_csv:
        sys.exit("llm-data-checks.py: --prior goes with --rows-csv and --data")
    root = os.path.join(a.llm_dir, "aiconfigurator")
    if not os.path.isdir(root):
        sys.exit(f"llm-data-checks.py: {root}: no such folder (set --llm-dir)")
    print("gpu,window_size,kv_cache_dtype,shapes,ratio_p10,ratio_p50,ratio_p90")
    for gpu, path in family_files(root, "generation_attention"):
        for (win, kvd), v in sorted(scaling(path).items()):
            print(f"{gpu},{win},{kvd},{len(v)},{pct(v, 10):.2f},{statistics.median(v):.2f},{pct(v, 90):.2f}")
    print("\ngpu,m_bucket,shapes,fp8_minus_fp8_static_us_p50,fp8_static_over_fp8_p50")
    for gpu, path in family_files(root, "gemm"):
        by_shape = collections.defaultdict(dict)
        for r in csv.DictReader(open(path)):
            if r["gemm_dtype"] in ("fp8", "fp8_static"):
                by_shape[(int(r["m"]), r["n"], r["k"])][r["gemm_dtype"]] = float(r["latency"])
        buckets = collections.defaultdict(list)
        for (m, _, _), v in by_shape.items():
            if len(v) == 2:
                buckets[m.bit_length() - 1].append((1e3 * (v["fp8"] - v["fp8_static"]), v["fp8_static"] / v["fp8"]))
        for b, v in sorted(buckets.items()):
            print(f"{gpu},2^{b},{len(v)},{statistics.median(x[0] for x in v):.1f},{statistics.median(x[1] for x in v):.2f}")
    clocks = boost_clocks_mhz(a.gpu_dir)
    print("\nfamily,gpu,rows,latency_p1_us,boost_clock_mhz,latency_p1_kcycles")
    for fam in ("gemm", "context_attention", "generation_attention", "moe"):
        for gpu, path in family_files(root, fam):
            rows = list(csv.DictReader(open(path)))
            lat = sorted(1e3 * float(r["latency"]) for r in rows)
            device = rows[0]["device"]
            if device not in clocks:
                sys.exit(f"llm-data-checks.py: no sheet in {a.gpu_dir} names '{device}'")
            p1 = lat[len(lat) // 100]
            print(f"{fam},{gpu},{len(lat)},{p1:.2f},{clocks[device]:.0f},{p1 * clocks[device] / 1e3:.1f}")
    print("\nfamily,gpu,library,window,pairs,equal_latency_pairs,ratio_p50,ratio_p90")
    for fam in ("context_attention", "generation_attention"):
        for gpu, path in family_files(root, fam):
            for lib, pooled in window_pairs(path, fam, gpu):
                if pooled:
                    print(f"{fam},{gpu},{lib},all,{len(pooled)},,{statistics.median(pooled):.2f},{pct(pooled, 90):.2f}")
    peaks = tensor_peaks_gflops(a.gpu_dir)
    print("\ngpu,gemm_dtype,shapes_all_dims_ge_4096,tflops_p50,peak_fraction_p50")
    for gpu, path in family_files(root, "gemm"):
        gemm_peak_fractions(path, peaks, a.gpu_dir)
    print("\ngpu,library,head_dim,windowed,rows")
    prefill = {}  # GPU -> prefill_key(row) -> latency: checks 6, 11 and 14 read each file once
    prefill_rows = {}  # GPU -> prefill_key(row) -> row (check 14)
    for gpu, path in family_files(root, "context_attention"):
        counts, t, rows = collections.Counter(), prefill.setdefault(gpu, {}), prefill_rows.setdefault(gpu, {})
        for r in csv.DictReader(open(path)):
            key = prefill_key(r)
            counts[(key[0], int(r["head_dim"]), key[1] > 0)] += 1
            t[key] = float(r["latency"])
            rows[key] = r
        for (lib, hd, w), n in sorted(counts.items()):
            print(f"{gpu},{lib},{hd},{'yes' if w else 'no'},{n}")
    print("\ngpu,triton_ratio,pairs,ratio_p10,ratio_p50,ratio_p90")
    for gpu, t in sorted(prefill.items()):
        tri = {k[1:]: v for k, v in t.items() if k[0] == "triton"}  # (window, the shape, dtype, cache dtype)
        windows = [v / tri[(128,) + k[1:]] for k, v in tri.items() if k[0] == 1024 and (128,) + k[1:] in tri]
        fp8 = [v / tri[k[:6] + ("bfloat16", "bfloat16")] for k, v in tri.items()
               if k[6:] == ("fp8", "fp8") and k[:6] + ("bfloat16", "bfloat16") in tri]
        for name, v in (("window_1024_over_128", windows), ("fp8_over_bf16", fp8)):
            if v:
                print(f"{gpu},{name},{len(v)},{pct(v, 10):.2f},{statistics.median(v):.2f},{pct(v, 90):.2f}")
    print("\ngpu,moe_dtype,library,rows")
    multi = {}
    w4 = {}  # GPU -> (library, the layer's other columns) -> {moe_dtype: latency}: check 12
    for gpu, path in family_files(root, "moe"):
        counts, shapes, models = collections.Counter(), collections.defaultdict(set), collections.Counter()
        for r in csv.DictReader(open(path)):
            lib, dt = r["kernel_source"], r["moe_dtype"]
            counts[(dt, lib)] += 1
            if dt in ("w4a16_mxfp4", "w4a8_mxfp4_mxfp8"):
                key = (lib,) + tuple(v for c, v in r.items() if c not in ("kernel_source", "moe_dtype", "latency", "version"))
                w4.setdefault(gpu, collections.defaultdict(dict))[key][dt] = (int(r["num_tokens"]), float(r["latency"]))
            shapes[lib].add(tuple(v for c, v in r.items() if c not in ("kernel_source", "latency", "version")))
            models[(r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"], dt, lib)] += 1
        for (dt, lib), n in sorted(counts.items()):
            print(f"{gpu},{dt},{lib},{n}")
        if len(shapes) > 1:
            libs = sorted(shapes)
            shared = [(x, y, len(shapes[x] & shapes[y])) for i, x in enumerate(libs) for y in libs[i + 1:]]
            multi[gpu] = (shared, models)
    print("\ngpu,library_a,library_b,shared_shapes")
    for gpu, (shared, _) in sorted(multi.items()):
        for x, y, n in shared:
            print(f"{gpu},{x},{y},{n}")
    print("\ngpu,hidden_size,inter_size,topk,num_experts,moe_dtype,library,rows")
    for gpu, (_, models) in sorted(multi.items()):
        for k, n in sorted(models.items(), key=lambda kv: tuple(int(x) for x in kv[0][:4]) + kv[0][4:]):
            print(f"{gpu},{','.join(k)},{n}")
    print("\ngpu,m_range,pairs,ratio_p10,ratio_p50,ratio_p90,median_abs_diff_pct")
    for gpu, label, n, p10, p50, p90, diff in source_agreement(a.llm_dir):
        print(f"{gpu},{label},{n},{p10:.2f},{p50:.2f},{p90:.2f},{diff:.1f}")
    print("\ngpu,library,rows_beyond_4x_l2,dram_bytes_per_sm_cycle,dram_share_p50,sm_side_bytes_per_cycle_p50")
    sheets = sheet_numbers(a.gpu_dir, SHEET_KEYS)
    for _, path in family_files(root, "generation_attention"):
        for gpu, lib, n, bpc, share, rate in decode_sm_rates(path, sheets, a.gpu_dir):
            print(f"{gpu},{lib},{n},{bpc:.1f},{share:.2f},{rate:.1f}")
    print("\ngpu,gemm_dtype,wave_padding,rows,peak_fraction_p50,peak_fraction_x_padding_p50")
    gemm_sheets = sheet_groups(a.gpu_dir, GEMM_SHEET)
    for _, path in family_files(root, "gemm"):
        for gpu, dtype, label, n, frac, charged in gemm_wave_rows(path, gemm_sheets, peaks, a.gpu_dir):
            print(f"{gpu},{dtype},{label},{n},{frac:.2f},{charged:.2f}")
    print("\ngpu,library,window,pair,pairs,ratio_p10,ratio_p50,ratio_p90")
    for gpu, t in sorted(prefill.items()):
        for lib, win, kind, v in fp8_prefill_ratios(t):
            print(f"{gpu},{lib},{win},{kind},{len(v)},{pct(v, 10):.2f},{statistics.median(v):.2f},{pct(v, 90):.2f}")
    print("\ngpu,library,tokens,pairs,w4a8_over_w4a16_p10,p50,p90")
    for gpu, layers in sorted(w4.items()):
        for lib, label, v in w4a8_ratios(layers):
            print(f"{gpu},{lib},{label},{len(v)},{pct(v, 10):.2f},{statistics.median(v):.2f},{pct(v, 90):.2f}")
    print("\ngpu,gemm_dtype,rows_activation_ge_4x_l2,cast_over_measured_p50,cast_over_measured_p90,share_faster_than_cast")
    for _, path in family_files(root, "gemm"):
        for gpu, dtype, v in cast_shares(path, sheets, a.gpu_dir):
            print(f"{gpu},{dtype},{len(v)},{statistics.median(v):.2f},{pct(v, 90):.2f},{sum(x > 1 for x in v) / len(v):.2f}")
    print("\ngpu,library,head_dim,attn_dtype,pairs,block_pair_kcycles_p50,mma_kcycles,exp_kcycles,fp32_kcycles,"
          "over_series_p10,over_series_p50,over_series_p90,over_larger_of_mma_exp_p50,rest_kcycles_per_cta_p50,"
          "rest_dram_share_p50")
    prefill_sheets = sheet_numbers(a.gpu_dir, PREFILL_SHEET)
    exp_rates = {n: float(v) for n, v in sheet_fields(a.gpu_dir, r"^sfu_exp_per_sm_clock:\s*([0-9]+)").items()}
    for gpu, rows in sorted(prefill_rows.items()):
        for (lib, d, dt), v in sorted(prefill_block_costs(rows, prefill_sheets, peaks, exp_rates, a.gpu_dir).items()):
            _, mma, exp, fp32, _, _ = v[0]
            series = [x[0] / (mma + exp + fp32) for x in v]
            larger = [x[0] / max(mma, exp) for x in v]
            print(f"{gpu},{lib},{d},{dt},{len(v)},{statistics.median(x[0] for x in v) / 1e3:.2f},{mma / 1e3:.2f},"
                  f"{exp / 1e3:.2f},{fp32 / 1e3:.2f},{pct(series, 10):.2f},{statistics.median(series):.2f},"
                  f"{pct(series, 90):.2f},{statistics.median(larger):.2f},{statistics.median(x[4] for x in v) / 1e3:.2f},"
                  f"{statistics.median(x[5] for x in v):.2f}")
    print("\ngpu,library,tokens_x_topk_over_experts,shapes,time_over_time_at_4_p50,every_pick_distinct,random_picks")
    moe_power = []
    for gpu, path in family_files(root, "moe"):
        balanced_rows, power_rows = moe_routing_checks(path)
        for lib, r, n, med in balanced_rows:
            print(f"{gpu},{lib},{r:g},{n},{med:.2f},{min(1, r):.2f},{(1 - math.exp(-r)) / (1 - math.exp(-4)):.2f}")
        moe_power += [(gpu,) + row for row in power_rows]
    print("\ngpu,library,moe_ep,assignments_per_expert,pairs,power_law_over_balanced_p50")
    for gpu, lib, ep, bk, n, med in moe_power:
        print(f"{gpu},{lib},{ep},{bk},{n},{med:.2f}")
    print("\ngpu,library,moe_dtype,working_set_over_l2,layers,rate_over_dram_bandwidth_p50")
    for gpu, path in family_files(root, "moe"):
        for lib, dt, lab, n, med in moe_l2_rows(path, sheets, a.gpu_dir):
            print(f"{gpu},{lib},{dt},{lab},{n},{med:.2f}")
    print("\ngpu,gemm_dtype,weights_over_l2_m_le_16,rows,rate_over_dram_bandwidth_p50")
    for gpu, path in family_files(root, "gemm"):
        for dt, lab, n, med in gemm_l2_rows(path, sheets, a.gpu_dir):
            print(f"{gpu},{dt},{lab},{n},{med:.2f}")
    print("\ngpu,library,hidden_size,inter_size,topk,num_experts,tp_peak_share_at_16384_tokens")
    for gpu, path in family_files(root, "moe"):
        for lib, model, v in moe_peak_shares(path, peaks, a.gpu_dir):
            print(f"{gpu},{lib},{','.join(map(str, model))},{' '.join(f'tp{tp}:{x:.2f}' for tp, x in v)}")
    if a.rows_csv:
        raw = list(csv.DictReader(open(a.data)))
        pred = list(csv.DictReader(open(a.rows_csv)))
        cols = a.by.split(",")
        derived = {"m_range", "weights", "l2_fit", "latency_us", "group", "tokens_pow2"}
        if {"m_range", "weights"} & set(cols) and raw and not {"m", "n", "k"} <= set(raw[0]):
            sys.exit(f"llm-data-checks.py: --by m_range/weights: {a.data} is not a gemm file (no m, n, k)")
        if "tokens_pow2" in cols and raw and not {"num_tokens", "m", "M"} & set(raw[0]):
            sys.exit(f"llm-data-checks.py: --by tokens_pow2: {a.data} is not a moe or gemm file (no num_tokens, m, M)")
        for c in ("l2_fit", "group"):
            if c in cols and raw and "num_key_value_heads" not in raw[0]:
                sys.exit(f"llm-data-checks.py: --by {c}: {a.data} is not an attention file (no num_key_value_heads)")
        missing = [c for c in cols if raw and c not in raw[0] and c != "window_size" and c not in derived]
        if missing:
            sys.exit(f"llm-data-checks.py: --by: {a.data} has no column {missing[0]}")
        groups = collections.defaultdict(list)
        dcol = next((c for c in ("gemm_dtype", "attn_dtype", "moe_dtype") if raw and c in raw[0]), None)
        # The files' dtype spellings that tilecast names otherwise (core/kernel.cpp, try_dtype_from_string).
        names = {"bfloat16": "bf16", "float16": "fp16", "int4_wo": "int4", "w4a16_mxfp4": "mxfp4",
                 "w4a8_mxfp4_mxfp8": "mxfp4_mxfp8"}

        def latency_ms(r):  # aiconfigurator: `latency` (ms); `tilecast collect`: `Latency` (ms); LLMServingSim: `time_us`
            for c in ("latency", "Latency"):
                if c in r:
                    return float(r[c])
            return float(r["time_us"]) / 1e3

        def op_of(r):  # aiconfigurator: op_name; LLMServingSim attention.csv: a prompt chunk or decode
            if "op_name" in r:
                return r["op_name"]
            if "prefill_chunk" in r:  # rows mixing a chunk and decodes are not forecast (eval-kernels skips them)
                chunk, decodes = int(r["prefill_chunk"]) > 0, int(r["n_decode"]) > 0
                return "mixed" if chunk and decodes else "context_attention" if chunk else "generation_attention"
            return None

        def same(r, p, m):  # the file's row p forecast: its latency, op, and dtype where the file has them
            return abs(m - latency_ms(r)) <= 2e-5 * m and (  # rows CSV: 6 significant digits
                dcol is None or names.get(r[dcol], r[dcol]) == p["dtype"]) and op_of(r) in (None, p["op"])

        def column(r, c):  # a data column, or a derived one (gemm shapes)
            if c == "m_range":
                return m_range(int(r["m"]))
            if c == "weights":
                return "model" if int(r["n"]) * int(r["k"]) >= 4096 * 4096 else "small"
            if c == "latency_us":  # the measured latency's power-of-two bucket, in microseconds
                lo = 2.0 ** math.floor(math.log2(latency_ms(r) * 1e3))
                return f"{lo:g}-{2 * lo:g}"
            if c == "tokens_pow2":  # the largest power of two at most the row's tokens
                tokens = next(r[t] for t in ("num_tokens", "m", "M") if t in r)  # M: `tilecast collect`'s layout
                return str(1 << (int(tokens).bit_length() - 1))
            if c == "group":  # query heads per KV head
                return str(int(r["num_heads"]) // int(r["num_key_value_heads"]))
            if c == "l2_fit":  # the row's bytes against its GPU's L2
                if r["device"] not in sheets:
                    sys.exit(f"llm-data-checks.py: no sheet in {a.gpu_dir} states {', '.join(SHEET_KEYS)} for '{r['device']}'")
                nbytes, l2 = attention_row_bytes(r), sheets[r["device"]]["l2_cache_mb"] * 2**20
                if nbytes is None:
                    return ""
                return next(label for top, label in L2_FIT if nbytes <= top * l2)
            return r.get(c) or ("0" if c == "window_size" else "")

        j = 0  # eval-kernels writes the rows it forecast in file order: a subsequence of the file's
        for p in pred:
            m, f = float(p["measured_ms"]), float(p["predicted_ms"])
            while j < len(raw) and not same(raw[j], p, m):
                j += 1
            if j == len(raw):
                sys.exit(f"llm-data-checks.py: {a.rows_csv}: rows are not a subsequence of {a.data}'s")
            r = raw[j]
            j += 1
            key = ",".join(column(r, c) for c in cols)
            prior = float(p.get("prior_ms") or 0)
            groups[key].append((100 * abs(f - m) / m, f / m, prior / m if prior > 0 else None))
        print(f"\n{a.by},rows,mape_pct,median_forecast_over_measured" + (",median_prior_over_measured" if a.prior else ""))
        def order(kv):  # numbers numerically (window sizes, m ranges by their first), names alphabetically
            def one(x):
                if x in L2_LABELS:
                    return (0, L2_LABELS.index(x), x)
                lead = re.match(r">?(\d+)", x)
                return (0, int(lead.group(1)) + (0.5 if x.startswith(">") else 0), x) if lead else (1, 0, x)
            return [one(x) for x in kv[0].split(",")]

        for k, v in sorted(groups.items(), key=order):
            line = f"{k},{len(v)},{statistics.mean(x[0] for x in v):.1f},{statistics.median(x[1] for x in v):.2f}"
            if a.prior:
                priors = [x[2] for x in v if x[2] is not None]
                line += f",{statistics.median(priors):.2f}" if priors else ","
            print(line)

main()
