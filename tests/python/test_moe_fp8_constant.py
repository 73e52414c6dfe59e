#!/usr/bin/env python3
"""The FP8 MoE rule's constants (predictor/kernel_predictor.h, kTritonFp8MoeFloorUs and
kTritonFp8MoeFactor) are what scripts/eval-moe-fp8.py --fit computes from the B200's Triton
FP8/BF16 pairs: a change to the data or to the fit shows here. Skips (exit 77) where
../shared/llm-kernels is absent.
  test_moe_fp8_constant.py"""
import re

from fit_check import require_llm_file, run_script, source_constant

require_llm_file("aiconfigurator/B200/moe_perf.csv")
floor = source_constant("predictor/kernel_predictor.h", "kTritonFp8MoeFloorUs")
factor = source_constant("predictor/kernel_predictor.h", "kTritonFp8MoeFactor")
out = run_script("eval-moe-fp8.py", "--fit")
fit = re.search(r"triton fp8 moe: ([0-9.]+) us \+ ([0-9.]+) x bf16 \((\d+) pairs\)", out)
assert fit, out
assert int(fit.group(3)) > 1000, f"only {fit.group(3)} Triton FP8/BF16 pairs"
assert fit.group(1) == floor, f"the script fits {fit.group(1)} us, the code says {floor}"
assert fit.group(2) == factor, f"the script fits {fit.group(2)}, the code says {factor}"
print(f"kTritonFp8MoeFloorUs {floor} us, kTritonFp8MoeFactor {factor} = the fit ({fit.group(3)} pairs)")
