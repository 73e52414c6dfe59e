#!/usr/bin/env python3
"""Every figure of our own GPU measurements, in one command.

Reads the manifest datasets/measured/sets.json (which folders are validation data, and what
each holds) and scores every set with the bundled weights:

  kernels        tilecast eval-kernels: per op and dtype, rows, MAPE, p90 APE, bias
                 (median forecast / measured) and the plain roofline's MAPE;
  labels         tilecast eval-models on a folder of label files: per mode, labels, mean and
                 max APE, and how many forecasts are too fast;
  e2e-jsonl      measure-e2e.py's lines turned into label files (--to-labels), then as labels;
  prefill-jsonl  measure-e2e.py's prefills beside tilecast predict --mode prefill --hf-eager
                 (TTFT; the rows ran Hugging Face's eager model);
  training-jsonl measure-e2e.py's BF16 training steps beside tilecast predict --mode training
                 --hf-eager (forward + backward);
  sustained-jsonl measure-sustained.py's kernels (a burst of calls, then seconds of them back to
                 back) beside tilecast predict-kernel, alone and --sustained.

Prints one markdown table per kind, each set as it is scored (progress on stderr), and with
--json FILE writes the figures (written to a temporary file, then renamed). Nothing here is
chosen or fitted: these GPUs are none of the training GPUs. A bad manifest (unknown kind, a
missing file, a duplicate name) is one error line naming it, exit status 2.

  python3 scripts/eval-measured.py [--sets datasets/measured/sets.json] [--tilecast build/tilecast]
                                   [--only NAME,...] [--json FILE]
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
KINDS = ("kernels", "labels", "e2e-jsonl", "prefill-jsonl", "training-jsonl", "sustained-jsonl")
ONE_PATH = ("labels", "e2e-jsonl", "prefill-jsonl", "training-jsonl", "sustained-jsonl")


def fail(msg):
    print(f"eval-measured: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_script(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), os.path.join(ROOT, "scripts", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_manifest(path):
    """The manifest's sets, each file resolved against its folder; fail() on anything wrong."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: malformed JSON at line {e.lineno}: {e.msg}")
    if not isinstance(doc, dict) or not isinstance(doc.get("sets"), list) or not doc["sets"]:
        fail(f"{path}: field 'sets': expected a non-empty list")
    base = os.path.dirname(os.path.abspath(path))
    seen = set()
    sets = []
    for i, s in enumerate(doc["sets"]):
        where = f"{path}: sets[{i}]"
        if not isinstance(s, dict):
            fail(f"{where}: expected an object")
        name = s.get("name")
        if not isinstance(name, str) or not name:
            fail(f"{where}: field 'name': expected a non-empty string")
        where = f"{path}: set '{name}'"
        if name in seen:
            fail(f"{where}: field 'name': named twice")
        seen.add(name)
        if s.get("kind") not in KINDS:
            fail(f"{where}: field 'kind': expected one of {', '.join(KINDS)}, got {s.get('kind')!r}")
        files = s.get("files")
        if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
            fail(f"{where}: field 'files': expected a non-empty list of paths")
        paths = [os.path.join(base, f) for f in files]
        for f, p in zip(files, paths):
            ok = os.path.isdir(p) if s["kind"] == "labels" else os.path.isfile(p)
            if not ok:
                fail(f"{where}: field 'files': {f}: no such {'folder' if s['kind'] == 'labels' else 'file'}")
        if s["kind"] in ONE_PATH and len(paths) != 1:
            fail(f"{where}: field 'files': a {s['kind']} set takes one path")
        sets.append({"name": name, "kind": s["kind"], "what": s.get("what", ""), "paths": paths})
    return sets


def tilecast_json(tc, args):
    res = subprocess.run([tc, "-q"] + args + ["--format", "json"], capture_output=True, text=True)
    if res.returncode != 0:
        fail(f"{tc} {' '.join(args)}: {res.stderr.strip()}")
    return json.loads(res.stdout)


def score_kernels(tc, s):
    d = tilecast_json(tc, ["eval-kernels", "--data"] + s["paths"])
    return [{"op": k.split("/")[0], "dtype": k.split("/")[1], "rows": v["rows"], "mape_pct": v["mape_pct"],
             "p90_ape_pct": v["p90_ape_pct"], "bias": v["bias_median"], "roofline_mape_pct": v["roofline_mape_pct"]}
            for k, v in sorted(d["by_op_dtype"].items())]


