#!/usr/bin/env python3
"""scripts/memop-rates.py on a hand-made eval-kernels rows CSV: the median achieved rate per GPU
and op over the rows of --min-tokens or more, its share of DRAM and the rates per SM-cycle and
per resident thread, each hand-derived from the A100-SXM4-80GB and A40 sheets; rows of other ops
and smaller token counts left out; a device without a sheet and a missing file refused with one
line."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "memop-rates.py")
HEADER = "device,op,shape,dtype,measured_ms,predicted_ms,roofline_ms,prior_ms\n"


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        rows = os.path.join(d, "rows.csv")
        with open(rows, "w") as f:
            f.write(HEADER)
            # A100-SXM4-80GB (2,039 GB/s): roofline / measured 0.25, 0.5 (median), 0.75 -> 1,019.5 GB/s.
            for frac in (0.25, 0.5, 0.75):
                f.write(f'NVIDIA A100-SXM4-80GB,rmsnorm,"4096,4096",fp16,1.0,1.1,{frac},\n')
            # Too few tokens, and a GEMM row: both left out.
            f.write('NVIDIA A100-SXM4-80GB,rmsnorm,"16,4096",fp16,1.0,1.1,0.01,\n')
            f.write('NVIDIA A100-SXM4-80GB,gemm,"4096,4096,4096",fp16,1.0,1.1,0.9,\n')
            # A40 (696 GB/s): 0.5 of it, 348 GB/s.
            f.write('NVIDIA A40,silu_mul,"2048,14336",fp16,2.0,2.0,1.0,\n')
        r = run("--rows-csv", rows)
        assert r.returncode == 0, r.stderr
        lines = {tuple(l.split()[:3]): l.split() for l in r.stdout.splitlines() if l.startswith("NVIDIA")}
        a100 = lines[("NVIDIA", "A100-SXM4-80GB", "rmsnorm")]
        # rows, GB/s, of DRAM, B/SM-cycle (1,019.5e9 / (108 x 1,410e6) = 6.6949), threads
        # (108 x 2,048 = 221,184), MB/s per thread (1,019.5e3 / 221,184 = 4.609), B per 1,000
        # thread-cycles (6.6949 / 2,048 x 1,000 = 3.269).
        assert a100[3:] == ["3", "1020", "0.50", "6.69", "221,184", "4.61", "3.27"], a100
        a40 = lines[("NVIDIA", "A40", "silu_mul")]
        # 348 GB/s; 348e9 / (84 x 1,740e6) = 2.381 B/SM-cycle; 84 x 1,536 = 129,024 threads.
        assert a40[3:] == ["1", "348", "0.50", "2.38", "129,024", "2.70", "1.55"], a40
        assert not any(k[2] == "gemm" for k in lines)
        r = run("--rows-csv", rows, "--min-tokens", "8192")
        assert r.returncode != 0 and "no memory-op rows" in r.stderr, r
        bad = os.path.join(d, "bad.csv")
        with open(bad, "w") as f:
            f.write(HEADER + 'NVIDIA Imaginary GPU,rmsnorm,"4096,4096",fp16,1.0,1.1,0.5,\n')
        r = run("--rows-csv", bad)
        assert r.returncode != 0 and "Imaginary GPU" in r.stderr and "has no sheet" in r.stderr, r
        r = run("--rows-csv", os.path.join(d, "missing.csv"))
        assert r.returncode != 0 and "missing.csv" in r.stderr and "Traceback" not in r.stderr, r
    print("ok")


if __name__ == "__main__":
    main()
