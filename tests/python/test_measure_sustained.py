#!/usr/bin/env python3
"""scripts/measure-sustained.py's parts that need no GPU: nvidia-smi's samples read back (a line
it cannot read, such as [N/A], left out) and their medians inside a window, hand-worked; and
--compare on the committed H200 lines: each GEMM's forecasts are `tilecast predict-kernel`'s,
alone and with --sustained (slower on the H200, whose sheet rates its tensor peak at 1,830 of
its 1,980 MHz; the same on an A100, whose sheet rates it at the boost clock), the copy has none.
The other set's kernels map to predict-kernel's attention_prefill and linear. --clocks
summarises samples over a window and after each burst (hand-worked). The measuring half runs on
stand-in torch and nvidia-smi and, stopped by SIGTERM, keeps the kernel it finished. Too short
a --seconds is one error line."""
import importlib.util
import json
import os
import signal
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


def kernel_ms(op, shape, dtype, gpu, *extra):
    p = subprocess.run([TC, "predict-kernel", "--op", op, "--shape", shape, "--dtype", dtype, "--gpu", gpu,
                        "--format", "json"] + list(extra), capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["latency_ms"]


def compare(path, gpu=None):
    p = subprocess.run([sys.executable, SCRIPT, "--compare", path, "--tilecast", TC] + (["--gpu", gpu] if gpu else []),
                       capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout, p.stderr)
    return [l.split() for l in p.stdout.splitlines()[1:]]


with open(LINES) as f:
    rows = [json.loads(l) for l in f if l.strip()]
assert [r["op"] for r in rows] == ["gemm"] * 4 + ["copy"], rows
for gpu in (None, "A100-SXM4-80GB"):
    table = compare(LINES, gpu)
    assert len(table) == 5, table
    for cols, r in zip(table, rows):
        if r["op"] != "gemm":
            assert cols[0] == "copy/bf16:1024MiB" and len(cols) == 6, cols  # no forecast columns
            continue
        shape = f"{r['m']},{r['in']},{r['out']}"
        dev = gpu or r["device"]
        alone, sustained = kernel_ms("gemm", shape, "bf16", dev), kernel_ms("gemm", shape, "bf16", dev, "--sustained")
        assert cols[0] == "gemm/bf16:" + shape and abs(float(cols[1]) - r["burst_ms"]) < 1e-4, cols
        assert abs(float(cols[3]) - r["sustained_ms"] / r["burst_ms"]) < 1e-3, cols
        assert abs(float(cols[6]) - alone) < 1e-4 and abs(float(cols[7]) - alone / r["burst_ms"]) < 1e-3, cols
        assert abs(float(cols[8]) - sustained) < 1e-4, cols
        assert abs(float(cols[9]) - sustained / r["sustained_ms"]) < 1e-3, cols
        if gpu is None:  # the H200: the sheet's rated clock is below the boost clock
            assert sustained > alone * 1.01, (shape, alone, sustained)
        else:
            assert sustained == alone, (shape, alone, sustained)

# The other set's kernels (hand-made lines, invented times): attention as attention_prefill with
# as many KV heads as heads, FP32 GEMMs as NeuSight's linear (no --sustained effect: FP32 SIMT
# GEMMs are at the rated clock either way).
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "more.jsonl")
    common = {"device": "NVIDIA H200", "sm_mhz_burst": 1980, "sm_mhz_sustained": 1500, "power_w_burst": 150,
              "power_w_sustained": 690}
    with open(path, "w") as f:
        f.write(json.dumps(dict(common, op="sdpa", batch=1, heads=32, seq=8192, head_dim=128, dtype="bf16",
                                burst_ms=2.0, sustained_ms=2.5)) + "\n")
        f.write(json.dumps(dict(common, op="gemm", m=8192, **{"in": 4096}, out=4096, dtype="fp32",
                                burst_ms=6.0, sustained_ms=6.6)) + "\n")
    table = compare(path)
    assert [c[0] for c in table] == ["attention_prefill/bf16:1,8192,32,32,128", "linear/fp32:8192,4096,4096"], table
    a_alone = kernel_ms("attention_prefill", "1,8192,32,32,128", "bf16", "H200")
    a_sust = kernel_ms("attention_prefill", "1,8192,32,32,128", "bf16", "H200", "--sustained")
    l_ms = kernel_ms("linear", "8192,4096,4096", "fp32", "H200")
    assert abs(float(table[0][6]) - a_alone) < 1e-4 and abs(float(table[0][8]) - a_sust) < 1e-4, table[0]
    assert a_sust > a_alone, (a_alone, a_sust)
    assert abs(float(table[1][6]) - l_ms) < 1e-4 and abs(float(table[1][8]) - l_ms) < 1e-4, table[1]
    assert abs(float(table[1][9]) - l_ms / 6.6) < 1e-3, table[1]

