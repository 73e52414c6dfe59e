#!/usr/bin/env python3
"""Forecasts of the training GPUs' rows moved onto GPUs no family was trained on: what an
unseen GPU's forecasts do where no measurement of it exists.

For each aiconfigurator family file of a training GPU (gemm, context_attention,
generation_attention, moe), a seeded sample of its rows is written again with the device set
to each target GPU's CUDA name (configs/gpus), forecast by `tilecast eval-kernels --rows-csv`,
and compared row by row with the latency measured on the source GPU. Prints, per family, source
and target: the rows and the 5th / 50th / 95th percentiles of forecast on the target / measured
on the source. A twin of the source (the GB200 or B300 beside the B200: the same SMs, clock and
memory system) should sit near 1 (the data's README: twin chips about 6 % apart); other
targets show how far a forecast moves from what its source measured.

--pair A:B (A's sheet at least B's in every rate and size, e.g. H200:H100-SXM, the same chip
with more DRAM bandwidth and L2) adds, per family and source, the rows forecast more than 2 %
slower on A than on B and the largest A / B: a response to the spec that physics does not back.

Rows of a dtype the target's sheet has no tensor peak for (NVFP4 on Hopper) are left out for
that target; rows eval-kernels skips (dtypes it does not model) are matched out in order.

  scripts/transplant-forecasts.py [--tilecast build/tilecast] [--llm-dir ../shared/llm-kernels]
      [--gpu-dir configs/gpus] [--targets H100-SXM,H200,GB200,B300,RTX-PRO-6000-Server]
      [--pair H200:H100-SXM ...] [--families gemm,...] [--rows 3000] [--seed 0]
"""
import argparse
import collections
import csv
import os
import random
import subprocess
import sys
import tempfile

from gpu_sheets import DEFAULT_DIR, sheet_groups
from percentile import pct

FAMILIES = ("gemm", "context_attention", "generation_attention", "moe")
DTYPE_COLUMN = {"gemm": "gemm_dtype", "context_attention": "attn_dtype", "generation_attention": "attn_dtype",
                "moe": "moe_dtype"}
FP4_DTYPES = {"nvfp4"}  # the files' FP4 tensor-core dtypes (MXFP4 MoE weights also run dequantised)


def sheets(gpu_dir):
    """Sheet name -> (CUDA device name, has an FP4 tensor peak)."""
    found = sheet_groups(gpu_dir, {"name": r"^name:\s*(\S+)", "peaks": r"^tensor_peak_gflops:\s*(\{.*\})"})
    return {g["name"]: (cuda, "fp4:" in g["peaks"]) for cuda, g in found.items()}


def forecasts(tilecast, header, rows, device, tmp):
    """Forecast ms of each of `rows` (lists in `header`'s columns) on `device`, None where
    eval-kernels skipped the row."""
    data, out = os.path.join(tmp, "rows.csv"), os.path.join(tmp, "forecast.csv")
    dev = header.index("device")
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow(r[:dev] + [device] + r[dev + 1:])
    p = subprocess.run([tilecast, "-q", "eval-kernels", "--data", data, "--rows-csv", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"transplant-forecasts: eval-kernels on {device}: {p.stderr.strip()}")
    with open(out, newline="") as f:
        pred = list(csv.DictReader(f))
    lat = header.index("latency")
    result, j = [], 0
    for r in rows:  # eval-kernels writes the rows it forecast in order: a subsequence of ours
        m = float(r[lat])
        if j < len(pred) and abs(float(pred[j]["measured_ms"]) - m) <= 2e-5 * m:
            result.append(float(pred[j]["predicted_ms"]))
            j += 1
        else:
            result.append(None)
    if j != len(pred):
        sys.exit(f"transplant-forecasts: {out}: its rows are not a subsequence of the sample's")
    return result


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilecast", default=os.path.join(here, "..", "build", "tilecast"))
    ap.add_argument("--llm-dir", default=os.environ.get("TILECAST_LLM_KERNELS_DIR", "../shared/llm-kernels"))
    ap.add_argument("--gpu-dir", default=DEFAULT_DIR)
    ap.add_argument("--targets", default="H100-SXM,H200,GB200,B300,RTX-PRO-6000-Server")
    ap.add_argument("--pair", action="append", default=[], help="A:B, two sheet names (repeatable)")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--rows", type=int, default=3000, help="rows sampled per file (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not os.access(a.tilecast, os.X_OK):
        sys.exit(f"transplant-forecasts: {a.tilecast}: no tilecast binary there (--tilecast)")
    if a.rows < 1:
        sys.exit(f"transplant-forecasts: --rows {a.rows}: must be at least 1")
    known = sheets(a.gpu_dir)
    pairs = []
    for p in a.pair:
        if p.count(":") != 1:
            sys.exit(f"transplant-forecasts: --pair {p}: expected A:B, two sheet names")
        pairs.append(tuple(p.split(":")))
    targets = list(dict.fromkeys(a.targets.split(",") + [g for p in pairs for g in p]))
    for t in targets:
        if t not in known:
            sys.exit(f"transplant-forecasts: no sheet in {a.gpu_dir} is named '{t}' (its `name:` field)")
    families = a.families.split(",")
    for fam in families:
        if fam not in FAMILIES:
            sys.exit(f"transplant-forecasts: --families: '{fam}' is not one of {', '.join(FAMILIES)}")
    root = os.path.join(a.llm_dir, "aiconfigurator")
    if not os.path.isdir(root):
        sys.exit(f"transplant-forecasts: {root}: no such folder (set --llm-dir)")
    print("family,source,target,rows,forecast_over_source_p5,p50,p95")
    pair_lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for fam in families:
            for source in sorted(os.listdir(root)):
                path = os.path.join(root, source, f"{fam}_perf.csv")
                if not os.path.exists(path):
                    continue
                with open(path, newline="") as f:
                    reader = csv.reader(f)
                    header = next(reader)
                    rows = list(reader)
                random.Random(a.seed).shuffle(rows)
                rows = rows[:a.rows]
                lat, dcol = header.index("latency"), header.index(DTYPE_COLUMN[fam])
                measured = [float(r[lat]) for r in rows]
                by_target = {}  # target -> forecast ms per sampled row (None: not forecast there)
                for t in targets:
                    cuda, fp4 = known[t]
                    keep = [fp4 or r[dcol] not in FP4_DTYPES for r in rows]
                    got = iter(forecasts(a.tilecast, header, [r for r, k in zip(rows, keep) if k], cuda, tmp))
                    by_target[t] = [next(got) if k else None for k in keep]
                    ratios = [f / m for f, m in zip(by_target[t], measured) if f is not None]
                    if ratios:
                        print(f"{fam},{source},{t},{len(ratios)},{pct(ratios, 5):.2f},{pct(ratios, 50):.2f},"
                              f"{pct(ratios, 95):.2f}")
                for x, y in pairs:
                    r = [p / q for p, q in zip(by_target[x], by_target[y]) if p is not None and q is not None]
                    if r:
                        pair_lines.append(f"{fam},{source},{x},{y},{len(r)},{sum(v > 1.02 for v in r)},{max(r):.2f}")
    if pairs:
        print("\nfamily,source,a,b,rows,a_slower_by_over_2pct,max_a_over_b")
        print("\n".join(pair_lines))


if __name__ == "__main__":
    main()
