"""`import tilecast` from the build tree: the same forecasts as the CLI's JSON, no LibTorch
loaded, tilecast's errors as ValueError. Usage: python3 test_module.py BUILD_DIR"""
import json
import subprocess
import sys

build = sys.argv[1]
sys.path.insert(0, build + "/python")
import tilecast  # noqa: E402

tc = build + "/tilecast"


def cli(*args):
    return json.loads(subprocess.run([tc, *args, "--format", "json"], check=True, capture_output=True, text=True).stdout)


def same_as_cli(command, **kw):
    """tilecast.<command>(**kw), asserted equal to the CLI's `command` given the same options
    (--name-with-dashes, lists comma-joined; compare's, capacity's and plan's JSON rows); returns it."""
    py = getattr(tilecast, command.replace("-", "_"))(**kw)
    args = []
    for k, v in kw.items():
        args += ["--" + k.replace("_", "-"), ",".join(map(str, v)) if isinstance(v, list) else str(v)]
    sh = cli(command, *args)
    assert py == (sh["rows"] if command in ("compare", "capacity", "plan") else sh), (command, kw)
    return py


# predict: the dict the CLI prints, key for key.
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=4, seq=512, mode="generate", gen=16)
sh = cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "4", "--seq", "512", "--mode",
         "generate", "--gen", "16")
assert py == sh, (set(py) ^ set(sh), py.get("ttft_ms"), sh.get("ttft_ms"))
assert py["tpot_ms"] > 0 and py["ttft_ms"] > py["tpot_ms"]
# A MoE model's experts in a weight-only format: the same dict, the format stated.
py = tilecast.predict(model="mixtral-8x7b", gpu="H100-SXM", batch=8, context=1024, mode="decode", tp=2,
                      expert_dtype="int4")
sh = cli("predict", "--model", "mixtral-8x7b", "--gpu", "H100-SXM", "--batch", "8", "--context", "1024", "--mode",
         "decode", "--tp", "2", "--expert-dtype", "int4")
assert py == sh and py["expert_dtype"] == "int4" and py["dtype"] == "bf16", (py.get("expert_dtype"), py.get("dtype"))
rows = tilecast.compare(model=["mixtral-8x7b", "llama-3.1-8b"], gpus="H100-SXM", mode="decode", batch=8,
                        context=1024, tp=2, expert_dtype="mxfp4")
assert rows == cli("compare", "--model", "mixtral-8x7b,llama-3.1-8b", "--gpus", "H100-SXM", "--mode", "decode",
                   "--batch", "8", "--context", "1024", "--tp", "2", "--expert-dtype", "mxfp4")["rows"], rows
assert {r["model"]: r["expert_dtype"] for r in rows} == {"mixtral-8x7b": "mxfp4", "llama-3.1-8b": None}, rows
rows = tilecast.plan(model="gpt-oss-120b", gpu="H100-SXM", gpus=2, global_batch=16, mode="decode", context=2048,
                     expert_dtype="bf16")
assert rows == cli("plan", "--model", "gpt-oss-120b", "--gpu", "H100-SXM", "--gpus", "2", "--global-batch", "16",
                   "--mode", "decode", "--context", "2048", "--expert-dtype", "bf16")["rows"], rows[:1]
assert {r["expert_dtype"] for r in rows} == {"bf16"}, rows[:1]
py = tilecast.predict(model="gpt2-large", gpu="A100-SXM4-40GB", batch=4, seq=1024, mode="training", tp=2)
sh = cli("predict", "--model", "gpt2-large", "--gpu", "A100-SXM4-40GB", "--batch", "4", "--seq", "1024",
         "--mode", "training", "--tp", "2")
assert py == sh
# Mixed-precision training: the same dict; ZeRO-1 over 4 ranks holds a quarter of the 12 B of
# master weights and moments per parameter; the layout and recomputation are stated.
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=4, seq=2048, mode="training", dtype="bf16", dp=4,
                      zero=1, recompute="full")
sh = cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "4", "--seq", "2048", "--mode",
         "training", "--dtype", "bf16", "--dp", "4", "--zero", "1", "--recompute", "full")
assert py == sh and py["parallel"]["zero"] == 1 and py["recompute"] == "full", (py["parallel"], py.get("recompute"))
assert abs(py["optimizer_gb"] - 12 * 8030261248 / 4 / 1e9) < 1e-9 and 0 < py["mfu_pct"] < 100, py["optimizer_gb"]
assert py["train_days"] is None  # no run length asked
rows = tilecast.compare(model="llama-3.1-8b", gpus=["H100-SXM", "H200"], mode="training", dtype="bf16", batch=16,
                        seq=4096, dp=8, zero=1, train_tokens=2e12, prices={"H100-SXM": 2.0})
assert rows == cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM,H200", "--mode", "training", "--dtype",
                   "bf16", "--batch", "16", "--seq", "4096", "--dp", "8", "--zero", "1", "--train-tokens", "2e12",
                   "--price", "H100-SXM=2")["rows"], rows
h100 = next(r for r in rows if r["gpu"] == "H100-SXM")
assert h100["train_usd"] > 0 and next(r for r in rows if r["gpu"] == "H200")["train_usd"] is None, rows
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=4, global_batch=8, seq=2048, dtype="bf16", zero=1)
assert rows == cli("plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--gpus", "4", "--global-batch", "8",
                   "--seq", "2048", "--dtype", "bf16", "--zero", "1")["rows"] and all(r["dtype"] == "bf16" for r in rows)
