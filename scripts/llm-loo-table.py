#!/usr/bin/env python3
"""The leave-one-GPU-out table of the LLM-era families, in Markdown, from the eval-kernels
reports that scripts/eval-llm-loo.sh writes (OUT/<family>-eval-<GPU>.json: every row of the
left-out GPU, forecast by weights trained without it). One line per family, left-out GPU and
dtype (memory_op: per op), then the mean of each family's cells (plausible rows, and every row
with the implausible rows' count); docs/accuracy.md's summary
table comes from it.
  scripts/llm-loo-table.py OUT [--write-errors FILE [--weights DIR] [--heldout HELDOUT]]
--write-errors FILE also writes the cells as JSON (atomically) for forecasts to quote:
weights/forecast_errors.json, read by predictor/forecast_errors.h, which quotes a family's cells
only while the weights folder's manifest (--weights, default weights) records the training
(`trained_at`, memory_op's `fitted_at`) and data (`data_hash`) stamped into FILE here. OUT must
be folds of the design those weights were trained with (the bundled configs). --heldout HELDOUT
adds the training GPUs' held-out shapes cells of a run of scripts/eval-llm-heldout.sh HELDOUT
(the same report names; the share left out read from HELDOUT/weights/manifest.yaml).
"""
import datetime
import json
import os
import re
import sys

import yaml

FAMILIES = ("gemm", "context_attention", "generation_attention", "moe", "memory_op")
OPS = {"memory_op": ("rmsnorm", "silu_mul", "rope", "residual_add")}
NAME = re.compile(r"^(" + "|".join(FAMILIES) + r")-eval-(.+)\.json$")


def fail(msg):
    print(f"llm-loo-table: {msg}", file=sys.stderr)
    sys.exit(1)


