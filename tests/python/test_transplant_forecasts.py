#!/usr/bin/env python3
"""scripts/transplant-forecasts.py on hand-made B200 GEMM rows: each target's ratios are the
forecasts `tilecast predict-kernel` gives for those shapes on that GPU over the latencies
written here (a second command path, not eval-kernels); an NVFP4 row counts on the GB200 (an
FP4 sheet) and is left out on the H100 (none); --pair prints the rows compared; an unknown
sheet name or a malformed pair is one error line and a non-zero exit.

  test_transplant_forecasts.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "transplant-forecasts.py")
TILECAST = os.path.join(sys.argv[1], "tilecast")
HEADER = "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n"
# (dtype, m, n = out-features, k = in-features, latency ms), as aiconfigurator writes them.
ROWS = [("bfloat16", 16, 4096, 4096, 0.020), ("bfloat16", 4096, 4096, 4096, 0.100),
        ("bfloat16", 1024, 14336, 4096, 0.090), ("nvfp4", 64, 8192, 8192, 0.015)]


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, "--tilecast", TILECAST, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def forecast_ms(dtype, m, n, k, gpu):
    """predict-kernel's forecast of one row (tilecast's shape: M, in-features, out-features)."""
    name = {"bfloat16": "bf16", "nvfp4": "nvfp4"}[dtype]
    out = subprocess.run([TILECAST, "predict-kernel", "--op", "gemm", "--shape", f"{m},{k},{n}", "--dtype", name,
                          "--gpu", gpu, "--format", "json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["latency_ms"]


def expected(gpu, rows):
    """The script's line for `rows` on `gpu`: its percentiles by hand (index int(p / 100 x n))."""
    r = sorted(forecast_ms(d, m, n, k, gpu) / lat for d, m, n, k, lat in rows)
    at = lambda p: r[min(len(r) - 1, int(p / 100 * len(r)))]
    return f"gemm,B200,{gpu},{len(r)},{at(5):.2f},{at(50):.2f},{at(95):.2f}"


with tempfile.TemporaryDirectory() as tmp:
    folder = os.path.join(tmp, "aiconfigurator", "B200")
    os.makedirs(folder)
    with open(os.path.join(folder, "gemm_perf.csv"), "w") as f:
        f.write(HEADER + "".join(f"SGLang,0.5,NVIDIA B200,gemm,sglang,{d},{m},{n},{k},{lat}\n" for d, m, n, k, lat in ROWS))
    rc, out, err = run("--llm-dir", tmp, "--targets", "GB200,H100-SXM", "--pair", "H200:H100-SXM", "--families", "gemm")
    assert rc == 0, (rc, err)
    lines = out.splitlines()
    assert lines[0] == "family,source,target,rows,forecast_over_source_p5,p50,p95", out
    bf16 = [r for r in ROWS if r[0] != "nvfp4"]
    assert lines[1:4] == [expected("GB200", ROWS), expected("H100-SXM", bf16), expected("H200", bf16)], out
    pair = out.split("family,source,a,b,rows,a_slower_by_over_2pct,max_a_over_b\n")[1].splitlines()
    assert len(pair) == 1 and pair[0].startswith("gemm,B200,H200,H100-SXM,3,"), out

    for args, word in ((("--targets", "H999"), "H999"), (("--pair", "H200"), "H200"), (("--rows", "0"), "--rows")):
        rc, out, err = run("--llm-dir", tmp, "--families", "gemm", *args)
        assert rc != 0 and word in err and len(err.strip().splitlines()) == 1, (args, rc, err)
print("ok")
