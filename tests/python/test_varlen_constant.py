#!/usr/bin/env python3
"""The varlen-decode constant (predictor/graph_predictor.h, kVarlenCyclesPerKeyBlock) is what
scripts/eval-mixed-attention.py --fit computes from LLMServingSim's mixed calls with the bundled
weights: a change to the prefill forecasts the fit takes off, or to the data, shows here.
Skips (exit 77) where ../shared/llm-kernels is absent.
  test_varlen_constant.py BUILD_DIR"""
import re
import sys

from fit_check import require_llm_file, run_script, source_constant

build = sys.argv[1]
require_llm_file("llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1/attention.csv")
constant = int(source_constant("predictor/graph_predictor.h", "kVarlenCyclesPerKeyBlock"))
out = run_script("eval-mixed-attention.py", "--fit", "--build", build)
fit = re.search(r"varlen decode: (\d+) SM cycles per 128-key block \(median over 8448 mixed calls\)", out)
assert fit, out
assert abs(int(fit.group(1)) - constant) <= 1, f"the script fits {fit.group(1)} cycles, the code says {constant}"
print(f"kVarlenCyclesPerKeyBlock {constant} = the fit {fit.group(1)}")
