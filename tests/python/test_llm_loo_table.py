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


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


MANIFEST = """families:
  gemm:
    trained_at: 2026-12-06 21:38:55+00:00
    data_hash: 416c550b2e99747f
  generation_attention:
    trained_at: 2026-12-07 04:10:22+00:00
    data_hash: f7c865a82b68d193
memory_ops:
  data_hash: c99f6596ebaa3b50
  fitted_at: 2026-12-07 01:06:45+00:00
"""


def check_write_errors(d):
    """--write-errors: the cells as JSON, each family stamped with its manifest's training as the
    manifest's text reads (no timestamp parsing), memory ops keyed by op; inputs never overwritten."""
    weights = os.path.join(d, "w")
    os.makedirs(weights)
    with open(os.path.join(weights, "manifest.yaml"), "w") as f:
        f.write(MANIFEST)
    dest = os.path.join(d, "errors.json")
    rc, out, err = run(d, "--write-errors", dest, "--weights", weights)
    assert rc == 0 and "wrote " + dest + " (5 cells, 0 held-out shapes cells)" in err, err
    with open(dest) as f:
        doc = json.load(f)
    fams = doc["families"]
    assert sorted(fams) == ["gemm", "generation_attention", "memory_op"], fams
    assert fams["gemm"]["trained_at"] == "2026-12-06 21:38:55+00:00" and fams["gemm"]["data_hash"] == "416c550b2e99747f"
    assert fams["memory_op"]["trained_at"] == "2026-12-07 01:06:45+00:00", fams["memory_op"]
    cells = {(c["left_out"], c["key"]): c for c in fams["gemm"]["cells"]}
    # GPUs by the CUDA device name the training rows carry
    assert cells[("NVIDIA A100-SXM4-80GB", "gemm/fp16")] == {"left_out": "NVIDIA A100-SXM4-80GB", "key": "gemm/fp16",
                                                              "rows": 10, "mape_pct": 10.0, "bias": 0.9}, cells
    assert len(cells) == 3 and ("NVIDIA A100-SXM4-80GB", "rmsnorm/fp16") not in cells, cells
    # decode's cell: its plausible rows' 40 %, not every row's 400 %
    assert fams["generation_attention"]["cells"][0]["mape_pct"] == 40.0, fams
    assert fams["memory_op"]["cells"] == [{"left_out": "NVIDIA GeForce RTX 4090", "key": "rmsnorm", "rows": 10,
                                           "mape_pct": 70.0, "bias": 0.9}], fams
    assert not os.path.exists(dest + ".tmp")
    assert "heldout_cells" not in fams["gemm"]
    # With a held-out shapes run: its cells per training GPU, and the share its manifest records.
    held = os.path.join(d, "held")
    os.makedirs(os.path.join(held, "weights"))
    write(os.path.join(held, "gemm-eval-L40S.json"), {"gemm/bf16": cell(3.0), "rmsnorm/fp16": cell(9.0)})
    write(os.path.join(held, "memory_op-eval-A40.json"), {"silu_mul/fp16": cell(4.0)})
    with open(os.path.join(held, "weights", "manifest.yaml"), "w") as f:
        f.write("families:\n  gemm:\n    holdout_shapes_pct: 10\n  moe:\n    holdout_shapes_pct: 10\n")
    rc, out, err = run(d, "--write-errors", dest, "--weights", weights, "--heldout", held)
    assert rc == 0 and "(5 cells, 2 held-out shapes cells)" in err, err
    with open(dest) as f:
        fams = json.load(f)["families"]
    assert fams["gemm"]["heldout_cells"] == [{"gpu": "NVIDIA L40S", "key": "gemm/bf16", "rows": 10, "mape_pct": 3.0,
                                              "bias": 0.9}] and fams["gemm"]["heldout_pct"] == 10, fams["gemm"]
    assert fams["memory_op"]["heldout_cells"][0]["key"] == "silu_mul" and fams["memory_op"]["heldout_pct"] == 10
    assert "heldout_cells" not in fams["generation_attention"]
    with open(os.path.join(held, "weights", "manifest.yaml"), "w") as f:
        f.write("families:\n  gemm:\n    holdout_shapes_pct: 10\n  moe:\n    holdout_shapes_pct: 20\n")
    rc, out, err = run(d, "--write-errors", dest, "--weights", weights, "--heldout", held)
    assert rc == 1 and "one --holdout-shapes share, found [10, 20]" in err, err
    rc, out, err = run(d, "--heldout", held)
    assert rc == 1 and "--heldout goes with --write-errors" in err, err
    # Never onto an input: the manifest, or a report of OUT.
    for target in (os.path.join(weights, "manifest.yaml"), os.path.join(d, "gemm-eval-L40S.json")):
        before = open(target).read()
        rc, out, err = run(d, "--write-errors", target, "--weights", weights)
        assert rc == 1 and "is one of the inputs" in err and len(err.strip().splitlines()) == 1, err
        assert open(target).read() == before
    # A family the manifest lacks cannot be stamped.
    with open(os.path.join(weights, "manifest.yaml"), "w") as f:
        f.write(MANIFEST.replace("  generation_attention:", "  moe:"))
    rc, out, err = run(d, "--write-errors", os.path.join(d, "e2.json"), "--weights", weights)
    assert rc == 1 and "no 'generation_attention' family to stamp its cells with" in err, err
    assert not os.path.exists(os.path.join(d, "e2.json"))
    rc, out, err = run(d, "--write-errors")
    assert rc == 1 and "--write-errors needs a value" in err, err
    # A memory op's cells are per op: one GPU with two dtypes of it would be two cells of one key.
    with open(os.path.join(weights, "manifest.yaml"), "w") as f:
        f.write(MANIFEST)
    write(os.path.join(d, "memory_op-eval-A40.json"), {"rmsnorm/fp16": cell(5.0), "rmsnorm/bf16": cell(6.0)})
    rc, out, err = run(d, "--write-errors", os.path.join(d, "e3.json"), "--weights", weights)
    assert rc == 1 and "A40 has two memory_op cells of rmsnorm" in err, err
    os.remove(os.path.join(d, "memory_op-eval-A40.json"))


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
        check_write_errors(d)

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
