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

With --backward instead: how long each GEMM node's backward takes against its forward in
NeuSight's single-layer training labels (labels/<GPU>/<model>-train-<seq>-<batch>.csv, each node
timed in isolation; nodes named by the parsed graph opgraphs/<tag>.csv as Linear or BMM): per
GPU and kind the nodes, and the median and range of (bw_latency + acc_latency) / fw_latency.
A GEMM's two gradient GEMMs have its multiply-adds each, so 2 is the forward's rate.

  scripts/neusight-data-checks.py [--neusight-dir ../shared/neusight] [--gpu-dir configs/gpus] [--backward]
"""
import argparse
import csv
import glob
import os
import re
import statistics
import sys

from percentile import pct


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


def backward_ratios(ns_dir):
    """(GPU folder, kind) -> [(bw + acc) / fw] over the GEMM nodes of the training labels."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ns_dir, "labels", "*", "*-train-*.csv"))):
        tag = os.path.basename(path)[:-4]
        graph = os.path.join(ns_dir, "opgraphs", tag + ".csv")
        if not os.path.exists(graph):
            continue
        kinds = {r["Name"]: r["OpName"] for r in csv.DictReader(open(graph))}
        gpu = os.path.basename(os.path.dirname(path))
        for r in csv.DictReader(open(path)):
            kind = kinds.get(r.get("Name", ""))
            if kind not in ("Linear", "BMM"):
                continue
            try:
                fw, bw, acc = (float(r[c] or 0) for c in ("fw_latency", "bw_latency", "acc_latency"))
            except (KeyError, ValueError):
                sys.exit(f"neusight-data-checks: {path}: node {r.get('Name')}: no numeric fw/bw/acc_latency")
            if fw > 0:
                out.setdefault((gpu, kind), []).append((bw + acc) / fw)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neusight-dir", default=os.environ.get("TILECAST_NEUSIGHT_DIR", "../shared/neusight"))
    ap.add_argument("--gpu-dir", default="configs/gpus")
    ap.add_argument("--backward", action="store_true",
                    help="the GEMM nodes' backward / forward time in the training labels instead")
    a = ap.parse_args()
    if a.backward:
        ratios = backward_ratios(a.neusight_dir)
        if not ratios:
            sys.exit(f"neusight-data-checks: no training labels with parsed graphs under {a.neusight_dir}")
        print("| GPU (labels folder) | kind | nodes | (bw + acc) / fw: median | min | max |")
        print("|---|---|---|---|---|---|")
        for (gpu, kind), v in sorted(ratios.items()):
            v.sort()
            print(f"| {gpu} | {kind} | {len(v)} | {statistics.median(v):.2f} | {v[0]:.2f} | {v[-1]:.2f} |")
        return
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
