#!/usr/bin/env bash
# `compare` and `plan`: one row per combination with every identifying column, the same
# numbers as `predict` for the same configuration, ranking, prices, and one-line errors.
# Usage: compare_test.sh TILECAST_BIN
set -euo pipefail
TC="$1"
. "$(dirname "$0")/expect.sh"  # $W, fail, expect_fail

echo "== compare: 2 GPUs x 2 batches x 2 tp = 8 rows, the same step times as predict"
"$TC" compare --model gpt2-large --gpus H100-SXM,A100-SXM4-40GB --mode training --batch 4,8 --seq 1024 --tp 1,2 \
  --price H100-SXM=3.6 --format json > "$W/c.json"
"$TC" predict --model gpt2-large --gpu A100-SXM4-40GB --mode training --batch 8 --seq 1024 --tp 2 --format json > "$W/p.json"
python3 - "$W/c.json" "$W/p.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
rows = c["rows"]
assert len(rows) == 8, len(rows)
keys = {"model", "gpu", "mode", "dtype", "batch", "seq", "dp", "tp", "pp", "microbatches", "gpus", "step_ms",
        "tokens_per_s", "memory_gb", "gpu_memory_gb", "fits", "usd_per_hour", "usd_per_m_tokens"}
for r in rows:
    assert keys <= set(r), keys - set(r)
combos = {(r["gpu"], r["batch"], r["tp"]) for r in rows}
assert len(combos) == 8, combos
# Same configuration through predict: the same step time and memory.
r = next(r for r in rows if r["gpu"] == "A100-SXM4-40GB" and r["batch"] == 8 and r["tp"] == 2)
assert abs(r["step_ms"] - p["total_ms"]) <= 1e-9 * p["total_ms"], (r["step_ms"], p["total_ms"])
assert abs(r["memory_gb"] - p["memory_gb"]) < 1e-9 and r["fits"] == p["fits"]
assert abs(r["tokens_per_s"] - 8 * 1024 / (p["total_ms"] / 1e3)) < 1e-6 * r["tokens_per_s"]
# Ranking: fitting rows first, each group by step time.
fits = [r["fits"] for r in rows]
assert fits == sorted(fits, reverse=True), fits
for grp in (True, False):
    t = [r["step_ms"] for r in rows if r["fits"] == grp]
    assert t == sorted(t), t
# 3.6 USD per GPU-hour is 0.001 USD per GPU-second; a tp-2 row pays for two GPUs.
for r in rows:
    if r["gpu"] != "H100-SXM":
        assert r["usd_per_m_tokens"] is None
    else:
        assert abs(r["usd_per_hour"] - 3.6 * r["tp"]) < 1e-9
        want = 0.001 * r["tp"] * 1e6 / r["tokens_per_s"]
        assert abs(r["usd_per_m_tokens"] - want) < 1e-9 * want, (r["usd_per_m_tokens"], want)
assert c["prices"]["usd_per_gpu_hour"] == {"H100-SXM": 3.6}
print("ok   8 rows, same as predict, ranked, priced")
PY

echo "== combinations that cannot run are rows, not aborts"
"$TC" compare --model llama-3.1-8b --gpus A100-SXM4-40GB,H100-SXM --mode prefill --batch 1 --seq 512 --dtype fp8 > "$W/t.txt"
grep -q "cannot run: .*A100-SXM4-40GB' has no fp8 tensor-core peak" "$W/t.txt" || { cat "$W/t.txt"; fail "fp8 on an A100 is not reported"; }
grep -Eq "^ +1 llama-3.1-8b +H100-SXM +fp8" "$W/t.txt" || { cat "$W/t.txt"; fail "the H100 row is missing"; }
echo "ok   fp8 on A100 reported in its row"
"$TC" compare --model llama-3.1-8b --gpus H100-SXM --mode decode --batch 1,64 --context 4096 --format csv > "$W/d.csv"
[ "$(wc -l < "$W/d.csv")" = 3 ] || fail "decode CSV: expected a header and 2 rows"
head -1 "$W/d.csv" | grep -q "^model,gpu,mode,dtype,batch,seq,gen,max_batched_tokens,max_seqs,schedule,dp,tp,pp,microbatches,gpus,ep,cp,vpp,routing,dp_attention,moe_a2a,prefill_tp,prefill_ep,prefill_instances,decode_instances,spec_draft,spec_tokens,spec_accept,step_ms" || fail "CSV header"
sed -n 2p "$W/d.csv" | grep -q "^llama-3.1-8b,H100-SXM,decode,bf16,1,4096,0,0,0,,1,1,1,1,1,1,1,1,uniform,false,none,,,,,,,,[0-9]" || { cat "$W/d.csv"; fail "CSV row"; }
echo "ok   decode CSV"
# A decode step has no first token and a prefill no tokens after it: '-' in the table, an empty
# CSV field, null in JSON, where a number would read as 0 ms.
python3 - "$W/d.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    assert r["ttft_ms"] == "" and float(r["tpot_ms"]) == float(r["step_ms"]) > 0, r
PY
"$TC" compare --model llama-3.1-8b --gpus H100-SXM --mode prefill --batch 1 --seq 512 --format json > "$W/pj.json"
"$TC" compare --model llama-3.1-8b --gpus H100-SXM --mode decode --batch 1 --context 512 --format json > "$W/dj.json"
python3 - "$W/pj.json" "$W/dj.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["rows"][0]; d = json.load(open(sys.argv[2]))["rows"][0]
assert p["tpot_ms"] is None and p["ttft_ms"] == p["step_ms"] > 0, p
assert d["ttft_ms"] is None and d["tpot_ms"] == d["step_ms"] > 0, d
PY
"$TC" compare --model llama-3.1-8b --gpus H100-SXM --mode decode --batch 1 --context 512 > "$W/dt.txt"
grep -Eq "^ +1 llama-3.1-8b +H100-SXM .* +- +[0-9]+\.[0-9]{3} " "$W/dt.txt" || { cat "$W/dt.txt"; fail "decode table: ttft '-'"; }
echo "ok   no first token in a decode row, no output tokens in a prefill row"
# Each row's basis is its predict forecast's: the A100-SXM4-80GB trained every LLM-era family,
# the H200 none, and the MI300X's vendor is none of theirs.
"$TC" compare --model llama-3.1-8b --gpus A100-SXM4-80GB,H200,MI300X --mode generate --batch 2 --seq 256 --gen 4 --format json > "$W/bj.json"
"$TC" predict --model llama-3.1-8b --gpu H200 --mode generate --batch 2 --seq 256 --gen 4 --format json > "$W/bp.json"
python3 - "$W/bj.json" "$W/bp.json" <<'PY'
import json, sys
rows = {r["gpu"]: r for r in json.load(open(sys.argv[1]))["rows"]}; p = json.load(open(sys.argv[2]))
assert rows["H200"]["basis"] == p["basis"], (rows["H200"]["basis"], p["basis"])
fams = lambda g: {b["family"]: b for b in rows[g]["basis"]}
assert set(fams("A100-80GB-SXM")) == {"gemm", "context_attention", "generation_attention", "memory_op"}, fams("A100-80GB-SXM")
assert all(b["gpu"] == "training" and b["vendor_in_training"] for b in fams("A100-80GB-SXM").values())
assert all(b["gpu"] == "unseen" and b["vendor_in_training"] for b in fams("H200").values())
assert all(not b["vendor_in_training"] for b in fams("MI300X").values())
PY
echo "ok   compare rows carry their forecast's basis"
# --ep: expert parallelism is a serving layout of MoE models; a dense model's ep-2 rows and an
# eager mode's say why, beside the rows that run.
"$TC" compare --model llama-3.1-8b,mixtral-8x7b --gpus H100-SXM --mode decode --batch 8 --context 1024 --tp 2 --ep 1,2 \
  --format json > "$W/ep.json"
