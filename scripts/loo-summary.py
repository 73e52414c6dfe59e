#!/usr/bin/env python3
"""Compares leave-one-training-GPU-out runs of scripts/eval-neusight-loo.sh, design by design.

    scripts/loo-summary.py [--family F ...] [--models] NAME=OUT[,OUT...] NAME=OUT[,OUT...] ...

Each NAME is a design; its OUT folders are runs of it (seeds, or repeats). For every kernel
family and left-out GPU it prints the MAPE of each design on that GPU's rows of NeuSight's test
split (the mean over the design's runs, with the range when there are several), the mean over
the left-out GPUs, and the selection rule of docs/accuracy.md against the first design: a
design is kept only if its mean is lower and no left-out GPU is worse by more than 5 points.
A fold missing from a run (an interrupted run, or a family the run left as bundled, trained with
that GPU) is reported as missing, never counted. --models adds the left-out GPU's whole-model
labels per mode (MAPE per design; with those of another board of its die, SAME_DIE), which a
kernel-level win can still lose, and the mean over those cells (per run too). --per-op adds the
left-out GPU's per-op rows (NeuSight's one-layer labels, `per_op` of the models report) per
operator kind: the mean APE per design, and the mean over the left-out GPUs.
Markdown on stdout."""
import json
import os
import re
import statistics
import sys

GPUS = ["Tesla P4", "Tesla P100-PCIE-16GB", "Tesla V100-PCIE-32GB", "Tesla T4", "NVIDIA A100-PCIE-40GB"]
SHORT = {"Tesla P4": "P4", "Tesla P100-PCIE-16GB": "P100", "Tesla V100-PCIE-32GB": "V100",
         "Tesla T4": "T4", "NVIDIA A100-PCIE-40GB": "A100"}
RULE_POINTS = 5.0
# Labels of another board of the left-out GPU's die count with its fold: NeuSight's 4-GPU runs
# (DP, TP, PP) are on the A100-SXM4-40GB, the A100-PCIE-40GB's die.
SAME_DIE = {"NVIDIA A100-PCIE-40GB": ["NVIDIA A100-SXM4-40GB"]}


def trained_on(out, gpu, family):
    """Whether the fold's weights for `family` saw `gpu` (a run with FAMILIES that left the
    family as bundled): then the fold is no leave-one-out result for that family."""
    path = os.path.join(out, "weights-without-" + gpu.replace(" ", "_"), "manifest.yaml")
    if not os.path.exists(path):
        return False
    current = None
    with open(path) as f:
        for line in f:
            m = re.match(r"^  (\w+):\s*$", line)
            if m:
                current = m.group(1)
            m = re.match(r"^    training_gpus: \[(.*)\]", line)
            if m and current == family:
                return gpu in [g.strip() for g in m.group(1).split(",")]
    return False


def fold_mape(out, gpu, family):
    """MAPE % of `family` on the left-out `gpu` in run folder `out`, or None if not scored
    (or the family's weights were trained with that GPU)."""
    path = os.path.join(out, "kernels-" + gpu.replace(" ", "_") + ".json")
    if not os.path.exists(path) or trained_on(out, gpu, family):
        return None
    with open(path) as f:
        report = json.load(f)
    cell = report.get("by_device_op", {}).get(gpu, {}).get(family)
    return None if cell is None else cell["mape_pct"]


def fold_models(out, gpu):
    """{mode: MAPE %} over the left-out `gpu`'s whole-model labels in run folder `out`."""
    path = os.path.join(out, "models-" + gpu.replace(" ", "_") + ".json")
    if not os.path.exists(path):
        return {}
    devices = {d.replace(" ", "_") for d in [gpu] + SAME_DIE.get(gpu, [])}
    with open(path) as f:
        rows = [r for r in json.load(f)["rows"] if r["device"] in devices]
    by_mode = {}
    for r in rows:
        mode = r["mode"] + (" " + r["option"] if r.get("option") else "")
        if r["device"] != gpu.replace(" ", "_"):
            mode += " (" + r["device"].split("_", 1)[-1] + ")"
        by_mode.setdefault(mode, []).append(r["error_pct"])
    return {m: statistics.mean(v) for m, v in by_mode.items()}


def fold_per_op(out, gpu):
    """{kind: mean APE %} over the left-out `gpu`'s per-op rows in run folder `out`."""
    path = os.path.join(out, "models-" + gpu.replace(" ", "_") + ".json")
    if not os.path.exists(path):
        return {}
    name = gpu.split(" ", 1)[1]  # the per-op rows name a GPU without its vendor's word
    by_kind = {}
    with open(path) as f:
        for p in json.load(f).get("per_op", []):
            if p["gpu"] == name and p["label_ms"] > 0:
                by_kind.setdefault(p["kind"], []).append(100 * abs(p["forecast_ms"] - p["label_ms"]) / p["label_ms"])
    return {k: statistics.mean(v) for k, v in by_kind.items()}


def print_head(title, first, second, designs):
    """A second table's title and header: two key columns, then one per design."""
    print()
    print(title)
    print()
    print(f"| {first} | {second} | " + " | ".join(n for n, _ in designs) + " |")
    print("|---|---|" + "---|" * len(designs))


