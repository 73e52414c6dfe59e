#!/usr/bin/env python3
"""The FP8 MoE rule's constants (predictor/kernel_predictor.h, kTritonFp8MoeFloorUs and
kTritonFp8MoeFactor) are what scripts/eval-moe-fp8.py --fit computes from the B200's Triton
FP8/BF16 pairs: a change to the data or to the fit shows here. Skips (exit 77) where
../shared/llm-kernels is absent.
  test_moe_fp8_constant.py"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
llm = os.environ.get("TILECAST_LLM_KERNELS_DIR", os.path.join(ROOT, "..", "shared", "llm-kernels"))
data = os.path.join(llm, "aiconfigurator/B200/moe_perf.csv")
if not os.path.exists(data):
    print(f"skipped: {data} not found (set TILECAST_LLM_KERNELS_DIR)")
    sys.exit(77)
header = open(os.path.join(ROOT, "predictor", "kernel_predictor.h")).read()
floor = re.search(r"constexpr double kTritonFp8MoeFloorUs = ([0-9.]+);", header)
factor = re.search(r"constexpr double kTritonFp8MoeFactor = ([0-9.]+);", header)
assert floor and factor, "kTritonFp8MoeFloorUs / kTritonFp8MoeFactor not found in predictor/kernel_predictor.h"
r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "eval-moe-fp8.py"), "--fit", "--llm-dir", llm],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
fit = re.search(r"triton fp8 moe: ([0-9.]+) us \+ ([0-9.]+) x bf16 \((\d+) pairs\)", r.stdout)
assert fit, r.stdout
assert int(fit.group(3)) > 1000, f"only {fit.group(3)} Triton FP8/BF16 pairs"
assert fit.group(1) == floor.group(1), f"the script fits {fit.group(1)} us, the code says {floor.group(1)}"
assert fit.group(2) == factor.group(1), f"the script fits {fit.group(2)}, the code says {factor.group(1)}"
print(f"kTritonFp8MoeFloorUs {floor.group(1)} us, kTritonFp8MoeFactor {factor.group(1)} = the fit ({fit.group(3)} pairs)")
