#!/usr/bin/env bash
# `capacity`: the rate it finds meets the objectives when `predict` forecasts it, the rate it
# says fails does not, the two are within 1 %, a lone request bounds it, and bad input is one line.
# Usage: capacity_test.sh TILECAST_BIN
set -euo pipefail
TC="$1"
. "$(dirname "$0")/expect.sh"  # $W, fail, expect_fail
M=(--model llama-3.1-8b --gpus H100-SXM --seq 1024 --gen 64)
P=(--model llama-3.1-8b --gpu H100-SXM --seq 1024 --gen 64)
E=(--max-batched-tokens 8192 --slo-ttft-ms 150 --slo-tpot-ms 25)

echo "== the rate found meets the objectives in predict; the failing one does not"
"$TC" capacity "${M[@]}" "${E[@]}" --requests 60 --target-rate 50 --price H100-SXM=2 --format json > "$W/c.json"
read -r RATE FAILING < <(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['rows'][0]; print(repr(c['max_rate_rps']), repr(c['failing_rate_rps']))" "$W/c.json")
for r in "$RATE" "$FAILING"; do
  "$TC" predict "${P[@]}" "${E[@]}" --mode generate --batch 60 --max-seqs auto --request-rate "$r" --format json > "$W/p-$r.json"
done
python3 - "$W/c.json" "$W/p-$RATE.json" "$W/p-$FAILING.json" <<'PY'
import json, math, sys
c = json.load(open(sys.argv[1]))["rows"][0]; ok = json.load(open(sys.argv[2])); bad = json.load(open(sys.argv[3]))
assert c["max_rate_rps"] > 0 and not c["unbounded"], c
assert c["failing_rate_rps"] / c["max_rate_rps"] <= 1.0100001, c
assert ok["slo"]["attained_pct"] >= 90 and ok["fits"], ok["slo"]
assert bad["slo"]["attained_pct"] < 90 or not bad["fits"], bad["slo"]
a = c["at_max_rate"]
# The same forecast up to the networks' float32 rounding: capacity memoises kernel forecasts
# made in other batches of queries (other rates), whose last bits may differ with the BLAS's
# blocking (2.6e-9 of the p99 TTFT on one machine).
assert abs(a["goodput_rps"] - ok["slo"]["goodput_rps"]) <= 1e-6 * ok["slo"]["goodput_rps"], (a, ok["slo"])
assert abs(a["ttft_p99_ms"] - ok["ttft_p99_ms"]) <= 1e-6 * ok["ttft_p99_ms"], (a, ok["ttft_p99_ms"])
# A lone request does at least as well as any request at the capacity.
assert c["lone_request"]["ttft_ms"] <= a["ttft_p50_ms"] and c["lone_request"]["tpot_ms"] <= a["tpot_p50_ms"] + 1e-9, c
# The fleet for 50 requests a second: ceil(50 / capacity) one-GPU replicas, at 2 USD each an hour;
# a million requests at the capacity take 1e6 / capacity seconds of one GPU.
n = math.ceil(50 / c["max_rate_rps"] - 1e-9)
assert c["replicas"] == n and c["gpus"] == n and abs(c["usd_per_hour"] - 2 * n) < 1e-9, c
assert abs(c["usd_per_m_requests"] - 2 * 1e6 / c["max_rate_rps"] / 3600) < 1e-9, c
print("ok   capacity %.3f requests/s (%.3f fails), %d replicas for 50/s" % (c["max_rate_rps"], c["failing_rate_rps"], n))
PY

echo "== objectives no request meets: capacity 0, said in the table"
"$TC" capacity "${M[@]}" --slo-ttft-ms 1 --target-rate 5 > "$W/t.txt"
grep -q "^max_rate_rps        0  (no rate meets the objectives" "$W/t.txt" || { cat "$W/t.txt"; fail "no zero capacity line"; }
grep -q "^for 5 requests/s: no number of replicas" "$W/t.txt" || { cat "$W/t.txt"; fail "no replicas line"; }
echo "ok   a 1 ms TTFT objective: capacity 0"

echo "== objectives every rate meets: unbounded"
"$TC" capacity "${M[@]}" --slo-ttft-ms 1e9 --requests 8 --format json > "$W/u.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['rows'][0]; assert c['unbounded'] and c['max_rate_rps'] > 1e5, c" "$W/u.json"
echo "ok   unbounded"

echo "== GPUs x tp: one row each, ranked by USD per million requests; a tp the heads refuse is a row"
"$TC" capacity --model llama-3.1-8b --gpus H100-SXM,B200 --tp 1,3 --seq 1024 --gen 64 "${E[@]:2}" --requests 30 \
  --price H100-SXM=2 --price B200=4 --format json > "$W/r.json"
python3 - "$W/r.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 4, rows
ok = [r for r in rows if "error" not in r]
bad = [r for r in rows if "error" in r]
assert len(ok) == 2 and len(bad) == 2 and all(r["tp"] == 3 and "divisible" in r["error"] for r in bad), bad
cost = [r["usd_per_m_requests"] for r in ok]
assert cost == sorted(cost) and rows[:2] == ok, cost
for r in ok:
    assert abs(r["per_gpu_rps"] - r["max_rate_rps"] / r["tp"]) < 1e-12, r
print("ok   2 rows ranked by cost (%.3f, %.3f USD per million), 2 tp-3 rows refused" % tuple(cost))
PY

echo "== bad input: one line, exit 1"
expect_fail "capacity: needs an objective" "$TC" capacity "${M[@]}"
expect_fail "--request-rate: capacity searches the rate itself" "$TC" capacity "${M[@]}" --slo-ttft-ms 100 --request-rate 2
expect_fail "--attainment: .* out of range \(0, 100\]" "$TC" capacity "${M[@]}" --slo-ttft-ms 100 --attainment 101
expect_fail "--requests: expected 1..65536" "$TC" capacity "${M[@]}" --slo-ttft-ms 100 --requests 0
expect_fail "--target-rate: expected a rate in" "$TC" capacity "${M[@]}" --slo-ttft-ms 100 --target-rate -2
expect_fail "--tp '1,x'" "$TC" capacity "${M[@]}" --slo-ttft-ms 100 --tp 1,x
expect_fail "--slo-tpot-ms: nan out of range" "$TC" capacity "${M[@]}" --slo-tpot-ms nan
expect_fail "capacity: --requests 20000 x --gen 64 is more than the 1000000 steps" "$TC" capacity "${M[@]}" --slo-ttft-ms 100 --requests 20000
expect_fail "unknown GPU" "$TC" capacity --model llama-3.1-8b --gpus H10 --seq 1024 --gen 64 --slo-ttft-ms 100
echo "capacity: all checks passed"
