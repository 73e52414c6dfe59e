#!/usr/bin/env python3
"""scripts/moe-scaling.py on a hand-made aiconfigurator folder. Its third table, latency(T, ep) /
latency(T, ep 1) at >= 4,096 tokens: a layer at 4,096 tokens taking 4 ms at ep 8 and 10 ms at
ep 1 reads 0.40. Its last table, the measured
latency over the time of the pairs a Triton rank passes for other ranks' experts at the spec's
DRAM bandwidth. One L40S layer (4,096 x 1,536, top-8 of 128) at 2,048 tokens: at ep 128 rank 0's
one expert takes min(2,048, 2,048 x 8 / 128) = 128 pairs, the other 16,256 pairs move
2 x (5 x 1,536 + 2 x 4,096) = 31,744 bytes each, 516,030,464 bytes, 0.597257 ms at the L40S's
864 GB/s; a row measured at twice that reads 2.00. At ep 64 its two experts take 256 pairs, the
other 16,128 move 511,967,232 bytes (0.592555 ms): a row at 1.5x that reads 1.50. Rows under
2,048 tokens and at ep < 8 are left out of it; a GPU without a spec is refused with one line."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "moe-scaling.py")
HEADER = ("framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,"
          "num_experts,moe_tp_size,moe_ep_size,distribution,latency\n")


def row(gpu, tokens, ep, ms, lib="sglang_fused_moe_triton"):
    return f"SGLang,0.5.14,NVIDIA {gpu},moe,{lib},bfloat16,{tokens},4096,1536,8,128,1,{ep},balanced,{ms}\n"


def run(llm_dir):
    return subprocess.run([sys.executable, SCRIPT, "--llm-dir", llm_dir], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        folder = os.path.join(d, "aiconfigurator", "L40S")
        os.makedirs(folder)
        with open(os.path.join(folder, "moe_perf.csv"), "w") as f:
            f.write(HEADER)
            f.write(row("L40S", 2048, 1, 10.0))
            f.write(row("L40S", 2048, 128, 2 * 516030464 / 864e9 * 1e3))
            f.write(row("L40S", 2048, 64, 1.5 * 511967232 / 864e9 * 1e3))
            f.write(row("L40S", 1024, 128, 100.0))  # under 2,048 tokens: left out
            f.write(row("L40S", 2048, 4, 100.0))    # ep < 8: left out
            # The third table: at 4,096 tokens ep 8 takes 4 ms against ep 1's 10 ms: 0.40.
            f.write(row("L40S", 4096, 1, 10.0))
            f.write(row("L40S", 4096, 8, 4.0))
        r = run(d)
        assert r.returncode == 0, r.stderr
        tables = [t.splitlines() for t in r.stdout.strip().split("\n\n")]
        assert len(tables) == 4, r.stdout
        against_ep1 = [l for l in tables[2] if l.startswith("| L40S | sglang_fused_moe_triton | ")]
        assert against_ep1 == ["| L40S | sglang_fused_moe_triton | 8 | 1 | 0.40 | 0.40 | 0.40 |"], r.stdout
        passes = [l for l in tables[3] if l.startswith("| L40S | sglang_fused_moe_triton | ")]
        assert "| L40S | sglang_fused_moe_triton | 128 | 1 | 2.00 | 2.00 | 2.00 |" in passes, r.stdout
        assert "| L40S | sglang_fused_moe_triton | 64 | 1 | 1.50 | 1.50 | 1.50 |" in passes, r.stdout
        assert not any(l.startswith("| L40S | sglang_fused_moe_triton | 4 |") for l in passes), r.stdout

        other = os.path.join(d, "aiconfigurator", "NoSuchGPU")
        os.makedirs(other)
        with open(os.path.join(other, "moe_perf.csv"), "w") as f:
            f.write(HEADER)
            f.write(row("NoSuchGPU", 2048, 1, 10.0))
        r = run(d)
        assert r.returncode != 0, r.stdout
        assert "no spec in configs/gpus with cuda_name 'NVIDIA NoSuchGPU'" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    print("ok")


if __name__ == "__main__":
    main()
