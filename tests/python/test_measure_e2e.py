#!/usr/bin/env python3
"""scripts/measure-e2e.py's parts that need no GPU: --to-labels turns the committed H200 lines
into exactly the committed label files (a failed run and a prefill line make none), and
--compare-prefill sets each measured prefill beside `tilecast predict --mode prefill` (the
forecast column is predict's TTFT, the error its signed difference), and --compare-training
each BF16 training step beside `tilecast predict --mode training --dtype bf16` (its forward_ms,
backward_ms and their sum)."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "measure-e2e.py")
TC = os.path.join(sys.argv[1], "tilecast")
E2E = os.path.join(ROOT, "datasets", "measured", "h200-e2e")
PREFILL = os.path.join(ROOT, "datasets", "measured", "h200-prefill", "h200-prefill.jsonl")

with tempfile.TemporaryDirectory() as tmp:
    # The committed lines, plus a failed run and a prefill line: neither becomes a label.
    src = os.path.join(tmp, "lines.jsonl")
    with open(os.path.join(E2E, "h200-e2e.jsonl")) as f, open(src, "w") as g:
        g.write(f.read())
        g.write(json.dumps({"tag": "gpt3_27-inf-2048-16", "device": "NVIDIA H200", "status": "error",
                            "error": "OutOfMemoryError: CUDA out of memory"}) + "\n")
        g.write(json.dumps({"tag": "llama-3.1-8b-prefill-512-1", "device": "NVIDIA H200", "status": "ok",
                            "latency_ms": 31.9}) + "\n")
    out = os.path.join(tmp, "labels")
    p = subprocess.run([sys.executable, SCRIPT, "--to-labels", src, out], capture_output=True, text=True)
    assert p.returncode == 0 and "18 label files" in p.stdout, (p.returncode, p.stdout, p.stderr)
    made = sorted(os.listdir(os.path.join(out, "NVIDIA_H200")))
    committed = sorted(os.listdir(os.path.join(E2E, "labels", "NVIDIA_H200")))
    assert made == committed and len(made) == 18, (made, committed)
    for name in made:
        with open(os.path.join(out, "NVIDIA_H200", name)) as a, open(os.path.join(E2E, "labels", "NVIDIA_H200", name)) as b:
            assert json.load(a) == json.load(b), name
    # A training label is forward + backward; an inference label's backward is 0.
    with open(os.path.join(out, "NVIDIA_H200", "opt_13-train-2048-2.json")) as f:
        t = json.load(f)
    assert abs(t["e2e_latency"] - t["fw_latency"] - t["bwall_latency"]) < 1e-9 and t["bwall_latency"] > 0, t

p = subprocess.run([sys.executable, SCRIPT, "--compare-prefill", PREFILL, "--tilecast", TC, "--gpu", "H200"],
                   capture_output=True, text=True)
assert p.returncode == 0, (p.stdout, p.stderr)
lines = [l.split() for l in p.stdout.splitlines()[1:] if l.startswith("llama")]
with open(PREFILL) as f:
    rows = [json.loads(l) for l in f if l.strip()]
assert len(lines) == len(rows) == 7, p.stdout
for cols, r in zip(lines, rows):
    q = subprocess.run([TC, "predict", "--model", r["model"], "--gpu", "H200", "--mode", "prefill", "--batch",
                        str(r["batch"]), "--seq", str(r["seq"]), "--format", "json"], capture_output=True, text=True, check=True)
    ttft = json.loads(q.stdout)["ttft_ms"]
    assert cols[0] == r["tag"] and int(cols[1]) == r["batch"] * r["seq"], cols
    assert abs(float(cols[2]) - r["latency_ms"]) < 0.01 and abs(float(cols[3]) - ttft) < 0.01, (cols, ttft)
    assert abs(float(cols[4]) - 100 * (ttft - r["latency_ms"]) / r["latency_ms"]) < 0.1, cols
assert "mean APE" in p.stdout.splitlines()[-1], p.stdout
# Two hand-made training lines (invented times, the suite's fields) and a failed one, left out.
with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "train.jsonl")
    runs = [(1, 2048, 100.0, 250.0), (2, 2048, 180.0, 420.0)]
    with open(src, "w") as g:
        for b, s_, fw, bw in runs:
            g.write(json.dumps({"tag": f"llama-3.1-8b-train-{s_}-{b}", "model": "llama-3.1-8b", "batch": b, "seq": s_,
                                "dtype": "bf16", "device": "NVIDIA H200", "status": "ok", "fw_latency": fw,
                                "bwall_latency": bw, "e2e_latency": fw + bw}) + "\n")
        g.write(json.dumps({"tag": "llama-3.1-8b-train-4096-2", "status": "error", "error": "OutOfMemoryError"}) + "\n")
    p = subprocess.run([sys.executable, SCRIPT, "--compare-training", src, "--tilecast", TC], capture_output=True,
                       text=True)
    assert p.returncode == 0, (p.stdout, p.stderr)
    lines = [l.split() for l in p.stdout.splitlines()[1:] if l.startswith("llama")]
    assert len(lines) == 2, p.stdout
    errs = []
    for cols, (b, s_, fw, bw) in zip(lines, runs):
        q = subprocess.run([TC, "predict", "--model", "llama-3.1-8b", "--gpu", "NVIDIA H200", "--mode", "training",
                            "--dtype", "bf16", "--batch", str(b), "--seq", str(s_), "--format", "json"],
                           capture_output=True, text=True, check=True)
        d = json.loads(q.stdout)
        assert cols[0] == f"llama-3.1-8b-train-{s_}-{b}" and int(cols[1]) == b * s_, cols
        for i, (m, f) in enumerate(((fw, d["forward_ms"]), (bw, d["backward_ms"]),
                                    (fw + bw, d["forward_ms"] + d["backward_ms"]))):
            assert abs(float(cols[2 + 3 * i]) - m) < 0.01 and abs(float(cols[3 + 3 * i]) - f) < 0.01, (i, cols, d)
            assert abs(float(cols[4 + 3 * i]) - 100 * (f - m) / m) < 0.1, (i, cols)
        errs.append(abs(100 * (d["forward_ms"] + d["backward_ms"] - fw - bw) / (fw + bw)))
    assert f"mean APE of forward + backward {sum(errs) / 2:.1f} % over 2 runs" in p.stdout, (p.stdout, errs)
print("ok: measure-e2e.py --to-labels, --compare-prefill and --compare-training")