# plan with zero="auto", recompute="auto" searches every stage and both: its best layout that fits is
# no slower than the best of zero=1 alone, and every stage shows up.
auto = tilecast.plan(model="llama-3.1-70b", gpu="H100-SXM", gpus=64, global_batch=128, seq=4096, dtype="bf16",
                     zero="auto", recompute="auto", sequence_parallel=True)
one = tilecast.plan(model="llama-3.1-70b", gpu="H100-SXM", gpus=64, global_batch=128, seq=4096, dtype="bf16", zero=1,
                    sequence_parallel=True)
assert auto[0]["fits"] and auto[0]["step_ms"] <= min(r["step_ms"] for r in one if r["fits"]), (auto[0], one[0])
assert {r["zero"] for r in auto} == {0, 1, 2, 3} and {r["recompute"] for r in auto} == {"none", "full"}
try:
    tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=1, seq=128, mode="training", recompute="full")
    raise AssertionError("recompute without a mixed-precision dtype was accepted")
except ValueError as e:
    assert "recompute applies to mixed-precision training (mode training dtype bf16|fp16|fp8)" in str(e), e
# Every error names the keyword that carries the option here, not the CLI's flag.
for kw, msg in ((dict(mode="decode", batch=1), "mode decode needs context L"),
                (dict(mode="training", dtype="bf16", batch=1, seq=128, zero=4), "zero: expected 0, 1, 2, 3 or auto (plan), got '4'"),
                (dict(mode="generate", batch=1, seq=128, gen=4, cached_prefix=128), "cached_prefix: 128 out of range")):
    try:
        tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", **kw)
        raise AssertionError("predict accepted %r" % kw)
    except ValueError as e:
        assert msg in str(e) and "--" not in str(e), e
# A serving pipeline (tp 4 x pp 2): the same dict, with the engine's microbatches.
py = tilecast.predict(model="llama-3.1-70b", gpu="H100-SXM", batch=16, seq=1024, mode="generate", gen=8, tp=4, pp=2)
sh = cli("predict", "--model", "llama-3.1-70b", "--gpu", "H100-SXM", "--batch", "16", "--seq", "1024", "--mode",
         "generate", "--gen", "8", "--tp", "4", "--pp", "2")
assert py == sh and py["parallel"] == {"tp": 4, "pp": 2, "microbatches": 2, "ep": 1, "dp_attention": False, "moe_a2a": "none"}, py["parallel"]
# Chunked prefill: the same dict with a step budget; a prompt chunk after its prefix as a kernel.
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=4, seq=1000, mode="generate", gen=16,
                      max_batched_tokens=2048)
sh = cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "4", "--seq", "1000", "--mode",
         "generate", "--gen", "16", "--max-batched-tokens", "2048")
assert py == sh and py["prefill_steps"] == 2 and py["ttft_max_ms"] > py["ttft_ms"], (py["prefill_steps"], py["ttft_ms"])
k = tilecast.predict_kernel(op="attention_prefill", shape=[1, 2048, 32, 8, 128], gpu="H100-SXM", prefix=6144)
assert k == cli("predict-kernel", "--op", "attention_prefill", "--shape", "1,2048,32,8,128", "--gpu", "H100-SXM",
                "--prefix", "6144") and k["shape"].endswith(",p6144"), k["shape"]
rows = tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM", mode="generate", batch=[4, 16], seq=1000, gen=8,
                        max_batched_tokens=4096)
sh = cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--mode", "generate", "--batch", "4,16",
         "--seq", "1000", "--gen", "8", "--max-batched-tokens", "4096")["rows"]
assert rows == sh and {r["max_batched_tokens"] for r in rows} == {4096}, rows
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=1000, mode="generate", gen=16, max_seqs=4)
assert py == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "1000", "--mode",
                 "generate", "--gen", "16", "--max-seqs", "4") and py["max_seqs"] == 4
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=512, seq=2048, mode="generate", gen=32,
                      max_seqs="auto")
assert py == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "512", "--seq", "2048",
                 "--mode", "generate", "--gen", "32", "--max-seqs", "auto") and py["max_seqs_auto"], py["max_seqs"]
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=2, global_batch=8, mode="generate", seq=512, gen=8,
                     max_batched_tokens=2048)
sh = cli("plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--gpus", "2", "--global-batch", "8", "--mode",
         "generate", "--seq", "512", "--gen", "8", "--max-batched-tokens", "2048")["rows"]
assert rows == sh and all(r["pp"] == 1 for r in rows), rows
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=4096, mode="prefill", cached_prefix=3072)
assert py == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "4096",
                 "--mode", "prefill", "--cached-prefix", "3072") and py["cached_prefix"] == 3072
rows = tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM", mode="generate", batch=8, seq=4096, gen=8,
                        cached_prefix=3072)
assert rows == cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--mode", "generate", "--batch", "8",
                   "--seq", "4096", "--gen", "8", "--cached-prefix", "3072")["rows"] and rows[0]["cached_prefix"] == 3072
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=4, seq=1000, mode="generate", gen=16,
                      max_batched_tokens=2048, schedule="prefill-first")
assert py == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "4", "--seq", "1000", "--mode",
                 "generate", "--gen", "16", "--max-batched-tokens", "2048", "--schedule", "prefill-first")
assert py["schedule"] == "prefill-first"
py = tilecast.predict(model="llama-3.1-70b", gpu="H100-SXM", batch=8, seq=2048, mode="generate", gen=64, tp=4,
                      spec_draft="llama-3.1-8b", spec_accept=0.7)
