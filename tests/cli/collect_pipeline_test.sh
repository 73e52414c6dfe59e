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
"$TC" -q collect --sweep "$LONG" --out "$W/longref" --backend cpu > /dev/null

# 2. SIGKILL part-way, then resume.
"$TC" -q collect --sweep "$LONG" --out "$W/run" --backend cpu > /dev/null 2>&1 &
pid=$!
sleep 1.5
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
before=$(ids "$W/run" | wc -l)
total=$(ids "$W/longref" | wc -l)
[ "$before" -lt "$total" ] || { echo "the kill came after the run had finished ($before rows)"; exit 1; }
# Simulate a torn line as a kill mid-write leaves it.
printf 'ln,0.01,cpu,p1.13.0' >> "$W/run/layernorm.csv"
"$TC" -q collect --sweep "$LONG" --out "$W/run" --backend cpu --resume > "$W/resume.csv"
echo "killed after $before of $total rows; resume: $(tail -1 "$W/resume.csv")"
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
sleep 1.5
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
# 7. The LLM-era families: tensor-core GEMM and memory-op runners on the CPU backend (fp32),
#    trained and forecast like the others; attention is refused in one line.
LLM_SWEEP="$(dirname "$0")/../../configs/sweeps/llm-smoke.yaml"
"$TC" -q collect --sweep "$LLM_SWEEP" --out "$W/llm" --backend cpu > /dev/null
head -1 "$W/llm/gemm.csv" | grep -q ',B,M,N,K,dtype,' || { echo "gemm.csv: no B,M,N,K,dtype columns"; exit 1; }
[ "$(grep -c '^gemm,' "$W/llm/gemm.csv")" = 32 ] || { echo "gemm.csv: expected 32 rows"; exit 1; }
for op in rmsnorm silu_mul rope residual_add; do
  [ "$(grep -c "^$op," "$W/llm/memory_op.csv")" = 12 ] || { echo "memory_op.csv: expected 12 $op rows"; exit 1; }
done
"$TC" -q train --data "$W/llm" --family gemm memory_op --out "$W/llm_weights" --epochs 2 > /dev/null
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op gemm --dtype fp32 --shape 64,512,512 --format json \
  | grep -q '"family": "gemm"' || { echo "no gemm forecast from collected data"; exit 1; }
"$TC" predict-kernel --weights "$W/llm_weights" --gpu "$W/llm/gpu.yaml" --op rmsnorm --dtype fp32 --shape 64,1024 --format json \
  | grep -q '"model": "physics' || { echo "no memory-op forecast from collected data"; exit 1; }
printf 'name: x\ndtypes: [bf16]\nfamilies:\n  context_attention:\n    b: [1, 2]\n' > "$W/attn.yaml"
set +e; "$TC" collect --sweep "$W/attn.yaml" --out "$W/attn" --backend cpu 2> "$W/attn.err"; rc=$?; set -e
[ "$rc" = 1 ] && grep -q "does not run context_attention kernels yet" "$W/attn.err" && [ "$(wc -l < "$W/attn.err")" = 1 ] \
  || { cat "$W/attn.err"; echo "attention sweep: expected one error line, exit 1 (got $rc)"; exit 1; }
echo "collect pipeline OK"