"$TC" predict --model mixtral-8x7b --gpu H100-SXM --mode decode --batch 8 --context 1024 --tp 2 --ep 2 --format json > "$W/ep2.json"
python3 - "$W/ep.json" "$W/ep2.json" <<'PY'
import json, sys
rows = {(r["model"], r["ep"]): r for r in json.load(open(sys.argv[1]))["rows"]}
p = json.load(open(sys.argv[2]))
assert set(rows) == {("llama-3.1-8b", 1), ("llama-3.1-8b", 2), ("mixtral-8x7b", 1), ("mixtral-8x7b", 2)}, rows
assert "has no experts" in rows[("llama-3.1-8b", 2)]["error"], rows
m = rows[("mixtral-8x7b", 2)]
assert "error" not in m and abs(m["tpot_ms"] - p["tpot_ms"]) < 1e-9 * p["tpot_ms"], (m, p["tpot_ms"])
assert m["tpot_ms"] != rows[("mixtral-8x7b", 1)]["tpot_ms"]
print("ok   --ep rows: MoE ep 2 = predict --ep 2, a dense model's ep 2 refused in its row")
PY
# --routing: every serving MoE row forecasts the most loaded rank, as predict --routing does.
"$TC" compare --model mixtral-8x7b,llama-3.1-8b --gpus H100-SXM --mode decode --batch 64 --context 1024 --tp 4 --ep 4 \
  --routing power_law_1.2 --format json > "$W/rt.json"
"$TC" predict --model mixtral-8x7b --gpu H100-SXM --mode decode --batch 64 --context 1024 --tp 4 --ep 4 \
  --routing power_law_1.2 --format json > "$W/rt1.json"
python3 - "$W/rt.json" "$W/rt1.json" <<'PY'
import json, sys
rows = {r["model"]: r for r in json.load(open(sys.argv[1]))["rows"]}
p = json.load(open(sys.argv[2]))
m = rows["mixtral-8x7b"]
assert m["routing"] == "power_law_1.2" and abs(m["tpot_ms"] - p["tpot_ms"]) < 1e-9 * p["tpot_ms"], (m, p["tpot_ms"])
assert "has no experts" in rows["llama-3.1-8b"]["error"], rows["llama-3.1-8b"]
print("ok   --routing rows: MoE = predict --routing, a dense model refused in its row")
PY
expect_fail "--routing: expected balanced, uniform or power_law_<a>" "$TC" compare --model mixtral-8x7b --gpus H100-SXM --mode decode --context 128 --routing zipf
expect_fail "--routing does not apply to --mode training" "$TC" compare --model mixtral-8x7b --gpus H100-SXM --mode training --seq 128 --routing power_law_1.2
expect_fail "compare: no combination can run \(--ep applies to mixed-precision training .* and serving .*, not to --mode inference in fp32" \
  "$TC" compare --model mixtral-8x7b --gpus H100-SXM --mode inference --batch 1 --seq 128 --ep 2

echo "== prices"
printf 'date: 2026-11-01\nsource: test quote\nusd_per_gpu_hour:\n  H100: 2.0\n' > "$W/p.yaml"
"$TC" compare --model gpt2-large --gpus H100-SXM --batch 1 --seq 128 --prices "$W/p.yaml" | grep -q "prices: test quote, 2026-11-01" \
  || fail "prices source not printed"
