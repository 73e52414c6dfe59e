#!/usr/bin/env python3
"""The leave-one-GPU-out table of the LLM-era families, in Markdown, from the eval-kernels
reports that scripts/eval-llm-loo.sh writes (OUT/<family>-eval-<GPU>.json: every row of the
left-out GPU, forecast by weights trained without it). One line per family, left-out GPU and
dtype (memory_op: per op), then the mean of each family's cells (plausible rows, and every row
with the implausible rows' count); docs/accuracy.md's summary
table comes from it.
  scripts/llm-loo-table.py OUT
"""
import json
import os
import re
import sys

FAMILIES = ("gemm", "context_attention", "generation_attention", "moe", "memory_op")
OPS = {"memory_op": ("rmsnorm", "silu_mul", "rope", "residual_add")}
NAME = re.compile(r"^(" + "|".join(FAMILIES) + r")-eval-(.+)\.json$")


def fail(msg):
    print(f"llm-loo-table: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        fail("usage: llm-loo-table.py OUT (a folder scripts/eval-llm-loo.sh wrote)")
    out = sys.argv[1]
    if not os.path.isdir(out):
        fail(f"{out}: not a folder")
    cells = {}  # family -> [(gpu, key, stats)]
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


main()