def print_per_op(designs):
    """Per-op rows of each left-out GPU, per operator kind: mean APE per design (mean over runs)."""
    print_head("Per-op rows (the left-out GPU's; families a run left as bundled were trained with it):",
               "kind", "left-out GPU", designs)
    per = {gpu: [[fold_per_op(o, gpu) for o in runs] for _, runs in designs] for gpu in GPUS}
    kinds = sorted({k for gpu in GPUS for runs in per[gpu] for run in runs for k in run})
    for kind in kinds:
        folds = [[] for _ in designs]  # per design: each left-out GPU's mean over runs
        for gpu in GPUS:
            cells = []
            for d, runs in enumerate(per[gpu]):
                vals = [run.get(kind) for run in runs]
                if any(v is None for v in vals):
                    folds[d].append(None)
                    cells.append("missing")
                    continue
                folds[d].append(statistics.mean(vals))
                cells.append(f"{statistics.mean(vals):.1f}" + (f" ({min(vals):.1f}-{max(vals):.1f})" if len(vals) > 1 else ""))
            print(f"| {kind} | {SHORT[gpu]} | " + " | ".join(cells) + " |")
        means = ["incomplete" if None in f else f"**{statistics.mean(f):.1f}**" for f in folds]
        print(f"| {kind} | mean | " + " | ".join(means) + " |")


def print_models(designs):
    """Whole-model labels of each left-out GPU, per mode: MAPE per design (mean over runs)."""
    print_head("Whole models (the left-out GPU's labels; families a run left as bundled were trained with it):",
               "left-out GPU", "mode", designs)
    run_cells = [[[] for _ in runs] for _, runs in designs]  # per design and run: every cell's MAPE
    complete = [True] * len(designs)
    for gpu in GPUS:
        per = [[fold_models(o, gpu) for o in runs] for _, runs in designs]
        modes = sorted({m for runs in per for run in runs for m in run})
        for mode in modes:
            cells = []
            for d, runs in enumerate(per):
                vals = [run.get(mode) for run in runs]
                if any(v is None for v in vals):
                    complete[d] = False
                    cells.append("missing")
                    continue
                for r, v in enumerate(vals):
                    run_cells[d][r].append(v)
                cells.append(f"{statistics.mean(vals):.1f}" + (f" ({min(vals):.1f}-{max(vals):.1f})" if len(vals) > 1 else ""))
            print(f"| {SHORT[gpu]} | {mode} | " + " | ".join(cells) + " |")
    # The mean over the table's cells, per design (and per run in brackets, with several).
    means = []
    for d, runs in enumerate(run_cells):
        if not complete[d] or not runs[0]:
            means.append("incomplete")
            continue
        per_run = [statistics.mean(r) for r in runs]
        means.append(f"**{statistics.mean(per_run):.2f}**" +
                     (" (" + " / ".join(f"{m:.2f}" for m in per_run) + ")" if len(per_run) > 1 else ""))
    print("| all | mean of the cells | " + " | ".join(means) + " |")


def main(argv):
    families = []
    designs = []
    models = per_op = False
    args = iter(argv)
    for a in args:
        if a == "--models":
            models = True
        elif a == "--per-op":
            per_op = True
        elif a == "--family":
            families.append(next(args, None) or sys.exit("loo-summary: --family needs a name"))
        elif "=" in a:
            name, outs = a.split("=", 1)
            runs = [o for o in outs.split(",") if o]
            for o in runs:
                if not os.path.isdir(o):
                    sys.exit(f"loo-summary: {o}: no such run folder")
            designs.append((name, runs))
        else:
            sys.exit(f"loo-summary: '{a}': expected NAME=OUT[,OUT...], --family F, --models or --per-op (see the header)")
    if not designs:
        sys.exit(__doc__)
    families = families or ["bmm", "linear", "elementwise", "softmax", "layernorm"]
    print("| family | left-out GPU | " + " | ".join(f"{n} ({len(r)} run{'s' if len(r) > 1 else ''})" for n, r in designs) + " |")
    print("|---|---|" + "---|" * len(designs))
    for fam in families:
        per_design = []  # per design: {gpu: mean MAPE}
        for name, runs in designs:
            cells = {}
            for gpu in GPUS:
                vals = [fold_mape(o, gpu, fam) for o in runs]
                cells[gpu] = None if any(v is None for v in vals) else vals
            per_design.append(cells)
        if all(all(v is None for v in d.values()) for d in per_design):
            continue
        for gpu in GPUS:
            row = []
            for cells in per_design:
                v = cells[gpu]
                if v is None:
                    row.append("missing")
                elif len(v) == 1:
                    row.append(f"{v[0]:.1f}")
                else:
                    row.append(f"{statistics.mean(v):.1f} ({min(v):.1f}-{max(v):.1f})")
            print(f"| {fam} | {SHORT[gpu]} | " + " | ".join(row) + " |")
        means, verdicts = [], []
        base = per_design[0]
        for i, cells in enumerate(per_design):
            if any(v is None for v in cells.values()):
                means.append("incomplete")
                verdicts.append("")
                continue
            m = statistics.mean(statistics.mean(v) for v in cells.values())
            means.append(f"**{m:.1f}**")
            if i == 0 or any(v is None for v in base.values()):
                verdicts.append("")
                continue
            bm = statistics.mean(statistics.mean(v) for v in base.values())
            worst = max(statistics.mean(cells[g]) - statistics.mean(base[g]) for g in GPUS)
            ok = m < bm and worst <= RULE_POINTS
            verdicts.append(f"{'passes' if ok else 'fails'} (mean {m - bm:+.1f}, worst fold {worst:+.1f})")
        print(f"| {fam} | mean | " + " | ".join(means) + " |")
        if len(designs) > 1:
            print(f"| {fam} | rule vs {designs[0][0]} | " + " | ".join(verdicts) + " |")
    if models:
        print_models(designs)
    if per_op:
        print_per_op(designs)


if __name__ == "__main__":
    main(sys.argv[1:])
