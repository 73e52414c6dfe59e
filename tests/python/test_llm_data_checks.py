#!/usr/bin/env python3
"""scripts/llm-data-checks.py's checks 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 and 16; check 5 (the share of the sheet's tensor peak a GPU's GEMMs
reach at large shapes) on hand-made aiconfigurator rows of the B200 (sheet: 2,250 TFLOP/s BF16,
4,500 FP8): two BF16 shapes at 1,125 and 1,575 TFLOP/s (median 1,350, 0.60 of the peak), one
FP8 shape at 2,250 (0.50), and a 16-token row that the check leaves out; a device without a
sheet is one error line and a non-zero exit."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "llm-data-checks.py")
HEADER = "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n"


def row(device, dtype, m, n, k, tflops):
    """A gemm_perf.csv line whose latency (ms) makes 2 m n k FLOPs run at `tflops`."""
    return f"SGLang,0.5,{device},gemm,sglang,{dtype},{m},{n},{k},{2.0 * m * n * k / (tflops * 1e12) * 1e3!r}\n"


def write(path, header, *lines):
    """A CSV file: the header line, then each line with its newline."""
    with open(path, "w") as f:
        f.write(header + "".join(line if line.endswith("\n") else line + "\n" for line in lines))


def section_of(out, head):
    """The lines of the table under `head` up to the next blank line (none where a blank line
    follows it: an empty table before the next one)."""
    rest = out.split(head + "\n")[1]
    return [] if rest.startswith("\n") else rest.split("\n\n")[0].splitlines()


def run_on_file(tmp, name, gpu, filename, header, *lines):
    """Writes one aiconfigurator file of `gpu` in a tree of its own, tmp/name, runs the checks on
    that tree alone, and returns their output (exit code 0 asserted)."""
    folder = os.path.join(tmp, name, "aiconfigurator", gpu)
    os.makedirs(folder)
    write(os.path.join(folder, filename), header, *lines)
    rc, out, err = run(os.path.join(tmp, name))
    assert rc == 0, (rc, err)
    return out


def run(llm_dir, *extra):
    p = subprocess.run([sys.executable, SCRIPT, "--llm-dir", llm_dir, "--gpu-dir", os.path.join(ROOT, "configs", "gpus"),
                        *extra], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as tmp:
    gpu = os.path.join(tmp, "aiconfigurator", "B200")
    os.makedirs(gpu)
    write(os.path.join(gpu, "gemm_perf.csv"), HEADER,
          row("NVIDIA B200", "bfloat16", 4096, 4096, 4096, 1125),
          row("NVIDIA B200", "bfloat16", 8192, 4096, 4096, 1575),
          row("NVIDIA B200", "bfloat16", 16, 4096, 4096, 10),  # a small shape: not counted
          row("NVIDIA B200", "bfloat16", 2048, 2560, 8192, 1350),  # check 10 alone (a dim < 4,096)
          row("NVIDIA B200", "fp8", 4096, 8192, 4096, 2250))
    rc, out, err = run(tmp)
    assert rc == 0, (rc, err)
    lines = out.split("gpu,gemm_dtype,shapes_all_dims_ge_4096,tflops_p50,peak_fraction_p50\n")[1].splitlines()
    assert lines[:2] == ["B200,bfloat16,2,1350,0.60", "B200,fp8,1,2250,0.50"], out
    # Check 10 on the same rows (B200: 148 SMs, 128 x 256 tiles, 2,250 TFLOP/s BF16, 4,500 FP8,
    # 8,000 GB/s), the wave padding derived by hand: 8,192 x 4,096 is 64 x 16 = 1,024 tiles, 7
    # waves, 7 x 148 / 1,024 = 1.012 (0.70 of the peak, x 1.012 = 0.71); 4,096 x 4,096 is 512
    # tiles, 4 waves, 1.156 (0.50, 0.58); 2,048 x 2,560 is 16 x 10 = 160 tiles, 2 waves, 1.85
    # (0.60, 1.11); the FP8 4,096 x 8,192, 32 x 32 tiles, 1.012 (0.50, 0.51). The 16-token row
    # (2 m n k below 2e10) is left out.
    waves = out.split("gpu,gemm_dtype,wave_padding,rows,peak_fraction_p50,peak_fraction_x_padding_p50\n")[1]
    assert waves.split("\n\n")[0].splitlines() == [
        "B200,bfloat16,<1.1,1,0.70,0.71", "B200,bfloat16,1.1-1.3,1,0.50,0.58", "B200,bfloat16,1.3-2,1,0.60,1.11",
        "B200,fp8,<1.1,1,0.50,0.51"], out
    # Check 13 on the same rows: none has a BF16 activation (m x k) of 4x the B200's 126 MiB L2.
    assert section_of(out, "gpu,gemm_dtype,rows_activation_ge_4x_l2,cast_over_measured_p50,"
                      "cast_over_measured_p90,share_faster_than_cast") == [], out
    # Two that have (32,768 x 16,384 = 536,870,912 values, 1,073,741,824 bytes in BF16 >= 4 x 126
    # MiB): the cast alone moves 3 bytes a value, 1,610,612,736 bytes, 201.3 us at 8,000 GB/s;
    # fp8_static measured at 100.66 us (2.00: faster than its cast), fp8 at 402.65 us (0.50);
    # one too small to count (32 x 16,384), and BF16 rows are not FP8.
    big = [f"SGLang,0.5,NVIDIA B200,gemm,sglang,fp8_static,32768,128,16384,{0.1006632960!r}",
           f"SGLang,0.5,NVIDIA B200,gemm,sglang,fp8,32768,256,16384,{0.4026531840!r}",
           "SGLang,0.5,NVIDIA B200,gemm,sglang,fp8,32,256,16384,0.01",
           "SGLang,0.5,NVIDIA B200,gemm,sglang,bfloat16,32768,256,16384,0.3"]
    with open(os.path.join(gpu, "gemm_perf.csv")) as f:
        kept = f.read()
    with open(os.path.join(gpu, "gemm_perf.csv"), "a") as f:
        f.write("\n".join(big) + "\n")
    rc, out, err = run(tmp)
    assert rc == 0 and section_of(out, "gpu,gemm_dtype,rows_activation_ge_4x_l2,cast_over_measured_p50,"
                                  "cast_over_measured_p90,share_faster_than_cast") == [
        "B200,fp8,1,0.50,0.50,0.00", "B200,fp8_static,1,2.00,2.00,1.00"], (rc, out, err)
    with open(os.path.join(gpu, "gemm_perf.csv"), "w") as f:
        f.write(kept)

    # Check 6 on hand-made prefill rows: a TRT-LLM row, and Triton rows of one shape at windows
    # 128 and 1,024 (1.5 and 1.8 ms: ratio 1.20) in BF16 / BF16 and FP8 / FP8 (1.35 ms at 128:
    # 0.90 of BF16).
    attn = "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim," \
           "beam_width,attn_dtype,kv_cache_dtype,step,window_size,latency\n"
    write(os.path.join(gpu, "context_attention_perf.csv"), attn,
          "SGLang,0.5,NVIDIA B200,context_attention,trtllm_mha,1,4096,32,8,128,1,bfloat16,bfloat16,0,0,0.2",
          "SGLang,0.5,NVIDIA B200,context_attention,trtllm_mha,1,4096,32,8,128,1,fp8,fp8,0,0,0.2",
          "SGLang,0.5,NVIDIA B200,context_attention,trtllm_mha,1,4096,32,8,128,1,bfloat16,fp8,0,0,0.26",
          "SGLang,0.5,NVIDIA B200,context_attention,trtllm_mha,1,8192,32,8,128,1,fp8,fp8,0,0,0.3",  # no BF16 twin
          "SGLang,0.5,NVIDIA B200,context_attention,triton,1,4096,32,8,192,1,bfloat16,bfloat16,0,128,1.5",
          "SGLang,0.5,NVIDIA B200,context_attention,triton,1,4096,32,8,192,1,bfloat16,bfloat16,0,1024,1.8",
          "SGLang,0.5,NVIDIA B200,context_attention,triton,1,4096,32,8,192,1,fp8,fp8,0,128,1.35")
    rc, out, err = run(tmp)
    assert rc == 0, (rc, err)
    libs = out.split("gpu,library,head_dim,windowed,rows\n")[1].split("\n\n")[0].splitlines()
    assert libs == ["B200,triton,192,yes,3", "B200,trtllm_mha,128,no,4"], out
    ratios = out.split("gpu,triton_ratio,pairs,ratio_p10,ratio_p50,ratio_p90\n")[1].splitlines()
    assert ratios[:2] == ["B200,window_1024_over_128,1,1.20,1.20,1.20", "B200,fp8_over_bf16,1,0.90,0.90,0.90"], out
    # Check 11 on the same rows: per library and window, FP8 (attention and cache) and an FP8
    # cache alone over the BF16 row of the same shape: TRT-LLM's 0.2 / 0.2 = 1.00 and 0.26 / 0.2
    # = 1.30, Triton's 1.35 / 1.5 = 0.90 at window 128; the 8,192-token FP8 row has no BF16 twin
    # and the Triton window 1,024 no FP8 one: no pairs.
    assert section_of(out, "gpu,library,window,pair,pairs,ratio_p10,ratio_p50,ratio_p90") == [
        "B200,triton,128,fp8_over_bf16,1,0.90,0.90,0.90", "B200,trtllm_mha,0,fp8_cache_over_bf16,1,1.30,1.30,1.30",
        "B200,trtllm_mha,0,fp8_over_bf16,1,1.00,1.00,1.00"], out

    # Check 7 on hand-made MoE rows: two libraries, one shape each (none shared), and a third
    # row of the TRT-LLM model shape in FP8.
    moe = "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk," \
          "num_experts,moe_tp_size,moe_ep_size,distribution,latency\n"
    moe_rows = ["SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,bfloat16,64,2048,768,8,128,1,1,balanced,0.05",
                "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,fp8_block,64,2048,768,8,128,1,1,balanced,0.04",
                "SGLang,0.5,NVIDIA B200,moe,sglang_fused_moe_triton,bfloat16,64,4096,14336,2,8,1,1,balanced,0.3"]
    write(os.path.join(gpu, "moe_perf.csv"), moe, *moe_rows)
    rc, out, err = run(tmp)
    assert rc == 0, (rc, err)
    section = lambda head: section_of(out, head)
    assert section("gpu,moe_dtype,library,rows") == [
        "B200,bfloat16,sglang_flashinfer_trtllm_moe,1", "B200,bfloat16,sglang_fused_moe_triton,1",
        "B200,fp8_block,sglang_flashinfer_trtllm_moe,1"], out
    assert section("gpu,library_a,library_b,shared_shapes") == [
        "B200,sglang_flashinfer_trtllm_moe,sglang_fused_moe_triton,0"], out
    assert section("gpu,hidden_size,inter_size,topk,num_experts,moe_dtype,library,rows") == [
        "B200,2048,768,8,128,bfloat16,sglang_flashinfer_trtllm_moe,1",
        "B200,2048,768,8,128,fp8_block,sglang_flashinfer_trtllm_moe,1",
        "B200,4096,14336,2,8,bfloat16,sglang_fused_moe_triton,1"], out
    # Check 12 (MXFP8 against BF16 activations of MXFP4 experts): no 4-bit rows, no pairs.
    assert section("gpu,library,tokens,pairs,w4a8_over_w4a16_p10,p50,p90") == [], out
    # Two layers timed both ways (8 tokens: 0.09 / 0.10 = 0.90; 4,096 tokens: 1.0 / 2.0 = 0.50),
    # one W4A8 layer without its W4A16 twin (other experts), one pair on another library apart.
    w4 = ["SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a16_mxfp4,8,2880,2880,4,128,1,1,balanced,0.10",
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a8_mxfp4_mxfp8,8,2880,2880,4,128,1,1,balanced,0.09",
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a16_mxfp4,4096,2880,2880,4,128,1,1,balanced,2.0",
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a8_mxfp4_mxfp8,4096,2880,2880,4,128,1,1,balanced,1.0",
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a8_mxfp4_mxfp8,8,2880,2880,4,32,1,1,balanced,0.05",
          "SGLang,0.5,NVIDIA B200,moe,sglang_mxfp4_flashinfer_trtllm_moe,w4a8_mxfp4_mxfp8,8,2880,2880,4,128,1,1,balanced,0.3"]
    write(os.path.join(gpu, "moe_perf.csv"), moe, *moe_rows, *w4)
    rc, out, err = run(tmp)
    assert rc == 0 and section("gpu,library,tokens,pairs,w4a8_over_w4a16_p10,p50,p90") == [
        "B200,sglang_flashinfer_trtllm_moe,1-16,1,0.90,0.90,0.90",
        "B200,sglang_flashinfer_trtllm_moe,>2048,1,0.50,0.50,0.50"], (rc, out)
    # A Triton row of the TRT-LLM row's very shape: one shared.
    write(os.path.join(gpu, "moe_perf.csv"), moe, *moe_rows,
          "SGLang,0.5,NVIDIA B200,moe,sglang_fused_moe_triton,bfloat16,64,2048,768,8,128,1,1,balanced,0.09")
    rc, out, err = run(tmp)
    assert rc == 0 and section("gpu,library_a,library_b,shared_shapes") == [
        "B200,sglang_flashinfer_trtllm_moe,sglang_fused_moe_triton,1"], (rc, out)
    # --rows-csv on a MoE file: eval-kernels names int4_wo, w4a16_mxfp4 and w4a8_mxfp4_mxfp8 int4,
    # mxfp4 and mxfp4_mxfp8; its rows (written here by hand, as it writes them) are matched to the
    # file's by latency, op and dtype and grouped by the file's moe_dtype.
    moe_file = os.path.join(gpu, "moe_perf.csv")
    write(moe_file, moe,
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,int4_wo,64,2048,768,8,128,1,1,balanced,0.02",
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a8_mxfp4_mxfp8,64,2048,768,8,128,1,1,balanced,0.03",
          "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a16_mxfp4,64,2048,768,8,128,1,1,balanced,0.04")
    rows_csv = os.path.join(tmp, "moe_rows.csv")
    write(rows_csv, "device,op,shape,dtype,measured_ms,predicted_ms,roofline_ms,prior_ms\n",
          'NVIDIA B200,moe,"64,2048,768,8,128",int4,0.02,0.025,0.01,0.04',
          'NVIDIA B200,moe,"64,2048,768,8,128",mxfp4_mxfp8,0.03,0.033,0.01,0.06',
          'NVIDIA B200,moe,"64,2048,768,8,128",mxfp4,0.04,0.03,0.01,0.02')
    rc, out, err = run(tmp, "--rows-csv", rows_csv, "--data", moe_file, "--by", "moe_dtype")
    assert rc == 0, (rc, err)
    assert out.split("moe_dtype,rows,mape_pct,median_forecast_over_measured\n")[1].splitlines() == [
        "int4_wo,1,25.0,1.25", "w4a16_mxfp4,1,25.0,0.75", "w4a8_mxfp4_mxfp8,1,10.0,1.10"], out
    # The derived latency_us: 0.02 and 0.03 ms are in the 16-32 us bucket (APE 25 and 10 %,
    # ratios 1.25 and 1.10: median 1.175), 0.04 ms in 32-64.
    rc, out, err = run(tmp, "--rows-csv", rows_csv, "--data", moe_file, "--by", "latency_us")
    assert rc == 0, (rc, err)
    assert out.split("latency_us,rows,mape_pct,median_forecast_over_measured\n")[1].splitlines() == [
        "16-32,2,17.5,1.18", "32-64,1,25.0,0.75"], out
    # The derived tokens_pow2 (64 tokens: 64) with --prior: the fitted roofline alone over the
    # measured, 0.04 / 0.02, 0.06 / 0.03 and 0.02 / 0.04 (median 2.00); per dtype, each its own.
    rc, out, err = run(tmp, "--rows-csv", rows_csv, "--data", moe_file, "--by", "tokens_pow2", "--prior")
    assert rc == 0, (rc, err)
    assert out.split("tokens_pow2,rows,mape_pct,median_forecast_over_measured,median_prior_over_measured\n")[1].splitlines() == [
        "64,3,20.0,1.10,2.00"], out
    rc, out, err = run(tmp, "--rows-csv", rows_csv, "--data", moe_file, "--by", "moe_dtype,tokens_pow2", "--prior")
    assert rc == 0 and out.split("median_prior_over_measured\n")[1].splitlines() == [
        "int4_wo,64,1,25.0,1.25,2.00", "w4a16_mxfp4,64,1,25.0,0.75,0.50", "w4a8_mxfp4_mxfp8,64,1,10.0,1.10,2.00"], (rc, out)
    rc, out, err = run(tmp, "--prior")
    assert rc != 0 and "--prior goes with --rows-csv" in err, (rc, err)
    # A GEMM file of `tilecast collect` (Latency in ms, M N K, dtype spelt as tilecast does): M 5
    # and 7 fall in 4, M 64 in 64; forecast / measured 1.2, 1.4 (median 1.3) and 0.9.
    collect_file = os.path.join(tmp, "collect_gemm.csv")
    write(collect_file, "OPName,Latency,Device,B,M,N,K,dtype\n", "gemm,0.01,NVIDIA H200,1,5,2048,2048,bf16",
          "gemm,0.02,NVIDIA H200,1,7,2048,2048,bf16", "gemm,0.04,NVIDIA H200,1,64,2048,2048,bf16")
    collect_rows = os.path.join(tmp, "collect_rows.csv")
    write(collect_rows, "device,op,shape,dtype,measured_ms,predicted_ms,roofline_ms,prior_ms\n",
          'NVIDIA H200,gemm,"5,2048,2048",bf16,0.01,0.012,0.005,0.01',
          'NVIDIA H200,gemm,"7,2048,2048",bf16,0.02,0.028,0.005,0.02',
          'NVIDIA H200,gemm,"64,2048,2048",bf16,0.04,0.036,0.01,0.04')
    rc, out, err = run(tmp, "--rows-csv", collect_rows, "--data", collect_file, "--by", "tokens_pow2", "--prior")
    assert rc == 0 and out.split("median_prior_over_measured\n")[1].splitlines() == [
        "4,2,30.0,1.30,1.00", "64,1,10.0,0.90,1.00"], (rc, out, err)
    os.remove(moe_file)

    # Check 8 on hand-made rows of one model (32 heads, 8 KV heads of 128, hidden 4,096, gated FFN
    # 14,336) in vidur's A100 folder and aiconfigurator's A100 file. At 8 tokens and tp 1 the
    # projections are (M, out, in) = (8, 6,144, 4,096), (8, 4,096, 4,096), (8, 28,672, 4,096) and
    # (8, 4,096, 14,336); at tp 2 (8, 3,072, 4,096), (8, 4,096, 2,048), (8, 14,336, 4,096) and
    # (8, 4,096, 7,168). aiconfigurator has three of them (and one FP8 row, not compared): vidur /
    # aiconfigurator 1.10, 0.90 and 1.25 at 1-16 tokens; one 4,096-token pair, 1.02 (all four: median
    # 1.06, median |ratio - 1| 0.10).
    a100 = os.path.join(tmp, "aiconfigurator", "A100-SXM4-80GB")
    os.makedirs(a100)
    write(os.path.join(a100, "gemm_perf.csv"), HEADER,
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,gemm,sglang,bfloat16,8,6144,4096,0.010",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,gemm,sglang,bfloat16,8,28672,4096,0.020",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,gemm,sglang,bfloat16,8,4096,7168,0.040",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,gemm,sglang,fp8,8,4096,4096,0.001",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,gemm,sglang,bfloat16,4096,4096,4096,0.500")
    vidur = os.path.join(tmp, "vidur", "a100", "org", "model")
    os.makedirs(vidur)
    ops = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
    write(os.path.join(vidur, "mlp.csv"),
          "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers,"
          + ",".join(f"time_stats.{op}.median" for op in ops) + "\n",
          "32,8,4096,14336,128256,True,8,1,0.011,0.002,0.018,0.003",
          "32,8,4096,14336,128256,True,8,2,0.004,0.005,0.006,0.050",
          "32,8,4096,14336,128256,True,4096,1,0.7,0.510,0.9,0.8")
    rc, out, err = run(tmp)
    assert rc == 0, (rc, err)
    assert section("gpu,m_range,pairs,ratio_p10,ratio_p50,ratio_p90,median_abs_diff_pct") == [
        "A100-SXM4-80GB,1-16,3,0.90,1.10,1.25,10.0", "A100-SXM4-80GB,>2048,1,1.02,1.02,1.02,2.0",
        "A100-SXM4-80GB,all,4,0.90,1.06,1.25,10.0"], out

    # Check 9 on hand-made decode rows. The A100's (no window column; sheet: 2,039 GB/s, 108 SMs at
    # 1,410 MHz, 40 MB of L2): 64 sequences x 4,096 cached tokens (step 4,095) x 8 KV heads of 128,
    # 32 query heads, BF16: 64 x (32 x 128 x (2 + 2) + 2 x 4,096 x 8 x 128 x 2) = 1,074,790,400
    # bytes, beyond 4 x 40 MiB, timed at twice and at 1.25x their time at DRAM speed: shares 0.50
    # and 0.80 (median 0.65); the time beyond DRAM speed is the bytes at the GPU's own 13.39 bytes
    # per SM-cycle and at 4x that (median 33.5); one sequence of 1,024 tokens is within the L2 and
    # not counted. The L40S's (window column; 864 GB/s, 142 SMs at 2,520 MHz: 2.41 bytes per
    # SM-cycle; 96 MB of L2): 128 sequences at a 1,024-token window, 538,968,064 bytes, at twice
    # its DRAM time; the same shape at window 0 (SGLang's own-key rows) is left out.
    dec = attn.replace("context_attention", "generation_attention")
    big = 1074790400 / 2039e9 * 1e3
    write(os.path.join(a100, "generation_attention_perf.csv"), dec.replace("window_size,", ""),
          f"SGLang,0.5,NVIDIA A100-SXM4-80GB,generation_attention,flash_attention,64,1,32,8,128,1,bfloat16,bfloat16,4095,{2 * big!r}",
          f"SGLang,0.5,NVIDIA A100-SXM4-80GB,generation_attention,flash_attention,64,1,32,8,128,1,bfloat16,bfloat16,4095,{1.25 * big!r}",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,generation_attention,flash_attention,1,1,32,8,128,1,bfloat16,bfloat16,1023,0.01")
    l40s = os.path.join(tmp, "aiconfigurator", "L40S")
    os.makedirs(l40s)
    windowed = 538968064 / 864e9 * 1e3
    write(os.path.join(l40s, "generation_attention_perf.csv"), dec,
          f"SGLang,0.5,NVIDIA L40S,generation_attention,flash_attention,128,1,32,8,128,1,bfloat16,bfloat16,4095,1024,{2 * windowed!r}",
          "SGLang,0.5,NVIDIA L40S,generation_attention,flash_attention,128,1,32,8,128,1,bfloat16,bfloat16,4095,0,0.05")
    rc, out, err = run(tmp)
    assert rc == 0, (rc, err)
    assert section("gpu,library,rows_beyond_4x_l2,dram_bytes_per_sm_cycle,dram_share_p50,sm_side_bytes_per_cycle_p50") == [
        "A100-SXM4-80GB,flash_attention,2,13.4,0.65,33.5", "L40S,flash_attention,1,2.4,0.50,2.4"], out

    # --rows-csv --by l2_fit on hand-made prefill rows of the A100 (40 MB of L2: a quarter is
    # 10,485,760 bytes), head_dim 128, BF16. tilecast's bytes per prompt token: h x 128 x (2 + 2)
    # for Q and the output, 2 x kv x 128 x 2 for K and V. 32 heads over 8: 20,480 a token, 256
    # tokens 5 MiB (<= L2/4), 8 x 4,096 640 MiB (> 4x L2); over 1 KV head: 16,896, 640 tokens
    # 10,813,440 (<= L2; without the output's bytes it would be a quarter's); 32 KV heads: 32,768,
    # 336 tokens 11,010,048 (<= L2; with K and V once, <= L2/4).
    pre_file = os.path.join(a100, "context_attention_perf.csv")
    write(pre_file, attn.replace("window_size,", ""),
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,context_attention,flash_attention,1,256,32,8,128,1,bfloat16,bfloat16,0,0.01",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,context_attention,flash_attention,1,640,32,1,128,1,bfloat16,bfloat16,0,0.1",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,context_attention,flash_attention,1,336,32,32,128,1,bfloat16,bfloat16,0,0.2",
          "SGLang,0.5,NVIDIA A100-SXM4-80GB,context_attention,flash_attention,8,4096,32,8,128,1,bfloat16,bfloat16,0,4.0")
    pre_rows = os.path.join(tmp, "pre_rows.csv")
    write(pre_rows, "device,op,shape,dtype,measured_ms,predicted_ms,roofline_ms,prior_ms\n",
          'NVIDIA A100-SXM4-80GB,context_attention,"1,256,32,8,128",bf16,0.01,0.02,0.01,0.01',
          'NVIDIA A100-SXM4-80GB,context_attention,"1,640,32,1,128",bf16,0.1,0.05,0.01,0.1',
          'NVIDIA A100-SXM4-80GB,context_attention,"1,336,32,32,128",bf16,0.2,0.1,0.01,0.2',
          'NVIDIA A100-SXM4-80GB,context_attention,"8,4096,32,8,128",bf16,4.0,5.0,1.0,4.0')
    rc, out, err = run(tmp, "--rows-csv", pre_rows, "--data", pre_file, "--by", "l2_fit")
    assert rc == 0, (rc, err)
    assert out.split("l2_fit,rows,mape_pct,median_forecast_over_measured\n")[1].splitlines() == [
        "<=L2/4,1,100.0,2.00", "<=L2,2,50.0,0.50", ">4xL2,1,25.0,1.25"], out
    # The derived group (query heads per KV head) on the same rows: 32 / 32 = 1 (APE 50 %, 0.5),
    # 32 / 1 = 32 (50 %, 0.5), 32 / 8 = 4 twice (100 and 25 %: 62.5 %; ratios 2.0 and 1.25, median
    # 1.625, printed 1.62).
    rc, out, err = run(tmp, "--rows-csv", pre_rows, "--data", pre_file, "--by", "group")
    assert rc == 0, (rc, err)
    assert sorted(out.split("group,rows,mape_pct,median_forecast_over_measured\n")[1].splitlines()) == [
        "1,1,50.0,0.50", "32,1,50.0,0.50", "4,2,62.5,1.62"], out
    # l2_fit and group on a file that is not attention: one error line each.
    for c in ("l2_fit", "group"):
        rc, out, err = run(tmp, "--rows-csv", pre_rows, "--data", os.path.join(a100, "gemm_perf.csv"), "--by", c)
        assert rc != 0 and c in err and len(err.strip().splitlines()) == 1, (rc, err)
    # tokens_pow2 on an attention file (no num_tokens, no m): one error line.
    rc, out, err = run(tmp, "--rows-csv", pre_rows, "--data", pre_file, "--by", "tokens_pow2")
    assert rc != 0 and "tokens_pow2" in err and len(err.strip().splitlines()) == 1, (rc, err)
    os.remove(pre_file)

    # Check 10's split reduction: no compute-bound row of a real sheet has fewer tiles than half
    # its SMs, so a copy of the sheets whose A100 and B200 have 10x their bandwidth (20,390 and
    # 80,000 GB/s) makes them. BF16 on the A100: 512 tokens x 1,024 outputs is 4 x 8 = 32 tiles
    # of 128 x 128 on 108 SMs, the 32,768-long reduction split in min(108 / 32, 32,768 / 256) =
    # 3, 96 CTAs, one wave: padding 108 / 96 = 1.125 (unsplit, 108 / 32 = 3.4); at 156 TFLOP/s
    # 0.50 of the 312 peak, x 1.125 = 0.56. FP8 on the B200, the same shape: 4 x 4 = 16 tiles of
    # 128 x 256, not split: 148 / 16 = 9.25; at 900 TFLOP/s 0.20 of 4,500, x 9.25 = 1.85.
    sheets = os.path.join(tmp, "sheets")
    os.makedirs(sheets)
    faster = {"A100-80GB-SXM.yaml": "2039", "B200.yaml": "8000"}
    for name in os.listdir(os.path.join(ROOT, "configs", "gpus")):
        with open(os.path.join(ROOT, "configs", "gpus", name)) as f:
            text = f.read()
        if name in faster:
            line = f"\nmem_bw_gbps: {faster[name]}\n"
            assert line in text, f"{name}: the bandwidth line moved"
            text = text.replace(line, f"\nmem_bw_gbps: {10 * int(faster[name])}\n")
        with open(os.path.join(sheets, name), "w") as f:
            f.write(text)
    split_dir = os.path.join(tmp, "split")
    for g, device, dtype, tflops in (("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "bfloat16", 156),
                                     ("B200", "NVIDIA B200", "fp8", 900)):
        os.makedirs(os.path.join(split_dir, "aiconfigurator", g))
        write(os.path.join(split_dir, "aiconfigurator", g, "gemm_perf.csv"), HEADER, row(device, dtype, 512, 1024, 32768, tflops))
    p = subprocess.run([sys.executable, SCRIPT, "--llm-dir", split_dir, "--gpu-dir", sheets], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("peak_fraction_x_padding_p50\n")[1].split("\n\n")[0].splitlines() == [
        "A100-SXM4-80GB,bfloat16,1.1-1.3,1,0.50,0.56", "B200,fp8,>=2,1,0.20,1.85"], p.stdout

    # Check 14 on hand-made B200 prefill rows (148 SMs at 1,965 MHz, 2,250 TFLOP/s BF16: 7,736.5
    # FLOP an SM-cycle; 16 exponentials a clock; 128 FP32 lanes): one batch x 8,192 tokens x 32
    # heads (8 KV heads) of 128 at windows of 128 and 1,024 keys. 64 query blocks see 64 block
    # pairs at one key block and 36 + 56 x 8 = 484 at eight: 420 x 32 / 148 = 90.81 more on the
    # busiest SM. The 1,024-key row is timed 3,000 cycles a pair longer (90.81 x 3,000 / 1.965e9 s =
    # 0.1386425 ms). A pair asks 4 x 128 x 128 x 128 / 7,736.5 = 1,084.3 MMA cycles, 16,384 / 16 =
    # 1,024 exponential cycles and (3.5 + 1) x 16,384 / 128 = 576 FP32 cycles: 3,000 / 2,684.3 =
    # 1.12 of them in series, 3,000 / 1,084.3 = 2.77 of the larger. The 128-key row beyond its 13.84
    # pairs on the busiest SM: 0.5 ms x 1.965 GHz - 13.84 x 3,000 = 940,986 cycles over ceil(64 x
    # 32 / 148) = 14 CTAs, 67.21 thousand a CTA; its bytes (8,192 x 32 x 128 x (2 + 2) of Q and
    # output, 2 x 8,192 x 8 x 128 x 2 of K and V: 167,772,160) at 8,000 GB/s are 41,211 cycles, 0.04
    # of it. A prompt under 4,096 tokens and a window-0 row are left out; a shape without its
    # 128-key twin too.
    lead = "SGLang,0.5,NVIDIA B200,context_attention,trtllm_mha,"
    out = run_on_file(tmp, "blocks", "B200", "context_attention_perf.csv", attn,
          lead + "1,8192,32,8,128,1,bfloat16,bfloat16,0,128,0.5",
          lead + f"1,8192,32,8,128,1,bfloat16,bfloat16,0,1024,{0.5 + 90.8108108108108 * 3000 / 1.965e9 * 1e3!r}",
          lead + "1,8192,32,8,128,1,bfloat16,bfloat16,0,0,0.4",
          lead + "1,2048,32,8,128,1,bfloat16,bfloat16,0,128,0.1",
          lead + "1,2048,32,8,128,1,bfloat16,bfloat16,0,1024,0.2",
          lead + "2,8192,32,8,128,1,bfloat16,bfloat16,0,1024,0.9")
    assert section_of(out, "gpu,library,head_dim,attn_dtype,pairs,block_pair_kcycles_p50,mma_kcycles,exp_kcycles,"
                           "fp32_kcycles,over_series_p10,over_series_p50,over_series_p90,over_larger_of_mma_exp_p50,"
                           "rest_kcycles_per_cta_p50,rest_dram_share_p50") == [
        "B200,trtllm_mha,128,bfloat16,1,3.00,1.08,1.02,0.58,1.12,1.12,1.12,2.77,67.21,0.04"], out

    # Check 15 (the collector's routings) on hand-made MoE rows of one shape, top-8 of 128 experts
    # (T x K / E = T / 16): balanced at 4, 8, 16, 32 and 64 tokens (r = 0.25 ... 4) in 0.1, 0.2,
    # 0.39, 0.4, 0.4 ms, so the ratios to r = 4 are 0.25, 0.50, 0.975 and 1.00; a 20-token row
    # (r = 1.25) no ratio reads. At ep 8, 64 tokens (4 per expert), a power-law layer of 0.6 ms
    # beside a balanced one of 0.3 (2.00); at ep 1 the 4-token one (32 picks of 128 experts: no
    # more picks than experts) of 0.08 beside 0.1 (0.80); a tp-2 pair, which the check leaves out.
    lead = "SGLang,0.5,NVIDIA L40S,moe,sglang_fused_moe_triton,bfloat16,"
    out = run_on_file(tmp, "routing", "L40S", "moe_perf.csv", moe,
          *[lead + f"{t},2048,768,8,128,1,1,balanced,{ms}" for t, ms in
            ((4, 0.1), (8, 0.2), (16, 0.39), (32, 0.4), (64, 0.4), (20, 0.4))],
          lead + "4,2048,768,8,128,1,1,power_law_1.2,0.08",
          lead + "64,2048,768,8,128,1,8,balanced,0.3",
          lead + "64,2048,768,8,128,1,8,power_law_1.01,0.6",
          lead + "64,2048,768,8,128,2,8,balanced,0.3",
          lead + "64,2048,768,8,128,2,8,power_law_1.01,0.9")
    assert section_of(out, "gpu,library,tokens_x_topk_over_experts,shapes,time_over_time_at_4_p50,"
                           "every_pick_distinct,random_picks") == [
        "L40S,sglang_fused_moe_triton,0.25,1,0.25,0.25,0.23", "L40S,sglang_fused_moe_triton,0.5,1,0.50,0.50,0.40",
        "L40S,sglang_fused_moe_triton,1,1,0.97,1.00,0.64", "L40S,sglang_fused_moe_triton,2,1,1.00,1.00,0.88"], out
    assert section_of(out, "gpu,library,moe_ep,assignments_per_expert,pairs,power_law_over_balanced_p50") == [
        "L40S,sglang_fused_moe_triton,1,<=1,1,0.80", "L40S,sglang_fused_moe_triton,>=8,4-32,1,2.00"], out

    # Check 16 (a MoE working set that fits the L2) on hand-made L40S rows (96 MiB of L2 =
    # 100,663,296 bytes; 864 GB/s), top-8 of 128 experts, hidden 2,048, inter 768, balanced at ep
    # 1: one token hits 8 experts, 8 x 3 x 2,048 x 768 x 2 = 75,497,472 bytes (0.75 of the L2),
    # timed at 2.5x DRAM speed; two tokens 150,994,944 (1.5 L2s) at 0.77x; one token at tp 2
    # 37,748,736 (0.375) at 1.0x. Left out: 16 tokens (16 x 8 = 128 picks, not fewer than the
    # experts), ep 2, a power law, a dtype without a known weight size.
    lead = "SGLang,0.5,NVIDIA L40S,moe,sglang_fused_moe_triton,"
    def at(ws, rate):  # the latency in ms that reads `ws` bytes at `rate` x 864 GB/s
        return repr(ws / (rate * 864e9) * 1e3)
    out = run_on_file(tmp, "l2fit", "L40S", "moe_perf.csv", moe,
          lead + f"bfloat16,1,2048,768,8,128,1,1,balanced,{at(75497472, 2.5)}",
          lead + f"bfloat16,2,2048,768,8,128,1,1,balanced,{at(150994944, 0.77)}",
          lead + f"bfloat16,1,2048,768,8,128,2,1,balanced,{at(37748736, 1.0)}",
          lead + "bfloat16,16,2048,768,8,128,1,1,balanced,0.5",
          lead + "bfloat16,1,2048,768,8,128,1,2,balanced,0.01",
          lead + "bfloat16,1,2048,768,8,128,1,1,power_law_1.2,0.01",
          lead + "float7,1,2048,768,8,128,1,1,balanced,0.01")
    assert section_of(out, "gpu,library,moe_dtype,working_set_over_l2,layers,rate_over_dram_bandwidth_p50") == [
        "L40S,sglang_fused_moe_triton,bfloat16,<=L2/2,1,1.00", "L40S,sglang_fused_moe_triton,bfloat16,L2/2-L2,1,2.50",
        "L40S,sglang_fused_moe_triton,bfloat16,L2-2xL2,1,0.77"], out

    # Check 16's GEMM table on hand-made L40S rows of at most 16 tokens: weights of 4,096 x 1,024
    # in BF16 (8,388,608 bytes, 0.083 of the L2) timed at 1.3x DRAM speed, of 4,096 x 4,096
    # (33,554,432, 0.33) at 0.75x; left out: 32 tokens, a dtype without a known weight size.
    def gemm_at(m, n, k, rate, dtype="bfloat16"):
        return f"SGLang,0.5,NVIDIA L40S,gemm,sglang,{dtype},{m},{n},{k},{repr(n * k * 2 / (rate * 864e9) * 1e3)}"
    out = run_on_file(tmp, "l2gemm", "L40S", "gemm_perf.csv", HEADER,
          gemm_at(8, 4096, 1024, 1.3), gemm_at(16, 4096, 4096, 0.75), gemm_at(32, 4096, 1024, 1.3),
          gemm_at(8, 4096, 1024, 1.3, "int3"))
    assert section_of(out, "gpu,gemm_dtype,weights_over_l2_m_le_16,rows,rate_over_dram_bandwidth_p50") == [
        "L40S,bfloat16,L2/16-L2/8,1,1.30", "L40S,bfloat16,L2/4-L2/2,1,0.75"], out

    # A device no sheet names.
    write(os.path.join(gpu, "gemm_perf.csv"), HEADER, row("NVIDIA Imaginary GPU", "bfloat16", 4096, 4096, 4096, 100))
    rc, out, err = run(tmp)
    assert rc != 0 and "NVIDIA Imaginary GPU" in err and len(err.strip().splitlines()) == 1, (rc, err)
print("ok")