# --clocks: a window's SM clock and power (this script's samples, and the e2e runs' layout with
# units and two more columns), and each kernel's clock after its burst; hand-worked.
with tempfile.TemporaryDirectory() as tmp:
    e2e_csv = os.path.join(tmp, "e2e.csv")
    with open(e2e_csv, "w") as f:
        f.write("timestamp, clocks.current.sm [MHz], clocks.current.memory [MHz], power.draw [W], utilization.gpu [%]\n")
        for sec, mhz, watts in ((37, 1980, 300.0), (38, 1500, 690.0), (39, 1650, 700.0), (40, 1440, 621.5), (41, 1980, 200.0)):
            f.write(f"2026/12/04 17:55:{sec}.163, {mhz} MHz, 3201 MHz, {watts:.2f} W, 100 %\n")
    p = subprocess.run([sys.executable, SCRIPT, "--clocks", e2e_csv, "--start", "2026/12/04 17:55:38",
                        "--end", "2026/12/04 17:55:41"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = [l.split() for l in p.stdout.splitlines()]
    assert out[0][:2] == ["SM", "MHz"] and [float(out[0][i]) for i in (3, 5, 7)] == [1440, 1500, 1650], out
    assert [float(out[1][i]) for i in (2, 4, 6)] == [621.5, 690.0, 700.0] and "(3 samples)" in p.stdout, out
    p = subprocess.run([sys.executable, SCRIPT, "--clocks", e2e_csv, "--start", "2026/12/05 00:00:00"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.strip().endswith("no sample between --start and --end"), p.stderr
    p = subprocess.run([sys.executable, SCRIPT, "--clocks", e2e_csv, "--start", "yesterday"], capture_output=True, text=True)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "yesterday" in p.stderr, p.stderr
    smi_csv, lines = os.path.join(tmp, "smi.csv"), os.path.join(tmp, "lines.jsonl")
    t1 = ms.parse_time("2026/12/04 18:00:01.000")  # the burst's end
    with open(smi_csv, "w") as f:
        for stamp, mhz in (("00.900", 1980), ("01.050", 1725), ("01.150", 1470), ("01.450", 1455), ("01.600", 1440)):
            f.write(f"2026/12/04 18:00:{stamp}, {mhz}, 690.0\n")
    with open(lines, "w") as f:
        f.write(json.dumps({"op": "gemm", "m": 64, "in": 128, "out": 256, "dtype": "bf16", "burst_window": [t1 - 0.05, t1]}) + "\n")
    p = subprocess.run([sys.executable, SCRIPT, "--clocks", smi_csv, "--lines", lines], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.split() == ["gemm/bf16:64,128,256", "SM", "MHz", "after", "the", "burst",
                                                      "(s:", "MHz):", "0.05:", "1725,", "0.15:", "1470,", "0.45:",
                                                      "1455"], p.stdout

# The measuring half on stand-ins (a torch whose kernels sleep, an nvidia-smi that prints a
# sample every 0.1 s): stopped by SIGTERM after its first kernel, the run still writes that
# kernel's line, clocks included, and nothing for the kernel it was in.
FAKE_TORCH = """
import time, types
__version__ = "stand-in"
bfloat16, float32 = "bf16", "fp32"
class T:
    def normal_(self): return self
    def copy_(self, o): time.sleep(0.0005)
    def __getitem__(self, i): return T()
def randn(*a, **k): return T()
def empty(*a, **k): return T()
def empty_like(x): return T()
def matmul(a, b, out=None): time.sleep(0.0005)
class Event:
    def __init__(self, enable_timing=False): pass
    def record(self): self.t = time.time()
    def elapsed_time(self, o): return (o.t - self.t) * 1e3
cuda = types.SimpleNamespace(get_device_name=lambda i: "Stand-in GPU", synchronize=lambda: None, Event=Event,
                             empty_cache=lambda: None)
backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=True)))
nn = types.SimpleNamespace(functional=types.SimpleNamespace(
    scaled_dot_product_attention=lambda q, k, v, is_causal=False: time.sleep(0.001)))
"""
FAKE_SMI = """#!/usr/bin/env python3
import datetime, sys, time
while True:
    print(datetime.datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3] + ", 1500, 690.00", flush=True)
    time.sleep(0.1)
"""
with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "torch"))
    with open(os.path.join(tmp, "torch", "__init__.py"), "w") as f:
        f.write(FAKE_TORCH)
    smi = os.path.join(tmp, "nvidia-smi")
    with open(smi, "w") as f:
        f.write(FAKE_SMI)
    os.chmod(smi, 0o755)
    env = dict(os.environ, PYTHONPATH=tmp, PATH=tmp + os.pathsep + os.environ["PATH"], PYTHONUNBUFFERED="1")
    out = os.path.join(tmp, "run.jsonl")
    proc = subprocess.Popen([sys.executable, SCRIPT, "--set", "attention-fp32", "--seconds", "4", "--out", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    printed = []
    for line in proc.stdout:
        printed.append(line)
        if "sustained" in line:  # the first kernel is done
            proc.send_signal(signal.SIGTERM)
            break
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, (printed, rest, err)
    with open(out) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    assert len(rows) == 1 and rows[0]["op"] == "sdpa" and rows[0]["device"] == "Stand-in GPU", rows
    r = rows[0]
    assert r["sm_mhz_sustained"] == 1500 and r["power_w_sustained"] == 690.0, r
    assert len(r["burst_times_ms"]) == 20 and r["sustained_ms"] > 0 and r["chunks"] > 10, r
    assert r["sustained_window"][1] - r["sustained_window"][0] == 3.0, r

p = subprocess.run([sys.executable, SCRIPT, "--seconds", "3", "--out", os.devnull], capture_output=True, text=True)
assert p.returncode == 1 and p.stderr.strip() == "--seconds: at least 4 (the last 3 s are the sustained window)", p.stderr
print("measure-sustained: ok")
