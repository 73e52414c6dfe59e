#!/usr/bin/env bash
# End to end without a GPU: collect (CPU backend) -> SIGKILL -> --resume -> same config ids as
# an uninterrupted run, none twice, no torn line; Ctrl-C exits 130; train on the collected
# data; forecast on the collected device spec. Usage: collect_pipeline_test.sh TILECAST_BIN
set -euo pipefail
TC="$1"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
SWEEP="$SRC/configs/sweeps/smoke.yaml"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
ids() { for f in "$1"/*.csv; do tail -n +2 "$f" | awk -F, '{print $NF}'; done | sort; }
# Waits (up to 60 s) until the run in $1 has written at least 20 rows, so that a kill lands
# mid-run however slowly the binary starts on a loaded machine (a fixed sleep did not).
wait_rows() {
  for _ in $(seq 600); do
    [ "$(cat "$1"/*.csv 2>/dev/null | wc -l)" -gt 20 ] && return 0
    sleep 0.1
  done
  echo "no rows after 60 s in $1"; exit 1
}

# A sweep of many tiny configs that runs for several seconds, so that the kills below land
# mid-run whatever the machine's speed.
LONG="$W/long.yaml"
cat > "$LONG" <<'YAML'
name: long
seed: 3
warmup: 2
repeats: 20
families:
  layernorm:
    samples_per_cell: 8000
    b: {edges: [64, 129]}
    h: {edges: [256, 513]}
YAML

# 1. Uninterrupted reference runs.
"$TC" -q collect --sweep "$SWEEP" --out "$W/ref" --backend cpu > /dev/null
[ "$(ids "$W/ref" | wc -l)" -eq 200 ] || { echo "reference run: expected 200 rows"; exit 1; }
# The CPU backend has no GPU to be busy: every row's latency is its call's time (call_ms), busy_ms empty.
for f in "$W/ref"/*.csv; do
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
           $col["status"] != "ok" || $col["busy_ms"] != "" || $col["call_ms"] != $col["Latency"] || $col["call_ms"] <= 0 { bad++ }
           END { if (NR < 2 || bad) { print FILENAME ": " bad " of " NR - 1 " rows not timed per call"; exit 1 } }' "$f"
done
"$TC" -q collect --sweep "$LONG" --out "$W/longref" --backend cpu > "$W/longref.csv"
# Its sampler draws some configs twice: each is measured once and counted as drawn twice.
IFS=, read -r n_cfg _ twice_ref measured_ref _ _ < <(tail -1 "$W/longref.csv")
[ "$twice_ref" -gt 0 ] && [ "$((measured_ref + twice_ref))" -eq "$n_cfg" ] && [ "$measured_ref" -eq "$(ids "$W/longref" | wc -l)" ] \
  || { cat "$W/longref.csv"; echo "summary: measured + drawn_twice must be the sweep's configs, measured its rows"; exit 1; }

# 2. SIGKILL part-way, then resume.
"$TC" -q collect --sweep "$LONG" --out "$W/run" --backend cpu > /dev/null 2>&1 &
pid=$!
wait_rows "$W/run"
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
before=$(ids "$W/run" | wc -l)
total=$(ids "$W/longref" | wc -l)
[ "$before" -lt "$total" ] || { echo "the kill came after the run had finished ($before rows)"; exit 1; }
# Simulate a torn line as a kill mid-write leaves it.
printf 'ln,0.01,cpu,p1.13.0' >> "$W/run/layernorm.csv"
"$TC" -q collect --sweep "$LONG" --out "$W/run" --backend cpu --resume > "$W/resume.csv"
echo "killed after $before of $total rows; resume: $(tail -1 "$W/resume.csv")"
# The resumed run skips each row written before once, and the same configs drawn twice.
IFS=, read -r _ skipped twice _ _ _ < <(tail -1 "$W/resume.csv")
[ "$skipped" -eq "$before" ] && [ "$twice" -eq "$twice_ref" ] \
  || { cat "$W/resume.csv"; echo "resume summary: expected $before already written and $twice_ref drawn twice"; exit 1; }
diff <(ids "$W/longref") <(ids "$W/run") || { echo "resumed run differs from the uninterrupted one"; exit 1; }
[ -z "$(ids "$W/run" | uniq -d)" ] || { echo "duplicate config ids after resume"; exit 1; }
for f in "$W"/run/*.csv; do
  [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" = '\n' ] || { echo "$f: torn last line"; exit 1; }
done

# 3. Without --resume an existing output is refused with one line.
if "$TC" -q collect --sweep "$SWEEP" --out "$W/ref" --backend cpu 2> "$W/err"; then
  echo "expected a refusal to overwrite"; exit 1
fi
grep -q -- "--resume" "$W/err"

# 4. Ctrl-C finishes the current config, prints its summary and exits 130.
"$TC" -q collect --sweep "$LONG" --out "$W/int" --backend cpu > "$W/int.out" 2>&1 &
pid=$!
wait_rows "$W/int"
kill -INT "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ "$rc" -eq 130 ] || { echo "SIGINT: expected exit 130, got $rc"; exit 1; }
grep -q '^configs_in_shard' "$W/int.out" || { echo "SIGINT: no orderly shutdown (summary missing)"; exit 1; }
[ "$(tail -c 1 "$W/int/layernorm.csv" | od -An -c | tr -d ' ')" = '\n' ] || { echo "SIGINT: torn last line"; exit 1; }

# 5. Shards joined by merge equal the whole sweep.
"$TC" -q collect --sweep "$SWEEP" --out "$W/s0" --backend cpu --shard 0/2 > /dev/null
"$TC" -q collect --sweep "$SWEEP" --out "$W/s1" --backend cpu --shard 1/2 > /dev/null
"$TC" merge --in "$W/s0" "$W/s1" --out "$W/merged" > /dev/null
diff <(ids "$W/ref") <(ids "$W/merged") || { echo "merged shards differ from the whole sweep"; exit 1; }

# 6. Train on the collected data (tiny run) and forecast on the collected device spec.
"$TC" -q train --data "$W/ref" --out "$W/weights" --epochs 2 > "$W/train.csv"
grep -q '^softmax,' "$W/train.csv"
"$TC" predict-kernel --weights "$W/weights" --gpu "$W/ref/gpu.yaml" --op bmm --shape 4,64,64,64 --format json | grep -q latency_ms
# 6b. --add-data: the collected GPU joins the default training GPUs (NeuSight's five for the FP32
#     families, the LLM-era data's for the others) instead of replacing them. Needs the shared
#     data; without it this part says so and is skipped.
NS="${TILECAST_NEUSIGHT_DIR:-$SRC/../shared/neusight}"
LLM="${TILECAST_LLM_KERNELS_DIR:-$SRC/../shared/llm-kernels}"
manifest_gpus() {  # weights family: the family's training_gpus line
  awk -v f="  $2:" '$0 == f { on = 1; next } on && /^  [a-z_]+:$/ { on = 0 } on && /training_gpus:/ { print; exit }' "$1/manifest.yaml"
}
if [ -d "$NS/kernels" ]; then
  "$TC" train --neusight-dir "$NS" --add-data "$W/ref" --family softmax --epochs 1 --out "$W/added" > "$W/added.csv" 2> "$W/added.log"
  grep -q "softmax: rows per GPU (default data and --add-data): NVIDIA A100-PCIE-40GB [0-9]*, .*Tesla V100-PCIE-32GB [0-9]*, cpu 24$" "$W/added.log" \
    || { cat "$W/added.log"; echo "--add-data: expected the five NeuSight GPUs' rows and the 24 collected ones"; exit 1; }
  [ "$(manifest_gpus "$W/added" softmax)" = "    training_gpus: [Tesla P4, Tesla P100-PCIE-16GB, Tesla V100-PCIE-32GB, Tesla T4, NVIDIA A100-PCIE-40GB, cpu]" ] \
    || { manifest_gpus "$W/added" softmax; echo "--add-data: manifest training GPUs"; exit 1; }
  "$TC" predict-kernel --weights "$W/added" --gpu "$W/ref/gpu.yaml" --op softmax --shape 64,1024 | grep -q "one of its 6 training GPUs: network" \
    || { echo "--add-data: the collected GPU is not a training GPU of the forecast"; exit 1; }
  "$TC" predict-kernel --weights "$W/added" --gpu H100-SXM --op softmax --shape 64,1024 | grep -q "not one of its 6 training GPUs" \
    || { echo "--add-data: the H100 should be unseen"; exit 1; }
  # A folder without the trained families' files is refused, not silently ignored.
  set +e; "$TC" train --neusight-dir "$NS" --add-data "$W/ref" --family gemm --out "$W/added2" 2> "$W/added2.err"; rc=$?; set -e
  [ "$rc" = 1 ] && [ "$(wc -l < "$W/added2.err")" = 1 ] && grep -q -- "--add-data: no <family>.csv of the families trained (gemm) in the added folders" "$W/added2.err" \
    || { cat "$W/added2.err"; echo "--add-data without the family's file: expected one error line (got $rc)"; exit 1; }
else
  echo "skipped train --add-data (FP32 families): no NeuSight data at $NS"
fi
# 7. The LLM-era families: tensor-core GEMM, memory-op, attention (prefill, decode) and MoE
#    runners on the CPU backend (fp32), trained and forecast like the others. Attention and MoE
#    rows are written in aiconfigurator's layout, the one the bundled LLM data has.
LLM_SWEEP="$(dirname "$0")/../../configs/sweeps/llm-smoke.yaml"
"$TC" -q collect --sweep "$LLM_SWEEP" --out "$W/llm" --backend cpu > /dev/null
head -1 "$W/llm/gemm.csv" | grep -q ',B,M,N,K,dtype,' || { echo "gemm.csv: no B,M,N,K,dtype columns"; exit 1; }
[ "$(grep -c '^gemm,' "$W/llm/gemm.csv")" = 32 ] || { echo "gemm.csv: expected 32 rows"; exit 1; }
for op in rmsnorm silu_mul rope residual_add sampler; do
  [ "$(grep -c "^$op," "$W/llm/memory_op.csv")" = 12 ] || { echo "memory_op.csv: expected 12 $op rows"; exit 1; }
done
for f in context_attention generation_attention moe; do
  head -1 "$W/llm/$f.csv" | grep -q '^framework,version,device,op_name,kernel_source,' || { echo "$f.csv: not aiconfigurator's layout"; exit 1; }
  [ "$(grep -c ",$f,torch_" "$W/llm/$f.csv")" = 16 ] || { echo "$f.csv: expected 16 measured rows"; head -3 "$W/llm/$f.csv"; exit 1; }
done
# Decode rows: one query token over step = ctx - 1 cached ones; GQA heads = kv_heads x group.
awk -F, 'NR > 1 && ($7 != 1 || $8 % $9 != 0) { bad = 1 } END { exit bad }' "$W/llm/generation_attention.csv" \
  || { echo "generation_attention.csv: isl must be 1 and heads a multiple of kv heads"; exit 1; }
"$TC" -q train --data "$W/llm" --family gemm memory_op attention_prefill attention_decode moe --out "$W/llm_weights" --epochs 2 > /dev/null
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op gemm --dtype fp32 --shape 64,512,512 --format json \
  | grep -q '"family": "gemm"' || { echo "no gemm forecast from collected data"; exit 1; }
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op rmsnorm --dtype fp32 --shape 64,1024 --format json \
  | grep -q '"model": "physics' || { echo "no memory-op forecast from collected data"; exit 1; }
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op sampler --shape 8,2000 --format json \
  | grep -q '"dtype": "fp32"' || { echo "no sampler forecast from collected data"; exit 1; }
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op attention_prefill --dtype fp32 --shape 1,128,8,2,64 --format json \
  | grep -q '"family": "context_attention"' || { echo "no prefill forecast from collected data"; exit 1; }
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op attention_decode --dtype fp32 --shape 4,512,8,2,64 --format json \
  | grep -q '"family": "generation_attention"' || { echo "no decode forecast from collected data"; exit 1; }
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op moe --dtype fp32 --shape 32,128,128,2,4 --format json \
  | grep -q '"family": "moe"' || { echo "no moe forecast from collected data"; exit 1; }
# --add-data for an LLM-era family: the collected decode rows beside the three training GPUs'.
if [ -d "$LLM/aiconfigurator" ]; then
  "$TC" train --llm-dir "$LLM" --add-data "$W/llm" --family generation_attention --epochs 1 --max-rows 2000 \
    --out "$W/llm_added" > /dev/null 2> "$W/llm_added.log"
  grep -q "generation_attention: rows per GPU (default data and --add-data): NVIDIA A100-SXM4-80GB [0-9]*, NVIDIA B200 [0-9]*, NVIDIA L40S [0-9]*, cpu 16$" "$W/llm_added.log" \
    || { cat "$W/llm_added.log"; echo "--add-data (decode): expected the three GPUs' rows and the 16 collected ones"; exit 1; }
  manifest_gpus "$W/llm_added" generation_attention | grep -q "NVIDIA A100-SXM4-80GB.*NVIDIA L40S.*NVIDIA B200.*cpu\]" \
    || { manifest_gpus "$W/llm_added" generation_attention; echo "--add-data (decode): manifest training GPUs"; exit 1; }
else
  echo "skipped train --add-data (LLM-era families): no LLM kernel data at $LLM"
fi
# A MoE sweep whose top-k can exceed its experts is refused in one line.
printf 'name: x\nfamilies:\n  moe:\n    t: [1, 2]\n    h: {values: [64]}\n    f: {values: [64]}\n    topk: {values: [2, 8]}\n    experts: {values: [4]}\n' > "$W/moe.yaml"
set +e; "$TC" collect --sweep "$W/moe.yaml" --out "$W/moe" --backend cpu 2> "$W/moe.err"; rc=$?; set -e
[ "$rc" = 1 ] && grep -q "topk reaches 8 but experts start at 4" "$W/moe.err" && [ "$(wc -l < "$W/moe.err")" = 1 ] \
  || { cat "$W/moe.err"; echo "moe sweep: expected one error line, exit 1 (got $rc)"; exit 1; }
echo "collect pipeline OK"
