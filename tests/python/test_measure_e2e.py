#!/usr/bin/env python3
"""scripts/measure-e2e.py's parts that need no GPU: --to-labels turns the committed H200 lines
into exactly the committed label files (a failed run and a prefill line make none), and
--compare-prefill sets each measured prefill beside `tilecast predict --mode prefill --hf-eager`
(the forecast column is predict's TTFT of Hugging Face's eager model, which the rows ran; the
error its signed difference), and --compare-training each BF16 training step beside `tilecast
predict --mode training --dtype bf16 --hf-eager` (its forward_ms, backward_ms and their sum). The BF16 suites run end to end on stand-in torch and transformers
modules (a clock that moves 1.5 ms a CUDA event, a model that records its calls): the tags,
fields and times they write, and a failed run that does not stop the rest; the fused suite's
lines, as labels, are what eval-models scores as fused inference."""
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
                        str(r["batch"]), "--seq", str(r["seq"]), "--hf-eager", "--format", "json"], capture_output=True,
                       text=True, check=True)
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
                            "--dtype", "bf16", "--batch", str(b), "--seq", str(s_), "--hf-eager", "--format", "json"],
                           capture_output=True, text=True, check=True)
        d = json.loads(q.stdout)
        assert cols[0] == f"llama-3.1-8b-train-{s_}-{b}" and int(cols[1]) == b * s_, cols
        for i, (m, f) in enumerate(((fw, d["forward_ms"]), (bw, d["backward_ms"]),
                                    (fw + bw, d["forward_ms"] + d["backward_ms"]))):
            assert abs(float(cols[2 + 3 * i]) - m) < 0.01 and abs(float(cols[3 + 3 * i]) - f) < 0.01, (i, cols, d)
            assert abs(float(cols[4 + 3 * i]) - 100 * (f - m) / m) < 0.1, (i, cols)
        errs.append(abs(100 * (d["forward_ms"] + d["backward_ms"] - fw - bw) / (fw + bw)))
    assert f"mean APE of forward + backward {sum(errs) / 2:.1f} % over 2 runs" in p.stdout, (p.stdout, errs)