def score_labels(tc, folder):
    d = tilecast_json(tc, ["eval-models", "--labels", folder])
    out = []
    for g in d["by_gpu_mode"]:
        rows = [r for r in d["rows"] if r["gpu"] == g["gpu"] and r["mode"] == g["mode"] and r["option"] == g["option"]]
        out.append({"gpu": g["gpu"], "mode": g["mode"] + ("-" + g["option"] if g["option"] else ""), "labels": g["rows"],
                    "mean_ape_pct": g["mean_error_pct"], "max_ape_pct": max(abs(r["error_pct"]) for r in rows),
                    "too_fast": sum(1 for r in rows if r["forecast_ms"] < r["label_ms"])})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default=os.path.join(ROOT, "datasets", "measured", "sets.json"))
    p.add_argument("--tilecast", default=os.path.join(ROOT, "build", "tilecast"))
    p.add_argument("--only", help="comma-separated set names (default: every set)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = p.parse_args()
    if not os.access(args.tilecast, os.X_OK):
        fail(f"{args.tilecast}: no tilecast binary (build first, or --tilecast)")
    sets = read_manifest(args.sets)
    if args.only:
        names = args.only.split(",")
        for n in names:
            if n not in {s["name"] for s in sets}:
                fail(f"--only: no set '{n}' in {args.sets}")
        sets = [s for s in sets if s["name"] in names]
    if args.json and os.path.abspath(args.json) in {os.path.abspath(q) for s in sets for q in s["paths"]}:
        fail(f"--json {args.json}: is one of the measured files")
    e2e = load_script("measure-e2e")
    sustained = load_script("measure-sustained")
    results = []
    for i, s in enumerate(sets):
        print(f"[{i + 1}/{len(sets)}] {s['name']} ({s['kind']})", file=sys.stderr, flush=True)
        if s["kind"] == "kernels":
            figures = score_kernels(args.tilecast, s)
        elif s["kind"] == "labels":
            figures = score_labels(args.tilecast, s["paths"][0])
        elif s["kind"] == "e2e-jsonl":
            with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
                e2e.to_labels(s["paths"][0], tmp)
                figures = score_labels(args.tilecast, tmp)
        elif s["kind"] == "prefill-jsonl":
            figures = e2e.prefill_rows(s["paths"][0], args.tilecast, None)
        elif s["kind"] == "training-jsonl":
            figures = e2e.training_rows(s["paths"][0], args.tilecast, None)
        else:
            figures = sustained.forecast_rows(s["paths"][0], args.tilecast)
        results.append({"name": s["name"], "kind": s["kind"], "what": s["what"], "figures": figures})

    def table(header, rows):
        if rows:
            print("| " + " | ".join(header) + " |")
            print("|" + "---|" * len(header))
            for row in rows:
                print("| " + " | ".join(row) + " |")
            print()

    def mean(xs):
        return sum(xs) / len(xs) if xs else float("nan")

    def of(*kinds):
        return [r for r in results if r["kind"] in kinds]

    table(["set", "op / dtype", "rows", "MAPE %", "p90 APE %", "bias", "plain roofline MAPE %"],
          [[r["name"], f"{f['op']} / {f['dtype']}", f"{f['rows']:,}", f"{f['mape_pct']:.1f}", f"{f['p90_ape_pct']:.1f}",
            f"{f['bias']:.2f}", f"{f['roofline_mape_pct']:.1f}"] for r in of("kernels") for f in r["figures"]])
    table(["set", "GPU", "mode", "labels", "mean APE %", "max APE %", "forecasts too fast"],
          [[r["name"], f["gpu"], f["mode"], str(f["labels"]), f"{f['mean_ape_pct']:.2f}", f"{f['max_ape_pct']:.2f}",
            f"{f['too_fast']} of {f['labels']}"] for r in of("labels", "e2e-jsonl") for f in r["figures"]])
    table(["set", "runs", "mean APE %", "from 8,192 tokens: mean APE %", "signed errors %"],
          [[r["name"], str(len(r["figures"])), f"{mean([abs(x['err_pct']) for x in r['figures']]):.1f}",
            f"{mean([abs(x['err_pct']) for x in r['figures'] if x['tokens'] >= 8192]):.1f}",
            ", ".join("%+.1f" % x["err_pct"] for x in r["figures"])] for r in of("prefill-jsonl")])
    table(["set", "runs", "forward + backward: mean APE %", "from 8,192 tokens: mean APE %", "signed errors %"],
          [[r["name"], str(len(r["figures"])), f"{mean([abs(x['err_pct']) for x in r['figures']]):.1f}",
            f"{mean([abs(x['err_pct']) for x in r['figures'] if x['tokens'] >= 8192]):.1f}",
            ", ".join("%+.1f" % x["err_pct"] for x in r["figures"])] for r in of("training-jsonl")])
    table(["set", "kernel (op/dtype:shape)", "burst ms", "sustained ms", "sustained / burst", "SM MHz sustained",
           "forecast / burst", "--sustained forecast / sustained"],
          [[r["name"], f["kernel"], f"{f['burst_ms']:.4f}", f"{f['sustained_ms']:.4f}",
            f"{f['sustained_ms'] / f['burst_ms']:.3f}", f"{f['sm_mhz_sustained'] or 0:.0f}",
            f"{f['forecast_ms'] / f['burst_ms']:.3f}", f"{f['sustained_forecast_ms'] / f['sustained_ms']:.3f}"]
           for r in of("sustained-jsonl") for f in r["figures"]])
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as g:
            json.dump({"sets": results}, g, indent=1)
        os.replace(tmp, args.json)
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
