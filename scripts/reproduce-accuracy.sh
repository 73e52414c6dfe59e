#!/usr/bin/env bash
# Recomputes every accuracy figure in docs/accuracy.md with the bundled weights.
# Output: out/accuracy/*.txt|json. Needs NeuSight's data ($TILECAST_NEUSIGHT_DIR or ../shared/neusight).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${TILECAST_NEUSIGHT_DIR:-../shared/neusight}"
T="$N/kernels/nvidia/test"
O=out/accuracy
mkdir -p "$O"
TC=./build/tilecast
# Kernel level: unseen GPUs (L4, A100-80GB) and unseen shapes on the training GPUs.
$TC -q eval-kernels --data "$T/bmm.csv" "$T/linear.csv" "$T/elem.csv" "$T/softmax.csv" "$T/ln.csv" \
  --rows-csv "$O/kernel_rows.csv" > "$O/eval_kernels.txt"
$TC -q eval-kernels --data "$T/bmm.csv" "$T/linear.csv" "$T/elem.csv" "$T/softmax.csv" "$T/ln.csv" \
  --format json > "$O/eval_kernels.json"
# Whole models: every single-GPU label, side by side with NeuSight's published errors.
$TC -q eval-models --labels "$N/labels" > "$O/eval_models.txt"
$TC -q eval-models --labels "$N/labels" --format json > "$O/eval_models.json"
# Our own GPU measurements (datasets/measured/sets.json), validation only.
python3 scripts/eval-measured.py --tilecast "$TC" --json "$O/measured.json" > "$O/measured.md"
echo "wrote $O"