printf 'source: x\nusd_per_gpu_hour: {H100: 2.0}\n' > "$W/nodate.yaml"
expect_fail "nodate.yaml: fields 'date' and 'source' are required" "$TC" compare --model gpt2-large --gpus H100-SXM --seq 128 --prices "$W/nodate.yaml"
printf 'date: x\nsource: x\nusd_per_gpu_hour: {Z9000: 2.0}\n' > "$W/unk.yaml"
expect_fail "unk.yaml: field 'usd_per_gpu_hour': unknown GPU 'Z9000'" "$TC" compare --model gpt2-large --gpus H100-SXM --seq 128 --prices "$W/unk.yaml"
printf 'date: x\nsource: x\nusd_per_gpu_hour: {H100: -1}\n' > "$W/neg.yaml"
expect_fail "neg.yaml: field 'usd_per_gpu_hour.H100': expected a price" "$TC" compare --model gpt2-large --gpus H100-SXM --seq 128 --prices "$W/neg.yaml"
expect_fail "--price 'H100': expected GPU=USD_PER_HOUR" "$TC" compare --model gpt2-large --gpus H100-SXM --seq 128 --price H100
expect_fail "--batch '4,x': 'x' is not a whole number" "$TC" compare --model gpt2-large --gpus H100-SXM --seq 128 --batch 4,x
expect_fail "--sort: expected time, throughput, cost or goodput" "$TC" compare --model gpt2-large --gpus H100-SXM --seq 128 --sort fastest
expect_fail "unknown GPU 'H10'" "$TC" compare --model gpt2-large --gpus H10 --seq 128
expect_fail "compare: no combination can run \(--seq: 4096 exceeds gpt2-large's 1024 positions\)" "$TC" compare --model gpt2-large --gpus H100-SXM,L4 --seq 4096

echo "== plan: layouts of 8 GPUs, fitting first, each forecast as compare would"
"$TC" plan --model gpt3-2.7b --gpu A100-SXM4-40GB --gpus 8 --global-batch 16 --seq 2048 --format json > "$W/plan.json"
python3 - "$W/plan.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert all(r["dp"] * r["tp"] * r["pp"] == 8 for r in rows)
assert all(16 % r["dp"] == 0 for r in rows)
assert rows[0]["fits"], rows[0]
assert any(not r["fits"] for r in rows)  # dp 8 (whole model per GPU) does not fit 40 GB
fits = [r["fits"] for r in rows]
assert fits == sorted(fits, reverse=True)
print("ok   %d layouts, %d fit" % (len(rows), sum(fits)))
PY
# Serving: replicas of tp x pp groups, ranked by tokens/s; a replica's step, all replicas' tokens/s.
"$TC" plan --model llama-3.1-8b --gpu H100-SXM --gpus 4 --global-batch 32 --mode decode --context 2048 --format json > "$W/splan.json"
"$TC" predict --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 16 --context 2048 --tp 2 --format json > "$W/sp.json"
"$TC" predict --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 16 --context 2048 --pp 2 --format json > "$W/spp.json"
python3 - "$W/splan.json" "$W/sp.json" "$W/spp.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]; p = json.load(open(sys.argv[2])); pp = json.load(open(sys.argv[3]))
want = {(1, 4, 1), (2, 2, 1), (4, 1, 1), (1, 2, 2), (2, 1, 2), (1, 1, 4)}
assert {(r["dp"], r["tp"], r["pp"]) for r in rows} == want and len(rows) == len(want), rows
assert all(r["batch"] == 32 for r in rows)
t = [r["tokens_per_s"] for r in rows if r["fits"]]
assert t == sorted(t, reverse=True), t
r = next(r for r in rows if (r["dp"], r["tp"], r["pp"]) == (2, 2, 1))  # 2 replicas x tp 2, 16 sequences each
assert abs(r["tpot_ms"] - p["tpot_ms"]) < 1e-9 * p["tpot_ms"]
assert abs(r["tokens_per_s"] - 2 * 16 / (p["tpot_ms"] / 1e3)) < 1e-6 * r["tokens_per_s"]
assert r["max_sequences"] == 2 * p["max_sequences"] > 0, (r["max_sequences"], p["max_sequences"])  # both replicas
# The scheduler's keys are generate rows' only (a decode row has no schedule).
assert not any(k in r for r in rows for k in ("request_rate", "arrivals", "schedule", "max_seqs")), rows[0]
r = next(r for r in rows if (r["dp"], r["tp"], r["pp"]) == (2, 1, 2))  # 2 replicas x 2 stages, 2 microbatches of 8
assert abs(r["tpot_ms"] - pp["tpot_ms"]) < 1e-9 * pp["tpot_ms"] and r["microbatches"] == 2, (r, pp["tpot_ms"])
print("ok   serving plan: 6 layouts (pp too), replica step = predict's, tokens/s of all replicas")
PY
# The engine's scheduler in plan: --max-seqs auto caps each replica at the sequences its KV room
# holds, so layouts whose cache cannot take all 256 requests at once (Llama-3.1-70B, 2 replicas
# of tp 4 on 8 H100s) fit, at the predict --max-seqs auto forecast of one replica; a layout
# whose cap binds needs one pipeline stage, the others keep theirs.
"$TC" plan --model llama-3.1-70b --gpu H100-SXM --gpus 8 --global-batch 512 --mode generate --seq 2048 --gen 64 \
  --format json > "$W/aplan0.json"
