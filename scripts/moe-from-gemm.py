#!/usr/bin/env python3
"""Can the GEMM family forecast a fused MoE layer on a GPU it never saw? (a design study)

A fused MoE layer on one rank runs a grouped gate_up GEMM and a grouped down GEMM over the
experts its tokens hit. Read as two stacked GEMMs, gate_up is m = tokens / experts hit rows
(the mean expert's), in-features = hidden, out-features = hit x 2 x inter / tp, and down is the
same rows over inter / tp in and hit x hidden out: the layer's FLOPs and weight bytes exactly
(tokens on the rank and experts hit as tilecast's MoE model counts them; `predict_kernel`'s
`stacked_gemms`, moe_gemm_composite in core/kernel.h). Each is forecast by the GEMM family of a
leave-one-GPU-out fold (`FAMILIES=gemm bash scripts/eval-llm-loo.sh OUT` leaves `OUT/gemm-weights-without-<GPU>`),
so the left-out GPU's MoE rows are forecast by GEMM networks that never saw it.

Per left-out GPU and dtype (bfloat16, fp8_block; the rows of the kernel library the spec
selects, as training keeps them; distinct shapes, the last row of a shape measured twice),
prints the MAPE of:
  - the composite alone (ratio 1), with its bias (median composite / measured);
  - the composite times the median measured / composite ratio of the other GPUs' rows of the
    same library (the B200's TRT-LLM library has no other GPU) or of all;
  - `by shape`: the composite times the same shape's measured / composite ratio on each other GPU
    that measured it (and the geometric mean of both others): what a correction learnt per shape
    from the other GPUs could reach at best.
The MoE family's own leave-one-GPU-out figures are in docs/accuracy.md. With `--moe-loo DIR`
(`FAMILIES=moe bash scripts/eval-llm-loo.sh DIR`: the MoE family's fold weights), a second table
blends the two on the left-out GPU, the family's fold forecast ^ (1 - w) x the composite ^ w, for
w = 0, 0.25, 0.5, 0.75 and 1, with the mean over the cells (fold weights whose MoE forecast
blends the GEMMs already, gemm_composite_weight > 0, are refused: set it to 0 in a copy).

  scripts/moe-from-gemm.py OUT [--moe-loo DIR] [--stride N] [--llm-dir ../shared/llm-kernels] [--build build]
"""
import argparse, collections, csv, math, os, statistics, sys

GPUS = {"A100-SXM4-80GB": "A100-80GB-SXM", "L40S": "L40S", "B200": "B200"}  # data folder -> spec
LIB = {"A100-SXM4-80GB": "triton", "L40S": "triton", "B200": "trtllm"}      # tilecast's moe_library
DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8_block"}
SHAPE = ("moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
         "moe_ep_size", "distribution")


def rows_of(llm, gpu, stride):
    out = []
    with open(os.path.join(llm, "aiconfigurator", gpu, "moe_perf.csv")) as f:
        for i, r in enumerate(csv.DictReader(f)):
            if i % stride or r["moe_dtype"] not in DTYPES or LIB[gpu] not in r["kernel_source"]:
                continue
            out.append(r)
    return out


def composite_ms(t, r, spec, weights):
    """The two stacked GEMMs' forecast, ms: the shapes tilecast's MoE forecast names
    (`stacked_gemms`, moe_gemm_composite), each forecast by the gemm family of `weights`."""
    dt = DTYPES[r["moe_dtype"]]
    m = t.predict_kernel(op="moe", shape=[int(r[k]) for k in SHAPE[1:6]], gpu=spec, dtype=dt,
                         moe_tp=int(r["moe_tp_size"]), moe_ep=int(r["moe_ep_size"]), routing=r["distribution"],
                         weights=weights)
    if "stacked_gemms" not in m:  # beyond one GEMM query's limits: no twin
        return None
    return sum(t.predict_kernel(op="gemm", shape=s, gpu=spec, dtype=dt, weights=weights)["latency_ms"]
               for s in m["stacked_gemms"])