FAKE_TORCH = """
__version__ = "0-stand-in"
bfloat16 = "bf16"
CALLS = []
class _Ctx:
    def __enter__(self): return self
    def __exit__(self, *a): return False
def device(name): return _Ctx()
def no_grad(): return _Ctx()
def compile(model):  # torch.compile: the stand-in model itself
    return model
class _T:
    def float(self): return self
    def mean(self): return self
    def backward(self): CALLS.append("backward")
    def __getitem__(self, k): return self
def randint(lo, hi, shape, device=None):
    if tuple(shape) == (2, 4096):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")
    CALLS.append(("ids", tuple(shape)))
    return _T()
class cuda:
    clock = [0.0]
    class Event:
        def __init__(self, enable_timing=False): self.t = None
        def record(self):
            cuda.clock[0] += 1.5
            self.t = cuda.clock[0]
        def elapsed_time(self, other): return other.t - self.t
    @staticmethod
    def synchronize(): pass
    @staticmethod
    def empty_cache(): pass
    @staticmethod
    def get_device_name(i): return "Stand-in GPU"
class backends:
    class cuda:
        class matmul:
            allow_tf32 = True
    class cudnn:
        allow_tf32 = True
        benchmark = False
"""
FAKE_TRANSFORMERS = """
import torch
__version__ = "0-stand-in"
class _Config:
    def __init__(self, **d): self.__dict__.update(d)
class AutoConfig:
    @staticmethod
    def for_model(model_type, **d): return _Config(model_type=model_type, **d)
class _Out:
    logits = torch._T()
class LlamaForCausalLM:
    @classmethod
    def _from_config(cls, config, attn_implementation=None):
        config._attn_implementation = attn_implementation
        torch.CALLS.append("built")
        return cls()
    def float(self): return self
    def to(self, dtype): return self
    def train(self):
        torch.CALLS.append("train")
        return self
    def eval(self):
        torch.CALLS.append("eval")
        return self
    def zero_grad(self, set_to_none=True): torch.CALLS.append("zero_grad")
    def __call__(self, input_ids=None): return _Out()
    def model(self, input_ids=None): return (torch._T(),)
    def lm_head(self, h): return h
def __getattr__(name):  # every other architecture
    return LlamaForCausalLM
"""
with tempfile.TemporaryDirectory() as tmp:
    for name, text in (("torch", FAKE_TORCH), ("transformers", FAKE_TRANSFORMERS)):
        os.makedirs(os.path.join(tmp, name))
        with open(os.path.join(tmp, name, "__init__.py"), "w") as f:
            f.write(text)
    env = dict(os.environ, PYTHONPATH=tmp)
    for suite, n, tag, field, ms in (("prefill", 7, "llama-3.1-8b-prefill-512-1", "latency_ms", 1.5),
                                     ("training-bf16", 6, "llama-3.1-8b-train-1024-1", "e2e_latency", 3.0)):
        out = os.path.join(tmp, suite + ".jsonl")
        p = subprocess.run([sys.executable, SCRIPT, "--suite", suite, "--out", out], capture_output=True, text=True,
                           env=env)
        assert p.returncode == 0, (suite, p.stdout, p.stderr)
        with open(out) as f:
            rows = [json.loads(l) for l in f]
        assert len(rows) == n and rows[0]["tag"] == tag and rows[0]["device"] == "Stand-in GPU", (suite, rows[0])
        ok = [r for r in rows if r["status"] == "ok"]
        assert all(r["dtype"] == "bf16" and r["attn_implementation"] == "sdpa" and r[field] == ms for r in ok), ok
        if suite == "prefill":
            assert len(ok) == 7, rows
        else:
            # Forward and backward each one event step (1.5 ms), the 2 x 4,096 run out of memory and
            # written as such, the runs after it measured.
            assert all(r["fw_latency"] == 1.5 and r["bwall_latency"] == 1.5 and len(r["bw_times"]) == 5 for r in ok), ok
            failed = [r for r in rows if r["status"] != "ok"]
            assert len(ok) == 5 and [r["tag"] for r in failed] == ["llama-3.1-8b-train-4096-2"], rows
            assert "OutOfMemory" in failed[0]["error"] or "out of memory" in failed[0]["error"], failed
            c = subprocess.run([sys.executable, SCRIPT, "--compare-training", out, "--tilecast", TC, "--gpu", "H200"],
                               capture_output=True, text=True)
            assert c.returncode == 0 and "over 5 runs" in c.stdout, (c.stdout, c.stderr)
    # NeuSight's suite: an inference and a training run (the forward, then the backward, one event step each).
    out = os.path.join(tmp, "neusight.jsonl")
    p = subprocess.run([sys.executable, SCRIPT, "--out", out, "--only", "bert_large-train-512-2,gpt2_large-inf-1024-4"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, (p.stdout, p.stderr)
    with open(out) as f:
        rows = {r["tag"]: r for r in map(json.loads, f)}
    assert sorted(rows) == ["bert_large-train-512-2", "gpt2_large-inf-1024-4"], rows
    t, i = rows["bert_large-train-512-2"], rows["gpt2_large-inf-1024-4"]
    assert (t["status"], t["fw_latency"], t["bwall_latency"], t["e2e_latency"], t["num_layer"]) == ("ok", 1.5, 1.5, 3.0, 24), t
    assert (i["status"], i["fw_latency"], i["bwall_latency"], i["e2e_latency"], i["num_layer"]) == ("ok", 1.5, 0.0, 1.5, 36), i
    # The fused suite: NeuSight's four fusion labels, the model in torch.compile, tags ending
    # -fusion; as labels (on a known GPU's name) eval-models scores them as fused inference.
    out = os.path.join(tmp, "fused.jsonl")
    p = subprocess.run([sys.executable, SCRIPT, "--suite", "fused", "--out", out], capture_output=True, text=True, env=env)
    assert p.returncode == 0, (p.stdout, p.stderr)
    with open(out) as f:
        rows = [json.loads(l) for l in f]
    assert [r["tag"] for r in rows] == ["bert_large-inf-512-8-fusion", "bert_large-inf-512-16-fusion",
                                        "gpt2_large-inf-1024-4-fusion", "gpt2_large-inf-1024-8-fusion"], rows
    assert all(r["status"] == "ok" and r["compiled"] == "torch.compile" and r["fw_latency"] == 1.5 and
               r["bwall_latency"] == 0.0 for r in rows), rows
    on_h200 = os.path.join(tmp, "fused-h200.jsonl")
    with open(on_h200, "w") as g:
        for r in rows:
            g.write(json.dumps(dict(r, device="NVIDIA H200", fw_latency=60.0, e2e_latency=60.0)) + "\n")
    labels = os.path.join(tmp, "fused-labels")
    subprocess.run([sys.executable, SCRIPT, "--to-labels", on_h200, labels], check=True, capture_output=True)
    assert sorted(os.listdir(os.path.join(labels, "NVIDIA_H200"))) == sorted(r["tag"] + ".json" for r in rows)
    q = subprocess.run([TC, "-q", "eval-models", "--labels", labels, "--format", "json"], capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    modes = [(g["mode"], g["option"], g["rows"]) for g in json.loads(q.stdout)["by_gpu_mode"]]
    assert modes == [("inf", "fusion", 4)], modes
print("ok: measure-e2e.py --to-labels, --compare-prefill and --compare-training; its four suites on stand-ins")
