#!/usr/bin/env python3
"""Breakdowns of measured rows that docs/accuracy.md and docs/collector.md quote.

  gemm ROWS_CSV [--l2-mib 60]
      From `tilecast eval-kernels --rows-csv ROWS_CSV` of GEMM rows (shape M,N,K: tokens, in, out
      features; a layer-op file's other ops are counted and left out): MAPE and bias (median forecast / measured) by tokens (<= 64, 65-1,024, more) and
      by whether the weights (N x K x bytes) fit the L2, and the measured TFLOP/s of the large
      shapes (more than 1,024 tokens, both widths >= 4,096).
  decode-rate CSV [--min-mb 200]
      From a `tilecast collect` generation_attention.csv: the KV cache's bytes each decode row
      reads once (keys and values at kv_heads), over its time, for the rows whose cache exceeds
      --min-mb: their count and median GB/s.
  signed JSON
      From `tilecast eval-models --format json`: the mean signed error (forecast / label - 1) of
      the single-GPU labels per GPU and mode.
  timings ROWS_CSV DATA_CSV [DATA_CSV ...] [--call-overhead-us 15]
      From `tilecast eval-kernels --rows-csv ROWS_CSV` over `tilecast collect` CSVs of NeuSight's
      FP32 families (DATA_CSV, with busy_ms and call_ms): per family and GPU busy time (< 10 us,
      10-100 us, 0.1-1 ms, >= 1 ms), the rows, the median host time per call (call_ms - busy_ms),
      the forecast against the call (MAPE, bias) and the in-model forecast (the forecast less
      --call-overhead-us, at least 2 us: the manifest's value, as `predict` takes it off each
      kernel) against the busy time.
  tokens ROWS_CSV
      From `tilecast eval-kernels --rows-csv ROWS_CSV`: per device and op, by the shape's first
      number (tokens for GEMMs, layer ops and MoE) in power-of-two bins (1, 2-3, 4-7, ...): the
      rows, their share of the device's rows of that op and the share below the bin's top,
      MAPE and bias.
  width-mod ROWS_CSV [--mod 4]
      From `tilecast eval-kernels --rows-csv ROWS_CSV`: per device and op, by the shape's last
      number (a vector op's row width H) modulo --mod: the rows, MAPE and bias (PyTorch's layer
      norm runs two kernels where H is not a multiple of 4).
  runs A B
      Two measurements of the same configs (two `tilecast collect` CSVs, matched by config_id, or
      two `scripts/measure-e2e.py` JSON-lines files, matched by tag): the rows both measured, the
      median and p90 of |B / A - 1| and the median B / A.
"""
import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict

BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "fp8_static": 1, "fp8_block": 1,
         "nvfp4": 0.5 + 1 / 16}  # NVFP4: 4 bits and an FP8 scale per 16 values


def summary(ratios):
    return (f"{len(ratios):3d} rows  MAPE {100 * statistics.mean(abs(r - 1) for r in ratios):5.1f} %  "
            f"bias {statistics.median(ratios):.2f}")


def gemm(path, l2_mib):
    by_tokens, by_l2, tflops, skipped = defaultdict(list), defaultdict(list), [], defaultdict(int)
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["op"] != "gemm":  # a layer-op file's other ops (vidur, LLMServingSim)
                skipped[r["op"]] += 1
                continue
            m, n, k = map(int, r["shape"].split(","))
            measured, forecast = float(r["measured_ms"]), float(r["predicted_ms"])
            ratio = forecast / measured
            tokens = "<= 64 tokens" if m <= 64 else "65-1,024 tokens" if m <= 1024 else "> 1,024 tokens"
            by_tokens[tokens].append(ratio)
            l2 = "weights in L2" if n * k * BYTES[r["dtype"]] <= l2_mib * 2**20 else "weights beyond L2"
            by_l2[f"{l2}, {'<= 64' if m <= 64 else '> 64'} tokens"].append(ratio)
            if m > 1024 and n >= 4096 and k >= 4096:
                tflops.append(2.0 * m * n * k / measured / 1e9)
    if skipped:
        print("left out (not gemm): " + ", ".join(f"{op} {n}" for op, n in sorted(skipped.items())))
    for name, groups in (("tokens", by_tokens), ("L2", by_l2)):
        print(f"by {name}:")
        for key in sorted(groups):
            print(f"  {key:32s} {summary(groups[key])}")
    if tflops:
        print(f"measured TFLOP/s, > 1,024 tokens and widths >= 4,096: {len(tflops)} rows, "
              f"{min(tflops):.0f} - {max(tflops):.0f}")