assert py == cli("predict", "--model", "llama-3.1-70b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "2048", "--mode",
                 "generate", "--gen", "64", "--tp", "4", "--spec-draft", "llama-3.1-8b", "--spec-accept", "0.7")
assert py["speculative"]["tokens"] == 4, py["speculative"]
py = tilecast.predict(model="deepseek-v3", gpu="H200", batch=8, seq=1024, mode="generate", gen=32, tp=8,
                      spec_draft="mtp", spec_accept=0.8, spec_tokens=3)
assert py == cli("predict", "--model", "deepseek-v3", "--gpu", "H200", "--batch", "8", "--seq", "1024", "--mode",
                 "generate", "--gen", "32", "--tp", "8", "--spec-draft", "mtp", "--spec-accept", "0.8",
                 "--spec-tokens", "3")
assert py["speculative"]["draft"] == "deepseek-v3-mtp", py["speculative"]
rows = tilecast.compare(model="deepseek-v3", gpus="H200", mode="generate", batch=8, seq=1024, gen=32, tp=8,
                        spec_draft="mtp", spec_accept=0.8, spec_tokens=3)
assert rows == cli("compare", "--model", "deepseek-v3", "--gpus", "H200", "--mode", "generate", "--batch", "8",
                   "--seq", "1024", "--gen", "32", "--tp", "8", "--spec-draft", "mtp", "--spec-accept", "0.8",
                   "--spec-tokens", "3")["rows"]
assert rows[0]["speculative"] == {"draft": "deepseek-v3-mtp", "tokens": 3, "accept": 0.8}, rows[0]
assert abs(rows[0]["tpot_ms"] - py["tpot_ms"]) < 1e-9, (rows[0]["tpot_ms"], py["tpot_ms"])
rows = tilecast.plan(model="deepseek-v3", gpu="H200", gpus=8, global_batch=8, mode="generate", seq=1024, gen=32,
                     spec_draft="mtp", spec_accept=0.8, spec_tokens=3)
assert rows == cli("plan", "--model", "deepseek-v3", "--gpu", "H200", "--gpus", "8", "--global-batch", "8", "--mode",
                   "generate", "--seq", "1024", "--gen", "32", "--spec-draft", "mtp", "--spec-accept", "0.8",
                   "--spec-tokens", "3")["rows"]
same = next(r for r in rows if (r["dp"], r["tp"], r["ep"]) == (1, 8, 1))
assert same["speculative"]["draft"] == "deepseek-v3-mtp" and abs(same["tpot_ms"] - py["tpot_ms"]) < 1e-9, same
# SGLang's DP attention: predict, compare and plan as the CLI's, the KV room the group's.
py = tilecast.predict(model="deepseek-v3", gpu="H200", batch=256, context=2048, mode="decode", tp=8, dp_attention=True)
assert py == cli("predict", "--model", "deepseek-v3", "--gpu", "H200", "--batch", "256", "--context", "2048", "--mode",
                 "decode", "--tp", "8", "--dp-attention")
assert py["parallel"]["dp_attention"] is True and py["kv_ranks"] == 8, (py["parallel"], py["kv_ranks"])
# Prefill-decode disaggregation: as the CLI's; prefill_ep alone named by its keyword.
dis = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=1000, gen=16, mode="generate", tp=4,
                       prefill_tp=2)
assert dis == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "1000", "--gen",
                  "16", "--mode", "generate", "--tp", "4", "--prefill-tp", "2")
assert dis["disaggregation"]["prefill_tp"] == 2 and dis["parallel"]["tp"] == 4, (dis["disaggregation"], dis["parallel"])
rows = tilecast.capacity(model="llama-3.1-8b", gpus="H100-SXM", tp=1, seq=1024, gen=64, slo_tpot_ms=8.0, requests=40,
                         prefill_tp=1)
assert rows == cli("capacity", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--tp", "1", "--seq", "1024", "--gen",
                   "64", "--slo-tpot-ms", "8", "--requests", "40", "--prefill-tp", "1")["rows"]
assert rows[0]["gpus_per_replica"] == 2 and abs(rows[0]["per_gpu_rps"] - rows[0]["max_rate_rps"] / 2) < 1e-9, rows[0]
# compare: every row disaggregated, its GPUs counting the prefill instance, as the CLI's.
rows = tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM", tp=[1, 2], batch=8, seq=1000, gen=16, mode="generate",
                        prefill_tp=2)
assert rows == cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--tp", "1,2", "--batch", "8", "--seq",
                   "1000", "--gen", "16", "--mode", "generate", "--prefill-tp", "2")["rows"]
assert sorted((r["tp"], r["gpus"], r["prefill_tp"]) for r in rows) == [(1, 3, 2), (2, 4, 2)], rows
# plan: the aggregated layouts and every split of a replica, as the CLI's.
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=2, global_batch=16, mode="generate", seq=512, gen=16,
                     disaggregate=True)
assert rows == cli("plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--gpus", "2", "--global-batch", "16", "--mode",
                   "generate", "--seq", "512", "--gen", "16", "--disaggregate")["rows"]
assert sorted((r["dp"], r["tp"], r["pp"], r["prefill_tp"] or 0) for r in rows) == [(1, 1, 1, 1), (1, 1, 2, 0), (1, 2, 1, 0), (2, 1, 1, 0)], rows
# Three GPUs: a decode GPU beside two prefill instances of one GPU is a layout too, predict's.
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=3, global_batch=16, mode="generate", seq=512, gen=16,
                     disaggregate=True)
