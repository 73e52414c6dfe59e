#!/usr/bin/env python3
"""A kernel's time in a short burst and after seconds of back-to-back calls, with the SM clock
and board power meanwhile, measured on this machine's GPU.

Kernel benchmarks (tilecast's collector, the llm-kernels files) time a few calls: the GPU is at
its boost clock. A training step or a long prefill keeps the tensor cores busy for seconds, and a
GPU at its board-power limit lowers its clock. This script times both for a set of kernels
(--set bf16: BF16 GEMMs of Llama-3.1-8B's sizes, x[M, in] @ w[in, out], and a memory-bound copy;
--set attention-fp32: causal SDPA prefills and FP32 GEMMs), sampling `nvidia-smi` (SM clock,
power) every 100 ms, and appends one JSON line per kernel:

  {"op": "gemm", "m": 8192, "in": 4096, "out": 28672, "burst_ms": ..., "sustained_ms": ...,
   "sm_mhz_burst": ..., "sm_mhz_sustained": ..., "power_w_sustained": ..., "device": ...}

burst: after 2 s idle, 3 warm-ups, then the median of 20 calls each timed alone with CUDA events.
sustained: calls back to back for 8 s in chunks of about 50 ms, each chunk timed with CUDA events;
the median per-call time of the chunks of the last 3 s. The clocks: the median of the samples
inside each window. The lines are written when the set ends or is interrupted (Ctrl-C, SIGTERM):
the clocks come from nvidia-smi's file, read once its sampling stops.

`--compare JSONL` sets each GEMM and attention kernel beside `tilecast predict-kernel` (alone
and --sustained). `--clocks CSV` summarises nvidia-smi samples (this script's, or `nvidia-smi
--query-gpu=timestamp,clocks.sm,...,power.draw,... --format=csv`): SM MHz and W over a window
(--start/--end, nvidia-smi's local timestamps), or with --lines JSONL each kernel's clock in the
first half second of its back-to-back calls.
Needs torch (a GPU machine's Python) to measure; the other modes need no GPU.
"""
import argparse
import datetime
import importlib.util
import json
import os
import statistics
import signal
import subprocess
import sys
import tempfile
import time

# The kernel sets (--set): ("gemm", dtype, M tokens, in features, out features); ("sdpa", dtype,
# batch, heads, sequence, head_dim): causal scaled_dot_product_attention; ("copy", dtype, bytes).
SETS = {
    # Llama-3.1-8B's BF16 GEMMs and a copy (the committed H200 run, session 51).
    "bf16": [
        ("gemm", "bf16", 8192, 4096, 28672),   # gate + up projection, 8,192 tokens
        ("gemm", "bf16", 8192, 14336, 4096),   # down projection
        ("gemm", "bf16", 4096, 4096, 4096),
        ("gemm", "bf16", 1024, 4096, 6144),    # QKV projection, 1,024 tokens
        ("copy", "bf16", 1 << 30),             # 1 GiB read + 1 GiB written
    ],
    # Prefill attention (32 heads of 128) and FP32 SIMT GEMMs (TF32 off, as NeuSight's models).
    "attention-fp32": [
        ("sdpa", "bf16", 1, 32, 8192, 128),
        ("sdpa", "bf16", 8, 32, 2048, 128),
        ("gemm", "fp32", 8192, 4096, 4096),
        ("gemm", "fp32", 4096, 1024, 4096),
    ],
}


def kernel_label(r):
    """A measured row's kernel as one token: <tilecast op>/<dtype>:<predict-kernel --shape>."""
    if r["op"] == "gemm":
        return f"{'gemm' if r['dtype'] != 'fp32' else 'linear'}/{r['dtype']}:{r['m']},{r['in']},{r['out']}"
    if r["op"] == "sdpa":
        return f"attention_prefill/{r['dtype']}:{r['batch']},{r['seq']},{r['heads']},{r['heads']},{r['head_dim']}"
    return f"copy/{r['dtype']}:{r['bytes'] >> 20}MiB"


