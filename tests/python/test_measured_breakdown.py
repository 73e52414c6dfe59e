#!/usr/bin/env python3
"""scripts/measured-breakdown.py on hand-made rows: the GEMM buckets' MAPE and bias, the large
shapes' TFLOP/s, a decode row's cache rate and the signed error per GPU, each worked out by
hand; a missing file is one error line and exit 1."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "measured-breakdown.py")


def run(*args):
    """Exit code, stdout with its runs of spaces as one, stderr."""
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, "\n".join(" ".join(line.split()) for line in p.stdout.splitlines()), p.stderr


def rows_csv(path, lines):
    """An `eval-kernels --rows-csv` file of `lines` (device,op,shape,dtype,measured,forecast)."""
    with open(path, "w") as f:
        f.write("device,op,shape,dtype,measured_ms,predicted_ms,roofline_ms,prior_ms\n")
        f.writelines(line + ",0,0\n" for line in lines)
    return path


with tempfile.TemporaryDirectory() as tmp:
    rows = rows_csv(os.path.join(tmp, "rows.csv"), [
        # 16 tokens, 4096 x 4096 bf16 weights (32 MiB: in a 60 MiB L2): forecast 1.5x.
        'X,gemm,"16,4096,4096",bf16,0.010,0.015',
        # 16 tokens, 8192 x 8192 bf16 (128 MiB: beyond it): forecast 0.5x.
        'X,gemm,"16,8192,8192",bf16,0.040,0.020',
        # 2048 tokens x 4096 x 8192: 2 x 2048 x 4096 x 8192 = 137.4 GFLOP in 0.1718 ms = 800 TFLOP/s.
        'X,gemm,"2048,4096,8192",bf16,0.17179869184,0.17179869184'])
    rc, out, err = run("gemm", rows)
    assert rc == 0, err
    # <= 64 tokens: |0.5| and |-0.5| -> 50 %, median of 1.5 and 0.5 -> 1.00.
    assert "<= 64 tokens 2 rows MAPE 50.0 % bias 1.00" in out, out
    assert "weights in L2, <= 64 tokens 1 rows MAPE 50.0 % bias 1.50" in out, out
    assert "weights beyond L2, <= 64 tokens 1 rows MAPE 50.0 % bias 0.50" in out, out
    assert "> 1,024 tokens 1 rows MAPE 0.0 % bias 1.00" in out, out
    assert "1 rows, 800 - 800" in out, out

    # A layer-op file's other ops are left out and counted; NVFP4 weights take 0.5625 B a value:
    # 16 x 8192 x 8192 of them are 36 MiB, in a 60 MiB L2 (forecast 2x).
    mixed = rows_csv(os.path.join(tmp, "mixed.csv"), [
        'X,rmsnorm,"16,4096",bf16,0.010,0.010', 'X,gemm,"16,8192,8192",nvfp4,0.010,0.020'])
    rc, out, err = run("gemm", mixed)
    assert rc == 0, err
    assert "left out (not gemm): rmsnorm 1" in out, out
    assert "weights in L2, <= 64 tokens 1 rows MAPE 100.0 % bias 2.00" in out, out

    # tokens: bins by the shape's first number, 1 and 2-3. Ratios 0.5 (1 token); 2.0 and 1.0 (3 and
    # 2 tokens): MAPE 50 % and (100 + 0) / 2 = 50 %, bias 0.50 and the median 1.50; a third and
    # two thirds of the op's rows. Another op apart.
    kr = rows_csv(os.path.join(tmp, "krows.csv"), [
        'X,rmsnorm,"1,4096",bf16,0.010,0.005', 'X,rmsnorm,"3,4096",bf16,0.010,0.020',
        'X,rmsnorm,"2,4096",bf16,0.010,0.010', 'X,rope,"8,4096",bf16,0.010,0.010'])
    rc, out, err = run("tokens", kr)
    assert rc == 0, err
    assert "X / rmsnorm:\n1 33.3 % of rows, 33.3 % to here 1 rows MAPE 50.0 % bias 0.50" in out, out
    assert "2-3 66.7 % of rows, 100.0 % to here 2 rows MAPE 50.0 % bias 1.50" in out, out
    assert "X / rope:\n8-15 100.0 % of rows, 100.0 % to here 1 rows MAPE 0.0 % bias 1.00" in out, out

    # width-mod: by the last number modulo 4. Widths 1,281 and 1,285 (1 mod 4): ratios 0.5 and 1.0,
    # MAPE 25 %, bias 0.75; 1,280 (0 mod 4): ratio 2.0, MAPE 100 %.
    wr = rows_csv(os.path.join(tmp, "wrows.csv"), [
        'X,ln,"8192,1281",fp32,0.010,0.005', 'X,ln,"8192,1285",fp32,0.010,0.010',
        'X,ln,"8192,1280",fp32,0.010,0.020'])
    rc, out, err = run("width-mod", wr)
    assert rc == 0, err
    assert "X / ln:\nH % 4 = 0 1 rows MAPE 100.0 % bias 2.00\nH % 4 = 1 2 rows MAPE 25.0 % bias 0.75" in out, out
    rc, out, err = run("width-mod", wr, "--mod", "0")
    assert rc == 1 and "--mod 0: expected >= 1" in err, (rc, err)

    dec = os.path.join(tmp, "generation_attention.csv")
    with open(dec, "w") as f:
        f.write("batch_size,step,num_key_value_heads,head_dim,kv_cache_dtype,latency,status\n")
        # 64 sequences x 8,192 tokens x 8 heads x 128 x (K + V) x 2 B = 2,147,483,648 B in 0.5 ms.
        f.write("64,8191,8,128,bf16,0.5,ok\n")
        f.write("1,127,8,128,bf16,0.01,ok\n")  # 0.5 MB: below --min-mb
        f.write("64,8191,8,128,bf16,,oom\n")
    rc, out, err = run("decode-rate", dec)
    assert rc == 0 and "1 rows with caches above 200 MB: median 4295 GB/s" in out, (out, err)

    em = os.path.join(tmp, "em.json")
    with open(em, "w") as f:
        json.dump({"rows": [{"gpu": "G", "mode": "inf", "option": "", "forecast_ms": 90, "label_ms": 100},
                            {"gpu": "G", "mode": "inf", "option": "", "forecast_ms": 130, "label_ms": 100},
                            {"gpu": "G", "mode": "inf", "option": "fusion", "forecast_ms": 500, "label_ms": 100}]}, f)
    rc, out, err = run("signed", em)
    assert rc == 0 and "2 labels mean signed error +10.0 %" in out, (out, err)

    # Two runs: CSVs matched by config_id (a failed row and a row of one run only left out), JSON
    # lines by tag. Ratios 1.10, 0.95, 1.00 -> deviations 0, 5, 10 %: median 5 %, p90 10 %.
    for name, rows_ in (("a.csv", [("x", 1.0, "ok"), ("y", 2.0, "ok"), ("z", 4.0, "ok"), ("w", 1.0, "ok")]),
                        ("b.csv", [("x", 1.1, "ok"), ("y", 1.9, "ok"), ("z", 4.0, "ok"), ("w", 0, "oom"),
                                   ("v", 3.0, "ok")])):
        with open(os.path.join(tmp, name), "w") as f:
            f.write("OPName,Latency,status,config_id\n")
            f.writelines(f"gemm,{lat},{st},{cid}\n" for cid, lat, st in rows_)
    rc, out, err = run("runs", os.path.join(tmp, "a.csv"), os.path.join(tmp, "b.csv"))
    assert rc == 0 and "3 rows in both: |B / A - 1| median 5.0 %, p90 10.0 %; median B / A 1.000" in out, (out, err)
    for name, lat in (("a.jsonl", 100.0), ("b.jsonl", 80.0)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(json.dumps({"tag": "m-inf", "status": "ok", "e2e_latency": lat}) + "\n")
            f.write(json.dumps({"tag": "p", "status": "ok", "latency_ms": lat / 2}) + "\n")
    rc, out, err = run("runs", os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "b.jsonl"))
    assert rc == 0 and "2 rows in both: |B / A - 1| median 20.0 %, p90 20.0 %; median B / A 0.800" in out, (out, err)

    # timings: two collected linear rows and a softmax row against their forecasts (eval-kernels'
    # shapes: B,M,N,K and B,H), an unmatched row and a failed one left out.
    tr = rows_csv(os.path.join(tmp, "trows.csv"), [
        'X,linear,"1,64,64,64",fp32,0.030,0.036',   # forecast 1.2 x the call
        'X,linear,"1,128,64,64",fp32,0.040,0.032',  # 0.8 x
        'X,softmax,"8,512",fp32,0.2,0.25'])
    lin = os.path.join(tmp, "linear.csv")
    with open(lin, "w") as f:
        f.write("OPName,Latency,B,M,N,K,busy_ms,call_ms,status\n")
        # busy 5 us, call 30 us: host 25 us; in model 36 - 15 = 21 us over 5 -> 4.2.
        f.write("linear,0.030,1,64,64,64,0.005,0.030,ok\n")
        # busy 8 us, call 40 us: host 32 us; 32 - 15 = 17 us over 8 -> 2.125.
        f.write("linear,0.040,1,128,64,64,0.008,0.040,ok\n")
        f.write("linear,0.040,1,256,64,64,0.008,0.040,ok\n")  # no forecast
        f.write("linear,,1,64,64,64,,,oom\n")
    smx = os.path.join(tmp, "softmax.csv")
    with open(smx, "w") as f:
        # busy 0.19 ms (0.1-1 ms), call 0.2: host 10 us; 0.25 - 0.015 = 0.235 over 0.19.
        f.write("OPName,Latency,B,H,busy_ms,call_ms,status\nsoftmax,0.2,8,512,0.19,0.2,ok\n")
    rc, out, err = run("timings", tr, lin, smx)
    # linear < 10 us: host median (25 + 32) / 2 = 28.5; |0.2| and |0.2| -> 20 %, bias median(1.2, 0.8) = 1.00;
    # in model |3.2| and |1.125| -> 216.25 % -> 216.2 (round half even), bias (4.2 + 2.125) / 2 = 3.16.
    assert rc == 0 and "linear < 10 us 2 28.5 MAPE 20.0 % bias 1.00 MAPE 216.2 % bias 3.16" in out, (out, err)
    assert "softmax 0.1-1 ms 1 10.0 MAPE 25.0 % bias 1.25 MAPE 23.7 % bias 1.24" in out, (out, err)
    assert out.count("\n") == 2, out  # the header and the two groups

rc, out, err = run("gemm", "/nonexistent.csv")
assert rc == 1 and err.count("\n") == 1 and "measured-breakdown.py gemm: FileNotFoundError" in err, (rc, err)
print("ok: measured-breakdown.py")