two = [r for r in rows if r["prefill_instances"] == 2]
assert [(r["tp"], r["prefill_tp"], r["gpus"]) for r in two] == [(1, 1, 3)], rows
xp = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=16, seq=512, gen=16, mode="generate", prefill_tp=1,
                      prefill_instances=2)
assert abs(two[0]["step_ms"] - xp["e2e_ms"]) < 1e-9 * xp["e2e_ms"], (two[0], xp["e2e_ms"])
# Several prefill instances: as the CLI's; a batch at once splits over them, each step the
# prefill of its share on its own (8 prompts over 2 instances: steps of 4).
xp = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=1000, gen=16, mode="generate", tp=4,
                      prefill_tp=2, prefill_instances=2)
assert xp == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "1000", "--gen",
                 "16", "--mode", "generate", "--tp", "4", "--prefill-tp", "2", "--prefill-instances", "2")
half = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=4, seq=1000, mode="prefill", tp=2)
x = xp["disaggregation"]
assert x["prefill_instances"] == 2 and abs(x["prefill_ms"] - 2 * half["ttft_ms"]) < 1e-9 * x["prefill_ms"], (x, half)
assert abs(xp["ttft_ms"] - (half["ttft_ms"] + x["kv_transfer_ms"])) < 1e-9 * xp["ttft_ms"], (xp["ttft_ms"], x)
assert xp["ttft_ms"] < dis["ttft_ms"] and xp["tpot_ms"] == dis["tpot_ms"], (xp["ttft_ms"], dis["ttft_ms"])
# compare over lists of instance counts: the CLI's rows, each as predict forecasts it.
rows = same_as_cli("compare", model="llama-3.1-8b", gpus="H100-SXM", tp=2, batch=8, seq=1000, gen=16, mode="generate",
                   prefill_tp=1, prefill_instances=[1, 2], decode_instances=[1, 2])
assert sorted((r["prefill_instances"], r["decode_instances"], r["gpus"]) for r in rows) == \
    [(1, 1, 3), (1, 2, 5), (2, 1, 4), (2, 2, 6)], rows
for r in rows:
    x = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", tp=2, batch=8, seq=1000, gen=16, mode="generate",
                         prefill_tp=1, prefill_instances=r["prefill_instances"], decode_instances=r["decode_instances"])
    assert abs(x["ttft_ms"] - r["ttft_ms"]) < 1e-9 * x["ttft_ms"] and x["disaggregation"]["gpus"] == r["gpus"], (x, r)
# capacity over lists of instance counts: the CLI's rows; the 1 + 1 row is capacity's of one
# prefill and one decode instance.
rows = same_as_cli("capacity", model="llama-3.1-8b", gpus="H100-SXM", tp=1, seq=1024, gen=64, slo_tpot_ms=8.0,
                   requests=40, prefill_tp=1, prefill_instances=[1, 2], decode_instances=[1, 2])
assert sorted((r["prefill_instances"], r["decode_instances"], r["gpus_per_replica"]) for r in rows) == \
    [(1, 1, 2), (1, 2, 3), (2, 1, 3), (2, 2, 4)], rows
one = tilecast.capacity(model="llama-3.1-8b", gpus="H100-SXM", tp=1, seq=1024, gen=64, slo_tpot_ms=8.0, requests=40,
                        prefill_tp=1)
pair = [r for r in rows if r["prefill_instances"] == 1 and r["decode_instances"] == 1]
assert pair == one, (pair, one)
# plan: two prefill and two decode instances of one GPU in a replica forecast as two replicas
# of one each (a batch at once splits evenly over both).
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=4, global_batch=64, mode="generate", seq=1024, gen=256,
                     disaggregate=True)
xy = [r for r in rows if r["prefill_instances"] == 2 and r["decode_instances"] == 2]
pair = [r for r in rows if r["dp"] == 2 and r["tp"] == 1 and r["prefill_tp"] == 1 and r["prefill_instances"] == 1]
assert len(xy) == 1 and len(pair) == 1 and xy[0]["gpus"] == pair[0]["gpus"] == 4, (xy, pair)
assert all(xy[0][k] == pair[0][k] for k in ("step_ms", "ttft_ms", "tpot_ms", "tokens_per_s")), (xy[0], pair[0])
assert {(r["prefill_instances"], r["decode_instances"]) for r in rows if r["prefill_tp"] == 1 and r["tp"] == 1} >= {(1, 3), (3, 1), (2, 2)}, rows
# Several decode instances: as the CLI's; 8 prompts at once over 2 decode instances of tp 1
# decode in shares of 4, each at the TPOT of an aggregated generate of 4.
xd = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=1000, gen=16, mode="generate", tp=1,
                      prefill_tp=1, decode_instances=2)
assert xd == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "1000", "--gen",
                 "16", "--mode", "generate", "--tp", "1", "--prefill-tp", "1", "--decode-instances", "2")
four = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=4, seq=1000, gen=16, mode="generate", tp=1)
assert abs(xd["tpot_ms"] - four["tpot_ms"]) < 1e-9 * four["tpot_ms"], (xd["tpot_ms"], four["tpot_ms"])
assert xd["disaggregation"]["decode_instances"] == 2 and xd["disaggregation"]["gpus"] == 3, xd["disaggregation"]
try:
    tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=100, gen=4, mode="generate", decode_instances=2)
    raise AssertionError("decode_instances without prefill_tp accepted")
