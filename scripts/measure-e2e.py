#!/usr/bin/env python3
"""End-to-end labels in NeuSight's layout, measured on this machine's GPU.

Runs NeuSight's evaluated models (Hugging Face transformers, random weights built from
configs/models/*.json, FP32 with TF32 off, eager attention) at the batch and sequence sizes of
NeuSight's labels, and writes one JSON line per run to OUT (appended and flushed as each run
ends, so an interrupted run keeps what it measured):

  {"tag": "gpt2_large-inf-1024-4", "device": "NVIDIA H200", "e2e_latency": ..., "fw_latency": ...,
   "bwall_latency": ..., "num_layer": 36, "attn_implementation": "eager", ...}

Inference: the full model's forward under no_grad. Training: the forward with autograd on, then
backward() of the mean of the outputs (its computation not timed), gradients accumulating, no
optimizer step (as NeuSight's labels). Each is timed with CUDA events: 2 warm-ups, then the
median of 5. `scripts/measure-e2e.py --to-labels OUT DIR` writes DIR/<device folder>/<tag>.json
for `tilecast eval-models --labels DIR`.

`--suite fused` times NeuSight's fusion labels (BERT-Large and GPT-2-Large inference at their
sizes) with the model in torch.compile, tags ending `-fusion` as NeuSight's.
`--suite prefill` instead times Llama-3.1-8B's BF16 prefill (Hugging Face's eager model, SDPA)
at serving sizes, and `--compare-prefill JSONL` sets those rows beside `tilecast predict --mode
prefill --hf-eager` (the forecast of that eager model, not of an engine). `--suite training-bf16` times its BF16 training step the same way (the forward with
autograd, then backward() of the mean of the logits, not timed itself; no optimizer step), and
`--compare-training JSONL` sets forward and backward beside `tilecast predict --mode training
--dtype bf16 --hf-eager` (its forward_ms and backward_ms).

Needs torch and transformers (a GPU machine's Python) to measure; tilecast itself does not.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

# NeuSight's label configurations (labels/<GPU>/<tag>.json): model tag, our config, runs.
RUNS = [
    ("bert_large", "bert-large", "inf", 512, [8, 16]),
    ("gpt2_large", "gpt2-large", "inf", 1024, [4, 8]),
    ("gpt3_xl", "gpt3-xl", "inf", 2048, [2, 8]),
    ("gpt3_27", "gpt3-2.7b", "inf", 2048, [2, 8]),
    ("opt_13", "opt-1.3b", "inf", 2048, [2, 8]),
    ("bert_large", "bert-large", "train", 512, [2, 8]),
    ("gpt2_large", "gpt2-large", "train", 1024, [1, 4]),
    ("gpt3_xl", "gpt3-xl", "train", 2048, [1]),
    ("gpt3_27", "gpt3-2.7b", "train", 2048, [1]),
    ("opt_13", "opt-1.3b", "train", 2048, [1, 2]),
]


# NeuSight's fusion labels (labels/<GPU>/<tag>-fusion.json, --suite fused): the same models in
# FP32 wrapped in torch.compile (its default mode), inference only, at these sizes.
FUSED_RUNS = [
    ("bert_large", "bert-large", "inf", 512, [8, 16]),
    ("gpt2_large", "gpt2-large", "inf", 1024, [4, 8]),
]


# Serving-sized prefills of a dense LLM in BF16 (--suite prefill): Hugging Face's eager model with
# SDPA attention, logits for each sequence's last token only (as engines compute them). Not an
# engine: its RMSNorm, RoPE and SiLU run as separate eager kernels, which engines fuse.
PREFILL_RUNS = [("llama-3.1-8b", b, s) for b, s in [(1, 512), (1, 2048), (1, 8192), (4, 2048), (8, 1024), (16, 512), (8, 4096)]]


# BF16 training steps of the same model (--suite training-bf16): parameters and gradients in
# BF16 (the compute of mixed precision; its FP32 master weights belong to the optimizer, not
# timed), SDPA attention and its backward, full logits. Eager kernels, as above.
TRAIN_RUNS = [("llama-3.1-8b", b, s) for b, s in [(1, 1024), (1, 2048), (4, 1024), (2, 2048), (1, 4096), (2, 4096)]]


def build(torch, transformers, path, attn="eager"):
    with open(path) as f:
        d = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    arch = d.pop("architectures")[0]
    config = transformers.AutoConfig.for_model(d.pop("model_type"), **d)
    cls = getattr(transformers, arch)
    with torch.device("cuda"):
        try:
            model = cls._from_config(config, attn_implementation=attn)
        except Exception:  # older or newer transformers: set it on the config instead
            try:
                config._attn_implementation = attn
            except Exception:
                pass
            model = cls(config)
    return model.float(), config


def outputs_tensor(out):
    for name in ("logits", "prediction_logits", "last_hidden_state"):
        t = getattr(out, name, None)
        if t is not None:
            return t
    return out[0]


def measure(torch, fn, warmup=2, repeats=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), times


def read_lines(src):
    with open(src) as f:
        return [json.loads(line) for line in f if line.strip()]


def append_run(out, row, body, shown):
    """Runs body(row), which fills the row's measurements; one failed run (out of memory, say)
    is a row with its error and does not stop the rest. Appends the row and flushes it."""
    import torch

    t0 = time.time()
    try:
        body(row)
        row["status"] = "ok"
    except Exception as e:
        row["status"] = "error"
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        traceback.print_exc()
    torch.cuda.empty_cache()
    row["seconds"] = round(time.time() - t0, 2)
    out.write(json.dumps(row) + "\n")
    out.flush()
    print(f"{row['tag']}: {row['status']} {shown} {row.get(shown, float('nan')):.3f} ms ({row['seconds']} s)", flush=True)


def header(torch, transformers):
    device = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {device}", flush=True)
    return {"device": device, "torch": torch.__version__, "transformers": transformers.__version__}


def run(args, runs=RUNS, fused=False):
    """NeuSight's suite (RUNS), or with `fused` its fusion labels (FUSED_RUNS: the model in
    torch.compile, tags ending -fusion, a third warm-up for the compilation)."""
    import torch
    import transformers

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    common = header(torch, transformers)
    only = set(args.only.split(",")) if args.only else None
    with open(args.out, "a") as out:
        for tag_model, cfg, mode, seq, batches in runs:
            for batch in batches:
                tag = f"{tag_model}-{mode}-{seq}-{batch}" + ("-fusion" if fused else "")
                if only and tag not in only:
                    continue

                def body(row):
                    model, config = build(torch, transformers, os.path.join(args.models_dir, cfg + ".json"))
                    row["attn_implementation"] = getattr(config, "_attn_implementation", None)
                    row["num_layer"] = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 0)
                    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
                    if mode == "inf":
                        model.eval()
                        forward = torch.compile(model) if fused else model
                        if fused:
                            row["compiled"] = "torch.compile"

                        def fw():
                            with torch.no_grad():
                                forward(input_ids=ids)

                        row["fw_latency"], row["fw_times"] = measure(torch, fw, warmup=3 if fused else 2)
                        row["bwall_latency"] = 0.0
                    else:
                        model.train()  # dropout on, as in NeuSight's training labels
                        fw, bw, row["fw_times"], row["bw_times"] = train_step_times(torch, model, ids)
                        row["fw_latency"], row["bwall_latency"] = fw, bw
                    row["e2e_latency"] = row["fw_latency"] + row["bwall_latency"]

                append_run(out, {"tag": tag, **common}, body, "e2e_latency")


def train_step_times(torch, model, ids):
    """2 warm-ups, then the median of 5 of the forward (autograd on) and of backward() of the
    mean of the outputs. Returns (fw ms, bw ms, fw list, bw list)."""
    fw_t, bw_t = [], []
    for i in range(7):
        a, b, b2, c = (torch.cuda.Event(enable_timing=True) for _ in range(4))
        a.record()
        y = outputs_tensor(model(input_ids=ids))
        b.record()
        loss = y.float().mean()  # not timed
        torch.cuda.synchronize()
        b2.record()
        loss.backward()
        c.record()
        torch.cuda.synchronize()
        if i >= 2:
            fw_t.append(a.elapsed_time(b))
            bw_t.append(b2.elapsed_time(c))
    return statistics.median(fw_t), statistics.median(bw_t), fw_t, bw_t


def run_bf16_suite(args, runs, kind, train, measure_row, shown):
    """One BF16 model per config for every run of a suite (SDPA attention, built at its first
    run), `measure_row(torch, model, ids, row)` filling each run's row; tags <cfg>-<kind>-<seq>-<batch>."""
    import torch
    import transformers

    common = header(torch, transformers)
    built = {}
    with open(args.out, "a") as out:
        for cfg, batch, seq in runs:

            def body(row):
                if cfg not in built:
                    m, config = build(torch, transformers, os.path.join(args.models_dir, cfg + ".json"), "sdpa")
                    m = m.to(torch.bfloat16)
                    built[cfg] = (m.train() if train else m.eval(), config)
                model, config = built[cfg]
                row["attn_implementation"] = getattr(config, "_attn_implementation", None)
                measure_row(torch, model, torch.randint(0, config.vocab_size, (batch, seq), device="cuda"), row)

            row = {"tag": f"{cfg}-{kind}-{seq}-{batch}", "model": cfg, "batch": batch, "seq": seq, "dtype": "bf16",
                   **common}
            append_run(out, row, body, shown)


