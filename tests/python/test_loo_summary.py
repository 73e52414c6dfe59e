#!/usr/bin/env python3
"""scripts/loo-summary.py on hand-made run folders: means over runs and left-out GPUs, the
selection rule (mean lower, no fold worse by more than 5 points) both ways, a family the run
left as bundled (trained with the GPU) reported missing, the whole-model table of --models (with
the same die's SXM4 labels in the A100 fold), the per-op table of --per-op (another GPU's rows
not counted), and a bad folder refused with one line."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "loo-summary.py")
GPUS = ["Tesla P4", "Tesla P100-PCIE-16GB", "Tesla V100-PCIE-32GB", "Tesla T4", "NVIDIA A100-PCIE-40GB"]


def make_run(root, name, linear, bmm=None, bmm_trained_with_gpu=False):
    out = os.path.join(root, name)
    os.makedirs(out)
    for i, gpu in enumerate(GPUS):
        tag = gpu.replace(" ", "_")
        cells = {"linear": {"mape_pct": linear[i]}}
        if bmm is not None:
            cells["bmm"] = {"mape_pct": bmm[i]}
        with open(os.path.join(out, f"kernels-{tag}.json"), "w") as f:
            json.dump({"by_device_op": {gpu: cells}}, f)
        # Two inference labels of the left-out GPU (errors linear[i] and linear[i] + 2) and one
        # of another GPU, which its table must not count.
        labels = [{"device": tag, "mode": "inf", "option": "", "error_pct": linear[i] + d} for d in (0, 2)]
        labels.append({"device": "Other_GPU", "mode": "inf", "option": "", "error_pct": 999.0})
        if gpu == "NVIDIA A100-PCIE-40GB":  # a 4-GPU run on the same die's SXM board
            labels.append({"device": "NVIDIA_A100-SXM4-40GB", "mode": "train", "option": "tp4", "error_pct": linear[i] + 5})
        # Per-op rows: two layer-norm rows of the left-out GPU (APE 10 % and 30 %, i.e. linear[i] /
        # 10 + 10 and + 30 on a 1 ms label) and one of another GPU, which must not count.
        short = gpu.split(" ", 1)[1]
        per_op = [{"gpu": short, "kind": "layernorm", "label_ms": 1.0, "forecast_ms": 1.0 + (linear[i] / 10 + e) / 100}
                  for e in (10, 30)]
        per_op.append({"gpu": "Other", "kind": "layernorm", "label_ms": 1.0, "forecast_ms": 100.0})
        with open(os.path.join(out, f"models-{tag}.json"), "w") as f:
            json.dump({"rows": labels, "per_op": per_op}, f)
        w = os.path.join(out, "weights-without-" + tag)
        os.makedirs(w)
        others = [g for g in GPUS if g != gpu]
        with open(os.path.join(w, "manifest.yaml"), "w") as f:
            f.write("feature_schema_version: 7\nfamilies:\n")
            f.write("  bmm:\n    files: [bmm.pt]\n    training_gpus: [" + ", ".join(GPUS if bmm_trained_with_gpu else others) + "]\n")
            f.write("  linear:\n    files: [linear.pt]\n    training_gpus: [" + ", ".join(others) + "]\n")
    return out


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


with tempfile.TemporaryDirectory() as root:
    base = make_run(root, "base", [40, 20, 30, 10, 20], bmm=[10, 10, 10, 10, 10])
    base2 = make_run(root, "base2", [60, 20, 30, 10, 20], bmm=[10, 10, 10, 10, 10])
    better = make_run(root, "better", [20, 22, 33, 12, 21], bmm=[5, 5, 5, 5, 5], bmm_trained_with_gpu=True)
    worse_fold = make_run(root, "worse", [10, 10, 40, 5, 5])
    code, out, err = run("--family", "linear", "--family", "bmm", f"base={base},{base2}", f"better={better}",
                         f"worse={worse_fold}")
    check(code == 0, f"exit 0, got {code}: {err}")
    lines = out.splitlines()
    # Two runs of the baseline: P4 is their mean, with the range.
    check("| linear | P4 | 50.0 (40.0-60.0) | 20.0 | 10.0 |" in lines, "P4 row with the mean over two runs:\n" + out)
    # Baseline mean (50 + 20 + 30 + 10 + 20) / 5 = 26.0; better: 21.6, worst fold +3 (V100).
    check("| linear | mean | **26.0** | **21.6** | **14.0** |" in lines, "linear means:\n" + out)
    rule = [l for l in lines if l.startswith("| linear | rule vs base |")]
    check(len(rule) == 1 and "passes (mean -4.4, worst fold +3.0)" in rule[0], "better passes:\n" + out)
    # worse: mean 14.0 is lower, but its V100 fold is 10 points worse: the rule says no.
    check("fails (mean -12.0, worst fold +10.0)" in rule[0], "worse fails on its V100 fold:\n" + out)
    # bmm of "better" was trained with every GPU (a FAMILIES run): no leave-one-out figure.
    check("| bmm | P4 | 10.0 (10.0-10.0) | missing | missing |" in lines, "bmm missing where trained with the GPU:\n" + out)
    check("| bmm | mean | **10.0** | incomplete | incomplete |" in lines, "bmm incomplete:\n" + out)

    # --models: the left-out GPU's labels per mode, mean over its labels, then over runs.
    code, out, err = run("--family", "linear", "--models", f"base={base},{base2}", f"better={better}")
    check(code == 0, f"--models exit 0, got {code}: {err}")
    check("| P4 | inf | 51.0 (41.0-61.0) | 21.0 |" in out.splitlines(), "whole-model P4 row:\n" + out)
    check("999" not in out, "another GPU's label counted:\n" + out)
    # The A100 fold also shows the labels of the A100-SXM4-40GB (same die), under their board.
    check("| A100 | train tp4 (A100-SXM4-40GB) | 25.0 (25.0-25.0) | 26.0 |" in out.splitlines(),
          "same-die SXM4 row in the A100 fold:\n" + out)
    check(not any(l.startswith("| V100 | train tp4") for l in out.splitlines()), "SXM4 label in another fold:\n" + out)
    # Mean over the six cells: base runs (41+21+31+11+21+25)/6 = 25.00 and (61+...)/6 = 28.33;
    # better (21+23+34+13+22+26)/6 = 23.17.
    check("| all | mean of the cells | **26.67** (25.00 / 28.33) | **23.17** |" in out.splitlines(),
          "mean of the cells:\n" + out)

    # --per-op: the left-out GPU's per-op rows per kind. base P4: runs (4 + 10 + 4 + 30) / 2 = 24
    # and (6 + 10 + 6 + 30) / 2 = 26, mean 25.0; better P4 (2 + 10 + 2 + 30) / 2 = 22; the means
    # over the five GPUs: base (25 + 22 + 23 + 21 + 22) / 5 = 22.6, better (22 + 22.2 + 23.3 + 21.2
    # + 22.1) / 5 = 22.16.
    code, out, err = run("--family", "linear", "--per-op", f"base={base},{base2}", f"better={better}")
    check(code == 0, f"--per-op exit 0, got {code}: {err}")
    check("| layernorm | P4 | 25.0 (24.0-26.0) | 22.0 |" in out.splitlines(), "per-op P4 row:\n" + out)
    check("| layernorm | mean | **22.6** | **22.2** |" in out.splitlines(), "per-op means:\n" + out)
    check("9900" not in out and "3323" not in out, "another GPU's per-op row counted:\n" + out)

    code, out, err = run(f"base={os.path.join(root, 'nowhere')}")
    check(code != 0 and "no such run folder" in err and out == "", f"missing folder refused: {code} {err!r}")
    code, out, err = run("base")
    check(code != 0 and "expected NAME=OUT" in err, f"bad argument refused: {code} {err!r}")
print("loo-summary: all checks passed")