def load_script(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"),
                                                  os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_time(text):
    """nvidia-smi's local timestamp ("2026/12/04 17:55:38.163"; seconds' fraction optional)."""
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.datetime.strptime(text.strip(), fmt).timestamp()
        except ValueError:
            pass
    raise ValueError(f"not a timestamp like 2026/12/04 17:55:38: {text!r}")


def read_samples(path):
    """nvidia-smi's CSV lines -> [(unix time, SM MHz, W)]: this script's (timestamp, SM, power;
    no units) or the e2e runs' (timestamp, SM, memory clock, power, utilisation; with units).
    A line it cannot read (a header, [N/A]) is left out."""
    out = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) not in (3, 5):
                continue
            try:
                t = parse_time(parts[0])
                sm, watts = (float(parts[i].split()[0]) for i in ((1, 2) if len(parts) == 3 else (1, 3)))
                out.append((t, sm, watts))
            except (ValueError, IndexError):
                continue
    return out


def window(samples, t0, t1, i):
    vals = [s[i] for s in samples if t0 <= s[0] <= t1]
    return statistics.median(vals) if vals else None


def measure(args):
    import torch

    e2e = load_script("measure-e2e")
    dev = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__}, {dev}", flush=True)
    smi_path = os.path.join(tempfile.mkdtemp(), "smi.csv")
    smi_file = open(smi_path, "w")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "100"], stdout=smi_file, stderr=subprocess.DEVNULL)
    rows = []

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)  # `timeout` ends a run: keep what it measured
    try:
        torch.backends.cuda.matmul.allow_tf32 = False  # FP32 GEMMs on the FP32 lanes
        for kern in SETS[args.set]:
            dt = {"bf16": torch.bfloat16, "fp32": torch.float32}[kern[1]]
            if kern[0] == "gemm":
                _, dtype, m, k_in, n_out = kern
                x = torch.randn(m, k_in, device="cuda", dtype=dt)
                w = torch.randn(k_in, n_out, device="cuda", dtype=dt)
                y = torch.empty(m, n_out, device="cuda", dtype=dt)

                def fn():
                    torch.matmul(x, w, out=y)
                row = {"op": "gemm", "m": m, "in": k_in, "out": n_out, "dtype": dtype}
                work = 2.0 * m * k_in * n_out  # FLOP
            elif kern[0] == "sdpa":
                _, dtype, b, h, sq, d = kern
                x = torch.randn(3, b, h, sq, d, device="cuda", dtype=dt)
                y = None

                def fn():
                    torch.nn.functional.scaled_dot_product_attention(x[0], x[1], x[2], is_causal=True)
                row = {"op": "sdpa", "batch": b, "heads": h, "seq": sq, "head_dim": d, "dtype": dtype}
                work = 4.0 * b * h * d * sq * (sq + 1) / 2  # FLOP, causal
            else:
                _, dtype, nbytes = kern
                x = torch.empty(nbytes // 2, device="cuda", dtype=dt).normal_()
                y = torch.empty_like(x)

                def fn():
                    y.copy_(x)
                row = {"op": "copy", "bytes": nbytes, "dtype": dtype}
                work = 2.0 * nbytes  # bytes moved
            torch.cuda.synchronize()
            time.sleep(2.0)
            t0 = time.time()
            burst, times = e2e.measure(torch, fn, warmup=3, repeats=20)  # each call timed alone
            t1 = time.time()
            per_chunk = max(1, int(50.0 / max(burst, 1e-3)))
            chunks = []
            start = time.time()
            while time.time() - start < args.seconds:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(per_chunk):
                    fn()
                b.record()
                torch.cuda.synchronize()
                chunks.append((time.time(), a.elapsed_time(b) / per_chunk))
            end = time.time()
            tail = [ms for t, ms in chunks if t >= end - 3.0]
            row.update({"burst_ms": burst, "burst_times_ms": times, "sustained_ms": statistics.median(tail),
                        "chunks": len(chunks), "calls_per_chunk": per_chunk,
                        "burst_window": [t0, t1], "sustained_window": [end - 3.0, end],
                        "device": dev, "torch": torch.__version__})
            unit = 1e-6 if row["op"] == "copy" else 1e-9  # GB/s or TFLOP/s from bytes or FLOP per ms
            row["burst_rate"] = work / burst * unit
            row["sustained_rate"] = work / row["sustained_ms"] * unit
            row["rate_unit"] = "gbps" if row["op"] == "copy" else "tflops"
            rows.append(row)
            print(f"{row['op']} {kern[1:]}: burst {burst:.4f} ms, sustained {row['sustained_ms']:.4f} ms "
                  f"({row['sustained_ms'] / burst:.3f}x)", flush=True)
            del x, y
            torch.cuda.empty_cache()
    finally:
        time.sleep(0.3)
        smi.terminate()
        smi.wait()
        smi_file.close()
        write_rows(args, rows, smi_path)


def write_rows(args, rows, smi_path):
    """Appends the measured rows, with their windows' clocks and power, to --out (and keeps the
    samples in --samples)."""
    samples = read_samples(smi_path)
    with open(args.out, "a") as out:
        for row in rows:
            b0, b1 = row["burst_window"]
            s0, s1 = row["sustained_window"]
            row["sm_mhz_burst"] = window(samples, b0 - 0.1, b1 + 0.1, 1)
            row["power_w_burst"] = window(samples, b0 - 0.1, b1 + 0.1, 2)
            row["sm_mhz_sustained"] = window(samples, s0, s1, 1)
            row["power_w_sustained"] = window(samples, s0, s1, 2)
            out.write(json.dumps(row) + "\n")
            print(f"{row['op']}: SM {row['sm_mhz_burst']} -> {row['sm_mhz_sustained']} MHz, "
                  f"{row['power_w_burst']} -> {row['power_w_sustained']} W", flush=True)
    if args.samples:
        with open(smi_path) as src, open(args.samples, "w") as dst:
            dst.write(src.read())


def forecast_rows(src, tilecast, gpu=None):
    """Each measured kernel of a JSON-lines file that tilecast forecasts (GEMMs, attention; not
    the copy) beside `tilecast predict-kernel` on GPU (default: the row's device, by its CUDA
    name): kernel (kernel_label), burst_ms, sustained_ms, forecast_ms (a kernel alone),
    sustained_forecast_ms (--sustained), the sustained clock and power; exits naming the command
    if tilecast fails."""
    with open(src) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    out = []
    for r in rows:
        if r.get("op") not in ("gemm", "sdpa"):
            continue
        label = kernel_label(r)
        op, shape = label.split(":")[0].split("/")[0], label.split(":")[1]
        fc = []
        for extra in ([], ["--sustained"]):
            cmd = [tilecast, "predict-kernel", "--op", op, "--shape", shape, "--dtype", r["dtype"], "--gpu",
                   gpu or r["device"], "--format", "json"] + extra
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"{' '.join(cmd)}: {res.stderr.strip()}")
            fc.append(json.loads(res.stdout)["latency_ms"])
        out.append({"kernel": label, "burst_ms": r["burst_ms"], "sustained_ms": r["sustained_ms"], "forecast_ms": fc[0],
                    "sustained_forecast_ms": fc[1], "sm_mhz_sustained": r.get("sm_mhz_sustained"),
                    "power_w_sustained": r.get("power_w_sustained")})
    return out


