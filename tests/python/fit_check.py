"""Helpers for the tests that check a constant in the C++ sources against the script that fits
it from ../shared/llm-kernels (test_varlen_constant.py, test_moe_fp8_constant.py)."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLM_DIR = os.environ.get("TILECAST_LLM_KERNELS_DIR", os.path.join(ROOT, "..", "shared", "llm-kernels"))


def require_llm_file(rel):
    """The path of `rel` under the LLM-kernels folder; exits 77 (ctest: skipped) where it is absent."""
    path = os.path.join(LLM_DIR, rel)
    if not os.path.exists(path):
        print(f"skipped: {path} not found (set TILECAST_LLM_KERNELS_DIR)")
        sys.exit(77)
    return path


def source_constant(rel, name):
    """The literal of `constexpr double <name> = <literal>;` in the source file `rel`, as text."""
    m = re.search(r"constexpr double " + name + r" = ([0-9.]+);", open(os.path.join(ROOT, rel)).read())
    assert m, f"{name} not found in {rel}"
    return m.group(1)


def run_script(name, *args):
    """stdout of scripts/<name> run with `args` and --llm-dir; fails the test on a non-zero exit."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", name), *args, "--llm-dir", LLM_DIR],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout
