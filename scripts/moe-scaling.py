#!/usr/bin/env python3
"""How a fused MoE layer's latency scales in the data: with its tokens, and with expert parallelism.

tilecast forecasts a MoE layer of more tokens than its moe family was trained on (16,384 in
../shared/llm-kernels/aiconfigurator) as equal chunks within that range, one after another
(KernelPredictor::moe_trained_tokens, predictor/kernel_predictor.h). This prints the evidence:
per training GPU and kernel library, over every BF16 layer timed at both T and 2T tokens (same
hidden size, expert width, top-k, experts, tp, ep; balanced routing), the median, p10 and p90
of latency(2T) / latency(T) for each doubling from above an eighth of the largest T. A ratio of 2 is what the chunk
rule assumes beyond the range.

Then, for training's expert parallelism (why build_llm_training_graph forecasts a rank's experts
as the layer without ep rather than by the family's ep rows): per GPU and library,
latency(T tokens, ep) / latency(T / ep tokens, ep 1), two layers of the same work on rank 0
(T x top-k / ep expert assignments), the first with 1/ep of the experts and every token of the
group routed (SGLang's expert-parallel kernels), by ep and by whether T / ep reaches 1,024 tokens.

Then, how a rank's latency falls with the group's size at large layers: per GPU, library and
ep, the median of latency(T, ep) / latency(T, ep 1) over BF16 layers at >= 4,096 tokens
(balanced routing). The A100's file (SGLang 0.5.10) keeps the ep-1 time through ep 8 and halves
from there; the L40S's and B200's (0.5.14) fall from ep 2 (docs/accuracy.md, "Fused MoE").

Last, the pairs a rank of Triton's or Marlin's MoE passes for other ranks' experts
(moe_other_rank_bytes, core/kernel.h; the floor under a forecast since session 58): per GPU,
library and ep >= 8, the measured latency over those passes' time at the spec's DRAM bandwidth,
BF16 layers at >= 2,048 tokens, balanced routing.

  scripts/moe-scaling.py [--llm-dir ../shared/llm-kernels]
"""
import argparse, collections, csv, os, statistics, sys

import gpu_sheets

ap = argparse.ArgumentParser()
ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
a = ap.parse_args()
base = os.path.join(a.llm_dir, "aiconfigurator")
if not os.path.isdir(base):
    sys.exit(f"moe-scaling.py: {base} not found (--llm-dir or TILECAST_LLM_KERNELS_DIR)")

def quantile(v, p):
    return v[min(len(v) - 1, int(p * len(v)))]


def print_stats(cells, v):
    """One table row: the leading cells, then how many values and their median, p10 and p90."""
    v = sorted(v)
    print("| " + " | ".join(str(c) for c in cells) + f" | {len(v)} | {statistics.median(v):.2f} | "
          f"{quantile(v, 0.1):.2f} | {quantile(v, 0.9):.2f} |")


def with_ep1(lat, lib):
    """(ep, the layer's latency by tokens, the same layer's at ep 1) for the library's layers at
    ep > 1 whose ep-1 twin (same hidden, inter, top-k, experts and tp) was timed too."""
    for (l, layer), by in lat.items():
        one = lat.get((lib, layer[:5] + (1,)))
        if l == lib and layer[5] > 1 and one:
            yield layer[5], by, one


def ep_ratios(lat, lib, key):
    """latency(T, ep) / latency(T', ep 1) over the library's layers with an ep-1 twin, grouped:
    key(ep, T, the twin's latencies) gives (group, T') for a ratio to take, None to skip it."""
    groups = collections.defaultdict(list)
    for ep, by, one in with_ep1(lat, lib):
        for t, ms in by.items():
            k = key(ep, t, one)
            if k:
                groups[k[0]].append(ms / one[k[1]])
    return groups