except ValueError as e:
    assert "decode_instances needs prefill_tp" in str(e), e
rows = tilecast.capacity(model="llama-3.1-8b", gpus="H100-SXM", tp=1, seq=1024, gen=64, slo_tpot_ms=8.0, requests=40,
                         prefill_tp=1, prefill_instances=2)
assert rows[0]["gpus_per_replica"] == 3 and rows[0]["prefill_instances"] == 2, rows[0]
# The search's forecast at its rate is predict's at that rate, balance included.
at = rows[0]["at_max_rate"]
pr = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=40, seq=1024, gen=64, mode="generate", tp=1,
                      prefill_tp=1, prefill_instances=2, request_rate=rows[0]["max_rate_rps"], slo_tpot_ms=8.0,
                      max_seqs="auto")
assert abs(pr["ttft_ms"] - at["ttft_ms"]) < 1e-9 * at["ttft_ms"], (pr["ttft_ms"], at)
assert abs(pr["disaggregation"]["prefill_per_decode"] - at["prefill_per_decode"]) < 1e-6 * at["prefill_per_decode"], (pr["disaggregation"], at)
try:
    tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=100, gen=4, mode="generate", prefill_instances=2)
    raise AssertionError("prefill_instances without prefill_tp accepted")
except ValueError as e:
    assert "prefill_instances needs prefill_tp" in str(e), e
try:
    tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=100, gen=4, mode="generate", prefill_ep=2)
    raise AssertionError("prefill_ep without prefill_tp accepted")
except ValueError as e:
    assert "prefill_ep needs prefill_tp" in str(e), e
# DeepEP's all-to-all MoE under DP attention: as the CLI's; a bad value named by its keyword.
a2a = tilecast.predict(model="deepseek-v3", gpu="H200", batch=256, context=2048, mode="decode", tp=8, ep=8,
                       dp_attention=True, moe_a2a="deepep")
assert a2a == cli("predict", "--model", "deepseek-v3", "--gpu", "H200", "--batch", "256", "--context", "2048", "--mode",
                  "decode", "--tp", "8", "--ep", "8", "--dp-attention", "--moe-a2a", "deepep")
assert a2a["parallel"]["moe_a2a"] == "deepep" and py["parallel"]["moe_a2a"] == "none", (a2a["parallel"], py["parallel"])
rows = tilecast.compare(model="deepseek-v3", gpus="H200", mode="decode", batch=256, context=2048, tp=8, ep=[1, 8],
                        dp_attention=True, moe_a2a="deepep")
assert rows == cli("compare", "--model", "deepseek-v3", "--gpus", "H200", "--mode", "decode", "--batch", "256",
                   "--context", "2048", "--tp", "8", "--ep", "1,8", "--dp-attention", "--moe-a2a", "deepep")["rows"]
assert {(r["ep"], r["moe_a2a"]) for r in rows} == {(1, "none"), (8, "deepep")}, rows
assert abs(next(r for r in rows if r["ep"] == 8)["tpot_ms"] - a2a["tpot_ms"]) < 1e-9
try:
    tilecast.predict(model="deepseek-v3", gpu="H200", batch=8, context=128, mode="decode", tp=8, ep=8,
                     dp_attention=True, moe_a2a="nccl")
    raise AssertionError("moe_a2a='nccl' accepted")
except ValueError as e:
    assert "moe_a2a: expected none or deepep, got 'nccl'" in str(e), e
rows = tilecast.compare(model="deepseek-v3", gpus="H200", mode="decode", batch=256, context=2048, tp=[1, 8],
                        dp_attention=True)
assert rows == cli("compare", "--model", "deepseek-v3", "--gpus", "H200", "--mode", "decode", "--batch", "256",
                   "--context", "2048", "--tp", "1,8", "--dp-attention")["rows"]
assert {(r["tp"], r["dp_attention"]) for r in rows} == {(1, False), (8, True)}, rows
assert next(r for r in rows if r["tp"] == 8)["max_sequences"] == py["max_sequences"]
rows = tilecast.plan(model="deepseek-v3", gpu="H200", gpus=8, global_batch=256, mode="decode", context=2048,
                     dp_attention=True)
assert rows == cli("plan", "--model", "deepseek-v3", "--gpu", "H200", "--gpus", "8", "--global-batch", "256",
                   "--mode", "decode", "--context", "2048", "--dp-attention")["rows"]
assert {r["dp_attention"] for r in rows if r["tp"] == 8} == {False, True}, rows
assert all(not r["dp_attention"] for r in rows if r["tp"] == 1 or r["pp"] > 1), rows
rows = tilecast.capacity(model="deepseek-v2-lite", gpus="H100-SXM", tp=[1, 2], seq=1024, gen=32, slo_tpot_ms=30.0,
                         requests=40, dp_attention=True)
assert rows == cli("capacity", "--model", "deepseek-v2-lite", "--gpus", "H100-SXM", "--tp", "1,2", "--seq", "1024",
                   "--gen", "32", "--slo-tpot-ms", "30", "--requests", "40", "--dp-attention")["rows"]
assert {(r["tp"], r["dp_attention"]) for r in rows} == {(1, False), (2, True)}, rows
rows = tilecast.capacity(model="deepseek-v2-lite", gpus="H100-SXM", tp=2, ep=2, seq=1024, gen=32, slo_tpot_ms=30.0,
                         requests=40, dp_attention=True, moe_a2a="deepep")
