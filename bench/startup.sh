#!/usr/bin/env bash
# Start-up and whole-command costs of the forecasting commands, as ratios to a bare
# `python3 -c pass` measured in the same run (issue 10's yardstick), plus a 20-GPU x 8-config
# compare on one core and peak memory. Prints CSV: metric,value,unit. Record the output in
# docs/performance.md with the date and machine.
#   bench/startup.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
B="${1:-build}"
N="${2:-15}"
TC="$B/tilecast"
[ -x "$TC" ] || { echo "startup.sh: $TC not built" >&2; exit 1; }
command -v python3 > /dev/null || { echo "startup.sh: python3 needed for the yardstick" >&2; exit 1; }
# Median wall seconds and max RSS (KiB) of N runs of a command, pinned to one core.
measure() {
  python3 - "$N" "$@" <<'PY'
import resource, statistics, subprocess, sys, time
n = int(sys.argv[1]); cmd = sys.argv[2:]
walls = []
for _ in range(n):
    t = time.perf_counter()
    subprocess.run(["taskset", "-c", "0"] + cmd, stdout=subprocess.DEVNULL, check=True)
    walls.append(time.perf_counter() - t)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("%.6f %d" % (statistics.median(walls), rss))
PY
}
read -r py _ < <(measure python3 -c pass)
echo "metric,value,unit"
echo "python3_c_pass_s,$py,s"
row() {  # row NAME CMD...
  local name="$1"; shift
  read -r s rss < <(measure "$@")
  echo "${name}_s,$s,s"
  echo "${name}_vs_python,$(python3 -c "print(round($s / $py, 2))"),ratio"
  echo "${name}_peak_rss_mib,$(python3 -c "print(round($rss / 1024, 1))"),MiB"
}
row gpus "$TC" gpus
row predict_kernel_gemm "$TC" predict-kernel --op gemm --shape 4096,4096,4096 --dtype bf16 --gpu H100-SXM
row predict_kernel_bmm "$TC" predict-kernel --op bmm --shape 8,512,512,512 --gpu H100-SXM
row predict_gpt3_2_7b_train "$TC" predict --model gpt3-2.7b --gpu H100-SXM --batch 2 --seq 2048 --mode training
row predict_llama8b_generate "$TC" predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 8 --seq 1024 --gen 256
# The engine's scheduler step by step: 512 requests, 256 at once, 8,192 tokens a step (578 steps).
row predict_llama8b_generate_scheduled "$TC" predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 512 --seq 2048 --gen 256 --max-batched-tokens 8192 --max-seqs 256
# A capacity search: 200 Poisson requests a trial, about 14 generate forecasts.
row capacity_llama8b "$TC" capacity --model llama-3.1-8b --gpus H100-SXM --seq 1024 --gen 256 --max-batched-tokens 8192 --slo-ttft-ms 200 --slo-tpot-ms 30
# Mixed-precision training: every layout of 64 H100s for Llama-3.1-70B (89 forecast, 45 refused).
row plan_llama70b_bf16_training "$TC" plan --model llama-3.1-70b --gpu H100-SXM --gpus 64 --global-batch 128 --seq 4096 --dtype bf16 --zero 1 --sequence-parallel
# The same with the interleaved schedules of 2-20 model chunks a rank beside each pipeline layout.
row plan_llama70b_bf16_training_vpp "$TC" plan --model llama-3.1-70b --gpu H100-SXM --gpus 64 --global-batch 128 --seq 4096 --dtype bf16 --zero 1 --sequence-parallel --vpp 2,4,5,10,20
# The same with every ZeRO stage and recomputation choice (8x the forecasts).
row plan_llama70b_bf16_training_auto "$TC" plan --model llama-3.1-70b --gpu H100-SXM --gpus 64 --global-batch 128 --seq 4096 --dtype bf16 --zero auto --recompute auto --sequence-parallel
# 20 GPUs x 8 configurations (4 batch sizes x 2 sequence lengths), GPT-2 large training.
GPUS=$("$TC" gpus --format json | python3 -c "import json,sys; g=[x['name'] for x in json.load(sys.stdin) if x.get('vendor')=='nvidia']; print(','.join(g[:20]))")
[ "$(echo "$GPUS" | tr ',' '\n' | wc -l)" = 20 ] || { echo "startup.sh: fewer than 20 NVIDIA specs" >&2; exit 1; }
row compare_20gpus_x_8configs "$TC" compare --model gpt2-large --gpus "$GPUS" --mode training --batch 1,2,4,8 --seq 512,1024 --format csv
# The Python module: import and one forecast, in a fresh interpreter (includes python3's own start).
if ls "$B"/python/tilecast*.so > /dev/null 2>&1; then
  row python_import_and_predict python3 -c "import sys; sys.path.insert(0, '$B/python'); import tilecast; tilecast.predict(model='gpt2-large', gpu='H100-SXM', batch=4, seq=1024)"
fi
row eval_kernels_fixture "$TC" -q --log-level error eval-kernels --data tests/data/aiconfigurator_gemm_small.csv
# In-process forecast throughput (tilecast_bench, 1 and all OpenBLAS threads).
if [ -x "$B/tilecast_bench" ]; then
  "$B/tilecast_bench" 2> /dev/null | awk -F, 'NR > 1 { printf "inproc_%s_threads%s,%s,%s\n", $1, $2, $3, $4 }'
fi
NS="${TILECAST_NEUSIGHT_DIR:-../shared/neusight}"
if [ -d "$NS/labels" ]; then
  row eval_models_all_neusight_labels "$TC" -q --log-level error eval-models --neusight-dir "$NS"
else
  echo "startup.sh: $NS/labels not found: eval-models not timed" >&2
fi
