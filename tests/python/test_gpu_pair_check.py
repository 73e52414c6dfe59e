#!/usr/bin/env python3
"""scripts/gpu-pair-check.py against the build: --measured on hand-made rows of two GPUs (one
shape slower on the newer, one faster, one in a single file), and --as on the H100's tiny decode
step that the bundled weights cap at the A100-SXM4-80GB's forecast (no row slower), which a copy
of the weights without gpus/ forecasts slower; --against on a long decode that the bundled
weights raise on the A100-PCIE-40GB to the A100-SXM4-80GB's forecast (none slower on the SXM),
which the copy without gpus/ forecasts faster on the 40 GB card; a file without a device column
refused."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "gpu-pair-check.py")
# The A100's aiconfigurator files have no window_size column (a window of 0 there would be
# SGLang's one-key window on FlashAttention: another shape).
HEAD = ("framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,"
        "beam_width,attn_dtype,kv_cache_dtype,step,latency\n")


def decode_row(device, batch, step, latency):
    return f"SGLang,0.5.10,{device},generation_attention,flash_attention,{batch},1,64,64,128,1,bfloat16,bfloat16,{step},{latency}\n"


def run(tc, *args):
    r = subprocess.run([sys.executable, SCRIPT, "--tilecast", tc, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    tc = os.path.join(sys.argv[1], "tilecast")
    with tempfile.TemporaryDirectory() as d:
        old, new = os.path.join(d, "a100.csv"), os.path.join(d, "b200.csv")
        with open(old, "w") as f:
            f.write(HEAD + decode_row("NVIDIA A100-SXM4-80GB", 4, 4, 0.0145) + decode_row("NVIDIA A100-SXM4-80GB", 64, 4096, 2.0)
                    + decode_row("NVIDIA A100-SXM4-80GB", 8, 8, 0.02))
        with open(new, "w") as f:
            f.write(HEAD + decode_row("NVIDIA B200", 4, 4, 0.0207) + decode_row("NVIDIA B200", 64, 4096, 0.5))
        rc, out, err = run(tc, "--measured", old, new)
        if rc != 0 or "2 shapes in both; 1 measured slower on NVIDIA B200 than on NVIDIA A100-SXM4-80GB" not in out:
            fail(f"--measured: rc {rc}\n{out}{err}")
        if "1.428  generation_attention 4,5,64,64,128 bf16: 0.0145 -> 0.0207 ms" not in out:
            fail(f"--measured: the slower shape's line\n{out}")

        tiny = os.path.join(d, "tiny.csv")
        with open(tiny, "w") as f:
            f.write(HEAD + decode_row("NVIDIA A100-SXM4-80GB", 2048, 2, 4.534))
        rc, out, err = run(tc, "--as", "NVIDIA H100 80GB HBM3", "--data", tiny)
        if rc != 0 or "1 rows, 0 forecast slower on NVIDIA H100 80GB HBM3" not in out:
            fail(f"--as, bundled weights: rc {rc}\n{out}{err}")
        bare = os.path.join(d, "weights")
        shutil.copytree(os.path.join(ROOT, "weights"), bare)
        shutil.rmtree(os.path.join(bare, "gpus"))
        rc, out, err = run(tc, "--as", "NVIDIA H100 80GB HBM3", "--weights", bare, "--data", tiny)
        if rc != 0 or "1 rows, 1 forecast slower on NVIDIA H100 80GB HBM3" not in out:
            fail(f"--as, weights without gpus/: rc {rc}\n{out}{err}")

        # The first forecast on another GPU than the file's: the A100-SXM4-80GB betters the
        # A100-PCIE-40GB (2,039 against 1,555 GB/s, the rest the same), whose forecast the bundled
        # weights hold to no faster than the SXM's (8,193 keys: the decode's 8,192 cached + its own).
        long = os.path.join(d, "long.csv")
        with open(long, "w") as f:
            f.write(HEAD + decode_row("NVIDIA A100-SXM4-80GB", 64, 8192, 10.0))
        pair = ["--against", "NVIDIA A100-PCIE-40GB", "--as", "NVIDIA A100-SXM4-80GB", "--data", long]
        rc, out, err = run(tc, *pair)
        if rc != 0 or "1 rows, 0 forecast slower on NVIDIA A100-SXM4-80GB than on NVIDIA A100-PCIE-40GB" not in out:
            fail(f"--against, bundled weights: rc {rc}\n{out}{err}")
        rc, out, err = run(tc, *pair, "--weights", bare)
        if rc != 0 or "1 rows, 1 forecast slower on NVIDIA A100-SXM4-80GB than on NVIDIA A100-PCIE-40GB" not in out:
            fail(f"--against, weights without gpus/: rc {rc}\n{out}{err}")

        nodev = os.path.join(d, "nodev.csv")  # NeuSight's layout: a `Device` column
        with open(nodev, "w") as f:
            f.write("OPName,Latency,Device,B,H\nsoftmax,0.01,Tesla T4,64,32\n")
        rc, out, err = run(tc, "--as", "NVIDIA H100 80GB HBM3", "--data", nodev)
        if rc == 0 or "no 'device' column" not in err:
            fail(f"a file without a device column: rc {rc}\n{out}{err}")
    print("gpu-pair-check: ok")


if __name__ == "__main__":
    main()
