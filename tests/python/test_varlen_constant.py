#!/usr/bin/env python3
"""The varlen-decode constant (predictor/graph_predictor.h, kVarlenCyclesPerKeyBlock) is what
scripts/eval-mixed-attention.py --fit computes from LLMServingSim's mixed calls with the bundled
weights: a change to the prefill forecasts the fit takes off, or to the data, shows here.
Skips (exit 77) where ../shared/llm-kernels is absent.
  test_varlen_constant.py BUILD_DIR"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
build = sys.argv[1]
llm = os.environ.get("TILECAST_LLM_KERNELS_DIR", os.path.join(ROOT, "..", "shared", "llm-kernels"))
data = os.path.join(llm, "llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1/attention.csv")
if not os.path.exists(data):
    print(f"skipped: {data} not found (set TILECAST_LLM_KERNELS_DIR)")
    sys.exit(77)
header = open(os.path.join(ROOT, "predictor", "graph_predictor.h")).read()
m = re.search(r"constexpr double kVarlenCyclesPerKeyBlock = (\d+);", header)
assert m, "kVarlenCyclesPerKeyBlock not found in predictor/graph_predictor.h"
constant = int(m.group(1))
r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "eval-mixed-attention.py"), "--fit", "--build", build,
                    "--llm-dir", llm], capture_output=True, text=True)
assert r.returncode == 0, r.stderr
fit = re.search(r"varlen decode: (\d+) SM cycles per 128-key block \(median over 8448 mixed calls\)", r.stdout)
assert fit, r.stdout
assert abs(int(fit.group(1)) - constant) <= 1, f"the script fits {fit.group(1)} cycles, the code says {constant}"
print(f"kVarlenCyclesPerKeyBlock {constant} = the fit {fit.group(1)}")