def decode_rate(path, min_mb):
    rates = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get("status", "ok") != "ok" or not r["latency"]:
                continue
            ctx = int(r["step"]) + 1
            cache = (int(r["batch_size"]) * ctx * int(r["num_key_value_heads"]) * int(r["head_dim"]) * 2 *
                     BYTES[r["kv_cache_dtype"]])
            if cache > min_mb * 1e6:
                rates.append(cache / float(r["latency"]) / 1e6)
    if not rates:
        sys.exit(f"{path}: no decode row with a cache above {min_mb} MB")
    print(f"{len(rates)} rows with caches above {min_mb} MB: median {statistics.median(rates):.0f} GB/s "
          f"({min(rates):.0f} - {max(rates):.0f})")


def signed(path):
    with open(path) as f:
        rows = json.load(f)["rows"]
    by = defaultdict(list)
    for r in rows:
        if r.get("option") in ("", None):
            by[(r["gpu"], r["mode"])].append(100.0 * (r["forecast_ms"] / r["label_ms"] - 1))
    for (gpu, mode), errs in sorted(by.items()):
        print(f"{gpu:20s} {mode:6s} {len(errs):3d} labels  mean signed error {statistics.mean(errs):+6.1f} %")


def measured(path):
    """config_id or tag -> latency (ms) of the rows measured ok."""
    out = {}
    with open(path) as f:
        if path.endswith(".jsonl"):
            for line in f:
                r = json.loads(line)
                if r.get("status") == "ok":
                    out[r["tag"]] = float(r["e2e_latency"] if "e2e_latency" in r else r["latency_ms"])
        else:
            for r in csv.DictReader(f):
                if r.get("status", "ok") == "ok":
                    out[r["config_id"]] = float(r["Latency"] if "Latency" in r else r["latency"])
    return out


def runs(path_a, path_b):
    a, b = measured(path_a), measured(path_b)
    keys = sorted(a.keys() & b.keys())
    if not keys:
        sys.exit(f"{path_a}, {path_b}: no config measured in both")
    ratios = sorted(b[k] / a[k] for k in keys)
    dev = sorted(abs(r - 1) for r in ratios)
    p90 = dev[min(len(dev) - 1, int(0.9 * (len(dev) - 1) + 0.5))]
    print(f"{len(keys)} rows in both: |B / A - 1| median {100 * statistics.median(dev):.1f} %, "
          f"p90 {100 * p90:.1f} %; median B / A {statistics.median(ratios):.3f}")


FP32_FAMILY = {"bmm": "bmm", "linear": "linear", "softmax": "softmax", "ln": "layernorm"}
BUSY_BUCKETS = [(0, 0.01, "< 10 us"), (0.01, 0.1, "10-100 us"), (0.1, 1, "0.1-1 ms"), (1, float("inf"), ">= 1 ms")]


