#!/usr/bin/env python3
"""FP8 fused MoE on GPUs whose SGLang MoE kernel is Triton's fused_moe (every GPU but datacenter
Blackwell, whose kernel is FlashInfer's TRT-LLM MoE: core/kernel.cpp moe_library).

The moe networks learn FP8 from the only FP8 MoE rows in ../shared: the B200's TRT-LLM kernels,
whose FP8 (block-scaled) layers run slower than their BF16 ones at most shapes. The same file
also times Triton's fused_moe in both dtypes on the B200 (rows that training leaves out, since
the B200's spec implies TRT-LLM): there FP8 runs at about half its BF16 time. This script
  1. prints the FP8 / BF16 latency ratio of both libraries over the B200's matched rows (same
     layer, tokens, tp, ep and routing), by token count;
  2. fits the rule tilecast applies to a Triton GPU's FP8 MoE, FP8 = a + c x BF16 (least squares
     in relative error over every Triton pair; --fit prints a and c, which the constants
     kTritonFp8MoeFloorUs and kTritonFp8MoeFactor in predictor/kernel_predictor.h must equal),
     and compares it with other forms, each fitted without one layer shape and scored on it
     (the BF16 side measured, so this scores the rule alone);
  3. with the Python module built (--build), prints the bundled forecasts' FP8 / BF16 ratio on a
     Triton GPU (--gpu, default H100-SXM) at the Triton layers' shapes.

  scripts/eval-moe-fp8.py [--llm-dir ../shared/llm-kernels] [--build build] [--gpu H100-SXM] [--fit]
"""
import argparse, collections, csv, math, os, statistics, sys

ap = argparse.ArgumentParser()
ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
ap.add_argument("--build", default="build")
ap.add_argument("--gpu", default="H100-SXM")
ap.add_argument("--fit", action="store_true", help="print the fitted rule's two constants only")
a = ap.parse_args()
path = os.path.join(a.llm_dir, "aiconfigurator/B200/moe_perf.csv")
if not os.path.exists(path):
    sys.exit(f"eval-moe-fp8.py: {path} not found (--llm-dir or TILECAST_LLM_KERNELS_DIR)")

TRITON, TRTLLM = "sglang_fused_moe_triton", "sglang_flashinfer_trtllm_moe"
rows = collections.defaultdict(dict)
for r in csv.DictReader(open(path)):
    if r["moe_dtype"] not in ("bfloat16", "fp8_block"):
        continue
    key = (r["kernel_source"], int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]), int(r["num_experts"]),
           int(r["moe_tp_size"]), int(r["moe_ep_size"]), r["distribution"], int(r["num_tokens"]))
    rows[key][r["moe_dtype"]] = float(r["latency"])
pairs = {lib: [(k, v["bfloat16"], v["fp8_block"]) for k, v in rows.items() if k[0] == lib and len(v) == 2]
         for lib in (TRITON, TRTLLM)}
triton = pairs[TRITON]
if not triton:
    sys.exit("eval-moe-fp8.py: no Triton rows timed in both bfloat16 and fp8_block in " + path)


def fit_linear(ps):
    """a (ms) and c minimising sum ((a + c b) / f - 1)^2."""
    s00 = s01 = s11 = t0 = t1 = 0.0
    for _, b, f in ps:
        x0, x1 = 1 / f, b / f
        s00, s01, s11, t0, t1 = s00 + x0 * x0, s01 + x0 * x1, s11 + x1 * x1, t0 + x0, t1 + x1
    det = s00 * s11 - s01 * s01
    return (t0 * s11 - t1 * s01) / det, (s00 * t1 - s01 * t0) / det


a_ms, c = fit_linear(triton)
if a.fit:
    print(f"triton fp8 moe: {a_ms * 1e3:.2f} us + {c:.4f} x bf16 ({len(triton)} pairs)")
    sys.exit(0)

print(f"B200 ({path}): FP8 / BF16 latency of the same layer, tokens, tp, ep and routing")
for lib in (TRITON, TRTLLM):
    ps = pairs[lib]
    by_t = collections.defaultdict(list)
    for k, b, f in ps:
        by_t[k[-1]].append(f / b)
    shapes = sorted({k[1:5] for k, _, _ in ps})
    print(f"  {lib}: {len(ps)} pairs, {len(shapes)} layer shapes; median {statistics.median(f / b for _, b, f in ps):.2f}; "
          "by tokens: " + ", ".join(f"{t} {statistics.median(v):.2f}" for t, v in sorted(by_t.items())
                                    if t in (1, 4, 16, 64, 256, 1024, 4096, 16384)))


def shape_of(k):
    return k[1:5]


def tokens_per_expert(k):
    return int(math.log2(max(1.0, k[-1] * k[3] / k[4])))


forms = {
    "FP8 = BF16": lambda tr: (lambda k, b: b),
    "FP8 = median ratio x BF16": lambda tr: (lambda r: (lambda k, b: r * b))(statistics.median(f / b for _, b, f in tr)),
    "FP8 = median ratio per log2 tokens per expert x BF16": None,
    "FP8 = a + c x BF16 (bundled)": lambda tr: (lambda ac: (lambda k, b: ac[0] + ac[1] * b))(fit_linear(tr)),
}


def by_tpe(tr):
    groups = collections.defaultdict(list)
    for k, b, f in tr:
        groups[tokens_per_expert(k)].append(f / b)
    med = {t: statistics.median(v) for t, v in groups.items()}
    keys = sorted(med)
    return lambda k, b: med[min(keys, key=lambda t: abs(t - tokens_per_expert(k)))] * b


forms["FP8 = median ratio per log2 tokens per expert x BF16"] = by_tpe
shapes = sorted({shape_of(k) for k, _, _ in triton})
print(f"\nRules for a Triton GPU's FP8 layer from its BF16 one, fitted without one layer shape and scored on it "
      f"(B200 Triton pairs, BF16 measured); MAPE % per left-out shape {', '.join('x'.join(map(str, s)) for s in shapes)}:")
for name, fit in forms.items():
    errs = []
    for s in shapes:
        rule = fit([p for p in triton if shape_of(p[0]) != s])
        test = [p for p in triton if shape_of(p[0]) == s]
        errs.append(100 * statistics.fmean(abs(rule(k, b) / f - 1) for k, b, f in test))
    print(f"  {name:55s} " + " / ".join(f"{e:.1f}" for e in errs) + f"   mean {statistics.fmean(errs):.1f}")
print(f"Fitted on every pair: FP8 = {a_ms * 1e3:.2f} us + {c:.4f} x BF16")

sys.path.insert(0, os.path.join(a.build, "python"))
try:
    import tilecast
except ImportError as e:
    print(f"\n(the Python module is not built in {a.build}/python: no forecasts; {e})")
    sys.exit(0)
print(f"\nBundled forecasts on {a.gpu}, the Triton layers at tp 1, ep 1, balanced routing: BF16 ms, FP8 (block) ms, ratio")
for h, f, k, e in shapes:
    line = []
    for t in (1, 16, 256, 4096, 16384):
        ms = {d: tilecast.predict_kernel(op="moe", shape=[t, h, f, k, e], gpu=a.gpu, dtype=d)["latency_ms"]
              for d in ("bf16", "fp8_block")}
        line.append(f"{t} tokens {ms['bf16']:.3f} / {ms['fp8_block']:.3f} ({ms['fp8_block'] / ms['bf16']:.2f})")
    print(f"  {h}x{f}, top-{k} of {e}: " + "; ".join(line))
