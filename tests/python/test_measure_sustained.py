#!/usr/bin/env python3
"""scripts/measure-sustained.py's parts that need no GPU: nvidia-smi's samples read back (a line
it cannot read, such as [N/A], left out) and their medians inside a window, hand-worked; and
--compare on the committed H200 lines: each GEMM's forecasts are `tilecast predict-kernel`'s,
alone and with --sustained (slower on the H200, whose sheet rates its tensor peak at 1,830 of
its 1,980 MHz; the same on an A100, whose sheet rates it at the boost clock), the copy has none.
Too short a --seconds is one error line."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "measure-sustained.py")
TC = os.path.join(sys.argv[1], "tilecast")
LINES = os.path.join(ROOT, "datasets", "measured", "h200-fourth-run", "sustained.jsonl")

spec = importlib.util.spec_from_file_location("measure_sustained", SCRIPT)
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "smi.csv")
    with open(path, "w") as f:
        f.write("timestamp, clocks.current.sm [MHz], power.draw [W]\n")  # a header: not a sample
        f.write("2026/12/04 18:00:00.000, 1980, 120.5\n")
        f.write("2026/12/04 18:00:00.100, [N/A], 130.0\n")
        f.write("2026/12/04 18:00:00.200, 1500, 690.0\n")
        f.write("2026/12/04 18:00:00.300, 1400, 700.0\n")
        f.write("2026/12/04 18:00:00.400, 1450, 680.0\n")
    s = ms.read_samples(path)
    assert [x[1] for x in s] == [1980, 1500, 1400, 1450] and [x[2] for x in s] == [120.5, 690.0, 700.0, 680.0], s
    assert abs(s[1][0] - s[0][0] - 0.2) < 1e-6, s
    t0 = s[0][0]
    assert ms.window(s, t0 + 0.15, t0 + 0.45, 1) == 1450  # median of 1500, 1400, 1450
    assert ms.window(s, t0 + 0.15, t0 + 0.35, 2) == 695.0  # median of 690 and 700
    assert ms.window(s, t0 + 1, t0 + 2, 1) is None


def kernel_ms(shape, gpu, *extra):
    p = subprocess.run([TC, "predict-kernel", "--op", "gemm", "--shape", shape, "--dtype", "bf16", "--gpu", gpu,
                        "--format", "json"] + list(extra), capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["latency_ms"]


with open(LINES) as f:
    rows = [json.loads(l) for l in f if l.strip()]
gemms = [r for r in rows if r["op"] == "gemm"]
assert len(gemms) == 4 and len(rows) == 5, rows
for gpu in (None, "A100-SXM4-80GB"):
    p = subprocess.run([sys.executable, SCRIPT, "--compare", LINES, "--tilecast", TC] + (["--gpu", gpu] if gpu else []),
                       capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout, p.stderr)
    table = [l.split() for l in p.stdout.splitlines()[1:]]
    assert len(table) == 5, p.stdout
    for cols, r in zip(table, rows):
        if r["op"] != "gemm":
            assert cols[:2] == ["copy", "1024"] and len(cols) == 8, cols  # no forecast columns
            continue
        shape = f"{r['m']},{r['in']},{r['out']}"
        alone, sustained = kernel_ms(shape, gpu or r["device"]), kernel_ms(shape, gpu or r["device"], "--sustained")
        assert cols[0] == shape and abs(float(cols[1]) - r["burst_ms"]) < 1e-4, cols
        assert abs(float(cols[3]) - r["sustained_ms"] / r["burst_ms"]) < 1e-3, cols
        assert abs(float(cols[6]) - alone) < 1e-4 and abs(float(cols[7]) - alone / r["burst_ms"]) < 1e-3, cols
        assert abs(float(cols[8]) - sustained) < 1e-4, cols
        assert abs(float(cols[9]) - sustained / r["sustained_ms"]) < 1e-3, cols
        if gpu is None:  # the H200: the sheet's rated clock is below the boost clock
            assert sustained > alone * 1.01, (shape, alone, sustained)
        else:
            assert sustained == alone, (shape, alone, sustained)

p = subprocess.run([sys.executable, SCRIPT, "--seconds", "3", "--out", os.devnull], capture_output=True, text=True)
assert p.returncode == 1 and p.stderr.strip() == "--seconds: at least 4 (the last 3 s are the sustained window)", p.stderr
print("measure-sustained: ok")
