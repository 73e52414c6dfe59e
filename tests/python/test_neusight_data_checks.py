#!/usr/bin/env python3
"""scripts/neusight-data-checks.py --backward on a hand-made NeuSight folder: the GEMM nodes are
the ones the parsed graph names Linear or BMM (not the vector ops, whatever their times), the
ratio is (bw + acc) / fw per node with its median and range per GPU and kind, inference labels
are not read, and a folder without training labels is refused with one line."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "neusight-data-checks.py")


def write(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")


def make(root):
    # Parsed graph: two Linear nodes, one BMM, one vector op.
    write(os.path.join(root, "opgraphs", "m-train-128-1.csv"), ["Name", "OpName"],
          [["addmm", "Linear"], ["lm_head", "Linear"], ["matmul", "BMM"], ["softmax", "VECsoftmax"]])
    # Labels (fw, bw, acc in ms): Linear 1.0 -> (1.8 + 0.2) = 2.0 and 2.0 -> (2.5 + 0.5) = 1.5;
    # BMM 1.0 -> 3.0; the softmax's 10x must not be counted.
    hdr = ["op", "target", "Name", "latency", "fw_latency", "bw_latency", "acc_latency"]
    write(os.path.join(root, "labels", "GPU_A", "m-train-128-1.csv"), hdr,
          [["call_function", "addmm", "addmm", 4.0, 1.0, 1.8, 0.2],
           ["call_module", "lm_head", "lm_head", 5.0, 2.0, 2.5, 0.5],
           ["call_function", "matmul", "matmul", 4.0, 1.0, 3.0, 0],
           ["call_function", "softmax", "softmax", 11.0, 1.0, 10.0, 0]])
    # An inference label (no backward) of the same graph name scheme is ignored.
    write(os.path.join(root, "opgraphs", "m-inf-128-1.csv"), ["Name", "OpName"], [["addmm", "Linear"]])
    write(os.path.join(root, "labels", "GPU_A", "m-inf-128-1.csv"), hdr,
          [["call_function", "addmm", "addmm", 1.0, 1.0, 0, 0]])


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as root:
        make(root)
        r = run("--neusight-dir", root, "--backward")
        assert r.returncode == 0, r.stderr
        lines = [l for l in r.stdout.splitlines() if l.startswith("| GPU_A")]
        assert lines == ["| GPU_A | BMM | 1 | 3.00 | 3.00 | 3.00 |",
                         "| GPU_A | Linear | 2 | 1.75 | 1.50 | 2.00 |"], r.stdout
        empty = os.path.join(root, "empty")
        os.makedirs(empty)
        r = run("--neusight-dir", empty, "--backward")
        assert r.returncode != 0 and r.stdout == "", (r.returncode, r.stdout)
        assert len(r.stderr.strip().splitlines()) == 1 and "no training labels" in r.stderr, r.stderr
    print("ok")


if __name__ == "__main__":
    main()
