#!/usr/bin/env python3
"""What rate do the measured memory ops reach, and what does it scale with?

Reads the per-row results of `tilecast eval-kernels --rows-csv R` (any weights: only the
measured latency and the plain roofline are used) and, per GPU and memory op, over the rows of
at least --min-tokens tokens (where the per-launch floor is small), prints the median achieved
rate in bytes as tilecast counts them (the roofline's bytes at the sheet's DRAM bandwidth over
the measured time), its share of that bandwidth, and the same rate per SM-cycle and per
resident-thread cycle (SMs x max_threads_per_sm x boost clock, from configs/gpus/). A rate per
resident-thread cycle that two GPUs share says the kernel is latency-bound (Little's law), the
memory_op model's fourth term (core/kernel.h).

  scripts/memop-rates.py --rows-csv R [--rows-csv R2 ...] [--min-tokens 1024] [--gpu-dir configs/gpus]
"""
import argparse, collections, csv, os, statistics, sys

from gpu_sheets import DEFAULT_DIR, sheet_numbers

OPS = ("rmsnorm", "silu_mul", "rope", "residual_add")


def sheets(gpu_dir):
    """CUDA device name -> the sheet's numbers this script needs."""
    return sheet_numbers(gpu_dir, ("num_sms", "boost_clock_mhz", "mem_bw_gbps", "max_threads_per_sm"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows-csv", action="append", required=True)
    ap.add_argument("--min-tokens", type=int, default=1024)
    ap.add_argument("--gpu-dir", default=DEFAULT_DIR)
    a = ap.parse_args()
    specs = sheets(a.gpu_dir)
    rates = collections.defaultdict(list)
    for path in a.rows_csv:
        try:
            rows = list(csv.DictReader(open(path)))
        except OSError as e:
            sys.exit(f"memop-rates: {path}: {e.strerror}")
        for r in rows:
            if r.get("op") not in OPS:
                continue
            if r["device"] not in specs:
                sys.exit(f"memop-rates: {path}: device '{r['device']}' has no sheet in {a.gpu_dir}")
            if int(r["shape"].split(",")[0]) < a.min_tokens:
                continue
            s = specs[r["device"]]
            measured, roof = float(r["measured_ms"]), float(r["roofline_ms"])
            if not (measured > 0 and roof > 0):
                sys.exit(f"memop-rates: {path}: a row with a non-positive measured_ms or roofline_ms")
            rates[(r["device"], r["op"])].append(s["mem_bw_gbps"] * roof / measured)
    if not rates:
        sys.exit("memop-rates: no memory-op rows of --min-tokens or more in the given files")
    print(f"memory ops of >= {a.min_tokens} tokens: median achieved rate (bytes as tilecast counts them)")
    print(f"{'GPU':28s} {'op':13s} {'rows':>6s} {'GB/s':>7s} {'of DRAM':>8s} {'B/SM-cycle':>11s} "
          f"{'resident threads':>17s} {'MB/s per thread':>16s} {'B per 1k thread-cycles':>23s}")
    for (dev, op), v in sorted(rates.items()):
        s = specs[dev]
        gbps = statistics.median(v)
        sm_cycles = s["num_sms"] * s["boost_clock_mhz"] * 1e6
        threads = s["num_sms"] * s["max_threads_per_sm"]
        print(f"{dev:28s} {op:13s} {len(v):6d} {gbps:7.0f} {gbps / s['mem_bw_gbps']:8.2f} "
              f"{gbps * 1e9 / sm_cycles:11.2f} {threads:17,.0f} {gbps * 1e3 / threads:16.2f} "
              f"{gbps * 1e9 / (sm_cycles * s['max_threads_per_sm']) * 1e3:23.2f}")


if __name__ == "__main__":
    main()
