#!/usr/bin/env python3
"""scripts/eval-measured.py on the committed manifest (datasets/measured/sets.json): every set
scored; each kind's figures equal what the tool it wraps gives on its own (eval-kernels' per op
and dtype, eval-models' per mode on the label folder, measure-e2e.py --compare-prefill's and
--compare-training's tables, measure-sustained.py --compare's, and the e2e lines turned into
labels by --to-labels); the markdown tables carry them. Bad manifests and options: one error line naming the field or file, exit status 2, and
no JSON written."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "eval-measured.py")
E2E_SCRIPT = os.path.join(ROOT, "scripts", "measure-e2e.py")
SUSTAINED_SCRIPT = os.path.join(ROOT, "scripts", "measure-sustained.py")
MEASURED = os.path.join(ROOT, "datasets", "measured")
TC = os.path.join(sys.argv[1], "tilecast")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, "--tilecast", TC] + list(args), capture_output=True, text=True)


def compared(flag, path):
    """measure-e2e.py's --compare-prefill or --compare-training table of path: its rows, split,
    and its last line (the mean), split."""
    c = subprocess.run([sys.executable, E2E_SCRIPT, flag, path, "--tilecast", TC], capture_output=True, text=True,
                       check=True)
    return [l.split() for l in c.stdout.splitlines() if l.startswith("llama")], c.stdout.splitlines()[-1].split()


def tc_json(*args):
    p = subprocess.run([TC, "-q"] + list(args) + ["--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


with open(os.path.join(MEASURED, "sets.json")) as f:
    manifest = json.load(f)

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "m.json")
    p = run("--json", out)
    assert p.returncode == 0, (p.stdout, p.stderr)
    with open(out) as f:
        got = {s["name"]: s for s in json.load(f)["sets"]}
    assert list(got) == [s["name"] for s in manifest["sets"]], list(got)
    # Progress: one line per set on stderr.
    assert p.stderr.count("] h200-") == len(manifest["sets"]), p.stderr

    for s in manifest["sets"]:
        g = got[s["name"]]
        paths = [os.path.join(MEASURED, f) for f in s["files"]]
        if s["kind"] == "kernels":
            ref = tc_json("eval-kernels", "--data", *paths)["by_op_dtype"]
            assert sorted(f"{x['op']}/{x['dtype']}" for x in g["figures"]) == sorted(ref), (s["name"], list(ref))
            for x in g["figures"]:
                r = ref[f"{x['op']}/{x['dtype']}"]
                assert x["rows"] == r["rows"] and abs(x["mape_pct"] - r["mape_pct"]) < 1e-9, (x, r)
                assert abs(x["bias"] - r["bias_median"]) < 1e-9, (x, r)
                # The table row: set, op / dtype, rows, MAPE to one decimal.
                row = f"| {s['name']} | {x['op']} / {x['dtype']} | {x['rows']:,} | {x['mape_pct']:.1f} |"
                assert row in p.stdout, (row, p.stdout)
        elif s["kind"] in ("labels", "e2e-jsonl"):
            if s["kind"] == "labels":
                folder = paths[0]
            else:
                folder = os.path.join(tmp, s["name"])
                subprocess.run([sys.executable, E2E_SCRIPT, "--to-labels", paths[0], folder], check=True,
                               capture_output=True)
            ref = tc_json("eval-models", "--labels", folder)
            assert len(g["figures"]) == len(ref["by_gpu_mode"]) > 0, g
            for x, r in zip(g["figures"], ref["by_gpu_mode"]):
                assert x["mode"] == r["mode"] + ("-" + r["option"] if r["option"] else "") and x["labels"] == r["rows"], (x, r)
                assert abs(x["mean_ape_pct"] - r["mean_error_pct"]) < 1e-9, (x, r)
                assert 0 <= x["too_fast"] <= x["labels"] and x["max_ape_pct"] >= x["mean_ape_pct"], x
                assert f"| {s['name']} | {x['gpu']} | {x['mode']} | {x['labels']} | {x['mean_ape_pct']:.2f} |" in p.stdout
        elif s["kind"] == "training-jsonl":
            lines, last = compared("--compare-training", paths[0])
            assert len(lines) == len(g["figures"]) > 0, (lines, g)
            for cols, x in zip(lines, g["figures"]):
                # run, tokens, fw, fc, err, bw, fc, err, fw+bw, fc, err
                assert cols[0] == x["tag"] and abs(float(cols[9]) - x["forecast_ms"]) < 0.01, (cols, x)
                assert abs(float(cols[8]) - x["measured_ms"]) < 0.01 and abs(float(cols[10]) - x["err_pct"]) < 0.1, (cols, x)
            mean = last[6]  # "mean APE of forward + backward 22.6 % over 6 runs"
            assert f"| {s['name']} | {len(lines)} | {mean} |" in p.stdout, (mean, p.stdout)
        elif s["kind"] == "sustained-jsonl":
            c = subprocess.run([sys.executable, SUSTAINED_SCRIPT, "--compare", paths[0], "--tilecast", TC],
                               capture_output=True, text=True, check=True)
            lines = {l.split()[0]: l.split() for l in c.stdout.splitlines()[1:] if len(l.split()) == 10}
            assert len(lines) == len(g["figures"]) > 0, (c.stdout, g)
            for x in g["figures"]:
                cols = lines[x["kernel"]]
                assert abs(float(cols[6]) - x["forecast_ms"]) < 1e-4 and abs(float(cols[8]) - x["sustained_forecast_ms"]) < 1e-4
                row = (f"| {s['name']} | {x['kernel']} | {cols[1]} | {cols[2]} | {cols[3]} | {cols[4].split('->')[1]} | "
                       f"{cols[7]} | {cols[9]} |")
                assert row in p.stdout, (row, p.stdout)
        else:
            lines, last = compared("--compare-prefill", paths[0])
            assert len(lines) == len(g["figures"]) > 0, (lines, g)
            for cols, x in zip(lines, g["figures"]):
                assert cols[0] == x["tag"] and abs(float(cols[3]) - x["forecast_ms"]) < 0.01, (cols, x)
                assert abs(float(cols[4]) - x["err_pct"]) < 0.1, (cols, x)
            mean = last[2]  # "mean APE 23.0 % over 7 runs"
            assert f"| {s['name']} | {len(lines)} | {mean} |" in p.stdout, (mean, p.stdout)

    # --only scores the named sets alone.
    p = run("--only", "h200-fp8-static")
    assert p.returncode == 0 and "| h200-fp8-static | gemm / fp8_static |" in p.stdout and "h200-bf16-1" not in p.stdout, p.stdout

    # Bad manifests and options: one line naming what is wrong, exit 2, no JSON.
    def bad(doc_or_text, *expect, args=()):
        path = os.path.join(tmp, "bad.json")
        with open(path, "w") as f:
            f.write(doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text))
        out = os.path.join(tmp, "bad-out.json")
        p = run("--sets", path, "--json", out, *args)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("eval-measured: error:"), (p.returncode, p.stderr)
        for e in expect:
            assert e in lines[0], (e, lines[0])
        assert not os.path.exists(out)

    one = manifest["sets"][3]  # a kernels set
    # bad.json lies in tmp, so a set that must pass the file check names its files absolutely.
    good = dict(one, files=[os.path.join(MEASURED, f) for f in one["files"]])
    last = manifest["sets"][-1]
    bad("{\"sets\": [", "bad.json", "malformed JSON")
    bad({"sets": []}, "field 'sets'")
    bad({"sets": [dict(one, kind="kernel")]}, f"set '{one['name']}'", "field 'kind'", "'kernel'")
    bad({"sets": [dict(one, files=["nowhere/gemm.csv"])]}, "field 'files'", "nowhere/gemm.csv: no such file")
    bad({"sets": [good, good]}, "field 'name'", "named twice")
    bad({"sets": [dict(good, name="")]}, "sets[0]", "field 'name'")
    bad({"sets": [dict(last, files=[os.path.join(MEASURED, last["files"][0])] * 2)]}, "takes one path")
    bad({"sets": [good]}, "--only", "'nope'", args=("--only", "nope"))
    p = run("--only", one["name"], "--json", os.path.join(MEASURED, one["files"][0]))
    assert p.returncode == 2 and "is one of the measured files" in p.stderr, p.stderr
print("eval-measured: ok")
