#!/usr/bin/env python3
"""How close NeuSight's FP32 GEMM rows run to each GPU's sheet peak, per GPU, op and split.

For every NVIDIA GPU with rows in kernels/nvidia/train/{bmm,linear}/p2.1.0 and in the test
split (kernels/nvidia/test/{bmm,linear}.csv): over the compute-bound rows (FLOPs at the sheet
peak >= 5 x bytes at the sheet bandwidth, and >= 2 ms at the peak), the achieved fraction of the
sheet's FP32 peak (FLOPs / peak / measured latency): rows, median, 25th and 75th percentile, and
the kernel the most rows ran. Sheet numbers come from configs/gpus/*.yaml (fp32_peak_gflops,
mem_bw_gbps), matched on cuda_name. A GPU whose training and test rows disagree by far more than
the other GPUs' do (the P4's linear rows) is a measurement artefact no spec can explain; the
spread across GPUs is what a forecast for an unseen GPU has to guess.

  scripts/neusight-data-checks.py [--neusight-dir ../shared/neusight] [--gpu-dir configs/gpus]
"""
import argparse
import csv
import glob
import os
import re
import statistics
import sys


def sheet(gpu_dir):
    """cuda_name -> (fp32_peak_gflops, mem_bw_gbps) from the GPU YAMLs (flat keys only)."""
    out = {}
    for path in glob.glob(os.path.join(gpu_dir, "*.yaml")):
        keys = {}
        for line in open(path):
            m = re.match(r'^(cuda_name|fp32_peak_gflops|mem_bw_gbps):\s*"?([^"#\n]+)"?', line)
            if m:
                keys[m.group(1)] = m.group(2).strip()
        if len(keys) == 3:
            out[keys["cuda_name"]] = (float(keys["fp32_peak_gflops"]), float(keys["mem_bw_gbps"]))
    return out


def efficiencies(rows, peak_gflops, bw_gbps):
    effs, kernels = [], {}
    for r in rows:
        b = int(r.get("B") or 1)
        m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
        t_s = float(r["Latency"]) * 1e-3
        compute_s = 2.0 * b * m * n * k / (peak_gflops * 1e9)
        memory_s = 4.0 * b * (m * n + n * k + m * k) / (bw_gbps * 1e9)
        if t_s > 0 and compute_s >= 5 * memory_s and compute_s >= 2e-3:
            effs.append(compute_s / t_s)
            name = re.sub(r"[(<].*", "", r.get("Kernel Name", "")).strip()
            kernels[name] = kernels.get(name, 0) + 1
    return effs, kernels


def pct(v, p):
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neusight-dir", default=os.environ.get("TILECAST_NEUSIGHT_DIR", "../shared/neusight"))
    ap.add_argument("--gpu-dir", default="configs/gpus")
    a = ap.parse_args()
    nv = os.path.join(a.neusight_dir, "kernels", "nvidia")
    if not os.path.isdir(os.path.join(nv, "train")):
        sys.exit(f"neusight-data-checks: {nv}/train not found (pass --neusight-dir)")
    specs = sheet(a.gpu_dir)
    print("| op | GPU | split | compute-bound rows | achieved fraction of the FP32 peak: median | p25 | p75 | most rows ran |")
    print("|---|---|---|---|---|---|---|---|")
    for op in ("bmm", "linear"):
        test_path = os.path.join(nv, "test", op + ".csv")
        test = list(csv.DictReader(open(test_path))) if os.path.exists(test_path) else []
        for path in sorted(glob.glob(os.path.join(nv, "train", op, "p2.1.0", "*.csv"))):
            gpu = os.path.basename(path)[:-4]
            if gpu not in specs:
                sys.exit(f"neusight-data-checks: {path}: no configs/gpus YAML with cuda_name '{gpu}'")
            for split, rows in (("train", list(csv.DictReader(open(path)))), ("test", [r for r in test if r["Device"] == gpu])):
                effs, kernels = efficiencies(rows, *specs[gpu])
                if not effs:
                    print(f"| {op} | {gpu} | {split} | 0 | | | | |")
                    continue
                effs.sort()
                top = max(kernels.items(), key=lambda kv: kv[1])
                print(f"| {op} | {gpu} | {split} | {len(effs)} | {statistics.median(effs):.2f} | {pct(effs, 25):.2f} | "
                      f"{pct(effs, 75):.2f} | {top[0]} ({top[1]}) |")


if __name__ == "__main__":
    main()