"$TC" plan --model llama-3.1-70b --gpu H100-SXM --gpus 8 --global-batch 512 --mode generate --seq 2048 --gen 64 \
  --max-seqs auto --format json > "$W/aplan.json"
"$TC" predict --model llama-3.1-70b --gpu H100-SXM --mode generate --batch 256 --seq 2048 --gen 64 --tp 4 \
  --max-seqs auto --format json > "$W/ap.json"
python3 - "$W/aplan0.json" "$W/aplan.json" "$W/ap.json" <<'PY'
import json, sys
before = {(r["dp"], r["tp"], r["pp"]): r for r in json.load(open(sys.argv[1]))["rows"]}
rows = {(r["dp"], r["tp"], r["pp"]): r for r in json.load(open(sys.argv[2]))["rows"]}
p = json.load(open(sys.argv[3]))
assert not before[(2, 4, 1)]["fits"] and rows[(2, 4, 1)]["fits"], (before[(2, 4, 1)], rows[(2, 4, 1)])
assert 0 < p["max_seqs"] < 256 and p["max_seqs_auto"], p["max_seqs"]
r = rows[(2, 4, 1)]
assert r["max_seqs"] == p["max_seqs"] and abs(r["tpot_ms"] - p["tpot_ms"]) < 1e-9 * p["tpot_ms"], (r, p["tpot_ms"])
assert all(r["max_seqs_auto"] for r in rows.values())
assert all(r["max_seqs"] == 0 for (_, _, pp), r in rows.items() if pp > 1), sorted(rows)
print("ok   plan --max-seqs auto: tp 4 x 2 replicas fits (%d sequences at once), pipelines where no cap binds" % p["max_seqs"])
PY
# An MoE model's serving layouts: every expert-parallel size of each tp group that divides its 8
# experts (tp 8: ep 1, 2, 4, 8; tp 4: 1, 2, 4; tp 2: 1, 2; tp 1: 1), each with every
# (replicas, stages) of the remaining GPUs.
"$TC" plan --model mixtral-8x7b --gpu H100-SXM --gpus 8 --global-batch 64 --mode decode --context 2048 --format json > "$W/mplan.json"
"$TC" predict --model mixtral-8x7b --gpu H100-SXM --mode decode --batch 32 --context 2048 --tp 4 --ep 2 --format json > "$W/mp.json"
python3 - "$W/mplan.json" "$W/mp.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]; p = json.load(open(sys.argv[2]))
got = {(r["dp"], r["tp"], r["pp"], r["ep"]) for r in rows}
eps = {8: (1, 2, 4, 8), 4: (1, 2, 4), 2: (1, 2), 1: (1,)}
want = {(dp, tp, 8 // dp // tp, ep) for tp in eps for dp in (1, 2, 4, 8) if 8 % (dp * tp) == 0 for ep in eps[tp]}
assert len(want) == 20 and got == want and len(rows) == len(want), sorted(got)
r = next(r for r in rows if (r["dp"], r["tp"], r["pp"], r["ep"]) == (2, 4, 1, 2))  # 2 replicas of tp 4 / ep 2, 32 sequences each
assert abs(r["tpot_ms"] - p["tpot_ms"]) < 1e-9 * p["tpot_ms"], (r, p["tpot_ms"])
print("ok   MoE serving plan: 20 layouts with ep and pp, replica step = predict --ep's")
PY
# Mixed-precision training of an MoE model: every expert-parallel size of the dp group that
# divides its 8 experts is a layout too (dp 8: ep 1, 2, 4, 8; dp 4: 1, 2, 4; dp 2: 1, 2; dp 1: 1),
# each row the step predict --ep forecasts; ep 8 shrinks the weights a GPU holds 8-fold but for
# the dense ones.
"$TC" plan --model mixtral-8x7b --gpu H100-SXM --gpus 8 --global-batch 8 --seq 1024 --mode training --dtype bf16 \
  --format json > "$W/tplan.json"
"$TC" predict --model mixtral-8x7b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 1024 --dp 8 --ep 8 \
  --format json > "$W/tp8.json"
"$TC" predict --model mixtral-8x7b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 1024 --dp 8 \
  --format json > "$W/tp1.json"
python3 - "$W/tplan.json" "$W/tp8.json" "$W/tp1.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]; p8 = json.load(open(sys.argv[2])); p1 = json.load(open(sys.argv[3]))
got = {(r["dp"], r["ep"]) for r in rows if r["tp"] == 8 // r["dp"] and r["pp"] == 1}
assert got == {(8, 1), (8, 2), (8, 4), (8, 8), (4, 1), (4, 2), (4, 4), (2, 1), (2, 2), (1, 1)}, sorted(got)
r = next(r for r in rows if (r["dp"], r["tp"], r["pp"], r["ep"]) == (8, 1, 1, 8))
step = p8["total_ms"] + p8["optimizer_ms"]
assert abs(r["step_ms"] - step) < 1e-9 * step, (r["step_ms"], step)
assert p8["parallel"]["ep"] == 8 and p1["parallel"]["ep"] == 1
# 2 B x (1,605,636,096 dense + 45,097,156,608 / 8 expert) parameters against all 46,702,792,704.
assert abs(p8["weights_gb"] - 14.485561344) < 1e-6 and abs(p1["weights_gb"] - 93.405585408) < 1e-6, \
    (p8["weights_gb"], p1["weights_gb"])
print("ok   MoE training plan: ep layouts of the dp group, row step = predict --ep's")
PY
# --cp: context-parallel sizes of mixed-precision training, each row predict --cp's step on
# dp x cp GPUs; the CSV names cp.
"$TC" compare --model llama-3.1-8b --gpus H100-SXM --mode training --dtype bf16 --batch 2 --seq 8192 --cp 1,4 \
  --format json > "$W/cp.json"
"$TC" predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 2 --seq 8192 --cp 4 \
  --format json > "$W/cp4.json"
python3 - "$W/cp.json" "$W/cp4.json" <<'PY'
import json, sys
rows = {r["cp"]: r for r in json.load(open(sys.argv[1]))["rows"]}; p = json.load(open(sys.argv[2]))
assert sorted(rows) == [1, 4] and rows[4]["gpus"] == 4 and rows[1]["gpus"] == 1, rows
step = p["total_ms"] + p["optimizer_ms"]
assert abs(rows[4]["step_ms"] - step) < 1e-9 * step and p["parallel"]["cp"] == 4, (rows[4]["step_ms"], step)
assert rows[4]["step_ms"] < rows[1]["step_ms"] / 3, (rows[4]["step_ms"], rows[1]["step_ms"])
print("ok   compare --cp: rows on dp x cp GPUs, step = predict --cp's, about a quarter of cp 1's")
PY
# --vpp: the interleaved pipeline's model chunks a rank, each row predict --vpp's step; a
# smaller pipeline bubble, the same GPUs; a split the layers do not allow is a row saying why.
"$TC" compare --model llama-3.1-8b --gpus H100-SXM --mode training --dtype bf16 --batch 8 --seq 2048 --pp 4 \
  --microbatches 8 --vpp 1,2,3 --format json > "$W/vpp.json"
"$TC" predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 2048 --pp 4 \
  --microbatches 8 --vpp 2 --format json > "$W/vpp2.json"
python3 - "$W/vpp.json" "$W/vpp2.json" <<'PY'
import json, sys
rows = {r["vpp"]: r for r in json.load(open(sys.argv[1]))["rows"]}; p = json.load(open(sys.argv[2]))
assert sorted(rows) == [1, 2, 3] and rows[2]["gpus"] == rows[1]["gpus"] == 4, rows
assert "12 equal model chunks" in rows[3]["error"], rows[3]
step = p["total_ms"] + p["optimizer_ms"]
assert abs(rows[2]["step_ms"] - step) < 1e-9 * step and p["parallel"]["vpp"] == 2, (rows[2]["step_ms"], step)
assert rows[2]["step_ms"] < rows[1]["step_ms"], (rows[2]["step_ms"], rows[1]["step_ms"])
bubble = p["pipeline_bubble_ms"]
assert abs(rows[2]["pipeline_bubble_ms"] - bubble) < 1e-9 * step and bubble < rows[1]["pipeline_bubble_ms"], rows
print("ok   compare --vpp: rows on the same GPUs, step = predict --vpp's, shorter than plain 1F1B")
PY
# plan --vpp: beside each pipeline layout, the listed interleaved schedules its layers (32) and
# microbatches allow; the first row's step is predict's for that layout.
"$TC" plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 16 --seq 2048 --dtype bf16 --vpp 2,3 \
  --format json > "$W/vplan.json"
python3 - "$W/vplan.json" "$TC" <<'PY'
import json, subprocess, sys
rows = json.load(open(sys.argv[1]))["rows"]
inter = [r for r in rows if r["vpp"] > 1]
assert inter and all(r["vpp"] == 2 and r["pp"] > 1 and 32 % (r["pp"] * 2) == 0 and r["microbatches"] % r["pp"] == 0
                     for r in inter), inter
plain = {(r["dp"], r["tp"], r["pp"], r["cp"], r["microbatches"]) for r in rows if r["vpp"] == 1}
assert all((r["dp"], r["tp"], r["pp"], r["cp"], r["microbatches"]) in plain for r in inter)
r = inter[0]
p = json.loads(subprocess.check_output([sys.argv[2], "predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM",
    "--mode", "training", "--dtype", "bf16", "--batch", "16", "--seq", "2048", "--dp", str(r["dp"]), "--tp", str(r["tp"]),
    "--pp", str(r["pp"]), "--cp", str(r["cp"]), "--microbatches", str(r["microbatches"]), "--vpp", "2",
    "--format", "json"]))
step = p["total_ms"] + p["optimizer_ms"]
assert abs(r["step_ms"] - step) < 1e-9 * step, (r, step)
print("ok   plan --vpp: interleaved layouts beside their plain ones, where Megatron-LM allows them")
PY
"$TC" plan --model gpt2-large --gpu H100-SXM --gpus 4 --global-batch 8 --seq 128 --vpp 2 > "$W/vp.txt" 2>&1 \
  && fail "plan --vpp in eager training ran"
grep -q "^tilecast: error: --vpp applies to mixed-precision training" "$W/vp.txt" || { cat "$W/vp.txt"; fail "plan --vpp eager message"; }
echo "ok   plan --vpp refused in eager training"
# --routing: every MoE layout forecasts its most loaded rank, as predict --routing does; a dense
# model and the eager modes refuse it in one line.
"$TC" plan --model mixtral-8x7b --gpu H100-SXM --gpus 8 --global-batch 64 --mode decode --context 2048 \
  --routing power_law_1.2 --format json > "$W/rplan.json"
"$TC" predict --model mixtral-8x7b --gpu H100-SXM --mode decode --batch 32 --context 2048 --tp 4 --ep 2 \
  --routing power_law_1.2 --format json > "$W/rp.json"
python3 - "$W/rplan.json" "$W/rp.json" "$W/mplan.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]; p = json.load(open(sys.argv[2])); bal = json.load(open(sys.argv[3]))["rows"]
key = lambda r: (r["dp"], r["tp"], r["pp"], r["ep"])
r = next(r for r in rows if key(r) == (2, 4, 1, 2))
assert r["routing"] == "power_law_1.2" and abs(r["tpot_ms"] - p["tpot_ms"]) < 1e-9 * p["tpot_ms"], (r, p["tpot_ms"])
b = next(x for x in bal if key(x) == (2, 4, 1, 2))
# The routing reaches the forecast (the most loaded rank's load); which way the step moves is the
# network's: with every local expert hit, the A100's measured decode steps at power_law_1.2 run
# within 1 % of balanced ones (aiconfigurator moe_perf.csv, 32 tokens, Mixtral's shape, tp 2 ep 2).
assert b["routing"] == "uniform" and r["tpot_ms"] != b["tpot_ms"], (b["routing"], r["tpot_ms"], b["tpot_ms"])
print("ok   plan --routing: replica step = predict --routing's, not the default (uniform) routing's")
PY
expect_fail "--routing power_law_1.2: llama-3.1-8b has no experts" "$TC" plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 \
  --global-batch 64 --mode decode --context 2048 --routing power_law_1.2
expect_fail "--routing does not apply to --mode training" "$TC" plan --model gpt2-large --gpu H100-SXM --gpus 8 \
  --global-batch 64 --seq 1024 --routing power_law_1.2
# Layouts that cannot run are named under the table with their reason: on H800s (a node of 8, no
# network stated) tp 16 and the pipelines crossing nodes.
"$TC" plan --model llama-3.1-405b --gpu H800 --gpus 16 --global-batch 64 --mode decode --context 2048 > "$W/h800.txt"
grep -q "^layouts that cannot run (5):" "$W/h800.txt" || { cat "$W/h800.txt"; fail "plan: skipped layouts not listed"; }
grep -q "dp 1 x tp 16 x pp 1: .*H800.yaml: field 'network_gbps' is needed for a group of 16 GPUs, beyond one node of 8" "$W/h800.txt" \
  || { cat "$W/h800.txt"; fail "plan: tp 16's reason"; }
grep -q "dp 1 x tp 1 x pp 16, .* and 1 more: .*a pipeline hand-over between nodes" "$W/h800.txt" || { cat "$W/h800.txt"; fail "plan: pp's reason"; }
echo "ok   plan names the layouts that cannot run"
expect_fail "--mode decode takes --context L" "$TC" plan --model llama-3.1-8b --gpu H100-SXM --gpus 4 --global-batch 32 --mode decode --seq 10
expect_fail "plan: no layout of 7 GPUs runs the model with the global batch 1; the first: --pp 7" "$TC" plan --model gpt2-large --gpu A100-SXM4-40GB --gpus 7 --global-batch 1 --seq 1024
# capacity routes a MoE model's tokens as predict does: uniform unless told otherwise (the same
# search to the digit as --routing uniform), and --routing balanced changes it (Qwen3-30B-A3B's
# decode batches pick top-8 of 128 experts: a batch of 8 hits 64 balanced, 50.6 uniform).
for r in "" uniform balanced; do
  "$TC" capacity --model qwen3-30b-a3b --gpus H100-SXM --seq 256 --gen 16 --slo-tpot-ms 20 --requests 40 \
    ${r:+--routing $r} --format json > "$W/cap-${r:-default}.json"
done
python3 - "$W/cap-default.json" "$W/cap-uniform.json" "$W/cap-balanced.json" <<'PY'
import json, sys
d, u, b = (json.load(open(f))["rows"][0]["at_max_rate"] for f in sys.argv[1:])
assert d == u, (d, u)
assert d["tpot_ms"] != b["tpot_ms"], (d["tpot_ms"], b["tpot_ms"])
print("ok   capacity routes uniform by default; --routing balanced moves it")
PY
echo "all compare cases passed"