def parse_args(argv):
    usage = ("usage: llm-loo-table.py OUT [--write-errors FILE [--weights DIR] [--heldout HELDOUT]] "
             "(OUT: a folder scripts/eval-llm-loo.sh wrote)")
    out, opts = None, {"--write-errors": None, "--weights": "weights", "--heldout": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in opts:
            if i + 1 >= len(argv):
                fail(f"{a} needs a value; {usage}")
            opts[a] = argv[i + 1]
            i += 2
        elif a.startswith("-") or out is not None:
            fail(usage)
        else:
            out = a
            i += 1
    if out is None:
        fail(usage)
    if opts["--heldout"] and not opts["--write-errors"]:
        fail("--heldout goes with --write-errors")
    return out, opts["--write-errors"], opts["--weights"], opts["--heldout"]


def read_cells(out):
    """family -> [(GPU tag, key, stats)] from OUT's <family>-eval-<GPU>.json reports."""
    if not os.path.isdir(out):
        fail(f"{out}: not a folder")
    cells = {}
    for name in sorted(os.listdir(out)):
        m = NAME.match(name)
        if not m:
            continue
        fam, gpu = m.group(1), m.group(2).replace("_", " ")
        path = os.path.join(out, name)
        try:
            with open(path) as f:
                by = json.load(f)["by_op_dtype"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not an eval-kernels JSON report ({e.__class__.__name__}: {e})")
        for key, s in sorted(by.items()):
            if key.split("/")[0] in OPS.get(fam, (fam,)):
                cells.setdefault(fam, []).append((gpu, key, s))
    if not cells:
        fail(f"{out}: no <family>-eval-<GPU>.json reports")
    return cells


def cuda_name(tag):
    """The CUDA device name the training rows carry: every training GPU is NVIDIA's."""
    return tag if tag.startswith("NVIDIA ") else "NVIDIA " + tag


def read_manifest(path, fn):
    """fn of a weights manifest's text as it reads (BaseLoader: no timestamps or numbers parsed);
    one line where the file is missing or malformed."""
    try:
        with open(path) as f:
            return fn(yaml.load(f, Loader=yaml.BaseLoader))
    except (OSError, yaml.YAMLError, AttributeError, TypeError, ValueError) as e:
        fail(f"{path}: not a weights manifest ({e.__class__.__name__}: {e})")


def stamps(weights):
    """Per family, the training's (or memory_op's fit's) time and data hash in DIR/manifest.yaml."""
    def of(m):
        fams = {name: (e["trained_at"], e["data_hash"]) for name, e in m.get("families", {}).items()
                if isinstance(e, dict) and "trained_at" in e and "data_hash" in e}
        mem = m.get("memory_ops")
        if isinstance(mem, dict) and "fitted_at" in mem and "data_hash" in mem:
            fams["memory_op"] = (mem["fitted_at"], mem["data_hash"])
        return fams
    return read_manifest(os.path.join(weights, "manifest.yaml"), of)


def json_cells(folder, fam, cells, gpu_field):
    """One family's cells as JSON: per GPU and key (memory ops: the op), rows, plausible-row MAPE
    and bias."""
    rows, seen = [], set()
    for gpu, key, s in cells:
        k = key.split("/")[0] if fam in OPS else key
        if (gpu, k) in seen:
            fail(f"{folder}: {gpu} has two {fam} cells of {k}: one cell per GPU and key")
        seen.add((gpu, k))
        bias = s.get("bias_median")
        if bias is None or not bias > 0:
            fail(f"{folder}: {fam} {gpu} {key}: no bias_median")
        rows.append({gpu_field: cuda_name(gpu), "key": k, "rows": s["rows"],
                     "mape_pct": round(s.get("plausible_mape_pct", s["mape_pct"]), 2), "bias": round(bias, 3)})
    return rows


def heldout_pct(heldout):
    """The share of shapes HELDOUT's training left out: its manifest's holdout_shapes_pct, one value
    over its families (memory_op's fit honours it without recording it)."""
    path = os.path.join(heldout, "weights", "manifest.yaml")
    pcts = read_manifest(path, lambda m: {int(e.get("holdout_shapes_pct", "0"))
                                          for e in m.get("families", {}).values() if isinstance(e, dict)})
    pcts.discard(0)
    if len(pcts) != 1:
        fail(f"{path}: expected its families trained with one --holdout-shapes share, found {sorted(pcts) or 'none'}")
    return pcts.pop()


def write_errors(path, out, weights, cells, heldout=None):
    """The cells as forecast_errors.json: per family its stamps, its leave-one-GPU-out cells and,
    with HELDOUT, its training GPUs' held-out shapes cells."""
    inputs = {os.path.realpath(os.path.join(folder, n)) for folder in filter(None, (out, heldout))
              for n in os.listdir(folder) if NAME.match(n)}
    inputs.add(os.path.realpath(os.path.join(weights, "manifest.yaml")))
    if heldout:
        inputs.add(os.path.realpath(os.path.join(heldout, "weights", "manifest.yaml")))
    if os.path.realpath(path) in inputs:
        fail(f"--write-errors {path}: is one of the inputs; name a new file")
    stamp = stamps(weights)
    held = read_cells(heldout) if heldout else {}
    pct = heldout_pct(heldout) if heldout else 0
    families = {}
    for fam in FAMILIES:
        if fam not in cells:
            continue
        if fam not in stamp:
            fail(f"{weights}/manifest.yaml: no '{fam}' family to stamp its cells with")
        families[fam] = {"trained_at": stamp[fam][0], "data_hash": stamp[fam][1],
                         "cells": json_cells(out, fam, cells[fam], "left_out")}
        if fam in held:
            families[fam]["heldout_cells"] = json_cells(heldout, fam, held[fam], "gpu")
            families[fam]["heldout_pct"] = pct
    doc = {
        "what": "measured errors of each LLM-era family (docs/accuracy.md): `cells`, leave one GPU out (each "
                "training GPU left out in turn, the family trained on the others, every row of the left-out GPU "
                "forecast from its spec); `heldout_cells`, per training GPU its shapes left out of training "
                "(`heldout_pct` % of them); mape_pct over the plausible rows, bias = median forecast / measured",
        "command": (f"bash scripts/eval-llm-loo.sh {out}"
                    + (f" && RETRAIN=1 bash scripts/eval-llm-heldout.sh {heldout}" if heldout else "")
                    + f" && python3 scripts/llm-loo-table.py {out} --write-errors {path}"
                    + (f" --heldout {heldout}" if heldout else "")),
        "written": datetime.date.today().isoformat(),
        "families": families,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    print(f"llm-loo-table: wrote {path} ({sum(len(v['cells']) for v in families.values())} cells, "
          f"{sum(len(v.get('heldout_cells', [])) for v in families.values())} held-out shapes cells)", file=sys.stderr)


def main():
    out, errors_path, weights, heldout = parse_args(sys.argv[1:])
    cells = read_cells(out)  # family -> [(gpu, key, stats)]

    def pct(v):
        return "" if v is None else "%.1f %%" % v

    print("| family | left-out GPU | op / dtype | rows | MAPE | p90 APE | implausible rows | MAPE, plausible rows "
          "| bias (median forecast / measured) | plain roofline MAPE | fitted roofline alone |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    means = []
    for fam in FAMILIES:
        if fam not in cells:
            continue
        for gpu, key, s in cells[fam]:
            bias = s.get("bias_median")
            print(f"| {fam} | {gpu} | {key} | {s['rows']:,} | {pct(s['mape_pct'])} | {pct(s.get('p90_ape_pct'))} | "
                  f"{s.get('implausible_rows', 0):,} | {pct(s.get('plausible_mape_pct'))} | "
                  f"{'' if bias is None else '%.2f' % bias} | {pct(s.get('roofline_mape_pct'))} | "
                  f"{pct(s.get('prior_plausible_mape_pct'))} |")
        plausible = [s.get("plausible_mape_pct", s["mape_pct"]) for _, _, s in cells[fam]]
        every = [s["mape_pct"] for _, _, s in cells[fam]]
        implausible = sum(s.get("implausible_rows", 0) for _, _, s in cells[fam])
        means.append((fam, len(plausible), sum(plausible) / len(plausible), sum(every) / len(every), implausible))
    print()
    # The plausible rows are those the forecast's own bounds allow (implausible_row), so a design
    # that moves the bounds moves them too: the all-row mean and the count say by how much.
    print("| family | cells | mean of the cells' plausible-row MAPE | mean of the cells' MAPE, every row | implausible rows |")
    print("|---|---|---|---|---|")
    for fam, n, m, a, k in means:
        print(f"| {fam} | {n} | {m:.1f} % | {a:.1f} % | {k:,} |")
    if errors_path:
        write_errors(errors_path, out, weights, cells, heldout)


main()