def mape(pairs, scale=1.0):
    return statistics.mean(abs(c * scale - a) / a * 100 for a, c in pairs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("loo", help="an eval-llm-loo.sh output folder with the gemm folds")
    ap.add_argument("--moe-loo", help="an eval-llm-loo.sh output folder with the moe folds (blend table)")
    ap.add_argument("--stride", type=int, default=1, help="every Nth row of each file (default all)")
    ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
    ap.add_argument("--build", default="build", help="the build folder (its python/ holds the tilecast module)")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import tilecast as t  # noqa: E402 (the build's module)
    for g in GPUS:
        w = os.path.join(a.loo, f"gemm-weights-without-{g}")
        if not os.path.isfile(os.path.join(w, "manifest.yaml")):
            sys.exit(f"moe-from-gemm: {w}: no fold weights (run FAMILIES=gemm bash scripts/eval-llm-loo.sh {a.loo})")
    if a.moe_loo:
        for g in GPUS:
            w = os.path.join(a.moe_loo, f"moe-weights-without-{g}")
            if not os.path.isfile(os.path.join(w, "manifest.yaml")):
                sys.exit(f"moe-from-gemm: {w}: no fold weights (run FAMILIES=moe bash scripts/eval-llm-loo.sh {a.moe_loo})")
    data = {g: rows_of(a.llm_dir, g, max(1, a.stride)) for g in GPUS}
    blends = []  # (fold, dtype, [(measured, family fold forecast, composite)])
    print("| left out | dtype | shapes | composite alone | x ratio, same library | x ratio, all | by shape: from each other GPU | by shape: both others |")
    print("|---|---|---|---|---|---|---|---|")
    for fold in GPUS:
        w = os.path.join(a.loo, f"gemm-weights-without-{fold}")
        # (gpu, dtype) -> {shape: (measured ms, composite ms)}
        res = collections.defaultdict(dict)
        for g, rows in data.items():
            for r in rows:
                c = composite_ms(t, r, GPUS[g], w)
                if c is not None:
                    res[(g, r["moe_dtype"])][tuple(r[k] for k in SHAPE)] = (float(r["latency"]), c)
        print(f"  fold without {fold}: {sum(len(v) for v in res.values())} rows forecast", file=sys.stderr)
        others = [g for g in GPUS if g != fold]
        for d in DTYPES:
            test = res.get((fold, d))
            if not test:
                continue
            pairs = list(test.values())

            def ratio(gs):
                logs = [math.log(m / c) for g in gs for m, c in res.get((g, d), {}).values()]
                return math.exp(statistics.median(logs)) if logs else None

            same, every = ratio([g for g in others if LIB[g] == LIB[fold]]), ratio(others)
            cells = [f"{mape(pairs):.1f} % (bias {statistics.median(c / m for m, c in pairs):.2f})"]
            cells += [f"{mape(pairs, s):.1f} % (x {s:.2f})" if s else "-" for s in (same, every)]
            each = []
            for g in others:
                common = [k for k in test if k in res.get((g, d), {})]
                if common:
                    each.append(f"{g} {statistics.mean(abs(test[k][1] * res[(g, d)][k][0] / res[(g, d)][k][1] - test[k][0]) / test[k][0] * 100 for k in common):.1f} % ({len(common)})")
            common = [k for k in test if all(k in res.get((g, d), {}) for g in others)]
            both = "-"
            if common:
                apes = []
                for k in common:
                    s = math.exp(statistics.mean(math.log(res[(g, d)][k][0] / res[(g, d)][k][1]) for g in others))
                    apes.append(abs(test[k][1] * s - test[k][0]) / test[k][0] * 100)
                both = f"{statistics.mean(apes):.1f} % ({len(common)})"
            print(f"| {fold} | {d} | {len(pairs)} | " + " | ".join(cells) + f" | {'; '.join(each) or '-'} | {both} |")
            if a.moe_loo:
                mw = os.path.join(a.moe_loo, f"moe-weights-without-{fold}")
                trip = []
                for key, (m, c) in test.items():
                    r = dict(zip(SHAPE, key))
                    fam = t.predict_kernel(op="moe", shape=[int(r[k]) for k in SHAPE[1:6]], gpu=GPUS[fold],
                                           dtype=DTYPES[d], moe_tp=int(r["moe_tp_size"]), moe_ep=int(r["moe_ep_size"]),
                                           routing=r["distribution"], weights=mw)
                    if fam.get("gemm_composite_weight", 0) > 0:
                        sys.exit(f"moe-from-gemm: {mw}: its MoE forecast blends the GEMMs already (gemm_composite_weight "
                                 f"{fam['gemm_composite_weight']}); score a copy with it at 0 (scripts/llm-files.sh "
                                 "set_family_config MANIFEST moe gemm_composite_weight 0)")
                    trip.append((m, fam["latency_ms"], c))
                blends.append((fold, d, trip))
    if blends:
        ws = (0.0, 0.25, 0.5, 0.75, 1.0)
        print()
        print("| left out | dtype | rows | " + " | ".join(f"w = {w}" for w in ws) + " |")
        print("|---|---|---|" + "---|" * len(ws))
        means = collections.defaultdict(list)
        for fold, d, trip in blends:
            cells = []
            for w in ws:
                v = statistics.mean(abs(f ** (1 - w) * c ** w - m) / m * 100 for m, f, c in trip)
                means[w].append(v)
                cells.append(f"{v:.1f} %")
            print(f"| {fold} | {d} | {len(trip)} | " + " | ".join(cells) + " |")
        print(f"| mean of the {len(blends)} cells | | | " + " | ".join(f"{statistics.mean(means[w]):.1f} %" for w in ws) + " |")


if __name__ == "__main__":
    main()