assert rows == cli("capacity", "--model", "deepseek-v2-lite", "--gpus", "H100-SXM", "--tp", "2", "--ep", "2", "--seq",
                   "1024", "--gen", "32", "--slo-tpot-ms", "30", "--requests", "40", "--dp-attention", "--moe-a2a",
                   "deepep")["rows"]
assert [(r["tp"], r["moe_a2a"]) for r in rows] == [(2, "deepep")], rows
k = tilecast.predict_kernel(op="moe", shape=[16, 7168, 2048, 8, 384], gpu="H200", dtype="int4", moe_tp=8,
                            weight_group=32)
assert k == cli("predict-kernel", "--op", "moe", "--shape", "16,7168,2048,8,384", "--gpu", "H200", "--dtype", "int4",
                "--moe-tp", "8", "--weight-group", "32") and k["shape"].endswith(",g32"), k["shape"]
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=50, seq=1024, mode="generate", gen=64,
                      max_batched_tokens=8192, request_rate=8.0)
assert py == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "50", "--seq", "1024", "--mode",
                 "generate", "--gen", "64", "--max-batched-tokens", "8192", "--request-rate", "8")
assert py["arrivals"] == "poisson" and py["ttft_max_ms"] >= py["ttft_ms"] > 0
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=2, global_batch=32, mode="generate", seq=1024, gen=32,
                     request_rate=4.0, arrivals="uniform")
assert rows == cli("plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--gpus", "2", "--global-batch", "32",
                   "--mode", "generate", "--seq", "1024", "--gen", "32", "--request-rate", "4",
                   "--arrivals", "uniform")["rows"]
assert {(r["request_rate"], r["arrivals"]) for r in rows} == {(4.0, "uniform")}, rows[:1]
# Two replicas share the 4 requests a second: each is one GPU serving 16 requests at 2 a second.
two = next(r for r in rows if r["dp"] == 2)
one = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=16, seq=1024, mode="generate", gen=32,
                       request_rate=2.0, arrivals="uniform")
assert two["ttft_ms"] == one["ttft_ms"] and two["tpot_ms"] == one["tpot_ms"], (two["ttft_ms"], one["ttft_ms"])
# With objectives plan ranks by goodput (all replicas).
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=2, global_batch=32, mode="generate", seq=1024, gen=32,
                     request_rate=16.0, slo_ttft_ms=60.0)
good = [r["goodput_rps"] for r in rows if r["fits"]]
assert good == sorted(good, reverse=True) and "slo_attained_pct" in rows[0], good
# predict_kernel: shape as a list or a string.
k = tilecast.predict_kernel(op="gemm", shape=[64, 4096, 4096], gpu="H100-SXM", dtype="fp8")
assert k == cli("predict-kernel", "--op", "gemm", "--shape", "64,4096,4096", "--gpu", "H100-SXM", "--dtype", "fp8")
assert k["dtype"] == "fp8" and k["latency_ms"] > 0 and k["sustained"] is False
# sustained: the kernel inside a model's step, at the clock the H100's sheet rates its tensor peak at.
ks = tilecast.predict_kernel(op="gemm", shape="4096,4096,4096", gpu="H100-SXM", sustained=True)
assert ks == cli("predict-kernel", "--op", "gemm", "--shape", "4096,4096,4096", "--gpu", "H100-SXM", "--sustained")
assert ks["sustained"] is True
assert ks["latency_ms"] > tilecast.predict_kernel(op="gemm", shape="4096,4096,4096", gpu="H100-SXM")["latency_ms"]
# hf_eager: Hugging Face's eager model, as `predict --hf-eager`; slower than the engine's fused kernels.
he = tilecast.predict(model="llama-3.1-8b", gpu="H200", batch=2, seq=1024, mode="prefill", hf_eager=True)
assert he == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H200", "--batch", "2", "--seq", "1024", "--mode",
                 "prefill", "--hf-eager")
assert he["hf_eager"] is True and he["ttft_ms"] > tilecast.predict(model="llama-3.1-8b", gpu="H200", batch=2, seq=1024,
                                                                   mode="prefill")["ttft_ms"]
rows = tilecast.compare(model="llama-3.1-8b", gpus=["H200", "L40S"], mode="training", dtype="bf16", batch=2, seq=1024,
                        hf_eager=True)
assert rows == cli("compare", "--model", "llama-3.1-8b", "--gpus", "H200,L40S", "--mode", "training", "--dtype", "bf16",
                   "--batch", "2", "--seq", "1024", "--hf-eager")["rows"]
assert all(r["hf_eager"] for r in rows) and {r["gpu"] for r in rows} == {"H200", "L40S"}, rows
# plan(hf_eager=True): the same rows as `plan --hf-eager`, data parallelism and accumulation only.
rows = tilecast.plan(model="llama-3.1-8b", gpu="H200", gpus=8, global_batch=64, seq=2048, dtype="bf16", hf_eager=True)
assert rows == cli("plan", "--model", "llama-3.1-8b", "--gpu", "H200", "--gpus", "8", "--global-batch", "64", "--seq",
                   "2048", "--dtype", "bf16", "--hf-eager")["rows"]
assert [(r["dp"], r["tp"], r["pp"], r["microbatches"], r["fits"]) for r in rows] == [(8, 1, 1, 2, True), (8, 1, 1, 1, False)], rows
# compare: rows like `compare --format json`, ready for a DataFrame.
rows = tilecast.compare(model="gpt2-large", gpus=["H100-SXM", "L4"], mode="training", batch=[1, 4], seq=1024,
                        prices={"H100-SXM": 3.6})