def compare(args):
    """forecast_rows as a table: the forecast of a kernel alone over the burst time, the
    --sustained forecast over the sustained time; the copy's burst and sustained times."""
    print(f"{'kernel':>40s} {'burst_ms':>9s} {'sust_ms':>9s} {'sust/burst':>10s} {'MHz':>11s} {'W':>9s} "
          f"{'fc_ms':>9s} {'fc/burst':>8s} {'fc_sust_ms':>10s} {'fc_sust/sust':>12s}")
    with open(args.compare) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    forecasts = {g["kernel"]: g for g in forecast_rows(args.compare, args.tilecast, args.gpu)}
    for r in rows:
        label = kernel_label(r)
        fc = ""
        if label in forecasts:
            g = forecasts[label]
            fc = (f"{g['forecast_ms']:9.4f} {g['forecast_ms'] / r['burst_ms']:8.3f} "
                  f"{g['sustained_forecast_ms']:10.4f} {g['sustained_forecast_ms'] / r['sustained_ms']:12.3f}")
        mhz = f"{r['sm_mhz_burst'] or 0:.0f}->{r['sm_mhz_sustained'] or 0:.0f}"
        watts = f"{r['power_w_burst'] or 0:.0f}->{r['power_w_sustained'] or 0:.0f}"
        print(f"{label:>40s} {r['burst_ms']:9.4f} {r['sustained_ms']:9.4f} {r['sustained_ms'] / r['burst_ms']:10.3f} "
              f"{mhz:>11s} {watts:>9s} {fc}")