def run_training_bf16(args):
    def measure_row(torch, model, ids, row):
        model.zero_grad(set_to_none=True)
        fw, bw, row["fw_times"], row["bw_times"] = train_step_times(torch, model, ids)
        row["fw_latency"], row["bwall_latency"], row["e2e_latency"] = fw, bw, fw + bw

    run_bf16_suite(args, TRAIN_RUNS, "train", True, measure_row, "e2e_latency")


def run_prefill(args):
    def measure_row(torch, model, ids, row):
        def fw():
            with torch.no_grad():
                h = model.model(input_ids=ids)[0]
                model.lm_head(h[:, -1:])

        row["latency_ms"], row["times_ms"] = measure(torch, fw)

    run_bf16_suite(args, PREFILL_RUNS, "prefill", False, measure_row, "latency_ms")


def predict_json(tilecast, r, gpu, mode):
    """`tilecast predict --mode MODE --hf-eager` of a measured row's model, batch, seq and dtype on
    GPU (default: the row's device, by its CUDA name), as JSON; exits naming the command if it
    fails. --hf-eager: the rows ran Hugging Face's eager model (build() above), not an engine."""
    import subprocess
    cmd = [tilecast, "predict", "--model", r["model"], "--gpu", gpu or r["device"], "--mode", mode, "--batch",
           str(r["batch"]), "--seq", str(r["seq"]), "--dtype", r["dtype"], "--hf-eager", "--format", "json"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return json.loads(res.stdout)


def prefill_rows(src, tilecast, gpu):
    """Each measured prefill (status ok) with `tilecast predict --mode prefill --hf-eager`'s TTFT on GPU
    (default: the GPU the row was measured on, by its CUDA name): tag, tokens, measured_ms,
    forecast_ms, err_pct (signed)."""
    out = []
    for r in read_lines(src):
        if r.get("status") != "ok":
            continue
        fc = predict_json(tilecast, r, gpu, "prefill")["ttft_ms"]
        out.append({"tag": r["tag"], "tokens": r["batch"] * r["seq"], "measured_ms": r["latency_ms"], "forecast_ms": fc,
                    "err_pct": 100.0 * (fc - r["latency_ms"]) / r["latency_ms"]})
    return out


def compare_prefill(src, tilecast, gpu):
    """prefill_rows as a table, and their mean APE."""
    print(f"{'run':32s} {'tokens':>7s} {'measured_ms':>12s} {'forecast_ms':>12s} {'err%':>7s}")
    rows = prefill_rows(src, tilecast, gpu)
    for r in rows:
        print(f"{r['tag']:32s} {r['tokens']:7d} {r['measured_ms']:12.2f} {r['forecast_ms']:12.2f} {r['err_pct']:7.1f}")
    if rows:
        print(f"mean APE {statistics.mean(abs(r['err_pct']) for r in rows):.1f} % over {len(rows)} runs")


def training_rows(src, tilecast, gpu):
    """Each measured BF16 training step (status ok) with `tilecast predict --mode training --hf-eager
    --dtype bf16`'s forward and backward on GPU (default: the row's device): tag, tokens, the
    measured and forecast forward, backward and their sum (the optimizer step, not timed, left
    out), err_pct of the sum (signed)."""
    out = []
    for r in read_lines(src):
        if r.get("status") != "ok" or "bwall_latency" not in r:
            continue
        d = predict_json(tilecast, r, gpu, "training")
        fc = d["forward_ms"] + d["backward_ms"]
        out.append({"tag": r["tag"], "tokens": r["batch"] * r["seq"], "fw_ms": r["fw_latency"],
                    "fw_forecast_ms": d["forward_ms"], "bw_ms": r["bwall_latency"], "bw_forecast_ms": d["backward_ms"],
                    "measured_ms": r["e2e_latency"], "forecast_ms": fc,
                    "err_pct": 100.0 * (fc - r["e2e_latency"]) / r["e2e_latency"]})
    return out


def compare_training(src, tilecast, gpu):
    """training_rows as a table: forward, backward and their sum beside the forecasts."""
    print(f"{'run':32s} {'tokens':>7s} {'fw_ms':>9s} {'fc':>9s} {'err%':>6s} {'bw_ms':>9s} {'fc':>9s} {'err%':>6s} "
          f"{'fw+bw':>9s} {'fc':>9s} {'err%':>6s}")
    rows = training_rows(src, tilecast, gpu)
    for r in rows:
        cells = [f"{m:9.2f} {f:9.2f} {100.0 * (f - m) / m:6.1f}"
                 for m, f in ((r["fw_ms"], r["fw_forecast_ms"]), (r["bw_ms"], r["bw_forecast_ms"]),
                              (r["measured_ms"], r["forecast_ms"]))]
        print(f"{r['tag']:32s} {r['tokens']:7d} {' '.join(cells)}")
    if rows:
        print(f"mean APE of forward + backward {statistics.mean(abs(r['err_pct']) for r in rows):.1f} % over {len(rows)} runs")


def to_labels(src, dest):
    """JSON lines -> DIR/<device with underscores>/<tag>.json (NeuSight's label files)."""
    n = 0
    for r in read_lines(src):
        if r.get("status") != "ok" or "e2e_latency" not in r:
            continue
        folder = os.path.join(dest, r["device"].replace(" ", "_"))
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, r["tag"] + ".json")
        label = {"num_layer": r.get("num_layer", 0), "e2e_latency": r["e2e_latency"],
                 "fw_latency": r["fw_latency"], "bwall_latency": r["bwall_latency"]}
        tmp = path + ".tmp"
        with open(tmp, "w") as g:
            json.dump(label, g, indent=4)
        os.replace(tmp, path)
        n += 1
    print(f"{n} label files under {dest}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="JSON-lines file to append to")
    p.add_argument("--models-dir", default=os.path.join(os.path.dirname(__file__), "..", "configs", "models"))
    p.add_argument("--only", help="comma-separated tags to run (default: all)")
    p.add_argument("--suite", choices=["neusight", "fused", "prefill", "training-bf16"], default="neusight",
                   help="neusight: NeuSight's models and label sizes (FP32); fused: its fusion labels' models and "
                        "sizes in torch.compile; prefill: BF16 LLM prefills; training-bf16: BF16 LLM training steps "
                        "(forward + backward)")
    p.add_argument("--to-labels", nargs=2, metavar=("JSONL", "DIR"), help="convert measured lines to label files")
    p.add_argument("--compare-prefill", metavar="JSONL", help="set measured prefills beside tilecast's forecasts")
    p.add_argument("--compare-training", metavar="JSONL",
                   help="set measured BF16 training steps beside tilecast's forecasts")
    p.add_argument("--tilecast", default="build/tilecast", help="the tilecast binary (--compare-*)")
    p.add_argument("--gpu", help="the GPU to forecast (--compare-*; default: each row's device)")
    args = p.parse_args()
    if args.compare_prefill:
        compare_prefill(args.compare_prefill, args.tilecast, args.gpu)
    elif args.compare_training:
        compare_training(args.compare_training, args.tilecast, args.gpu)
    elif args.to_labels:
        to_labels(*args.to_labels)
    elif args.out:
        suites = {"prefill": run_prefill, "training-bf16": run_training_bf16,
                  "fused": lambda a: run(a, FUSED_RUNS, fused=True)}
        suites.get(args.suite, run)(args)
    else:
        p.error("--out, --to-labels, --compare-prefill or --compare-training")


if __name__ == "__main__":
    sys.exit(main())