sh = cli("compare", "--model", "gpt2-large", "--gpus", "H100-SXM,L4", "--mode", "training", "--batch", "1,4",
         "--seq", "1024", "--price", "H100-SXM=3.6")["rows"]
assert rows == sh, (rows, sh)
assert len(rows) == 4 and {r["gpu"] for r in rows} == {"H100-SXM", "L4"}
# ep: the expert-parallel sizes of a serving MoE layout, as `compare --ep`.
rows = tilecast.compare(model="mixtral-8x7b", gpus="H100-SXM", mode="decode", batch=8, context=1024, tp=2, ep=[1, 2])
sh = cli("compare", "--model", "mixtral-8x7b", "--gpus", "H100-SXM", "--mode", "decode", "--batch", "8",
         "--context", "1024", "--tp", "2", "--ep", "1,2")["rows"]
assert rows == sh and [r["ep"] for r in sorted(rows, key=lambda r: r["ep"])] == [1, 2], rows
# cp: context-parallel sizes of mixed-precision training, as `compare --cp` and `predict --cp`.
rows = tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM", mode="training", dtype="bf16", batch=2, seq=8192, cp=[1, 4])
sh = cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--mode", "training", "--dtype", "bf16",
         "--batch", "2", "--seq", "8192", "--cp", "1,4")["rows"]
assert rows == sh and sorted(r["cp"] for r in rows) == [1, 4], rows
p = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=2, seq=8192, mode="training", dtype="bf16", cp=4)
assert p == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "2", "--seq", "8192",
                "--mode", "training", "--dtype", "bf16", "--cp", "4") and p["parallel"]["cp"] == 4
# vpp: the interleaved pipeline, as `compare --vpp` and `predict --vpp`.
rows = tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM", mode="training", dtype="bf16", batch=8, seq=2048, pp=4,
                        microbatches=8, vpp=[1, 2])
sh = cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--mode", "training", "--dtype", "bf16",
         "--batch", "8", "--seq", "2048", "--pp", "4", "--microbatches", "8", "--vpp", "1,2")["rows"]
assert rows == sh and sorted(r["vpp"] for r in rows) == [1, 2], rows
p = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=8, seq=2048, mode="training", dtype="bf16", pp=4,
                     microbatches=8, vpp=2)
assert p == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "8", "--seq", "2048",
                "--mode", "training", "--dtype", "bf16", "--pp", "4", "--microbatches", "8", "--vpp", "2") \
    and p["parallel"]["vpp"] == 2
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=8, global_batch=16, seq=2048, dtype="bf16", vpp=[2])
assert rows == cli("plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--gpus", "8", "--global-batch", "16",
                   "--seq", "2048", "--dtype", "bf16", "--vpp", "2")["rows"] and any(r["vpp"] == 2 for r in rows)
# plan: the layouts `tilecast plan --format json` ranks, in its order (20: dp x tp x pp x ep, as the CLI test counts).
rows = tilecast.plan(model="mixtral-8x7b", gpu="H100-SXM", gpus=8, global_batch=64, mode="decode", context=2048)
sh = cli("plan", "--model", "mixtral-8x7b", "--gpu", "H100-SXM", "--gpus", "8", "--global-batch", "64",
         "--mode", "decode", "--context", "2048")["rows"]
assert rows == sh and len(rows) == 20, (len(rows), len(sh))
rows = tilecast.plan(model="mixtral-8x7b", gpu="H100-SXM", gpus=8, global_batch=64, mode="decode", context=2048,
                     routing="power_law_1.2")
sh = cli("plan", "--model", "mixtral-8x7b", "--gpu", "H100-SXM", "--gpus", "8", "--global-batch", "64",
         "--mode", "decode", "--context", "2048", "--routing", "power_law_1.2")["rows"]
assert rows == sh and {r["routing"] for r in rows} == {"power_law_1.2"}, rows[:1]
try:
    tilecast.plan(model="gpt2-large", gpu="A100-SXM4-40GB", gpus=7, global_batch=1, seq=1024)
    raise SystemExit("FAIL: a plan with no layout accepted")
except ValueError as e:
    assert "no layout of 7 GPUs" in str(e), e
# gpus
g = tilecast.gpus()
assert any(x["cuda_name"] == "NVIDIA H200" for x in g) and g == cli("gpus")
# models: the bundled configs, as `tilecast models --format json`.
ms = tilecast.models()
assert ms == cli("models") and {"phi-4", "llama-3.1-8b"} <= {m["name"] for m in ms}, ms
# Errors: one line, ValueError.
try:
    tilecast.predict(model="gpt2-large", gpu="H10", batch=1, seq=16)
    raise SystemExit("FAIL: unknown GPU accepted")
except ValueError as e:
    assert "unknown GPU 'H10'" in str(e) and "\n" not in str(e), e
try:
    tilecast.predict_kernel(op="gemm", shape="64,4096,4096", gpu="A100-SXM4-40GB", dtype="fp8")
    raise SystemExit("FAIL: fp8 on an A100 accepted")
except ValueError as e:
    assert "has no fp8 tensor-core peak" in str(e), e
# Objectives: goodput and percentiles as the CLI's JSON gives them; compare's rows carry them.
args = dict(model="llama-3.1-8b", gpu="H100-SXM", mode="generate", batch=40, seq=1024, gen=64, max_batched_tokens=8192,
            request_rate=8.0, slo_ttft_ms=50.0, slo_tpot_ms=12.0)