def bf16_balanced(gpu):
    """(library, layer) -> tokens -> latency for the GPU's BF16 rows with balanced routing."""
    lat = collections.defaultdict(dict)
    path = os.path.join(base, gpu, "moe_perf.csv")
    for r in csv.DictReader(open(path)):
        if r["moe_dtype"] != "bfloat16" or r["distribution"] != "balanced":
            continue
        layer = tuple(int(r[c]) for c in ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"))
        lat[(r["kernel_source"], layer)][int(r["num_tokens"])] = float(r["latency"])
    return lat


gpus = [g for g in sorted(os.listdir(base)) if os.path.exists(os.path.join(base, g, "moe_perf.csv"))]
data = {g: bf16_balanced(g) for g in gpus}
print("| GPU | library | T -> 2T | layers | median | p10 | p90 |")
print("|---|---|---|---|---|---|---|")
for gpu in gpus:
    lat = data[gpu]
    for lib in sorted({k[0] for k in lat}):
        tokens = sorted({t for (l, _), by in lat.items() if l == lib for t in by})
        for t in tokens:
            if 2 * t not in tokens or 8 * t <= tokens[-1]:
                continue  # the doublings from above an eighth of the largest T
            ratios = [by[2 * t] / by[t] for (l, _), by in lat.items() if l == lib and t in by and 2 * t in by]
            if ratios:
                print_stats((gpu, lib, f"{t} -> {2 * t}"), ratios)

print()
print("| GPU | library | ep | T / ep | layers | median latency(T, ep) / latency(T / ep, ep 1) | p10 | p90 |")
print("|---|---|---|---|---|---|---|---|")
for gpu in gpus:
    lat = data[gpu]
    for lib in sorted({k[0] for k in lat}):
        by_ep_size = ep_ratios(lat, lib, lambda ep, t, one: (
            ((ep, t // ep >= 1024), t // ep) if t % ep == 0 and t // ep in one else None))
        for ep in (2, 4, 8):
            for big in (False, True):
                if by_ep_size[(ep, big)]:
                    print_stats((gpu, lib, ep, ">= 1024" if big else "< 1024"), by_ep_size[(ep, big)])

print()
print("| GPU | library | ep | layer timings (>= 4,096 tokens) | median latency(T, ep) / latency(T, ep 1) | p10 | p90 |")
print("|---|---|---|---|---|---|---|")
for gpu in gpus:
    lat = data[gpu]
    for lib in sorted({k[0] for k in lat}):
        by_ep = ep_ratios(lat, lib, lambda ep, t, one: (ep, t) if t >= 4096 and t in one else None)
        for ep in sorted(by_ep):
            print_stats((gpu, lib, ep), by_ep[ep])

# The pairs routed to other ranks (moe_other_rank_bytes, core/kernel.h): on a rank of SGLang's
# Triton or Marlin MoE at ep > 1, every (token, expert) pair of the group whose expert another
# rank holds still passes the layer's buffers: zero gate_up (2 x inter / tp) and down (hidden)
# rows written, SiLU-mul's read and write, the top-k sum's read, 2 x (5 x inter / tp + 2 x
# hidden) BF16 bytes a pair. Their time at the spec's DRAM bandwidth against the measured
# latency, BF16 layers at >= 2,048 tokens, balanced routing (rank 0's experts take
# min(T, T x top-k / E) pairs each): a ratio near 1 where the passes are most of the layer (a
# rank of one expert), far below 1 for TRT-LLM's kernels, which route only the rank's own pairs.
bandwidth_gbps = {n: v["mem_bw_gbps"] for n, v in gpu_sheets.sheet_numbers(gpu_sheets.DEFAULT_DIR, ("mem_bw_gbps",)).items()}

print()
print("| GPU | library | ep | layer timings (>= 2,048 tokens) | median measured / other ranks' passes at DRAM bandwidth | p10 | p90 |")
print("|---|---|---|---|---|---|---|")
for gpu in gpus:
    bw = bandwidth_gbps.get("NVIDIA " + gpu)
    if bw is None:
        sys.exit(f"moe-scaling.py: no spec in configs/gpus with cuda_name 'NVIDIA {gpu}'")
    lat = data[gpu]
    for lib in sorted({k[0] for k in lat}):
        by_ep = collections.defaultdict(list)
        for (l, (h, f, k, e, tp, ep)), by in lat.items():
            if l != lib or ep < 8:
                continue
            for t, ms in by.items():
                if t < 2048:
                    continue
                other = t * k - min(t, t * k / e) * (e // ep)
                passes_ms = other * 2 * (5 * f / tp + 2 * h) / (bw * 1e9) * 1e3
                by_ep[ep].append(ms / passes_ms)
        for ep in sorted(by_ep):
            print_stats((gpu, lib, ep), by_ep[ep])
