#!/usr/bin/env python3
"""scripts/llm-loo-table.py on a hand-made run folder: one row per family, left-out GPU and
dtype (memory_op per op; a GEMM fold's vidur rows of memory ops are not GEMM cells), the mean
of each family's plausible-row MAPEs, and a folder without reports or a malformed report
refused with one line."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "llm-loo-table.py")


def cell(mape, plausible=None, rows=10):
    return {"rows": rows, "mape_pct": mape, "p90_ape_pct": 2 * mape, "implausible_rows": 0 if plausible is None else 3,
            "plausible_mape_pct": mape if plausible is None else plausible, "bias_median": 0.9,
            "roofline_mape_pct": 50.0}


def write(path, by):
    with open(path, "w") as f:
        json.dump({"by_op_dtype": by}, f)


def run(arg):
    p = subprocess.run([sys.executable, SCRIPT, arg], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    with tempfile.TemporaryDirectory() as d:
        write(os.path.join(d, "gemm-eval-L40S.json"), {"gemm/bf16": cell(30.0), "gemm/fp8": cell(50.0)})
        # The A100 fold's files include vidur's memory ops: not GEMM cells.
        write(os.path.join(d, "gemm-eval-A100-SXM4-80GB.json"), {"gemm/fp16": cell(10.0), "rmsnorm/fp16": cell(99.0)})
        write(os.path.join(d, "generation_attention-eval-L40S.json"),
              {"generation_attention/bf16": cell(400.0, plausible=40.0, rows=1234)})
        write(os.path.join(d, "memory_op-eval-GeForce_RTX_4090.json"), {"rmsnorm/bf16": cell(70.0), "gemm/bf16": cell(5.0)})
        with open(os.path.join(d, "gemm-train-without-L40S.csv"), "w") as f:
            f.write("not a report\n")
        rc, out, err = run(d)
        assert rc == 0, err
        lines = out.splitlines()
        gemm = [l for l in lines if l.startswith("| gemm |") and l.count("|") == 12]  # the per-cell table
        assert len(gemm) == 3, out
        assert "| gemm | A100-SXM4-80GB | gemm/fp16 | 10 | 10.0 % | 20.0 % | 0 | 10.0 % | 0.90 | 50.0 % |  |" in lines, out
        assert not any("rmsnorm/fp16" in l for l in lines), out
        assert "| generation_attention | L40S | generation_attention/bf16 | 1,234 | 400.0 % | 800.0 % | 3 | 40.0 % |" \
            in out, out
        assert "| memory_op | GeForce RTX 4090 | rmsnorm/bf16 |" in out and "| memory_op | GeForce RTX 4090 | gemm/bf16" not in out
        # Means of the plausible-row MAPEs: GEMM (10 + 30 + 50) / 3, decode 40 (every row: 400, with
        # its 3 implausible rows counted).
        assert "| gemm | 3 | 30.0 % | 30.0 % | 0 |" in lines, out
        assert "| generation_attention | 1 | 40.0 % | 400.0 % | 3 |" in lines, out
        assert "| memory_op | 1 | 70.0 % | 70.0 % | 0 |" in lines, out

        write(os.path.join(d, "moe-eval-B200.json"), {"no": "by_op_dtype"})
        with open(os.path.join(d, "moe-eval-B200.json"), "w") as f:
            f.write("{broken")
        rc, out, err = run(d)
        assert rc == 1 and len(err.strip().splitlines()) == 1 and "moe-eval-B200.json: not an eval-kernels JSON report" in err, err

    with tempfile.TemporaryDirectory() as d:
        rc, out, err = run(d)
        assert rc == 1 and "no <family>-eval-<GPU>.json reports" in err and len(err.strip().splitlines()) == 1, err
    rc, out, err = run("/nonexistent-folder")
    assert rc == 1 and "/nonexistent-folder: not a folder" in err, err
    print("ok")


main()