def clocks(args):
    """--clocks: the samples' SM MHz and W over --start..--end, or each kernel's clock in the
    first 0.5 s after its burst (--lines: its back-to-back calls begin as the burst ends)."""
    samples = read_samples(args.clocks)
    if not samples:
        sys.exit(f"--clocks {args.clocks}: no nvidia-smi samples in it")
    if args.lines:
        with open(args.lines) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        for r in rows:
            t1 = r["burst_window"][1]
            onset = [(round(t - t1, 2), int(sm)) for t, sm, _ in samples if t1 <= t <= t1 + 0.5]
            print(f"{kernel_label(r):>40s} SM MHz after the burst (s: MHz): "
                  + ", ".join(f"{dt}: {sm}" for dt, sm in onset))
        return
    t0 = parse_time(args.start) if args.start else float("-inf")
    t1 = parse_time(args.end) if args.end else float("inf")
    inside = [s for s in samples if t0 <= s[0] <= t1]
    if not inside:
        sys.exit(f"--clocks {args.clocks}: no sample between --start and --end")
    for name, i in (("SM MHz", 1), ("W", 2)):
        vals = [s[i] for s in inside]
        print(f"{name:7s} min {min(vals):8.1f}  median {statistics.median(vals):8.1f}  max {max(vals):8.1f}"
              f"  ({len(vals)} samples)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="sustained.jsonl", help="JSON-lines file to append to")
    p.add_argument("--seconds", type=float, default=8.0, help="back-to-back seconds per kernel")
    p.add_argument("--set", choices=sorted(SETS), default="bf16", help="the kernels to time (SETS)")
    p.add_argument("--samples", help="also keep nvidia-smi's samples (CSV) here")
    p.add_argument("--compare", metavar="JSONL", help="set measured kernels beside tilecast's forecasts")
    p.add_argument("--tilecast", default=os.path.join(os.path.dirname(__file__), "..", "build", "tilecast"))
    p.add_argument("--gpu", help="the GPU to forecast (--compare; default: each row's device)")
    p.add_argument("--clocks", metavar="CSV", help="summarise nvidia-smi samples")
    p.add_argument("--start", help="--clocks: first timestamp (e.g. '2026/12/04 17:55:38')")
    p.add_argument("--end", help="--clocks: last timestamp")
    p.add_argument("--lines", metavar="JSONL", help="--clocks: each kernel's clock after its burst")
    args = p.parse_args()
    if args.clocks:
        try:
            clocks(args)
        except (OSError, ValueError) as e:
            sys.exit(f"--clocks: {e}")
    elif args.compare:
        compare(args)
    else:
        if args.seconds < 4:
            sys.exit("--seconds: at least 4 (the last 3 s are the sustained window)")
        measure(args)


if __name__ == "__main__":
    main()