py = tilecast.predict(**args)
sh = cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--mode", "generate", "--batch", "40", "--seq", "1024",
         "--gen", "64", "--max-batched-tokens", "8192", "--request-rate", "8", "--slo-ttft-ms", "50", "--slo-tpot-ms", "12")
assert py["slo"] == sh["slo"] and py["ttft_p99_ms"] == sh["ttft_p99_ms"], (py["slo"], sh["slo"])
assert 0 <= py["slo"]["requests_meeting"] <= 40 and py["ttft_p50_ms"] <= py["ttft_p99_ms"] <= py["ttft_max_ms"], py["slo"]
assert abs(py["slo"]["goodput_rps"] - py["slo"]["requests_meeting"] / (py["e2e_ms"] / 1e3)) < 1e-9, py["slo"]
del args["gpu"]
rows = tilecast.compare(gpus="H100-SXM", **args)
assert rows[0]["goodput_rps"] == py["slo"]["goodput_rps"] and rows[0]["slo_ttft_ms"] == 50.0, rows[0]
assert rows[0]["ttft_p99_ms"] == py["ttft_p99_ms"] and rows[0]["tpot_p99_ms"] == py["tpot_p99_ms"], rows[0]
# capacity: as the CLI's JSON.
py = tilecast.capacity(model="llama-3.1-8b", gpus=["H100-SXM", "A100-SXM4-80GB"], seq=1024, gen=32, slo_ttft_ms=150.0,
                       requests=30, max_batched_tokens=8192, arrivals="uniform", target_rate=40.0, tp=[1, 2])
sh = cli("capacity", "--model", "llama-3.1-8b", "--gpus", "H100-SXM,A100-SXM4-80GB", "--seq", "1024", "--gen", "32",
         "--slo-ttft-ms", "150", "--requests", "30", "--max-batched-tokens", "8192", "--arrivals", "uniform",
         "--target-rate", "40", "--tp", "1,2")["rows"]
assert py == sh and len(py) == 4 and py[0]["max_rate_rps"] > 0 and py[0]["arrivals"] == "uniform", py[0]
assert py[0]["per_gpu_rps"] >= py[-1]["per_gpu_rps"] and py[0]["replicas"] >= 1, [r["per_gpu_rps"] for r in py]
# The scheduler's keywords are checked as the CLI's flags, named as keywords.
for kw, msg in ((dict(max_seqs="12x"), "max_seqs: expected auto or a count"),
                (dict(arrivals="uniform"), "arrivals applies with request_rate only"),
                (dict(schedule="fifo"), "schedule: expected mixed (vLLM) or prefill-first"),
                (dict(range_ratio=1.0), "range_ratio: 1 out of range [0, 1)")):
    try:
        tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM", mode="generate", batch=4, seq=100, gen=4, **kw)
        raise SystemExit("FAIL: compare accepted %r" % kw)
    except ValueError as e:
        assert msg in str(e) and "--" not in str(e), e
# Requests of their own lengths: as the CLI's; a ratio of 0 is every request alike.
py = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=16, seq=512, mode="generate", gen=32,
                      max_batched_tokens=4096, range_ratio=0.5)
assert py == cli("predict", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--batch", "16", "--seq", "512", "--mode",
                 "generate", "--gen", "32", "--max-batched-tokens", "4096", "--range-ratio", "0.5")
alike = tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=16, seq=512, mode="generate", gen=32,
                         max_batched_tokens=4096)
assert tilecast.predict(model="llama-3.1-8b", gpu="H100-SXM", batch=16, seq=512, mode="generate", gen=32,
                        max_batched_tokens=4096, range_ratio=0.0) == alike
assert py["range_ratio"] == 0.5 and alike["range_ratio"] == 0.0 and py["ttft_p99_ms"] > py["ttft_p50_ms"], py
rows = tilecast.capacity(model="llama-3.1-8b", gpus="H100-SXM", seq=512, gen=32, slo_tpot_ms=20.0, requests=40,
                         range_ratio=0.25)
assert rows == cli("capacity", "--model", "llama-3.1-8b", "--gpus", "H100-SXM", "--seq", "512", "--gen", "32",
                   "--slo-tpot-ms", "20", "--requests", "40", "--range-ratio", "0.25")["rows"]
assert rows[0]["range_ratio"] == 0.25 and rows[0]["max_rate_rps"] > 0, rows[0]
rows = tilecast.compare(model="llama-3.1-8b", gpus="H100-SXM,A100-SXM4-80GB", mode="generate", batch=32, seq=512, gen=32,
                        range_ratio=0.5)
assert rows == cli("compare", "--model", "llama-3.1-8b", "--gpus", "H100-SXM,A100-SXM4-80GB", "--mode", "generate",
                   "--batch", "32", "--seq", "512", "--gen", "32", "--range-ratio", "0.5")["rows"]
assert {r["range_ratio"] for r in rows} == {0.5}, rows[:1]
rows = tilecast.plan(model="llama-3.1-8b", gpu="H100-SXM", gpus=2, global_batch=32, mode="generate", seq=512, gen=32,
                     range_ratio=0.5)
assert rows == cli("plan", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--gpus", "2", "--global-batch", "32",
                   "--mode", "generate", "--seq", "512", "--gen", "32", "--range-ratio", "0.5")["rows"]
# No LibTorch in this process.
maps = open("/proc/self/maps").read()
assert "libtorch" not in maps and "torch" not in sys.modules
print("python module: all checks passed")
