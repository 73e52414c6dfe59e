#!/usr/bin/env python3
"""One kernel on two GPUs: is the one that betters the other ever forecast (or measured) slower?

Forecasts: `--data F ... --as CUDA_NAME` forecasts every row of each aiconfigurator-layout file
twice with `tilecast eval-kernels --rows-csv` (`--weights W`, default the bundled weights): on
the file's own GPU (or, with `--against OTHER`, with its `device` column set to OTHER), and with
its `device` column set to CUDA_NAME. Per op it prints the rows, how many are forecast slower on
CUDA_NAME than on the first GPU, the largest ratio and its row.
  python3 scripts/gpu-pair-check.py --as "NVIDIA H100 80GB HBM3" \\
      --data ../shared/llm-kernels/aiconfigurator/A100-SXM4-80GB/generation_attention_perf.csv
  python3 scripts/gpu-pair-check.py --against "NVIDIA H100 80GB HBM3" --as "NVIDIA H200" --data ...

Measurements: `--measured OLD NEW` joins two GPUs' files of one family on (op, shape, dtype)
(the median latency of a shape's rows) and counts the shapes that NEW ran slower than OLD.
  python3 scripts/gpu-pair-check.py --measured ../shared/llm-kernels/aiconfigurator/{A100-SXM4-80GB,B200}/moe_perf.csv
(docs/accuracy.md, "No slower than a training GPU it betters").
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows_csv(tc, weights, data, out):
    cmd = [tc, "-q", "eval-kernels", "--data", data, "--rows-csv", out]
    if weights:
        cmd += ["--weights", weights]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"gpu-pair-check: {' '.join(cmd)}: {r.stderr.strip()}")
    with open(out, newline="") as f:
        return list(csv.DictReader(f))


def renamed(data, cuda_name, out):
    with open(data, newline="") as f, open(out, "w", newline="") as g:
        rd = csv.reader(f)
        head = next(rd)
        if "device" not in head:
            sys.exit(f"gpu-pair-check: {data}: no 'device' column (aiconfigurator layout expected)")
        col = head.index("device")
        w = csv.writer(g)
        w.writerow(head)
        for row in rd:
            row[col] = cuda_name
            w.writerow(row)


def forecasts(args):
    tc = args.tilecast
    with tempfile.TemporaryDirectory() as tmp:
        for data in args.data:
            first = data
            if args.against:
                first = os.path.join(tmp, "first_data.csv")
                renamed(data, args.against, first)
            own = rows_csv(tc, args.weights, first, os.path.join(tmp, "own.csv"))
            other = os.path.join(tmp, "other_data.csv")
            renamed(data, args.as_gpu, other)
            new = rows_csv(tc, args.weights, other, os.path.join(tmp, "new.csv"))
            if len(own) != len(new):
                sys.exit(f"gpu-pair-check: {data}: {len(own)} rows against {len(new)}")
            by_op = {}
            for a, b in zip(own, new):
                s = by_op.setdefault(a["op"], [0, 0, 0.0, None])
                s[0] += 1
                ratio = float(b["predicted_ms"]) / float(a["predicted_ms"])
                if ratio > 1:
                    s[1] += 1
                if ratio > s[2]:
                    s[2], s[3] = ratio, (a["shape"], a["dtype"], a["predicted_ms"], b["predicted_ms"])
            for op, (n, slower, top, row) in sorted(by_op.items()):
                print(f"{os.path.basename(data)}  {op}: {n} rows, {slower} forecast slower on {args.as_gpu} "
                      f"than on {own[0]['device']}; largest ratio {top:.3f} ({row[0]} {row[1]}: "
                      f"{float(row[2]):.4g} against {float(row[3]):.4g} ms)")


def measured(args):
    tc = args.tilecast
    with tempfile.TemporaryDirectory() as tmp:
        sides = []
        for i, data in enumerate(args.measured):
            med = {}
            for r in rows_csv(tc, args.weights, data, os.path.join(tmp, f"{i}.csv")):
                med.setdefault((r["op"], r["shape"], r["dtype"]), []).append(float(r["measured_ms"]))
            sides.append(({k: statistics.median(v) for k, v in med.items()}, r["device"] if med else "?"))
    (old, old_gpu), (new, new_gpu) = sides
    common = [k for k in old if k in new]
    slower = sorted((new[k] / old[k], k) for k in common if new[k] > old[k])
    print(f"{len(common)} shapes in both; {len(slower)} measured slower on {new_gpu} than on {old_gpu}")
    for ratio, k in slower[::-1][:5]:
        print(f"  {ratio:.3f}  {k[0]} {k[1]} {k[2]}: {old[k]:.4g} -> {new[k]:.4g} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", help="aiconfigurator-layout files to forecast on two GPUs")
    ap.add_argument("--as", dest="as_gpu", help="the CUDA device name the second forecast takes")
    ap.add_argument("--against", default="", help="the CUDA device name the first forecast takes (default: the file's)")
    ap.add_argument("--measured", nargs=2, metavar=("OLD", "NEW"), help="two GPUs' files of one family")
    ap.add_argument("--weights", default="", help="weights folder (default: the bundled weights)")
    ap.add_argument("--tilecast", default=os.path.join(ROOT, "build", "tilecast"))
    args = ap.parse_args()
    if args.measured:
        measured(args)
    elif args.data and args.as_gpu:
        forecasts(args)
    else:
        ap.error("give --data F ... --as CUDA_NAME, or --measured OLD NEW")


if __name__ == "__main__":
    main()