def timings(rows_path, data_paths, call_overhead_us):
    forecast = {}
    with open(rows_path) as f:
        for r in csv.DictReader(f):
            forecast[(r["op"], r["shape"])] = float(r["predicted_ms"])
    groups = defaultdict(list)  # (family, bucket index) -> (host us, forecast / call, in-model / busy)
    for path in data_paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("status", "ok") != "ok":
                    continue
                dims = [r[c] for c in ("B", "M", "N", "K") if c in r] if "M" in r else [r["B"], r["H"]]
                key = (r["OPName"], ",".join(dims))
                if key not in forecast:
                    continue
                busy, call, f_ms = float(r["busy_ms"]), float(r["call_ms"]), forecast[key]
                in_model = max(f_ms - call_overhead_us / 1000, 0.002)
                bucket = next(i for i, (lo, hi, _) in enumerate(BUSY_BUCKETS) if lo <= busy < hi)
                groups[(FP32_FAMILY.get(r["OPName"], "elementwise"), bucket)].append(
                    (1000 * (call - busy), f_ms / call, in_model / busy))
    if not groups:
        sys.exit(f"{rows_path}: no row matches the data's (op, shape)")
    print(f"{'family':12s} {'busy':10s} {'rows':>5s} {'host us':>8s}   forecast / call   "
          f"in-model / busy (overhead {call_overhead_us:g} us)")
    for (family, b), v in sorted(groups.items()):
        host = statistics.median(h for h, _, _ in v)
        print(f"{family:12s} {BUSY_BUCKETS[b][2]:10s} {len(v):5d} {host:8.1f}   "
              f"{summary([c for _, c, _ in v])[10:]}   {summary([m for _, _, m in v])[10:]}")


def tokens(path):
    groups = defaultdict(lambda: defaultdict(list))  # (device, op) -> bin -> forecast / measured
    with open(path) as f:
        for r in csv.DictReader(f):
            first = int(r["shape"].split(",")[0])
            groups[(r["device"], r["op"])][1 << (first.bit_length() - 1)].append(
                float(r["predicted_ms"]) / float(r["measured_ms"]))
    for (device, op), bins in sorted(groups.items()):
        total, below = sum(len(v) for v in bins.values()), 0
        print(f"{device} / {op}:")
        for lo in sorted(bins):
            below += len(bins[lo])
            label = f"{lo}" if lo == 1 else f"{lo}-{2 * lo - 1}"
            print(f"  {label:>13s}  {100 * len(bins[lo]) / total:5.1f} % of rows, {100 * below / total:5.1f} % "
                  f"to here  {summary(bins[lo])}")


def width_mod(path, mod):
    groups = defaultdict(lambda: defaultdict(list))  # (device, op) -> H % mod -> forecast / measured
    with open(path) as f:
        for r in csv.DictReader(f):
            width = int(r["shape"].split(",")[-1])
            groups[(r["device"], r["op"])][width % mod].append(float(r["predicted_ms"]) / float(r["measured_ms"]))
    for (device, op), bins in sorted(groups.items()):
        print(f"{device} / {op}:")
        for rest in sorted(bins):
            print(f"  H % {mod} = {rest}  {summary(bins[rest])}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    g = sub.add_parser("gemm")
    g.add_argument("rows")
    g.add_argument("--l2-mib", type=float, default=60)
    d = sub.add_parser("decode-rate")
    d.add_argument("csv")
    d.add_argument("--min-mb", type=float, default=200)
    s = sub.add_parser("signed")
    s.add_argument("json")
    t = sub.add_parser("timings")
    t.add_argument("rows")
    t.add_argument("data", nargs="+")
    t.add_argument("--call-overhead-us", type=float, default=15)
    k = sub.add_parser("tokens")
    k.add_argument("rows")
    w = sub.add_parser("width-mod")
    w.add_argument("rows")
    w.add_argument("--mod", type=int, default=4)
    r = sub.add_parser("runs")
    r.add_argument("a")
    r.add_argument("b")
    a = p.parse_args()
    try:
        if a.what == "gemm":
            gemm(a.rows, a.l2_mib)
        elif a.what == "decode-rate":
            decode_rate(a.csv, a.min_mb)
        elif a.what == "timings":
            timings(a.rows, a.data, a.call_overhead_us)
        elif a.what == "tokens":
            tokens(a.rows)
        elif a.what == "width-mod":
            if a.mod < 1:
                raise ValueError(f"--mod {a.mod}: expected >= 1")
            width_mod(a.rows, a.mod)
        elif a.what == "runs":
            runs(a.a, a.b)
        else:
            signed(a.json)
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"measured-breakdown.py {a.what}: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
