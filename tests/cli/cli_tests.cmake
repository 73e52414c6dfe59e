# End-to-end checks of the `tilecast` binary: exit codes and the one-line error messages.
set(TC $<TARGET_FILE:tilecast>)
set(D ${CMAKE_CURRENT_SOURCE_DIR}/data)

# A succeeding command must exit 0 AND print the expected text on stdout.
function(tc_cli_test name regex)
  string(REPLACE ";" "|" cmdstr "${ARGN}")
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} "-DCMD=${cmdstr}" "-DREGEX=${regex}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_ok.cmake)
endfunction()
# A failing command must exit non-zero (exactly 1: bad input or configuration) AND print
# the expected line, and only one line, on stderr.
function(tc_cli_fail name regex cmd)
  string(REPLACE ";" "|" cmdstr "${cmd}")
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} "-DCMD=${cmdstr}" "-DREGEX=${regex}" "-DRC=1"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_fail.cmake)
endfunction()
# The same with another exit code (2 feature not built, 3 runtime).
function(tc_cli_fail_rc name rc regex cmd)
  string(REPLACE ";" "|" cmdstr "${cmd}")
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} "-DCMD=${cmdstr}" "-DREGEX=${regex}" "-DRC=${rc}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_fail.cmake)
endfunction()

tc_cli_test(help "predict-kernel" ${TC} --help)
tc_cli_test(subcommand_help "--shape" ${TC} predict-kernel --help)
tc_cli_test(gpus_lists_h100 "NVIDIA H100 80GB HBM3" ${TC} gpus)
tc_cli_test(gpus_show_by_cuda_name "num_sms: 58" ${TC} gpus --show "NVIDIA L4")
# `gpus NAME` is `gpus --show NAME`; any other word that is no option's value is refused by name
# (Boost would drop it and the command would run as if it were not there).
tc_cli_test(gpus_show_positional "cuda_name: NVIDIA L4\n.*num_sms: 58" ${TC} gpus L4)
tc_cli_fail(gpus_two_names "unexpected argument 'T4': it takes one word, for --show" "${TC};gpus;L4;T4")
tc_cli_fail(stray_argument "unexpected argument 'H100': this command takes only --options"
            "${TC};predict-kernel;--op;gemm;--shape;8,8,8;--dtype;bf16;H100")
tc_cli_test(stray_argument_help "^usage: tilecast predict-kernel" ${TC} predict-kernel H100 --help)
tc_cli_test(predict_kernel_json "\"latency_ms\"" ${TC} predict-kernel --op bmm --shape 16,512,64,512 --gpu H100-SXM --format json)
tc_cli_test(predict_kernel_neusight_json "waves" ${TC} predict-kernel --op ln --shape 8192,1024 --gpu ${D}/neusight_device.json)
# A Hopper SIMT SGEMM's rate, hand-derived: 132 SMs x 128 lanes x 2 FLOP x 1.830 GHz (the clock
# its sheet rates tensor peaks at) x 64/68 (the issue bound) = 58,201.6 GFLOP/s.
tc_cli_test(predict_kernel_fp32_rate_hopper "fp32 rate +58201\\.6 GFLOP/s: the sheet's 66908 x issue bound 0\\.941 x compute clock 0\\.924" ${TC} predict-kernel --op linear --shape 1,4096,1024,1024 --gpu H100-SXM)
tc_cli_test(predict_kernel_fp32_rate_json "\"compute_clock_fraction\": 0\\.924" ${TC} predict-kernel --op bmm --shape 16,512,64,512 --gpu H200 --format json)

# What a whole-model forecast rests on, per family: an AMD GPU's LLM-era kernels come from
# networks trained on NVIDIA GPUs alone (the manifest's five GEMM training GPUs), and the
# H200's GEMMs blend the network with the fitted roofline (configs/predictors/gemm.yaml: 0.4).
tc_cli_test(predict_basis_text "basis +gemm \\(5 kernels\\): not one of its 5 training GPUs, no AMD GPU among them: network\\^0\\.70 x fitted roofline\\^0\\.30" ${TC} predict --model llama-3.1-8b --gpu MI300X --mode decode --batch 8 --context 2048)
tc_cli_test(predict_basis_json "\"family\": \"gemm\",[^}]*\"forecast_by\": \"network\\+fitted_roofline\",[^}]*\"gpu\": \"unseen\"" ${TC} predict --model llama-3.1-8b --gpu H200 --mode generate --batch 2 --seq 256 --gen 4 --format json)

# The plain roofline states its own limit: a 1-row batched GEMM moves 806 x (413 + 413 x 418 + 418)
# x 4 B = 559.25 MB (116.5 us at the H200's 4,800 GB/s) for 0.278 GFLOP (4.2 us at its 66.9
# TFLOPS): memory-bound, though its 128-row tile makes the wave-quantised bound compute-bound.
tc_cli_test(predict_kernel_roofline_own_bound "roofline_ms +0\\.11651[0-9]* \\(memory-bound: its bytes at the sheet's DRAM bandwidth\\)\nutilisation +[0-9.]+ of the wave-quantised roofline \\([0-9.]+ ms, compute-bound\\)" ${TC} predict-kernel --op bmm --shape 806,1,413,418 --gpu H200)

# One kernel's basis: the A100-PCIE-40GB is one of the five NeuSight training GPUs; the GB200 is
# a twin of the B200 (148 SMs, compute capability 10, 8 TB/s), so the MoE network applies.
tc_cli_test(predict_kernel_basis "basis +linear \\(1 kernel\\): one of its 5 training GPUs: network\n" ${TC} predict-kernel --op linear --shape 1,4096,1024,1024 --gpu A100-PCIE-40GB)
tc_cli_test(predict_kernel_basis_json "\"basis\": {[^}]*\"forecast_by\": \"network\",[^}]*\"gpu\": \"twin\"" ${TC} predict-kernel --op moe --shape 64,4096,14336,2,8 --gpu GB200 --format json)

# gpus' trained column, against the bundled manifest's training GPUs: the A100-SXM4-80GB trained
# every LLM-era family, the A40 and RTX 4090 (vidur, LLMServingSim) GEMMs and memory ops, the
# GB200 none but is a twin of the B200; NeuSight's five FP32 families trained on the P4.
tc_cli_test(gpus_trained_column "A100-80GB-SXM +NVIDIA A100-SXM4-80GB .* gemm prefill decode moe memop\n.*A40 +NVIDIA A40 .* gemm memop\n.*GB200 +NVIDIA GB200 .* gemm~ prefill~ decode~ moe~\n.*H200 +NVIDIA H200 .* -\n.*P4 +Tesla P4 .* fp32\n" ${TC} gpus)
# The A100-SXM4-40GB is the A100-PCIE-40GB's die and memory system (108 SMs, compute capability 8,
# 1,555 GB/s): a twin of an FP32 training GPU, in gpus and in a forecast's basis.
tc_cli_test(gpus_fp32_twin "A100-SXM4-40GB +NVIDIA A100-SXM4-40GB .* fp32~\n" ${TC} gpus)
tc_cli_test(predict_kernel_basis_fp32_twin "basis +bmm \\(1 kernel\\): a twin of one of its 5 training GPUs: network\n" ${TC} predict-kernel --op bmm --shape 8,512,64,512 --gpu A100-SXM4-40GB)
tc_cli_test(gpus_training_json "\"name\": \"GB200\",[^{]*{[^}]*},[^{]*\"training\": {[^}]*\"gemm\": \"twin\",[^}]*\"memory_op\": \"unseen\"" ${TC} gpus --format json)

tc_cli_fail(unknown_command "unknown command 'frobnicate'" "${TC};frobnicate")
tc_cli_fail(unknown_gpu "unknown GPU 'H10'.*closest" "${TC};predict-kernel;--op;bmm;--shape;1,2,3,4;--gpu;H10")
tc_cli_fail(negative_dim "dimension M = -2" "${TC};predict-kernel;--op;bmm;--shape;1,-2,3,4;--gpu;T4")
tc_cli_fail(unknown_op "unknown op 'conv'" "${TC};predict-kernel;--op;conv;--shape;1,2;--gpu;T4")
tc_cli_fail(bad_format "unknown format 'xml'" "${TC};predict-kernel;--op;add;--shape;1,2;--gpu;T4;--format;xml")
tc_cli_fail(missing_option "--op" "${TC};predict-kernel;--shape;1,2;--gpu;T4")
tc_cli_fail(eval_nan "nan_latency.csv:2: column 'Latency'" "${TC};eval-kernels;--data;${D}/bad/nan_latency.csv")
tc_cli_fail(eval_truncated "truncated.csv:3" "${TC};eval-kernels;--data;${D}/bad/truncated.csv")
tc_cli_fail(eval_missing_file "cannot open" "${TC};eval-kernels;--data;/nonexistent.csv")
tc_cli_fail(eval_unknown_gpu "unknown GPU 'Imaginary GPU 9000' \\(no spec in configs/gpus/; closest: [^)]+\\)" "${TC};eval-kernels;--data;${D}/bad/unknown_gpu.csv")
tc_cli_fail(missing_weights "manifest" "${TC};predict-kernel;--op;add;--shape;1,2;--gpu;T4;--weights;/nonexistent")
tc_cli_fail(bad_gpu_yaml "unknown field 'bandwidth'" "${TC};predict-kernel;--op;add;--shape;1,2;--gpu;${D}/gpus_bad/unknown_key.yaml")

# Whole-model forecasts.
tc_cli_test(predict_model_json "\"backward_ms\"" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 4 --seq 1024 --mode training --format json)
tc_cli_test(predict_model_table "top operators" ${TC} predict --model bert-large --gpu L4 --batch 8 --seq 512)
tc_cli_test(predict_model_fusion "fused" ${TC} predict --model gpt2-large --gpu a100 --batch 4 --seq 1024 --fusion)
tc_cli_fail(predict_unknown_model "unknown model 'llama'" "${TC};predict;--model;llama;--gpu;T4;--batch;1;--seq;16")
tc_cli_fail(predict_seq_too_long "exceeds" "${TC};predict;--model;gpt2-large;--gpu;T4;--batch;1;--seq;99999")
tc_cli_fail(predict_bad_mode "--mode" "${TC};predict;--model;gpt2-large;--gpu;T4;--batch;1;--seq;16;--mode;serve")
tc_cli_fail(predict_training_fusion "inference only" "${TC};predict;--model;gpt2-large;--gpu;T4;--batch;1;--seq;16;--mode;training;--fusion")
tc_cli_fail(eval_models_missing_dir "labels folder not found" "${TC};eval-models;--labels;/nonexistent")
# A MoE layer on an unseen GPU: its networks' forecast blended with the fitted roofline (0.6), the
# stacked GEMMs at their default weight 0 (set_prior_weight_test.sh gives them a share).
tc_cli_test(predict_kernel_moe_unseen_blend "prior_ms +[0-9.]+ \\(the family's fitted roofline; this GPU is not one the network was trained on, nor a twin: the forecast is the geometric mean of the network's \\(weight 0\\.30\\) and this \\(0\\.70\\)\\).*basis +moe \\(1 kernel\\): not one of its 3 training GPUs: network\\^0\\.30 x fitted roofline\\^0\\.70" ${TC} predict-kernel --op moe --shape 4096,4096,14336,2,8 --gpu H100-SXM --dtype bf16)
# GEMM on an unseen GPU: the fitted roofline is the network's base, so its weight (0.30) shrinks
# with the share of its forecast that is floor and waves: a GEMM of 128 x 1,024 weights for one
# token is nearly all fixed costs (the network's forecast), one of 8,192 cubed nearly none.
tc_cli_test(predict_kernel_gemm_unseen_fixed_costs "prior_ms +[0-9.]+ \\(the family's fitted roofline; this GPU is not one the network was trained on, nor a twin: the forecast is the geometric mean of the network's \\(weight 0\\.9[0-9]\\) and this \\(0\\.0[0-9]: the family's weight times the share of this beyond its floor and waves\\)\\).*basis +gemm \\(1 kernel\\): not one of its 5 training GPUs: network\\^0\\.70 x fitted roofline\\^0\\.30 \\(that weight times its share beyond its floor and waves\\)" ${TC} predict-kernel --op gemm --shape 1,128,1024 --gpu H100-SXM)
# The bundled weights' recorded errors (weights/forecast_errors.json): on an unseen GPU the GEMM
# family's leave-one-GPU-out cells of bf16 (the A100, B200, RTX 4090 and L40S folds), in text and
# JSON; on a training GPU its held-out shapes' cell instead; decode on an unseen GPU its three folds.
tc_cli_test(predict_kernel_unseen_error "basis +gemm \\(1 kernel\\): not one of its 5 training GPUs: [^\n]*; leave-one-GPU-out error gemm/bf16 [0-9]+\\.[0-9] % \\([0-9]+\\.[0-9]-[0-9]+\\.[0-9] % over 4 GPUs left out in turn\\)\n" ${TC} predict-kernel --op gemm --shape 20,2048,8192 --dtype bf16 --gpu H200)
tc_cli_test(predict_kernel_unseen_error_json "\"unseen_gpu_error\": \\[.*\"key\": \"gemm/bf16\",[ \n]*\"max_mape_pct\": [0-9.]+,[ \n]*\"mean_mape_pct\"" ${TC} predict-kernel --op gemm --shape 20,2048,8192 --dtype bf16 --gpu H200 --format json)
tc_cli_test(predict_kernel_training_gpu_heldout_error "basis +gemm \\(1 kernel\\): one of its 5 training GPUs: network; error on the 10 % of shapes left out of training gemm/bf16 [0-9]+\\.[0-9] % \\([0-9]+ rows\\)\n" ${TC} predict-kernel --op gemm --shape 20,2048,8192 --dtype bf16 --gpu A100-80GB-SXM)
# A decode step's four memory-op kernels (the RMSNorms with the residual add fused, RoPE, SiLU-mul
# and the sampler): the first three ops' cells, each once, over three GPUs; the sampler has none
# (no training rows time it).
tc_cli_test(predict_unseen_error_memory_ops "memory_op \\(4 kernels\\): [^\n]*; leave-one-GPU-out error rmsnorm [0-9.]+ % \\([0-9.]+-[0-9.]+ % over 3 GPUs left out in turn\\), rope [0-9.]+ % \\([^)]*\\), silu_mul [0-9.]+ % \\([^)]*\\)\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 8 --context 2048)
tc_cli_test(predict_unseen_error_decode "generation_attention \\(1 kernel\\): not one of its 3 training GPUs: fitted roofline alone[^\n]*; leave-one-GPU-out error generation_attention/bf16 [0-9.]+ % \\([0-9.]+-[0-9.]+ % over 3 GPUs left out in turn\\)" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 8 --context 2048)
tc_cli_test(predict_kernel_gemm_unseen_roofline "the forecast is the geometric mean of the network's \\(weight 0\\.7[0-9]\\) and this \\(0\\.(2[5-9]|30): the family's weight" ${TC} predict-kernel --op gemm --shape 8192,8192,8192 --gpu H100-SXM)
# Prefill's base per kernel library (prior_base_by_library): a FlashAttention GPU the networks never
# saw (the H100) starts from FlashAttention's own fitted roofline, the B200 from TRT-LLM's; GEMM,
# which has one library, names the family's.
tc_cli_test(predict_kernel_prefill_library_base "prior_ms +[0-9.]+ \\(flash_attention's own fitted roofline, which the network corrects\\)" ${TC} predict-kernel --op attention_prefill --shape 1,8192,32,8,128 --gpu H100-SXM)
tc_cli_test(predict_kernel_prefill_library_base_json "\"prior_library\": \"trtllm_mha\"" ${TC} predict-kernel --op attention_prefill --shape 1,8192,32,8,128 --gpu B200 --format json)
tc_cli_test(predict_kernel_gemm_no_library_base_json "\"prior_library\": null" ${TC} predict-kernel --op gemm --shape 8192,8192,8192 --gpu H100-SXM --format json)
# train --add-data (a lab's collected folders beside the default data): with --data, with the
# AMD set, or naming no folder, one line each (the rest: cli.collect_pipeline).
tc_cli_fail(train_data_and_add_data "--data and --add-data: --data trains on the collected folders alone, --add-data adds them to the default training data; give one of them" "${TC};train;--data;${D}/labels;--add-data;${D}/labels;--out;${CMAKE_CURRENT_BINARY_DIR}/add_data_out")
tc_cli_fail(train_add_data_amd "--vendor amd trains on NeuSight's AMD data; --add-data folders carry their own GPU" "${TC};train;--vendor;amd;--add-data;${D}/labels;--out;${CMAKE_CURRENT_BINARY_DIR}/add_data_out")
tc_cli_fail(train_add_data_missing "/nonexistent/run: --add-data: not a folder \\(one written by tilecast collect\\)" "${TC};train;--add-data;/nonexistent/run;--out;${CMAKE_CURRENT_BINARY_DIR}/add_data_out")

# Collector (CPU backend): resume after SIGKILL, Ctrl-C, shards + merge, train -> predict.
add_test(NAME cli.collect_pipeline COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/collect_pipeline_test.sh ${TC})
set_tests_properties(cli.collect_pipeline PROPERTIES TIMEOUT 600)
# Bad input and faults: exit codes, one error line, inputs and weights folders unchanged.
add_test(NAME cli.reliability COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/reliability_test.sh ${TC})
set_tests_properties(cli.reliability PROPERTIES TIMEOUT 600)
# scripts/fit-host-gap.sh --param call-overhead-us APPLY=1: the value it writes, and nothing else.
add_test(NAME cli.fit_call_overhead COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/fit_call_overhead_test.sh ${TC}
         ${CMAKE_SOURCE_DIR})
# The blend-weight edit eval-llm-loo.sh UNSEEN_PRIOR_WEIGHT makes in fold manifests.
add_test(NAME cli.set_prior_weight COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/set_prior_weight_test.sh ${TC}
         ${CMAKE_SOURCE_DIR})
# EVAL_ONLY=1's refresh of the families a fold did not train (folds older than a bundled family's inputs).
add_test(NAME cli.refresh_families COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/refresh_families_test.sh ${TC}
         ${CMAKE_SOURCE_DIR})
# EVAL_ONLY=1's warning on folds trained before the last change to the bounds their fit rests on.
add_test(NAME cli.warn_older_fit COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/warn_older_fit_test.sh ${CMAKE_SOURCE_DIR})
# The evaluation scripts' BLAS kernels (OPENBLAS_CORETYPE=Haswell on AVX2 CPUs, as the figures were trained).
add_test(NAME cli.blas_kernels COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/blas_kernels_test.sh ${CMAKE_SOURCE_DIR})
# --list previews a shard's configs in index order (I, I + N, ...) and runs nothing; without it --out is required.
tc_cli_test(collect_list_shard "index,family,op,dtype,id\n1,bmm,bmm,fp32,bmm/fp32/[0-9]+x[0-9]+x[0-9]+x[0-9]+\n4,bmm,bmm,fp32,bmm/fp32/[0-9x]+\n$" ${TC} collect --sweep ${CMAKE_SOURCE_DIR}/configs/sweeps/smoke.yaml --list --shard 1/3 --limit 2)
tc_cli_fail(collect_needs_out "--out: required" "${TC};collect;--sweep;${CMAKE_SOURCE_DIR}/configs/sweeps/smoke.yaml")
tc_cli_fail_rc(collect_cuda_without_gpu 3 "--backend cuda: " "${TC};collect;--sweep;${CMAKE_SOURCE_DIR}/configs/sweeps/smoke.yaml;--out;${CMAKE_BINARY_DIR}/collect_cuda_out;--backend;cuda")
tc_cli_fail(collect_bad_sweep "cannot open" "${TC};collect;--sweep;/nonexistent.yaml;--out;/tmp/x;--backend;cpu")
# FP8 GEMMs run on FP8 tensor cores only: the CPU backend refuses the sweep before any row.
tc_cli_fail(collect_fp8_cpu "llm-validate-fp8.yaml: field 'dtypes': fp8_static GEMMs need --backend cuda" "${TC};collect;--sweep;${CMAKE_SOURCE_DIR}/configs/sweeps/llm-validate-fp8.yaml;--out;${CMAKE_BINARY_DIR}/collect_fp8_cpu_out;--backend;cpu")
tc_cli_test(predict_model_tp "\"communication_ms\"" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 4 --seq 1024 --mode training --tp 4 --format json)
tc_cli_fail(predict_dp_indivisible "not divisible" "${TC};predict;--model;gpt2-large;--gpu;H100-SXM;--batch;3;--seq;16;--dp;2")

# eval-models on a small fixture folder (invented label values, NeuSight's layout): JSON rows
# for a single-GPU and a tensor-parallel label; a malformed label is one error line.
tc_cli_test(eval_models_fixture_json "\"option\": \"tp4\"" ${TC} eval-models --labels ${D}/labels --format json)
tc_cli_test(eval_models_fixture_table "nvidia_inf layout" ${TC} eval-models --labels ${D}/labels)
# The re-run roofline: a number for the single-GPU label, null for the tensor-parallel one.
tc_cli_test(eval_models_fixture_roofline "\"option\": \"tp4\",[^}]*\"roofline_ms\": null.*\"option\": \"\",[^}]*\"roofline_ms\": [0-9]" ${TC} eval-models --labels ${D}/labels --format json)
# Our own H200 labels (scripts/measure-e2e.py; datasets/measured/h200-e2e): the folder maps to
# the H200's spec, each label's measured time and mode come through (opt_13's forward of 8 x 2048
# and its training step of 2: forward 317.35 + backward 570.61 ms from the label file).
tc_cli_test(eval_models_h200_measured "H200 +opt_13 +inf +- +2048 +8 +1251\\.56 .*H200 +opt_13 +train +- +2048 +2 +887\\.96 .*H200 inf +10 .*H200 train +8 " ${TC} eval-models --labels ${CMAKE_SOURCE_DIR}/datasets/measured/h200-e2e/labels)
# Training labels timed in parts (hand-made: fw / bwall in the JSON, per-node fw / bw / acc in the
# CSV). bert b2: label bw/fw 2, nodes (18 + 2) / 10 = 2 -> ratio 1, consistent; gpt2 b1: label
# 1, nodes (11.5 + 0.5) / 6 = 2 -> 0.5, inconsistent; bert b8: no CSV, unchecked; inference: none.
tc_cli_test(eval_models_phase_consistent "\"label_bw_ms\": 200.0,[ \n]*\"label_fw_ms\": 100.0,.*\"model\": \"bert_large\",[^}]*\"phase_ratio_vs_nodes\": 1.0,[ \n]*\"phase_split\": \"consistent\",[^}]*\"seq\": 512" ${TC} eval-models --labels ${D}/phase_labels --format json)
tc_cli_test(eval_models_phase_inconsistent "\"model\": \"gpt2_large\",[^}]*\"phase_ratio_vs_nodes\": 0.5,[ \n]*\"phase_split\": \"inconsistent\"" ${TC} eval-models --labels ${D}/phase_labels --format json)
tc_cli_test(eval_models_phase_unchecked "\"batch\": 8,[^}]*\"phase_ratio_vs_nodes\": null,[ \n]*\"phase_split\": \"unchecked\"" ${TC} eval-models --labels ${D}/phase_labels --format json)
tc_cli_test(eval_models_phase_inference "\"label_fw_ms\": null,[^}]*\"mode\": \"inf\",[^}]*\"phase_split\": null" ${TC} eval-models --labels ${D}/phase_labels --format json)
# The table: one line per timed label (signed forward / backward errors), then per GPU the mean
# over all of them (3) and over the consistent one (1), with one unchecked.
tc_cli_test(eval_models_phase_table "training steps timed in parts.*L4 +bert_large +2 +100.00 .* 2.00 +1.00  consistent\n.*L4 +gpt2_large +1 +150.00 .* 1.00 +0.50  inconsistent\n.*\nL4 +3 +[0-9.]+ +1 +[0-9.]+ +1\n" ${TC} eval-models --labels ${D}/phase_labels)
tc_cli_test(eval_models_phase_csv "phase_split\n.*,100,200,[0-9.e+-]+,[0-9.e+-]+,consistent\n.*,,,,,\n" ${TC} eval-models --labels ${D}/phase_labels --format csv)
# by_gpu_mode: the L4 training group counts its one consistent label (3 timed: 1 consistent, 1
# inconsistent, 1 unchecked); the inference group has no such keys.
tc_cli_test(eval_models_phase_by_gpu_mode "\"mode\": \"inf\",[ \n]*\"option\": \"\",[ \n]*\"rows\": 1[ \n]*}.*\"mode\": \"train\",[ \n]*\"option\": \"\",[ \n]*\"phase_consistent_mean_error_pct\": [0-9.]+,[ \n]*\"phase_consistent_rows\": 1,[ \n]*\"rows\": 3" ${TC} eval-models --labels ${D}/phase_labels --format json)
tc_cli_fail(eval_models_bad_phase_json "bert_large-train-512-2.json: field 'fw_latency': not a number" "${TC};eval-models;--labels;${D}/bad_phase_labels")
tc_cli_fail(eval_models_bad_phase_csv "bert_large-train-512-2.csv:2: column 'bw_latency': -5.0 outside \\[0, 1e9\\] ms" "${TC};eval-models;--labels;${D}/bad_phase_csv")
# generate past the model's context: the error names the flags given (--seq + --gen), not the
# decode step's --context. 131,072 positions: 10 + 131,063 - 1 fits, one more token does not.
tc_cli_fail(predict_generate_past_positions "--gen: 10 prompt \\+ 131064 output tokens need 131073 positions; llama-3.1-8b has 131072" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;1;--seq;10;--gen;131064")
tc_cli_fail(eval_models_li_dir_missing "--li-dir '/nonexistent': folder not found" "${TC};eval-models;--labels;${D}/labels;--li-dir;/nonexistent")
tc_cli_fail(eval_models_bad_label "field 'e2e_latency'" "${TC};eval-models;--labels;${D}/bad_labels")
tc_cli_test(predict_model_csv "^model,gpu,mode,dtype,batch,seq,dp,tp,pp,microbatches,ep,cp,vpp,name,kind,count,forward_ms,backward_ms,total_ms\n.*opt-1.3b,T4,inference,fp32,1,128,1,1,1,1,1,1,1,\\(total\\),step,1," ${TC} predict --model opt-1.3b --gpu T4 --batch 1 --seq 128 --format csv)
tc_cli_test(predict_kernel_csv "^op,family,shape,dtype,gpu,latency_ms.*\ngemm,gemm,\"64,4096,4096\",bf16,H100-SXM," ${TC} predict-kernel --op gemm --shape 64,4096,4096 --gpu H100-SXM --format csv)

# Inputs that libFuzzer found crashing a parser (fixed): now one error line each.
tc_cli_fail(fuzz_device_json_num_sm "field .Num_Sm.: expected a whole number" "${TC};gpus;--show;${D}/fuzz_found/device_num_sm_overflow.json")
tc_cli_fail(fuzz_sweep_complex_key "sweep_complex_key.yaml: .*a key is not a plain name" "${TC};collect;--sweep;${D}/fuzz_found/sweep_complex_key.yaml;--out;${CMAKE_BINARY_DIR}/fuzz_out;--backend;cpu")

# Tensor-core GEMMs: dtype errors are one line (the GPU, the dtype and the op named).
tc_cli_fail(gemm_fp8_on_a100 "A100-SXM4-40GB' has no fp8 tensor-core peak" "${TC};predict-kernel;--op;gemm;--shape;64,4096,4096;--dtype;fp8;--gpu;A100-SXM4-40GB")
tc_cli_fail(unknown_dtype "--dtype: unknown dtype 'int3'" "${TC};predict-kernel;--op;gemm;--shape;64,64,64;--dtype;int3;--gpu;H100-SXM")
tc_cli_fail(fp16_on_fp32_family "--dtype fp16: op 'softmax' .family softmax. is modelled in fp32 .NeuSight's FP32 data" "${TC};predict-kernel;--op;softmax;--shape;64,64;--dtype;fp16;--gpu;H100-SXM")
tc_cli_fail(eval_aic_unknown_op "aic_unknown_op.csv:2: column .op_name.: .allreduce. is not modelled" "${TC};eval-kernels;--data;${D}/bad/aic_unknown_op.csv")
tc_cli_test(eval_aic_moe_json "\"moe/bf16\": {[^}]*\"rows\": 1" ${TC} eval-kernels --data ${D}/aic_moe_small.csv --format json)
# The rows' own library (kernel_source) beside the one the forecast assumes: the B200's Triton MoE
# rows (shapes its TRT-LLM MoE rows lack) are forecast on TRT-LLM's path (a generated fixture).
tc_cli_test(eval_row_library "kernel library its forecast assumes on the row's GPU\nmoe/sglang_flashinfer_trtllm_moe +3 [^\n]*\n-- by op family and the kernel library the row ran \\(its kernel_source\\)\nmoe/sglang_flashinfer_trtllm_moe +2 [^\n]*\nmoe/sglang_fused_moe_triton +1 " ${TC} eval-kernels --data ${D}/aic_b200_moe_libraries.csv)
tc_cli_test(eval_row_library_json "\"by_row_library\": {\n +\"moe/sglang_flashinfer_trtllm_moe\": {[^}]*\"rows\": 2[^}]*},\n +\"moe/sglang_fused_moe_triton\": {[^}]*\"rows\": 1" ${TC} eval-kernels --data ${D}/aic_b200_moe_libraries.csv --format json)
# SGLang's window 0 (generated rows): the L40S's FlashAttention prefill and the B200's TRT-LLM
# prefill of window 0 ran each query against its own key alone and are forecast so (2 rows);
# the B200's TRT-LLM decode took window 0 as none and stays full attention.
tc_cli_test(eval_sglang_window_zero "-- SGLang rows of window 0 \\(each query attended to its own key alone; forecast so\\)\nsglang window 0 +2 " ${TC} eval-kernels --data ${D}/aic_sglang_window_zero.csv)
tc_cli_test(eval_sglang_window_zero_csv "\nsglang_window_zero,\"own_key\",2," ${TC} eval-kernels --data ${D}/aic_sglang_window_zero.csv --format csv)
tc_cli_test(eval_sglang_window_zero_json "\"sglang_window_zero\": {[^}]*\"implausible_rows\": 0,[^}]*\"rows\": 2\n" ${TC} eval-kernels --data ${D}/aic_sglang_window_zero.csv --format json)
# Two L40S decode rows copied from aiconfigurator: the window-0 one, 64 sequences of 8,192
# cached tokens in 27 us, was SGLang's window 0 (each query against its own key) and is forecast
# so, plausible; read as full attention (aic_decode_beyond_dram.csv: the same latencies in a file
# without a window_size column, as the A100's files are), 2.1 GB of KV cache "read" in 27 us is
# counted implausible (beyond DRAM for the bytes L2 cannot hold) and 0.41 ms for 64 x 1,024 is not.
tc_cli_test(eval_aic_sglang_window_zero_plausible_json "\"generation_attention/bf16\": {[^}]*\"implausible_rows\": 0,[^}]*\"rows\": 2[^}]*}.*\"sglang_window_zero\": {[^}]*\"rows\": 1\n" ${TC} eval-kernels --data ${D}/aic_decode_implausible.csv --format json)
tc_cli_test(eval_aic_implausible_json "\"generation_attention/bf16\": {[^}]*\"implausible_rows\": 1,[^}]*\"rows\": 2" ${TC} eval-kernels --data ${D}/aic_decode_beyond_dram.csv --format json)
tc_cli_test(eval_aic_gemm_json "\"gemm/fp8_block\": {[^}]*\"rows\": 1" ${TC} eval-kernels --data ${D}/aiconfigurator_gemm_small.csv --format json)
tc_cli_test(predict_kernel_gemm_json "\"dtype\": \"fp8\"" ${TC} predict-kernel --op gemm --shape 16,4096,14336 --dtype fp8 --gpu H100-SXM --format json)
# Split-K in the table output: 96 tokens x 512 outputs are 4 tiles on the A100's 108 SMs; the
# 4,096-wide reduction splits 16 ways (4096 / 256; 108 / 4 = 27 would fill the SMs).
tc_cli_test(predict_kernel_gemm_split_k "tile +128x128 split_k=16 .ampere tensor-core tile" ${TC} predict-kernel --op gemm --shape 96,4096,512 --gpu A100-SXM4-80GB)
# No forecast beats the sheet's compute peak: the bundled GEMM network puts a 1,024 x 8,192 x 8,192
# BF16 GEMM on the RTX 4090 below 2 x 1024 x 8192^2 / 165.2 TFLOP/s = 0.831955 ms, and the
# forecast is raised to it and says so (text and JSON). Tied to the bundled weights: after a
# retrain that no longer beats the peak here, pick another shape whose `raised_to_peak` is true
# (session 60's retrain moved it off 4,096^3, whose bound is the same 0.831955 ms).
tc_cli_test(predict_kernel_raised_to_peak "latency_ms +0\\.831955[^\n]*raised to the sheet's compute peak, which the forecast beat\nroofline_ms +0\\.831955 \\(compute-bound: its FLOPs at the sheet's peak\\)" ${TC} predict-kernel --op gemm --shape 1024,8192,8192 --dtype bf16 --gpu RTX-4090)
# The ensemble members' range is printed only where a family has more than one network: gemm
# has one (no range on an unseen GPU, where it blends with its fitted roofline), decode three.
tc_cli_test(predict_kernel_one_network "latency_ms +[0-9.]+\nroofline_ms" ${TC} predict-kernel --op gemm --shape 4096,4096,4096 --dtype bf16 --gpu H100-SXM)
tc_cli_test(predict_kernel_members "latency_ms +[0-9.]+ \\(ensemble members: [0-9.]+ - [0-9.]+\\)\nroofline_ms" ${TC} predict-kernel --op attention_decode --shape 64,4096,32,8,128 --gpu L40S)
tc_cli_test(predict_kernel_raised_to_peak_json "\"raised_to_peak\": true" ${TC} predict-kernel --op gemm --shape 1024,8192,8192 --dtype bf16 --gpu RTX-4090 --format json)
# A kernel alone runs at the boost clock; --sustained (inside a model's step) at the clock the
# sheet rates its tensor peak at: the H200's 989.4 TFLOP/s is 132 SMs x 4,096 FLOP at 1,830 MHz,
# 989,400 x 1,980 / 1,830 = 1.0705e+06 GFLOP/s at its 1,980 MHz boost. An A100's sheet is rated
# at its boost clock: no line.
tc_cli_test(predict_kernel_tensor_rate_alone "tensor rate  1\\.0705e\\+06 GFLOP/s: the sheet's 989400 \\(rated at 1830 MHz\\) at the 1980 MHz boost clock" ${TC} predict-kernel --op gemm --shape 4096,4096,4096 --gpu H200)
tc_cli_test(predict_kernel_tensor_rate_sustained "tensor rate  989400 GFLOP/s: the peak at the 1830 MHz the sheet rates full-SM loads at \\(--sustained\\)" ${TC} predict-kernel --op attention_prefill --shape 1,4096,32,8,128 --gpu H200 --sustained)
tc_cli_test(predict_kernel_sustained_json "\"sustained\": true" ${TC} predict-kernel --op gemm --shape 4096,4096,4096 --gpu H200 --sustained --format json)
tc_cli_test(predict_kernel_no_tensor_rate_at_boost "ampere tensor-core tile, from the spec's architecture\\)\nbasis" ${TC} predict-kernel --op gemm --shape 4096,4096,4096 --gpu A100-SXM4-80GB --sustained)
# A lab's measured sustained clock (tests/data/h200_measured_clock.yaml: the H200's spec with
# sustained_clock_mhz 1450) is the step's: 989,400 x 1,980 / 1,830 x 1,450 / 1,980 = 783,951 GFLOP/s.
tc_cli_test(predict_kernel_tensor_rate_measured "tensor rate  783951 GFLOP/s: the peak at the 1450 MHz the spec's sustained_clock_mhz measured for sustained tensor-core work \\(--sustained\\)" ${TC} predict-kernel --op gemm --shape 4096,4096,4096 --gpu ${D}/h200_measured_clock.yaml --sustained)
# Hugging Face's eager model (--hf-eager): stated in the header, the JSON, and refused where it is not built.
tc_cli_test(predict_hf_eager_prefill "prefill, batch 2, prompt 512, bf16 \\(KV cache bf16\\), tp 1, Hugging Face eager \\(transformers' modules, SDPA; unfused kernels\\)\n\\(memory: the pass's activations as an engine's layers hold them" ${TC} predict --model llama-3.1-8b --gpu H200 --mode prefill --batch 2 --seq 512 --hf-eager)
tc_cli_test(predict_hf_eager_training_json "\"hf_eager\": true" ${TC} predict --model llama-3.1-8b --gpu H200 --mode training --dtype bf16 --batch 2 --seq 512 --hf-eager --format json)
# One 512-token prompt: 1,323 kernel calls whose H200 kernels take less than the calls' host time
# (15 us each, the FP32 families' call overhead): the forward is the host's, and says so.
tc_cli_test(predict_hf_eager_host_floor "ttft_ms +19\\.845 [^\n]*\nhost floor +[0-9.]+ ms in forward_ms: its kernel calls at 15 us of host time each[^\n]*\n.*\\(eager host\\) +1 +[0-9.]+" ${TC} predict --model llama-3.1-8b --gpu H200 --mode prefill --batch 1 --seq 512 --hf-eager)
tc_cli_test(predict_hf_eager_host_floor_json "\"host_call_us\": 15\\.0,\n  \"host_floor_ms\": [1-9][0-9.]*," ${TC} predict --model llama-3.1-8b --gpu H200 --mode prefill --batch 1 --seq 512 --hf-eager --format json)
tc_cli_fail(predict_hf_eager_decode "--hf-eager applies to --mode prefill and --mode training --dtype bf16\\|fp16 \\(--mode decode\\)" "${TC};predict;--model;llama-3.1-8b;--gpu;H200;--mode;decode;--batch;2;--context;512;--hf-eager")
tc_cli_fail(predict_hf_eager_fp32_training "--mode training in fp32 is eager PyTorch already" "${TC};predict;--model;llama-3.1-8b;--gpu;H200;--mode;training;--batch;2;--seq;512;--hf-eager")
tc_cli_fail(predict_hf_eager_moe "--hf-eager of mixtral-8x7b \\(mixtral\\): Hugging Face's eager graph is not built for routed experts" "${TC};predict;--model;mixtral-8x7b;--gpu;H200;--mode;prefill;--batch;1;--seq;512;--hf-eager")
tc_cli_test(compare_hf_eager "   1 llama-3.1-8b +H100-SXM .*\n   - llama-3.1-8b +H100-SXM .* cannot run: --hf-eager: one GPU or data parallelism.*\\(Hugging Face eager: transformers' modules with SDPA" ${TC} compare --model llama-3.1-8b --gpus H100-SXM --mode training --dtype bf16 --batch 2 --seq 512 --tp 1,2 --hf-eager)
# CSV: the eager row says hf_eager true (its mixed-training columns: MFU, zero 0, no recompute);
# a row that cannot take it leaves every column but the GPU's memory empty and says why, in the
# last column.
tc_cli_test(compare_hf_eager_csv "recompute,hf_eager,train_days,train_usd,error\nllama-3\\.1-8b,H100-SXM,training,bf16,2,512,[^\n]*,[0-9.]+,0,none,true,,,\nllama-3\\.1-8b,H100-SXM,training,bf16,2,512,[^\n]*,,,,,,[0-9.]+,,,,,,,,,,,\"--hf-eager: one GPU or data parallelism" ${TC} compare --model llama-3.1-8b --gpus H100-SXM --mode training --dtype bf16 --batch 2 --seq 512 --tp 1,2 --hf-eager --format csv)
tc_cli_fail(predict_hf_eager_tp "--hf-eager: Hugging Face's eager prefill runs on one GPU" "${TC};predict;--model;llama-3.1-8b;--gpu;H200;--mode;prefill;--batch;1;--seq;512;--tp;2;--hf-eager")
tc_cli_test(gpus_show_sustained_clock "sustained_clock_mhz: 1450" ${TC} gpus --show ${D}/h200_measured_clock.yaml)
tc_cli_test(predict_kernel_gemm_fp8_static "shape +16,4096,14336 .fp8_static." ${TC} predict-kernel --op gemm --shape 16,4096,14336 --dtype fp8_static --gpu L40S)
tc_cli_fail(gemm_fp8_static_on_a100 "A100-SXM4-40GB' has no fp8 tensor-core peak" "${TC};predict-kernel;--op;gemm;--shape;64,4096,4096;--dtype;fp8_static;--gpu;A100-SXM4-40GB")
# Decode attention forecasts a GPU its networks were not trained on by the fitted roofline
# alone (network_gpus: twins), and corrects a training GPU and its twin (GB200: the B200's die
# and memory; the B300, its Blackwell Ultra revision) with them; the RTX 4090 is not the L40S's twin.
tc_cli_test(predict_kernel_decode_unseen_prior_alone "prior_ms +[0-9.e-]+ .the family's fitted roofline; alone: the network corrects only the GPUs it was trained on" ${TC} predict-kernel --op attention_decode --shape 32,2048,32,8,128 --dtype bf16 --gpu H100-SXM)
tc_cli_test(predict_kernel_decode_unseen_json "\"network_correction\": false" ${TC} predict-kernel --op attention_decode --shape 32,2048,32,8,128 --dtype bf16 --gpu H100-SXM --format json)
# FlashAttention's cost per CTA (the bundled manifest's library_cta_ns, fitted on the A100's and
# the L40S's rows; tied to the bundled weights): 2,048 sequences x 8 KV heads at one cached token
# are 16,384 CTAs, at 42.17 ns at least 0.690908 ms past the floor on the H100 (FlashAttention by
# its spec, unseen by the decode networks); none on the B300 (TRT-LLM's, a twin of the B200).
tc_cli_test(predict_kernel_decode_cta_cost "cta cost +42.17 ns a CTA \\(flash_attention's, fitted on its training rows\\): past the floor, 16384 CTAs take at least 0.690908 ms" ${TC} predict-kernel --op attention_decode --shape 2048,2,32,8,128 --gpu H100-SXM)
tc_cli_test(predict_kernel_decode_cta_cost_json "\"prior_cta_ns\": 42.169" ${TC} predict-kernel --op attention_decode --shape 2048,2,32,8,128 --gpu H100-SXM --format json)
# FlashAttention's own launch floor in cycles (prior_floor_by_library), in place of the shared
# microseconds: 20 thousand cycles at the H100's 1,980 MHz boost clock are 20,000 / 1,980 = 10.1 us
# (the bundled manifest's library_floor_kcycles); a twin of the B200, corrected by the networks,
# takes none.
tc_cli_test(predict_kernel_decode_library_floor "floor +20 thousand cycles \\(flash_attention's launch floor, fitted on its training rows\\): 10\\.1 us at this GPU's 1980 MHz boost clock" ${TC} predict-kernel --op attention_decode --shape 2048,2,32,8,128 --gpu H100-SXM)
tc_cli_test(predict_kernel_decode_library_floor_json "\"prior_floor_kcycles\": 20\\.0" ${TC} predict-kernel --op attention_decode --shape 2048,2,32,8,128 --gpu H100-SXM --format json)
tc_cli_test(predict_kernel_decode_library_floor_twin_json "\"prior_floor_kcycles\": 0" ${TC} predict-kernel --op attention_decode --shape 2048,2,32,8,128 --gpu B300 --format json)
tc_cli_test(predict_kernel_decode_cta_cost_twin_json "\"prior_cta_ns\": 0" ${TC} predict-kernel --op attention_decode --shape 2048,2,32,8,128 --gpu B300 --format json)
tc_cli_test(predict_kernel_decode_trained_json "\"network_correction\": true" ${TC} predict-kernel --op attention_decode --shape 32,2048,32,8,128 --dtype bf16 --gpu B200 --format json)
tc_cli_test(predict_kernel_decode_twin_json "\"network_correction\": true" ${TC} predict-kernel --op attention_decode --shape 32,2048,32,8,128 --dtype bf16 --gpu GB200 --format json)
tc_cli_test(predict_kernel_decode_revision_twin_json "\"network_correction\": true" ${TC} predict-kernel --op attention_decode --shape 32,2048,32,8,128 --dtype bf16 --gpu B300 --format json)
tc_cli_test(predict_kernel_decode_not_twin_json "\"network_correction\": false" ${TC} predict-kernel --op attention_decode --shape 32,2048,32,8,128 --dtype bf16 --gpu RTX-4090 --format json)
tc_cli_fail(predict_kernel_gemm_shape_schema "--shape: gemm takes M,N,K" "${TC};predict-kernel;--op;gemm;--shape;1,2;--gpu;H100-SXM")
tc_cli_fail(predict_kernel_attn_fp8_block "--dtype fp8_block: op 'generation_attention' .family generation_attention. is modelled in fp32, tf32, fp16, bf16, fp8" "${TC};predict-kernel;--op;attention_decode;--shape;8,1024,32,8,128;--dtype;fp8_block;--gpu;H100-SXM")
tc_cli_fail(predict_kv_fp8_static "--kv-dtype fp8_static: the KV cache is fp32, fp16, bf16 or fp8" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;1;--context;128;--kv-dtype;fp8_static")
tc_cli_fail(predict_kernel_rope_fp8_static "--dtype fp8_static: op 'rope' .family memory_op. is modelled in fp32, fp16, bf16" "${TC};predict-kernel;--op;rope;--shape;16,5120;--dtype;fp8_static;--gpu;H100-SXM")
tc_cli_test(gpus_json "\"cuda_name\": \"NVIDIA H200\"" ${TC} gpus --format json)
# The H100 SXM's full-SM clock (its sheet's tensor rating) and SIMT GEMM rate: 132 x 128 x 2 x
# 1.830 GHz x 64/68 = 58,201.6 GFLOP/s; the A100's at its boost clock, its issue bound 1.
tc_cli_test(gpus_json_compute_clock "\"compute_clock_mhz\": 1410\\.0,[^}]*\"cuda_name\": \"NVIDIA A100-SXM4-40GB\",[^}]*\"fp32_simt_gemm_gflops\": 19492\\.0,.*\"compute_clock_mhz\": 1830\\.0,[^}]*\"cuda_name\": \"NVIDIA H100 80GB HBM3\",[^}]*\"fp32_simt_gemm_gflops\": 58201\\.6" ${TC} gpus --format json)
# The exponential rate prefill's bound takes (GpuSpec::exp_per_sm_clock): the B300's sheet states
# 32 a clock (Blackwell Ultra's doubled MUFU.EX2), the H100's states none: 16.
tc_cli_test(gpus_json_exp_rate "\"cuda_name\": \"NVIDIA B300[^\"]*\",[^}]*\"exp_per_sm_clock\": 32\\.0,.*\"cuda_name\": \"NVIDIA H100 80GB HBM3\",[^}]*\"exp_per_sm_clock\": 16\\.0," ${TC} gpus --format json)
tc_cli_test(gpus_json_node "\"cuda_name\": \"NVIDIA GB200\",[^}]*\"gpus_per_node\": 72,[^}]*\"network_gbps\": 50" ${TC} gpus --format json)
tc_cli_test(predict_mode_train_alias "\"mode\": \"training\"" ${TC} predict --model gpt2-large --gpu T4 --batch 1 --seq 64 --mode train --format json)

# LLM serving forecasts (BF16/FP8 kernels, TP): the contract's JSON keys, the memory verdict,
# and one-line errors for what is not modelled.
tc_cli_test(predict_generate_json "\"tpot_ms\": [0-9.e+-]+,.*\"ttft_ms\": [0-9]" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 4 --seq 512 --gen 16 --format json)
tc_cli_test(predict_generate_memory "\"kv_cache_gb\": 0.5[0-9]*," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 8 --seq 400 --gen 100 --format json)
# Beside the weights (16,060,522,496 B of the 77,309,411,328 usable, 90 % of 80 GiB) the step's 8
# tokens of activations (102,400 B each) and logits (128,256 x 6 B each): 6,981,888 B, 53 tokens
# of 131,072 B; a sequence of 1,000 tokens with its token and logits takes 131,943,936 B: 464 of them.
tc_cli_test(predict_decode_kv_room "KV room +467238 tokens beside the weights and activations: 464 sequences of this length" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 8 --context 999)
# The prefill of 8 prompts of 1,000 tokens: 8 x (1,000 x 102,400 + 769,536) B = 0.825356288 GB of
# activations, leaving 460,994 tokens; each sequence with its prompt's pass takes 1,032 x 131,072
# + 102,400,000 + 769,536 = 238,435,840 B: 256 of them.
tc_cli_test(predict_generate_kv_room_json "\"activations_gb\": 0.825356288,.*\"kv_capacity_tokens\": 460994,.*\"max_sequences\": 256," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 8 --seq 1000 --gen 32 --format json)
tc_cli_test(predict_decode_table "tpot_ms .*one decode step" ${TC} predict --model qwen3-32b --gpu H200 --mode decode --batch 16 --context 4096 --tp 2)
tc_cli_test(predict_prefill_moe "ttft_ms .*time to first token" ${TC} predict --model mixtral-8x7b --gpu B200 --mode prefill --batch 1 --seq 1024 --dtype fp8)
tc_cli_test(predict_decode_does_not_fit "DOES NOT FIT" ${TC} predict --model llama-3.1-70b --gpu L4 --mode decode --batch 1 --context 128)
tc_cli_fail(predict_serving_fp8_a100 "A100-SXM4-40GB' has no fp8 tensor-core peak" "${TC};predict;--model;llama-3.1-8b;--gpu;A100-SXM4-40GB;--mode;prefill;--batch;1;--seq;128;--dtype;fp8")
tc_cli_fail(predict_serving_gpt2 "serving graphs cover the decoder families" "${TC};predict;--model;gpt2-large;--gpu;T4;--mode;prefill;--batch;1;--seq;128")
# generate builds its prefill graph first: the refusal still names the mode asked for
tc_cli_fail(predict_serving_generate_bert "--mode generate: serving graphs cover the decoder families.*not 'bert'" "${TC};predict;--model;bert-large;--gpu;H100-SXM;--mode;generate;--batch;1;--seq;128;--gen;4")
tc_cli_fail(predict_decode_needs_context "--mode decode needs --context" "${TC};predict;--model;llama-3.1-8b;--gpu;T4;--mode;decode;--batch;1")
tc_cli_fail(predict_inference_bf16 "--dtype bf16: --mode inference models eager FP32" "${TC};predict;--model;llama-3.1-8b;--gpu;T4;--mode;inference;--batch;1;--seq;16;--dtype;bf16")
tc_cli_fail(predict_generate_one_token "--gen: 1 out of range" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;1;--seq;16;--gen;1")
tc_cli_test(predict_kernel_rmsnorm_json "\"model\": \"physics" ${TC} predict-kernel --op rmsnorm --shape 4096,8192 --gpu H100-SXM --format json)
# The sampler's fit on the RTX 4090's 40 rows (LLMServingSim, vLLM): 21.88 us + 1.171 x the FP32
# logits at DRAM speed; one sequence of Llama-3's 128,256 logits, measured at 25.0 us there.
tc_cli_test(predict_kernel_sampler "shape +1,128256 .fp32.\ngpu +RTX-4090 .*\nlatency_ms +0.02247" ${TC} predict-kernel --op sampler --shape 1,128256 --gpu RTX-4090)
# The memory-op model's L2 share in the table: half the H100's 50 MiB L2 is 26.21 MB of the
# 2 x 2 x 2,048 x 4,096 + 2 x 4,096 = 33.56 MB a 2,048 x 4,096 BF16 RMSNorm moves.
tc_cli_test(predict_kernel_rmsnorm_l2_share "not resident in L2 \\+ SM-side and latency-bound time per byte \\(fitted\\); L2-resident here: 26\\.21 MB of 33\\.56 MB" ${TC} predict-kernel --op rmsnorm --shape 2048,4096 --gpu H100-SXM)
tc_cli_fail(predict_kernel_rope_fp8 "--dtype fp8: op 'rope' .family memory_op. is modelled in fp32, fp16, bf16" "${TC};predict-kernel;--op;rope;--shape;16,5120;--dtype;fp8;--gpu;H100-SXM")
# Fused MoE kernels: load model fields in JSON, one-line errors for bad routing and shapes.
tc_cli_test(predict_kernel_moe_json "\"experts_hit\": 2" ${TC} predict-kernel --op moe --shape 1,4096,14336,2,8 --moe-tp 2 --gpu H100-SXM --format json)
tc_cli_fail(eval_kernels_holdout_range "--holdout-shapes: expected a percentage in 1..50, got 75" "${TC};eval-kernels;--data;x.csv;--holdout-shapes;75")
tc_cli_fail(eval_kernels_li_without_rows "--li-dir: needs --rows-csv" "${TC};eval-kernels;--data;x.csv;--li-dir;/tmp")
tc_cli_fail(predict_kernel_kv_dtype_on_gemm "--kv-dtype applies to attention ops only" "${TC};predict-kernel;--op;gemm;--shape;64,4096,4096;--kv-dtype;fp8;--gpu;H100-SXM")
tc_cli_fail(predict_kernel_moe_tf32 "--dtype tf32: op 'moe' .family moe. is modelled in fp32, fp16, bf16, fp8, fp8_block" "${TC};predict-kernel;--op;moe;--shape;64,4096,1024,2,8;--dtype;tf32;--gpu;H100-SXM")
tc_cli_test(predict_kernel_moe_one_token "experts +8\\.0 hit, 8\\.0 tokens on this rank, busiest expert 1\\.0 " ${TC} predict-kernel --op moe --shape 1,7168,2048,8,384 --gpu H200)
tc_cli_test(predict_kernel_moe_int4_group "shape +16,7168,2048,8,384,tp8,g32 \\(int4, routing balanced\\)\ngpu +H200 \\(NVIDIA H200\\)\nlatency_ms +0\\.[0-9]+" ${TC} predict-kernel --op moe --shape 16,7168,2048,8,384 --moe-tp 8 --dtype int4 --weight-group 32 --gpu H200)
tc_cli_fail(predict_kernel_moe_group_dtype "--weight-group applies to --dtype int4" "${TC};predict-kernel;--op;moe;--shape;16,7168,2048,8,384;--dtype;fp8;--weight-group;32;--gpu;H200")
tc_cli_fail(predict_kernel_moe_group_divides "--shape: a weight scale group \\(48\\) applies to int4 experts, 16-1024 elements dividing" "${TC};predict-kernel;--op;moe;--shape;16,7168,2048,8,384;--dtype;int4;--weight-group;48;--gpu;H200")
# The pairs a Triton rank passes for other ranks (moe_other_rank_bytes), by hand: 16,384 tokens x
# top-8 of 128 at ep 128, rank 0's one expert taking 1,024 pairs, the other 130,048 at 2 x (5 x
# 1,536 + 2 x 4,096) = 31,744 bytes: 4,128,243,712 bytes; none on the B200, whose TRT-LLM kernels
# route only a rank's own pairs. At 8,192 tokens, 65,024 pairs elsewhere: 2,064,121,856 bytes,
# 1.032061 ms at the H100 PCIe's 2,000 GB/s, the floor the forecast is raised to (since session 70
# the fitted roofline has that pass in series, so a forecast falls below it only where the
# networks' share is much faster; on the H100 SXM since session 78's 0.7 share of the fitted
# roofline it no longer does).
tc_cli_test(predict_kernel_moe_other_ranks "latency_ms +1\\.03206[^\n]*raised to the other ranks' passes \\(below\\), which the forecast beat\n.*other ranks +2\\.064 GB, 1\\.032 ms at DRAM bandwidth: [^\n]*sglang_fused_moe_triton" ${TC} predict-kernel --op moe --shape 8192,4096,1536,8,128 --moe-ep 128 --gpu H100-PCIe)
tc_cli_test(predict_kernel_moe_other_ranks_json "\"other_rank_floor\": true,[ \n]*\"other_rank_gb\": 2\\.064121856,[ \n]*\"other_rank_ms\": 1\\.03206[0-9]*,.*\"raised_to_peak\": true" ${TC} predict-kernel --op moe --shape 8192,4096,1536,8,128 --moe-ep 128 --gpu H100-PCIe --format json)
# One token of Qwen3-30B-A3B's MoE layer on the L40S: 8 experts x 3 x 2,048 x 768 x 2 bytes + 131,072 of
# activations = 75,628,544 bytes, within its 96 MiB L2 (100,663,296): 4.458 us at 5,120 / 108 bytes
# per SM-cycle over 142 SMs at 2,520 MHz, 87.53 us at 864 GB/s.
tc_cli_test(predict_kernel_moe_l2 "\nl2 +75\\.63 MB, the layer's working set, fits the 100\\.7 MB L2: [^\n]*, 4\\.458 us in the fitted roofline \\(87\\.53 us at DRAM bandwidth" ${TC} predict-kernel --op moe --shape 1,2048,768,8,128 --gpu L40S)
tc_cli_test(predict_kernel_moe_l2_json "\"fitted_memory_us\": 4\\.458[0-9]*,[^}]*\"l2_working_set\": true" ${TC} predict-kernel --op moe --shape 1,2048,768,8,128 --gpu L40S --format json)
tc_cli_test(predict_kernel_moe_l2_sustained_json "\"fitted_memory_us\": 87\\.53[0-9]*,[^}]*\"l2_working_set\": false" ${TC} predict-kernel --op moe --shape 1,2048,768,8,128 --gpu L40S --sustained --format json)
# The same layer in a model's step on the L40S (a training GPU: the network's forecast alone, 0.0298946 ms
# as a call repeated alone): its networks' L2 speed-up taken back, x 4.429 = the bundled fitted roofline
# from DRAM over the same from the L2 (4.42919 in JSON): 0.0298946 x 4.42919 = 0.132409. The B200's 132 MB
# L2 holds it too; the H100's 52 MB does not (no line there).
tc_cli_test(predict_kernel_moe_in_step "latency_ms +0\\.132409 .*\nin a step +75\\.63 MB, the layer's working set, would fit the 100\\.7 MB L2 alone; in a model's step it comes from DRAM: the networks' share of the forecast x 4\\.429 " ${TC} predict-kernel --op moe --shape 1,2048,768,8,128 --gpu L40S --sustained)
tc_cli_test(predict_kernel_moe_in_step_json "\"in_step_l2_factor\": 4\\.4291[0-9]*," ${TC} predict-kernel --op moe --shape 1,2048,768,8,128 --gpu L40S --sustained --format json)
tc_cli_test(predict_kernel_moe_other_ranks_trtllm "\"library\": \"sglang_flashinfer_trtllm_moe\",.*\"other_rank_gb\": 0\\.0," ${TC} predict-kernel --op moe --shape 16384,4096,1536,8,128 --moe-ep 128 --gpu B200 --format json)
# On the L40S, a training GPU, the passes (4.778 ms at 864 GB/s) are reported, not a floor.
tc_cli_test(predict_kernel_moe_other_ranks_trained "other ranks +4\\.128 GB, 4\\.778 ms at DRAM bandwidth: [^\n]*not a floor here" ${TC} predict-kernel --op moe --shape 16384,4096,1536,8,128 --moe-ep 128 --gpu L40S)
# One token's top-22 of 512 experts under a power law, 16 ranks: no more picks than experts, so the
# balanced load, as the data's power-law rows of that kind ran: rank 0's 32 experts take 32 x 22 /
# 512 = 1.375 picks (the draws gave the busiest rank all 22 before session 81).
tc_cli_test(predict_kernel_moe_few_picks_power_law "experts +1\\.4 hit, 1\\.4 tokens on this rank, busiest expert 1\\.0" ${TC} predict-kernel --op moe --shape 1,4096,2688,22,512 --moe-ep 16 --routing power_law_1.2 --gpu H100-SXM)
# Balanced as the kernel benchmark spreads it (every pick a different expert until all are hit) and
# uniform (each token's picks at random): 32 tokens' top-8 of 256 experts on one rank hit all 256, or
# 256 x (1 - (31 / 32)^32) = 163.3 (by hand).
tc_cli_test(predict_kernel_moe_balanced_spread "shape +32,7168,2048,8,256 \\(bf16, routing balanced\\)\n.*\nexperts +256\\.0 hit, 256\\.0 tokens on this rank, busiest expert 1\\.0" ${TC} predict-kernel --op moe --shape 32,7168,2048,8,256 --gpu H200)
tc_cli_test(predict_kernel_moe_uniform "shape +32,7168,2048,8,256 \\(bf16, routing uniform\\)\n.*\nexperts +163\\.3 hit, 256\\.0 tokens on this rank" ${TC} predict-kernel --op moe --shape 32,7168,2048,8,256 --routing uniform --gpu H200)
tc_cli_test(predict_kernel_moe_uniform_json "\"routing\": \"uniform\"," ${TC} predict-kernel --op moe --shape 32,7168,2048,8,256 --routing uniform --gpu H200 --format json)
# Serving forecasts route uniformly unless told otherwise; --routing balanced names itself in the header.
tc_cli_test(predict_serving_routing_default "\"routing\": \"uniform\"," ${TC} predict --model qwen3-30b-a3b --gpu H100-SXM --mode decode --batch 8 --context 128 --format json)
tc_cli_test(predict_serving_routing_balanced "^qwen3-30b-a3b on H100-SXM, decode, batch 8, cached context 128, bf16 \\(KV cache bf16\\), tp 1, routing balanced\n" ${TC} predict --model qwen3-30b-a3b --gpu H100-SXM --mode decode --batch 8 --context 128 --routing balanced)
tc_cli_test(predict_kernel_moe_skewed "busiest expert" ${TC} predict-kernel --op moe --shape 512,7168,2048,8,256 --moe-ep 8 --routing power_law_1.2 --dtype fp8_block --gpu B300)
tc_cli_fail(predict_kernel_moe_routing "--routing: expected balanced, uniform or power_law_<a>" "${TC};predict-kernel;--op;moe;--shape;64,4096,14336,2,8;--routing;zipf;--gpu;H100-SXM")
tc_cli_fail(predict_kernel_moe_topk "top-k 9 exceeds the 8 experts" "${TC};predict-kernel;--op;moe;--shape;64,4096,14336,9,8;--gpu;H100-SXM")
tc_cli_fail(predict_kernel_moe_flags_on_gemm "--moe-tp/--moe-ep/--routing/--weight-group apply to --op moe only" "${TC};predict-kernel;--op;gemm;--shape;64,64,64;--moe-tp;2;--gpu;H100-SXM")
# An unseen GPU's forecast is no slower than that of a training GPU it betters in every spec: the
# H100's tiny decode step takes the A100-SXM4-80GB's forecast (the weights' gpus/ specs).
tc_cli_test(predict_kernel_capped "latency_ms +4\\.5504[0-9]\ncapped +at the forecast of this kernel on A100-80GB-SXM, a training GPU this GPU betters in every spec" ${TC} predict-kernel --op attention_decode --shape 2048,2,64,64,128 --gpu H100-SXM)
tc_cli_test(predict_kernel_capped_json "\"capped_by\": \"A100-80GB-SXM\"," ${TC} predict-kernel --op attention_decode --shape 2048,2,64,64,128 --gpu H100-SXM --format json)
tc_cli_test(predict_kernel_not_capped_json "\"capped_by\": null," ${TC} predict-kernel --op attention_decode --shape 64,8192,32,8,128 --gpu H100-SXM --format json)
# Nor faster than a training GPU that betters it in every spec, in the same kernel library: the
# A100-PCIE-40GB's long-cache decode takes the A100-SXM4-80GB's forecast.
tc_cli_test(predict_kernel_raised "latency_ms +1\\.7004[0-9]\nraised +to the forecast of this kernel on A100-80GB-SXM, a training GPU that betters this GPU in every spec" ${TC} predict-kernel --op attention_decode --shape 64,8192,32,8,128 --gpu A100-PCIE-40GB)
tc_cli_test(predict_kernel_raised_json "\"lifted_by\": \"A100-80GB-SXM\"," ${TC} predict-kernel --op attention_decode --shape 64,8192,32,8,128 --gpu A100-PCIE-40GB --format json)
tc_cli_test(predict_kernel_not_raised_json "\"lifted_by\": null," ${TC} predict-kernel --op attention_prefill --shape 4,64,64,8,128 --gpu H100-PCIe --format json)
tc_cli_test(gpus_new_blackwell "NVIDIA RTX PRO 6000 Blackwell Server Edition" ${TC} gpus)
# Memory per GPU in every forecast: a GPT-3 2.7B training step on an 8 GB P4 says it does not fit.
tc_cli_test(predict_training_does_not_fit "memory/GPU .*AdamW state.*DOES NOT FIT" ${TC} predict --model gpt3-2.7b --gpu P4 --batch 1 --seq 2048 --mode training)
tc_cli_test(predict_training_memory_json "\"activations_gb\": 9.949814784,.*\"fits\": true" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 1 --seq 1024 --mode training --optimizer none --format json)
tc_cli_test(predict_host_gap_json "\"host_gap_us\": 8\\.0.*\"kernel_launches\": [1-9][0-9]+" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 1 --seq 128 --host-gap-us 8 --format json)
tc_cli_fail(predict_host_gap_negative "--host-gap-us: expected 0..10000 microseconds" "${TC};predict;--model;gpt2-large;--gpu;T4;--batch;1;--seq;16;--host-gap-us=-5")
tc_cli_fail(predict_call_overhead_negative "--call-overhead-us: expected 0..1000 microseconds" "${TC};predict;--model;gpt2-large;--gpu;T4;--batch;1;--seq;16;--call-overhead-us=-5")
tc_cli_fail(eval_models_call_overhead_nan "--call-overhead-us: expected 0..1000 microseconds, got nan" "${TC};eval-models;--labels;${CMAKE_CURRENT_SOURCE_DIR}/data;--call-overhead-us;nan")
# A whole-model forecast states the call overhead it took off, per family (none when 0, none
# for the LLM-era families).
tc_cli_test(predict_call_overhead_table "\ncall overhead bmm 15 us, elementwise 15 us, layernorm 15 us, linear 15 us, softmax 15 us per kernel" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 1 --seq 128)
tc_cli_test(predict_call_overhead_json "\"call_overhead_us\": {[^}]*\"linear\": 15\\.0" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 1 --seq 128 --format json)
tc_cli_test(predict_call_overhead_zero_json "\"call_overhead_us\": {}" ${TC} predict --model gpt2-large --gpu H100-SXM --batch 1 --seq 128 --call-overhead-us 0 --format json)
tc_cli_test(predict_serving_no_call_overhead "\"call_overhead_us\": {}" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode decode --batch 8 --context 1024 --format json)
# An FP32 kernel's time inside a model (less the call overhead of isolated timings) is stated
# beside its isolated latency.
tc_cli_test(predict_kernel_stream_ms "latency_ms   [0-9.]+ [^\n]*\nstream_ms    [0-9.]+ \\(inside a whole model" ${TC} predict-kernel --op linear --shape 1024,1024,1024 --gpu V100-PCIE-32GB)
tc_cli_fail(eval_models_host_gap_nan "--host-gap-us: expected 0..10000 microseconds, got nan" "${TC};eval-models;--labels;${CMAKE_CURRENT_SOURCE_DIR}/data;--host-gap-us;nan")
tc_cli_test(predict_decode_moe_ep "tp 4, ep 4, routing power_law_1.2\n" ${TC} predict --model qwen3-30b-a3b --gpu H100-SXM --mode decode --batch 64 --context 2048 --tp 4 --ep 4 --routing power_law_1.2)
# A windowed model says so, and its KV cache holds the window: 8 x 4,096 tokens x 32 layers x
# 8 KV heads x 128 x 2 (K, V) x 2 bytes = 4.29 GB for prompts of 6,000.
tc_cli_test(predict_sliding_window "tp 1, sliding window 4096\nmemory/GPU +[0-9.]+ GB \\([0-9.]+ GB weights \\+ 4\\.92 GB activations \\+ 4\\.29 GB KV cache\\)" ${TC} predict --model mistral-7b-v0.1 --gpu H100-SXM --mode prefill --batch 8 --seq 6000)
# Gemma-2-27B windows 23 of its 46 layers: 8 prompts of 6,000 tokens keep (23 x 4,096 + 23 x
# 6,000) tokens x 8,192 B (2 x 16 KV heads x 128 x 2 B) each: 15.22 GB; two attention ops of 23.
tc_cli_test(predict_per_layer_windows "tp 1, sliding window 4096 in 23 of 46 layers\nmemory/GPU +[0-9.]+ GB \\(54\\.45 GB weights \\+ [0-9.]+ GB activations \\+ 15\\.22 GB KV cache\\).*model\\.layers\\.self_attn\\.attn +23 .*model\\.layers\\.self_attn\\.attn\\.sliding +23 " ${TC} predict --model gemma-2-27b --gpu H100-SXM --mode prefill --batch 8 --seq 6000)
# Llama 4 Scout: chunked attention in 36 of 48 layers, said so; its KV cache keeps a chunk of
# 8,192 tokens in those and all 20,001 in the others: 8 x (36 x 8,192 + 12 x 20,001) x 2 x 2
# KV heads a rank x 128 x 2 B = 4.38 GB on tp 4.
tc_cli_test(predict_llama4_chunked "llama-4-scout on H100-SXM, decode, batch 8, cached context 20000, bf16 \\(KV cache bf16\\), tp 4, chunked attention 8192 in 36 of 48 layers\nmemory/GPU +[0-9.]+ GB \\([0-9.]+ GB weights \\+ [0-9.]+ GB activations \\+ 4\\.38 GB KV cache\\)" ${TC} predict --model llama-4-scout --gpu H100-SXM --tp 4 --mode decode --batch 8 --context 20000)
tc_cli_fail(predict_gpt_oss_eager "--mode inference \\(eager FP32\\) of gpt-oss-20b \\(gpt_oss\\): Hugging Face's eager gpt-oss runs every expert on every token" "${TC};predict;--model;gpt-oss-20b;--gpu;H100-SXM;--mode;inference;--batch;1;--seq;128")
# gpt-oss-120b as it ships: experts in MXFP4 (its quantization_config), the rest BF16; on tp 4
# a rank holds ((2,127,347,712 BF16 parameters) x 2 B + 114,701,598,720 expert parameters x
# 0.53125 B) / 4 + 210,240 replicated norm weights x 2 B = 16.30 GB (dequantised: 58.41 GB).
tc_cli_test(predict_gpt_oss "gpt-oss-120b on H100-SXM, decode, batch 8, cached context 1000, bf16 \\(KV cache bf16\\), tp 4, experts mxfp4, sliding window 128 in 18 of 36 layers\nmemory/GPU +[0-9.]+ GB \\(16\\.30 GB weights" ${TC} predict --model gpt-oss-120b --gpu H100-SXM --mode decode --batch 8 --context 1000 --tp 4)
tc_cli_test(predict_gpt_oss_dequantised "tp 4, sliding window 128 in 18 of 36 layers\nmemory/GPU +[0-9.]+ GB \\(58\\.41 GB weights" ${TC} predict --model gpt-oss-120b --gpu H100-SXM --mode decode --batch 8 --context 1000 --tp 4 --expert-dtype bf16)
tc_cli_test(predict_expert_dtype_json "\"dtype\": \"bf16\",.*\"expert_dtype\": \"int4\"" ${TC} predict --model mixtral-8x7b --gpu A100-80GB-SXM --mode decode --batch 4 --context 512 --tp 2 --expert-dtype int4 --format json)
tc_cli_test(predict_dense_expert_dtype_json "\"expert_dtype\": null" ${TC} predict --model llama-3.1-8b --gpu A100-80GB-SXM --mode decode --batch 4 --context 512 --format json)
tc_cli_fail(predict_expert_dtype_dense "--expert-dtype int4: llama-3.1-8b has no experts" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;1;--context;100;--expert-dtype;int4")
tc_cli_fail(predict_expert_dtype_eager "--expert-dtype does not apply to --mode inference" "${TC};predict;--model;mixtral-8x7b;--gpu;H100-SXM;--mode;inference;--batch;1;--seq;100;--expert-dtype;int4")
tc_cli_fail(predict_expert_dtype_tf32 "--expert-dtype tf32: op 'moe' \\(family moe\\) is modelled in" "${TC};predict;--model;mixtral-8x7b;--gpu;H100-SXM;--mode;decode;--batch;1;--context;100;--expert-dtype;tf32")
tc_cli_fail(compare_expert_dtype_dense "--expert-dtype int4: llama-3.1-8b has no experts" "${TC};compare;--model;llama-3.1-8b;--gpus;H100-SXM;--mode;decode;--batch;1;--context;100;--expert-dtype;int4")
# plan --hf-eager: Hugging Face's eager model on every layout; only data parallelism runs it. Llama-3.1-8B,
# 8 sequences of 2,048 a GPU, needs 186.6 GB on an H200 (151 GB): gradient accumulation is tried
# until a count fits (2 microbatches, 125.4 GB) and no further, so two rows; the other layouts
# are listed with the reason.
tc_cli_test(plan_hf_eager_accumulates_until_it_fits "   1 llama-3\\.1-8b +H200 +bf16 +64 +2048 +8 +1 +1 +2 [^\n]* 125\\.4/151 *\n   2 llama-3\\.1-8b +H200 +bf16 +64 +2048 +8 +1 +1 +1 [^\n]*186\\.6/151 +NO\n\\(memory GB[^\n]*\n\\(Hugging Face eager: [^\n]*\nlayouts that cannot run \\([0-9]+\\):\n[^\n]*--hf-eager: one GPU or data parallelism" ${TC} plan --model llama-3.1-8b --gpu H200 --gpus 8 --global-batch 64 --seq 2048 --dtype bf16 --hf-eager)
# A model the eager graph does not build is refused for that, not for the first layout tried.
tc_cli_fail(plan_hf_eager_moe "plan: no layout of 2 GPUs runs the model with the global batch 8; the first: --hf-eager of mixtral-8x7b \\(mixtral\\): Hugging Face's eager graph is not built for routed experts" "${TC};plan;--model;mixtral-8x7b;--gpu;H200;--gpus;2;--global-batch;8;--seq;512;--dtype;bf16;--hf-eager")
tc_cli_fail(predict_hf_eager_moe_tp "--hf-eager of mixtral-8x7b \\(mixtral\\): Hugging Face's eager graph is not built for routed experts" "${TC};predict;--model;mixtral-8x7b;--gpu;H200;--mode;prefill;--batch;1;--seq;512;--tp;2;--hf-eager")
tc_cli_fail(plan_expert_dtype_training "--expert-dtype does not apply to --mode training" "${TC};plan;--model;mixtral-8x7b;--gpu;H100-SXM;--gpus;8;--global-batch;64;--seq;1024;--dtype;bf16;--expert-dtype;int4")
tc_cli_test(plan_expert_dtype_json "\"expert_dtype\": \"int4\"" ${TC} plan --model mixtral-8x7b --gpu H100-SXM --gpus 2 --global-batch 16 --mode decode --context 1024 --expert-dtype int4 --format json)
tc_cli_fail(predict_nvfp4_hopper "GPU 'H100-SXM' has no fp4 tensor-core peak in its spec \\(FP4 tensor cores start with Blackwell\\)" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;1;--context;100;--dtype;nvfp4")
tc_cli_test(predict_nvfp4 "llama-3.1-8b on B200, decode, batch 1, cached context 100, nvfp4 \\(KV cache bf16\\), tp 1\nmemory/GPU +[0-9.]+ GB \\(6\\.03 GB weights" ${TC} predict --model llama-3.1-8b --gpu B200 --mode decode --batch 1 --context 100 --dtype nvfp4)
tc_cli_fail(predict_kv_nvfp4 "--kv-dtype nvfp4: the KV cache is fp32, fp16, bf16 or fp8" "${TC};predict;--model;llama-3.1-8b;--gpu;B200;--mode;decode;--batch;1;--context;100;--kv-dtype;nvfp4")
# MXFP4 x MXFP8 (W4A8) experts: a MoE dtype on Blackwell's block-scaled tensor cores. predict-kernel
# names it and the library; a GPU without an FP4 peak refuses it; as a model's --dtype it is refused
# (the GEMM family does not model it), as --expert-dtype it is the experts'.
tc_cli_test(moe_mxfp4_mxfp8 "shape        8,2880,2880,4,128 \\(mxfp4_mxfp8, routing balanced\\).*sglang_flashinfer_trtllm_moe" ${TC} predict-kernel --op moe --shape 8,2880,2880,4,128 --dtype mxfp4_mxfp8 --gpu B200)
tc_cli_fail(moe_mxfp4_mxfp8_hopper "GPU 'H100-SXM' has no fp4 tensor-core peak in its spec: mxfp4_mxfp8 needs the block-scaled MXFP4 x MXFP8 tensor cores that start with Blackwell" "${TC};predict-kernel;--op;moe;--shape;8,2880,2880,4,128;--dtype;mxfp4_mxfp8;--gpu;H100-SXM")
tc_cli_fail(predict_dtype_mxfp4_mxfp8 "--dtype mxfp4_mxfp8: modelled for a MoE model's experts only \\(--expert-dtype\\)" "${TC};predict;--model;gpt-oss-20b;--gpu;B200;--mode;decode;--batch;1;--context;100;--dtype;mxfp4_mxfp8")
tc_cli_test(predict_expert_mxfp4_mxfp8 "gpt-oss-20b on B200, decode, batch 1, cached context 100, bf16 \\(KV cache bf16\\), tp 1, experts mxfp4_mxfp8" ${TC} predict --model gpt-oss-20b --gpu B200 --mode decode --batch 1 --context 100 --expert-dtype mxfp4_mxfp8)
# compare: a row that cannot run names the experts' format it was asked for, as a forecast row does.
tc_cli_test(compare_expert_dtype_cannot_run "   1 gpt-oss-20b +B200 +bf16/mxfp4_mxfp8 .*\n   - gpt-oss-20b +H100-SXM +bf16/mxfp4_mxfp8 .* cannot run: GPU 'H100-SXM' has no fp4 tensor-core peak" ${TC} compare --model gpt-oss-20b --gpus H100-SXM,B200 --mode decode --batch 8 --context 1024 --expert-dtype mxfp4_mxfp8)
tc_cli_fail(predict_dtype_weight_only "--dtype mxfp4: weight-only formats are modelled for a MoE model's experts only" "${TC};predict;--model;mixtral-8x7b;--gpu;H100-SXM;--mode;decode;--batch;1;--context;100;--dtype;mxfp4")
# A checkpoint's quantization_config: block-scaled FP8 is the GEMM dtype serving defaults to
# (KV cache BF16); MXFP4 on a model without experts is one line naming the field.
tc_cli_test(predict_quantized_default "llama-fp8-block on H100-SXM, decode, batch 1, cached context 100, fp8_block \\(KV cache bf16\\)" ${TC} predict --model ${CMAKE_SOURCE_DIR}/tests/data/quant/llama-fp8-block.json --gpu H100-SXM --mode decode --batch 1 --context 100)
# compressed-tensors FP8 W8A8 with an FP8 kv_cache_scheme: both defaults, and --kv-dtype overrides the cache's.
tc_cli_test(predict_compressed_tensors_default "llama-fp8-ct on H100-SXM, decode, batch 1, cached context 100, fp8 \\(KV cache fp8\\)" ${TC} predict --model ${CMAKE_SOURCE_DIR}/tests/data/quant/llama-fp8-ct.json --gpu H100-SXM --mode decode --batch 1 --context 100)
tc_cli_test(predict_compressed_tensors_kv_flag "llama-fp8-ct on H100-SXM, decode, batch 1, cached context 100, fp8 \\(KV cache bf16\\)" ${TC} predict --model ${CMAKE_SOURCE_DIR}/tests/data/quant/llama-fp8-ct.json --gpu H100-SXM --mode decode --batch 1 --context 100 --kv-dtype bf16)
tc_cli_fail(predict_quantized_mxfp4 "llama-mxfp4.json: field 'quantization_config': quant_method 'mxfp4' on a model without experts is not modelled" "${TC};predict;--model;${CMAKE_SOURCE_DIR}/tests/data/quant/llama-mxfp4.json;--gpu;H100-SXM;--mode;decode;--batch;1;--context;100")
# DeepSeek-V3: its config's block-scaled FP8 is the default dtype; the latent cache is whole on
# every rank (61 x 32 x 4,097 x 576 x 2 B = 9.21 GB); the eager graph is refused in one line.
tc_cli_test(predict_deepseek_v3 "deepseek-v3 on H200, decode, batch 32, cached context 4096, fp8_block \\(KV cache bf16\\), tp 8\nmemory/GPU +[0-9.]+ GB \\([0-9.]+ GB weights \\+ [0-9.]+ GB activations \\+ 9\\.21 GB KV cache\\).*model\\.layers\\.mlp\\.experts +58 .*model\\.layers\\.self_attn\\.w_kc +61 " ${TC} predict --model deepseek-v3 --gpu H200 --tp 8 --mode decode --batch 32 --context 4096)
# compare's dtype column: GEMMs / routed experts where they differ, the column as wide as
# fp8_block, and the key below the table.
tc_cli_test(compare_expert_dtype_column "\n +1 kimi-k2-thinking H200 +bf16/int4 +32 +4096 .*\n +2 deepseek-v3 +H200 +fp8_block +32 +4096 .*\\(dtype D/E: GEMMs and attention in D, the routed experts in E\\)" ${TC} compare --model kimi-k2-thinking,deepseek-v3 --gpus H200 --tp 8 --mode decode --batch 32 --context 4096)
# Kimi-K2-Thinking: DeepSeek-V3's graph (model_type kimi_k2), its routed experts in the config's
# compressed-tensors int4 (groups of 32), the rest in BF16.
tc_cli_test(predict_kimi_k2 "kimi-k2-thinking on H200, decode, batch 32, cached context 4096, bf16 \\(KV cache bf16\\), tp 8, experts int4\n.*model\\.layers\\.mlp\\.experts +60 " ${TC} predict --model kimi-k2-thinking --gpu H200 --tp 8 --mode decode --batch 32 --context 4096)
tc_cli_fail(predict_deepseek_eager "--mode training \\(eager FP32\\) of deepseek-v2-lite \\(deepseek_v2\\): the eager FP32 graph of multi-head latent attention" "${TC};predict;--model;deepseek-v2-lite;--gpu;H100-SXM;--mode;training;--batch;1;--seq;128")
# Serving pipelines: Llama-3.1-405B's 126 layers over 4 stages as vLLM splits them (31, 32, 32,
# 31): the GPU of a middle stage holds the most, 32 layers x (3,187,671,040 / 8 GEMM + 32,768
# norm) x 2 bytes = 25.50 GB under tp 8; 16 sequences in 4 microbatches of 4.
tc_cli_test(predict_serving_pp "tp 8, pp 4 .4 microbatches of 4.\nmemory/GPU +[0-9.]+ GB \\(25\\.50 GB weights" ${TC} predict --model llama-3.1-405b --gpu H200 --mode decode --batch 16 --context 1024 --tp 8 --pp 4)
# With stages, the operators' shares are of the work of every stage and microbatch (their times
# overlap in the step), so none exceeds 100 %.
tc_cli_test(predict_pipeline_op_shares "operators below: the work of all 4 stages and 4 microbatches .[0-9.]+ ms, overlapping in the step.; % of that work\n\nby kind +ms +%\ngemm +[0-9.]+ +[1-9][0-9]?\\.[0-9]%" ${TC} predict --model llama-3.1-70b --gpu H100-SXM --mode decode --batch 32 --context 2048 --tp 2 --pp 4)
tc_cli_test(predict_serving_pp_json "\"parallel\": {[^}]*\"microbatches\": 2,[^}]*\"pp\": 2," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 3 --seq 128 --gen 4 --pp 2 --format json)
tc_cli_fail(predict_serving_microbatches "--mode decode: serving forecasts take --tp, --pp and --ep .one replica; its microbatches follow from --pp." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;8;--context;128;--pp;2;--microbatches;4")
tc_cli_fail(predict_serving_pp_layers "--pp 33: expected 1..32 stages .the model's layers." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;prefill;--batch;1;--seq;128;--pp;33")
tc_cli_fail(predict_ep_on_training "--ep applies to mixed-precision training .--mode training --dtype bf16.fp16.fp8. and serving .--mode prefill.decode.generate., not to --mode training in fp32 .eager PyTorch." "${TC};predict;--model;mixtral-8x7b;--gpu;H100-SXM;--batch;1;--seq;16;--mode;training;--ep;2")
tc_cli_fail(predict_bad_routing "--routing: expected balanced, uniform or power_law_<a>.*'zipf'" "${TC};predict;--model;qwen3-30b-a3b;--gpu;H100-SXM;--mode;decode;--batch;8;--context;128;--routing;zipf")
tc_cli_fail(predict_optimizer_on_inference "--optimizer does not apply to --mode inference" "${TC};predict;--model;gpt2-large;--gpu;T4;--batch;1;--seq;16;--optimizer;none")
# Chunked prefill (--max-batched-tokens): 4 prompts of 1,000 tokens in steps of 2,048 run in 2
# steps with prompt tokens (2 prompts + 48 tokens, then 2 decoding + 952 + 1,000); the table
# states the budget and the mean and last TTFT; one-line refusals.
tc_cli_test(predict_generate_chunked_json "\"max_batched_tokens\": 2048,.*\"prefill_steps\": 2,.*\"steps\": 17,.*\"ttft_max_ms\": [0-9]" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 4 --seq 1000 --gen 16 --max-batched-tokens 2048 --format json)
tc_cli_test(predict_generate_chunked_table "chunked prefill: 2048 tokens a step\nttft_ms +[0-9.]+  .mean over the requests; the last [0-9.]+.\n.*steps +17  .2 with prompt tokens.\n.*-- first step\n[^\n]*a step of 2048 tokens: prompt chunks 2 x 1000 \\+ 1 x 48," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 4 --seq 1000 --gen 16 --max-batched-tokens 2048)
tc_cli_fail(predict_chunked_below_batch "--max-batched-tokens: 2 is below the 4 sequences that run at once .--batch." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;4;--seq;100;--gen;4;--max-batched-tokens;2")
tc_cli_fail(predict_chunked_prefill_mode "--max-batched-tokens does not apply to --mode prefill" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;prefill;--batch;4;--seq;100;--max-batched-tokens;256")
tc_cli_fail(predict_chunked_pp "--max-batched-tokens with --pp 2: the engine's scheduler is modelled on one pipeline stage only" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;4;--seq;100;--gen;4;--pp;2;--max-batched-tokens;256")
tc_cli_test(predict_generate_max_seqs "at most 2 sequences at once\n.*steps +[0-9]+  .2 with prompt tokens." ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 4 --seq 1000 --gen 16 --max-seqs 2)
tc_cli_fail(predict_max_seqs_decode "--max-seqs does not apply to --mode decode" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;4;--context;100;--max-seqs;2")
tc_cli_test(predict_generate_max_seqs_auto "at most 199 sequences at once .the KV room's.\n.*fits" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 512 --seq 2048 --gen 256 --max-batched-tokens 8192 --max-seqs auto)
tc_cli_fail(compare_max_seqs_zero "--max-seqs: expected auto or a count in .1, 65536., got '0'" "${TC};compare;--model;llama-3.1-8b;--gpus;H100-SXM;--mode;generate;--seq;100;--gen;4;--max-seqs;0")
tc_cli_test(predict_prefill_cached_prefix "\"cached_prefix\": 3072,.*\"kv_cache_gb\": 1.47639" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode prefill --batch 8 --seq 4096 --cached-prefix 3072 --format json)
tc_cli_test(predict_generate_cached_prefix_table "generate: batch 8, prompt 4096, 64 output tokens, bf16 .KV cache bf16., tp 1, 3072 prompt tokens cached\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 8 --seq 4096 --gen 64 --cached-prefix 3072)
tc_cli_fail(predict_cached_prefix_decode "--cached-prefix does not apply to --mode decode" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;8;--context;100;--cached-prefix;10")
tc_cli_fail(compare_cached_prefix_training "--cached-prefix applies to --mode prefill and generate only" "${TC};compare;--model;gpt2-large;--gpus;T4;--mode;training;--seq;128;--cached-prefix;10")
tc_cli_test(predict_generate_prefill_first "\"schedule\": \"prefill-first\"" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 4 --seq 1000 --gen 16 --max-batched-tokens 2048 --schedule prefill-first --format json)
tc_cli_fail(predict_schedule_unknown "--schedule: expected mixed .vLLM. or prefill-first .SGLang., got 'fifo'" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;4;--seq;100;--gen;4;--schedule;fifo")
tc_cli_test(predict_generate_speculative "\"speculative\": {\n +\"accept\": 0.7,\n +\"draft\": \"llama-3.1-8b\",\n +\"expected_tokens_per_round\": 2.7731" ${TC} predict --model llama-3.1-70b --gpu H100-SXM --tp 4 --mode generate --batch 8 --seq 2048 --gen 64 --spec-draft llama-3.1-8b --spec-accept 0.7 --format json)
tc_cli_test(predict_generate_mtp "fp8_block \\(KV cache bf16\\), tp 8, speculative: deepseek-v3-mtp drafts 3 tokens, 0\\.80 accepted \\(2\\.95 tokens a round\\)\n.*tpot_ms +[0-9.]+ +\\(rounds of [0-9.]+ ms at the last: 3 draft steps of" ${TC} predict --model deepseek-v3 --gpu H200 --tp 8 --mode generate --batch 8 --seq 1024 --gen 128 --spec-draft mtp --spec-accept 0.8 --spec-tokens 3)
tc_cli_test(compare_speculative "deepseek-v3 +H200 +fp8_block +8 +1024 +1 +8 +1 +1 +[0-9.]+ +[0-9.]+ +11\\.356 .*\n\\(speculative decoding: 3 draft tokens a round, each accepted with p 0\\.80; draft deepseek-v3-mtp\\)" ${TC} compare --model deepseek-v3 --gpus H200 --tp 8 --mode generate --batch 8 --seq 1024 --gen 128 --spec-draft mtp --spec-accept 0.8 --spec-tokens 3)
tc_cli_test(compare_speculative_csv "routing,dp_attention,moe_a2a,prefill_tp,prefill_ep,prefill_instances,decode_instances,spec_draft,spec_tokens,spec_accept,step_ms,[^\n]*\nllama-3\\.1-70b,H100-SXM,generate,bf16,8,2048,64,[^\n]*,uniform,false,none,,,,,llama-3\\.1-8b,4,0\\.7,[0-9.]+," ${TC} compare --model llama-3.1-70b --gpus H100-SXM --tp 4 --mode generate --batch 8 --seq 2048 --gen 64 --spec-draft llama-3.1-8b --spec-accept 0.7 --format csv)
# compare --prefill-tp: the row is predict's disaggregated forecast (the same TTFT, to the digit), its
# GPUs count the prefill instance (tp 4 + 4), the CSV names it; refused outside generate.
tc_cli_test(compare_disaggregated "llama-3\\.1-70b +H200 +bf16 +8 +2048 +1 +4 +1 +1 +[0-9.]+ +1159\\.098 +14\\.122 .*beside a prefill instance of tp 4;" ${TC} compare --model llama-3.1-70b --gpus H200 --tp 4 --mode generate --batch 8 --seq 2048 --gen 256 --prefill-tp 4)
tc_cli_test(predict_disaggregated_ttft "ttft_ms +1159\\.098 " ${TC} predict --model llama-3.1-70b --gpu H200 --tp 4 --mode generate --batch 8 --seq 2048 --gen 256 --prefill-tp 4)
tc_cli_test(compare_disaggregated_csv "moe_a2a,prefill_tp,prefill_ep,prefill_instances,[^\n]*\nllama-3\\.1-70b,H200,generate,bf16,8,2048,256,0,0,mixed,1,4,1,1,8,1,1,1,uniform,false,none,4,1,1," ${TC} compare --model llama-3.1-70b --gpus H200 --tp 4 --mode generate --batch 8 --seq 2048 --gen 256 --prefill-tp 4 --format csv)
tc_cli_fail(compare_disaggregated_decode "--prefill-tp applies to --mode generate" "${TC};compare;--model;llama-3.1-8b;--gpus;H100-SXM;--mode;decode;--batch;8;--context;128;--prefill-tp;1")
# plan --disaggregate: beside the aggregated layouts, each split of a replica's GPUs; a split's row is
# predict's disaggregated forecast of one replica (tp 2 beside 2: e2e 2659.879 ms as predict's;
# 2 replicas of tp 1 beside 1: 32 sequences each, TTFT 861.249 as predict's), and its 4 GPUs in CSV.
tc_cli_test(plan_disaggregated "llama-3\\.1-8b +H100-SXM +bf16 +64 +1024 +1 +2 +1 +2x1 +1 +[0-9.]+ .*llama-3\\.1-8b +H100-SXM +bf16 +64 +1024 +1 +2 +1 +2 +1 +2659\\.879 +991\\.287 .*llama-3\\.1-8b +H100-SXM +bf16 +64 +1024 +2 +1 +1 +1 +1 +[0-9.]+ +861\\.249 .*llama-3\\.1-8b +H100-SXM +bf16 +64 +1024 +1 +1 +1 +3x1 +1 .*llama-3\\.1-8b +H100-SXM +bf16 +64 +1024 +1 +1 +1 +1:3 +1 .*pre: the prefill instances beside each replica's decode instance[^\n]*:M beside M decode instances of tp" ${TC} plan --model llama-3.1-8b --gpu H100-SXM --gpus 4 --global-batch 64 --mode generate --seq 1024 --gen 256 --disaggregate --top 20)
tc_cli_test(predict_disaggregated_e2e "ttft_ms +991\\.287 .*e2e_ms +2659\\.879" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 64 --seq 1024 --gen 256 --tp 2 --prefill-tp 2)
tc_cli_test(predict_disaggregated_replica "ttft_ms +861\\.249 " ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 32 --seq 1024 --gen 256 --tp 1 --prefill-tp 1)
# The pre column as wide as its longest entry (2x1:2), the header's "pre" over its right edge.
tc_cli_test(plan_disaggregated_pre_width " pp   pre  mb .*\n +[0-9]+ llama-3\\.1-8b +H100-SXM +bf16 +64 +1024 +1 +1 +1 2x1:2 +1 " ${TC} plan --model llama-3.1-8b --gpu H100-SXM --gpus 4 --global-batch 64 --mode generate --seq 1024 --gen 256 --disaggregate --top 20)
tc_cli_test(plan_disaggregated_csv "\n[^\n]*,generate,bf16,64,1024,256,0,0,mixed,1,2,1,1,4,1,1,1,uniform,false,none,2,1,1,1,,,,2659\\.8786" ${TC} plan --model llama-3.1-8b --gpu H100-SXM --gpus 4 --global-batch 64 --mode generate --seq 1024 --gen 256 --disaggregate --format csv)
tc_cli_fail(plan_disaggregate_decode "--disaggregate applies to --mode generate" "${TC};plan;--model;llama-3.1-8b;--gpu;H100-SXM;--gpus;4;--global-batch;8;--mode;decode;--context;128;--disaggregate")
tc_cli_fail(plan_disaggregate_max_seqs "--disaggregate with --max-seqs: not modelled" "${TC};plan;--model;llama-3.1-8b;--gpu;H100-SXM;--gpus;4;--global-batch;8;--mode;generate;--seq;128;--gen;8;--max-seqs;4;--disaggregate")
tc_cli_test(plan_speculative "   1 deepseek-v3 +H200 +fp8_block +8 +1024 +1 +8 +1 +1 +1 +[0-9.]+ +[0-9.]+ +11\\.356 .*\n\\(speculative decoding: 3 draft tokens a round, each accepted with p 0\\.80; draft deepseek-v3-mtp\\)" ${TC} plan --model deepseek-v3 --gpu H200 --gpus 8 --global-batch 8 --mode generate --seq 1024 --gen 128 --spec-draft mtp --spec-accept 0.8 --spec-tokens 3)
tc_cli_fail(plan_speculative_tokens_alone "--spec-tokens needs --spec-draft" "${TC};plan;--model;llama-3.1-8b;--gpu;H100-SXM;--gpus;2;--global-batch;8;--mode;generate;--seq;128;--gen;8;--spec-tokens;3")
tc_cli_fail(compare_speculative_decode "--spec-draft does not apply to --mode decode" "${TC};compare;--model;llama-3.1-70b;--gpus;H100-SXM;--mode;decode;--batch;8;--context;128;--spec-draft;llama-3.1-8b;--spec-accept;0.5")
tc_cli_fail(compare_speculative_needs_accept "--spec-draft needs --spec-accept A" "${TC};compare;--model;llama-3.1-70b;--gpus;H100-SXM;--mode;generate;--batch;8;--seq;128;--gen;8;--spec-draft;llama-3.1-8b")
tc_cli_fail(predict_mtp_without_module "--spec-draft mtp: llama-3.1-70b has no multi-token-prediction module" "${TC};predict;--model;llama-3.1-70b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;128;--gen;8;--spec-draft;mtp;--spec-accept;0.5")
tc_cli_fail(predict_speculative_needs_accept "--spec-draft needs --spec-accept A" "${TC};predict;--model;llama-3.1-70b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;128;--gen;8;--spec-draft;llama-3.1-8b")
tc_cli_fail(predict_speculative_decode "--spec-draft does not apply to --mode decode" "${TC};predict;--model;llama-3.1-70b;--gpu;H100-SXM;--tp;4;--mode;decode;--batch;8;--context;128;--spec-draft;llama-3.1-8b;--spec-accept;0.5")
tc_cli_fail(predict_speculative_accept "--spec-accept: 1\\.5 out of range \\[0, 1\\]" "${TC};predict;--model;llama-3.1-70b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;128;--gen;8;--spec-draft;llama-3.1-8b;--spec-accept;1.5")
tc_cli_fail(predict_speculative_tokens "--spec-tokens: 20 out of range .1, 16." "${TC};predict;--model;llama-3.1-70b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;128;--gen;8;--spec-draft;llama-3.1-8b;--spec-accept;0.5;--spec-tokens;20")
tc_cli_test(predict_generate_request_rate "\"arrivals\": \"poisson\",.*\"request_rate\": 8\.0," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 50 --seq 1024 --gen 64 --max-batched-tokens 8192 --request-rate 8 --format json)
tc_cli_test(predict_generate_request_rate_table "8 requests/s .uniform arrivals.\nttft_ms" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 50 --seq 1024 --gen 64 --request-rate 8 --arrivals uniform)
# Objectives: the table's goodput line and its percentiles (generate with limits), and the
# objectives refused outside generate.
tc_cli_test(predict_goodput "ttft p50/p90/p99 +[0-9.]+ / [0-9.]+ / [0-9.]+ ms\ntpot p50/p90/p99 +[0-9.]+ / [0-9.]+ / [0-9.]+ ms  .over the requests.\ngoodput +[0-9.]+ +requests/s .[0-9]+ of 40 requests meet TTFT <= 50 ms, TPOT <= 12 ms." ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 40 --seq 1024 --gen 64 --max-batched-tokens 8192 --request-rate 8 --slo-ttft-ms 50 --slo-tpot-ms 12)
# Ranked by goodput: the GPUs that meet more requests first (B200 above A100 for Llama-3.1-8B).
tc_cli_test(compare_sort_goodput "goodput/s  met %.*\n +1 llama-3.1-8b +B200 .*\n +2 llama-3.1-8b +A100-80GB-SXM" ${TC} compare --model llama-3.1-8b --gpus A100-SXM4-80GB,B200 --mode generate --batch 40 --seq 1024 --gen 64 --max-batched-tokens 8192 --request-rate 6 --slo-ttft-ms 100 --slo-tpot-ms 20 --sort goodput)
tc_cli_fail(compare_sort_goodput_without_slo "--sort goodput: needs --mode generate and an objective" "${TC};compare;--model;llama-3.1-8b;--gpus;B200;--mode;generate;--batch;4;--seq;100;--gen;4;--sort;goodput")
tc_cli_fail(predict_slo_prefill "--slo-ttft-ms does not apply to --mode prefill" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;prefill;--batch;4;--seq;100;--slo-ttft-ms;50")
# Requests of their own lengths (vLLM's --random-range-ratio): stated in the header, the JSON and
# capacity's text, disaggregated too; refused outside [0, 1), outside generate and beyond the positions.
tc_cli_test(predict_range_ratio "tp 1, lengths drawn within 50 % of them\nttft_ms +[0-9.]+ +.mean over the requests; the last [0-9.]+.\n.*\ntokens/s +[0-9.]+ +.the requests' output tokens / e2e.\n.*-- first step\n[^\n]*a step of [0-9]+ tokens: prompt chunks 64 of [0-9]+ to [0-9]+ tokens," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 64 --seq 1024 --gen 32 --range-ratio 0.5)
tc_cli_test(predict_range_ratio_json "\"range_ratio\": 0\.5,\n  \"request_rate\": 0\.0," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 8 --seq 1024 --gen 32 --range-ratio 0.5 --format json)
tc_cli_test(capacity_range_ratio "Poisson arrivals of 40 requests\nlengths: each request's drawn within 25 % of them .a lone request: as stated.\n" ${TC} capacity --model llama-3.1-8b --gpus H100-SXM --seq 512 --gen 32 --slo-tpot-ms 20 --requests 40 --range-ratio 0.25)
tc_cli_fail(predict_range_ratio_one "--range-ratio: 1 out of range .0, 1." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;4;--seq;100;--gen;4;--range-ratio;1")
tc_cli_fail(predict_range_ratio_decode "--range-ratio does not apply to --mode decode" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;4;--context;100;--range-ratio;0.5")
tc_cli_test(predict_range_ratio_disaggregated "lengths drawn within 50 % of them, disaggregated: a prefill instance of tp 1\n.*\ntokens/s +[0-9.]+ +.the requests' output tokens / e2e.\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 8 --seq 1024 --gen 16 --range-ratio 0.5 --prefill-tp 1)
tc_cli_fail(predict_range_ratio_positions "--range-ratio: a request of [0-9]+ positions is drawn; llama-3.1-8b has 131072" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;64;--seq;120000;--gen;4;--range-ratio;0.5")
tc_cli_fail(predict_arrivals_without_rate "--arrivals applies with --request-rate only" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;generate;--batch;4;--seq;100;--gen;4;--arrivals;uniform")
tc_cli_fail(predict_request_rate_decode "--request-rate does not apply to --mode decode" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;4;--context;100;--request-rate;2")
# FP8 MoE on a Triton GPU: from the same layer's BF16 forecast (scripts/eval-moe-fp8.py).
tc_cli_test(predict_kernel_moe_fp8_triton "fp8 +13\\.39 us \\+ 0\\.4916 x the BF16 layer's [0-9.]+ ms \\(sglang_fused_moe_triton" ${TC} predict-kernel --op moe --shape 4096,4096,14336,2,8 --dtype fp8_block --gpu H100-SXM)
tc_cli_test(predict_kernel_chunk "shape +1,2048,32,8,128,p6144 .bf16." ${TC} predict-kernel --op attention_prefill --shape 1,2048,32,8,128 --prefix 6144 --gpu H100-SXM)
tc_cli_fail(predict_kernel_prefix_gemm "--prefix applies to --op attention_prefill only" "${TC};predict-kernel;--op;gemm;--shape;16,4096,4096;--prefix;8;--gpu;H100-SXM")
tc_cli_test(plan_chunked_refuses_pipelines "layouts that cannot run .[0-9]+.:\n.*one pipeline stage only" ${TC} plan --model llama-3.1-8b --gpu H100-SXM --gpus 2 --global-batch 8 --mode generate --seq 512 --gen 8 --max-batched-tokens 2048)
# Mixed-precision (BF16) training of the decoder LLMs: Llama-3.1-8B's 8,030,261,248 parameters at
# 2 B of weights, 4 B of FP32 main gradients and 12 B of master weights and moments; ZeRO-1 over
# 4 ranks holds 3 B of the 12; the layout and the ZeRO stage in the JSON; one-line refusals.
tc_cli_test(predict_training_bf16 "training, bf16\nmemory/GPU +[0-9.]+ GB \\(16\\.06 GB weights \\+ 32\\.12 GB gradients \\+ 96\\.36 GB AdamW state.*DOES NOT FIT.*\n.*\nbackward_ms.*\n.*\noptimizer_ms.*\ntokens/s .*\nMFU +[0-9.]+ %" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 1 --seq 2048)
tc_cli_test(predict_training_bf16_zero_json "\"optimizer_gb\": 24\\.09[0-9]*,.*\"parallel\": {[^}]*\"dp\": 4,[^}]*\"zero\": 1[^}]*}.*\"recompute\": \"full\"" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 4 --seq 2048 --dp 4 --zero 1 --recompute full --format json)
# FP8 training: BF16 weights + 2 B of FP8 copies a GEMM weight (16.06 + 13.96 GB), the casts at
# 4 B x 6,979,321,856 / 3,352 GB/s, MFU against the BF16 peak; no FP8 on an A100; fp8_block refused.
tc_cli_test(predict_training_fp8 "training, fp8\nmemory/GPU +[0-9.]+ GB \\(30\\.02 GB weights \\+ 32\\.12 GB gradients.*\nfp8 casts +8\\.329 ms in the first microbatch's forward.*\nMFU +[0-9.]+ %  \\(3x the forward's matmul FLOPs at the bf16 dense tensor peak; FP8 GEMMs\\)" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype fp8 --batch 1 --seq 2048)
tc_cli_fail(predict_training_fp8_a100 "GPU 'A100-80GB-SXM' has no fp8 tensor-core peak in its spec .FP8 tensor cores start with Ada and Hopper." "${TC};predict;--model;llama-3.1-8b;--gpu;A100-80GB-SXM;--mode;training;--dtype;fp8;--batch;1;--seq;128")
tc_cli_fail(predict_training_fp8_block "--dtype fp8_block: --mode training models eager FP32 PyTorch .NeuSight's data.; mixed-precision training is --mode training --dtype bf16.fp16.fp8" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;fp8_block;--batch;1;--seq;128")
tc_cli_test(predict_training_ep "memory/GPU +[0-9.]+ GB \\(14\\.49 GB weights \\+ 28\\.97 GB gradients.*communication +[0-9.]+ ms on the critical path \\(dp 8, tp 1, pp 1, 1 microbatches, ep 8\\).*model\\.layers\\.mlp\\.token_dispatch +32 " ${TC} predict --model mixtral-8x7b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 1024 --dp 8 --ep 8)
tc_cli_fail(predict_training_ep_indivisible "--ep 3: must divide --dp .8. and mixtral-8x7b's 8 experts" "${TC};predict;--model;mixtral-8x7b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;8;--seq;128;--dp;8;--ep;3")
tc_cli_test(predict_training_cp "communication +[0-9.]+ ms on the critical path \\(dp 1, tp 1, pp 1, 1 microbatches, cp 4\\)" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 2 --seq 8192 --cp 4)
tc_cli_fail(predict_training_cp_indivisible "--cp 3: --seq 8192 must be divisible by 2 x cp" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;2;--seq;8192;--cp;3")
tc_cli_fail(predict_decode_cp "--cp applies to mixed-precision training" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;8;--context;128;--cp;2")
tc_cli_test(predict_training_csv_layout "\nllama-3.1-8b,H100-SXM,training,bf16,8,2048,1,1,4,8,1,1,2,\\(total\\),step,1," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 2048 --pp 4 --microbatches 8 --vpp 2 --format csv)
tc_cli_test(predict_training_vpp_bubble "bubble +[0-9.]+ ms of forward \\+ backward \\(the pipeline's fill and drain, interleaved over 2 chunks\\)" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 2048 --pp 4 --microbatches 8 --vpp 2)
tc_cli_test(predict_training_vpp "on the critical path \\(dp 1, tp 1, pp 4, 8 microbatches, interleaved: 2 model chunks a rank\\)" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 8 --seq 2048 --pp 4 --microbatches 8 --vpp 2)
tc_cli_fail(predict_training_vpp_chunks "--vpp 3: llama-3.1-8b's 32 layers do not split into pp x vpp = 12 equal model chunks" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;8;--seq;2048;--pp;4;--microbatches;8;--vpp;3")
tc_cli_fail(predict_inference_vpp "--vpp applies to mixed-precision training" "${TC};predict;--model;gpt2-large;--gpu;H100-SXM;--batch;8;--seq;128;--pp;4;--microbatches;8;--vpp;2")
tc_cli_test(predict_training_cp_ep "on the critical path \\(dp 4, tp 1, pp 1, 1 microbatches, cp 2, ep 8\\)" ${TC} predict --model mixtral-8x7b --gpu H100-SXM --mode training --dtype bf16 --batch 16 --seq 2048 --dp 4 --cp 2 --ep 8)
tc_cli_fail(predict_training_cp_ep_split "--ep 2 with --cp 3: one must divide the other" "${TC};predict;--model;mixtral-8x7b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;4;--seq;6144;--dp;2;--cp;3;--ep;2")
tc_cli_test(models_table "phi-4 +phi3 +14.66 +40 +5120 +40 +10 +128 +17920 +- +100352 +16384 +bfloat16.*qwen3-30b-a3b +qwen3_moe +30.53 +48 +2048 +32 +4 +128 +768 +8/128" ${TC} models)
tc_cli_test(models_gemma2 "gemma-2-27b +gemma2 +27\\.23 +46 +4608 +32 +16 +128 +36864 +- +256000 +8192 +bfloat16" ${TC} models)
# Each model's attention and local windows, and DeepSeek-V3's FP8 checkpoint as its dtype.
tc_cli_test(models_expert_dtype "gpt-oss-120b +gpt_oss +116\\.83 .* 4/128 mxfp4 .*\nmixtral-8x7b +mixtral .* +2/8 +32000 " ${TC} models)
tc_cli_test(models_expert_dtype_csv "quantized_dtype,expert_dtype\n.*gpt-oss-20b,gpt_oss,20914757184,.*,bfloat16,12,false,gqa,,mxfp4\n" ${TC} models --format csv)
tc_cli_test(models_attention "deepseek-v3 +deepseek_v3 +671\\.03 .* fp8_block +mla +-\n.*gpt-oss-120b +gpt_oss .* bfloat16 +gqa +sliding 128 in 18/36\n.*llama-4-scout +llama4_text .* bfloat16 +gqa +chunks 8192 in 36/48\n" ${TC} models)
tc_cli_test(models_csv_attention "\ndeepseek-v3,deepseek_v3,671026404352,61,7168,128,128,192,2048,256,8,129280,163840,0,bfloat16,0,false,mla,fp8_block,\n" ${TC} models --format csv)
tc_cli_test(models_json "\"name\": \"llama-3.1-8b\",[^}]*\"parameters\": 8030261248" ${TC} models --format json)
tc_cli_test(models_json_windows "\"name\": \"gemma-2-27b\",[^}]*\"sliding_window\": 4096,[^}]*\"sliding_window_layers\": 23" ${TC} models --format json)
tc_cli_fail(models_empty_dir "/nonexistent-models: no model configs" "${TC};models;--models-dir;/nonexistent-models")
tc_cli_test(predict_kernel_moe_chunks "chunks +4 x 16384 tokens, one after another \\(the family was trained on at most 16384 tokens" ${TC} predict-kernel --op moe --shape 65536,2048,768,8,128 --gpu H100-SXM)
tc_cli_fail(predict_training_bf16_gpt2 "mixed-precision training covers the decoder families" "${TC};predict;--model;gpt2-large;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;1;--seq;128")
tc_cli_fail(predict_recompute_eager "--recompute applies to mixed-precision training .--mode training --dtype bf16.fp16." "${TC};predict;--model;gpt2-large;--gpu;H100-SXM;--mode;training;--batch;1;--seq;128;--recompute;full")
tc_cli_fail(predict_recompute_value "--recompute: expected none or full, got 'some'" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;1;--seq;128;--recompute;some")
tc_cli_fail(predict_zero_serving "--zero applies to mixed-precision training" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;decode;--batch;1;--context;128;--zero;1")
tc_cli_fail(predict_sequence_parallel_tp1 "--sequence-parallel needs --tp 2 or more" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;1;--seq;128;--sequence-parallel")
tc_cli_test(predict_training_train_days "MFU .*\ntrain_days +[0-9.]+  \\(1e\\+12 tokens on 8 GPUs\\)" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode training --dtype bf16 --batch 16 --seq 4096 --dp 8 --zero 1 --train-tokens 1e12)
tc_cli_fail(predict_train_tokens_eager "--train-tokens applies to mixed-precision training" "${TC};predict;--model;gpt2-large;--gpu;H100-SXM;--mode;training;--batch;1;--seq;128;--train-tokens;1e9")
tc_cli_fail(predict_train_tokens_range "--train-tokens: -5 out of range .1, 1e16." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;1;--seq;128;--train-tokens;-5")
tc_cli_test(plan_training_run_cost "\\$/1M tokens  run days +run \\$\n +1 llama-3.1-8b .*" ${TC} plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 16 --seq 4096 --dtype bf16 --zero 1 --train-tokens 1e12 --price H100-SXM=2 --top 2)
tc_cli_test(compare_training_csv "mfu_pct,zero,recompute,hf_eager,train_days,train_usd,error\nllama-3.1-8b,H100-SXM,training,bf16,[^\n]*,[0-9.]+,1,full,false,[0-9.]+,[0-9.]+,\n" ${TC} compare --model llama-3.1-8b --gpus H100-SXM --mode training --dtype bf16 --batch 8 --seq 2048 --dp 8 --zero 1 --recompute full --train-tokens 1e12 --price H100-SXM=2 --format csv)
tc_cli_test(plan_training_zero_auto "step_ms  zero  rc  MFU %.*\n +1 llama-3.1-8b +H100-SXM +bf16 .* [0-3] +(no|yes) " ${TC} plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 16 --seq 4096 --dtype bf16 --zero auto --recompute auto --top 3)
tc_cli_fail(plan_zero_auto_serving "--zero auto applies to mixed-precision training" "${TC};plan;--model;llama-3.1-8b;--gpu;H100-SXM;--gpus;8;--global-batch;16;--mode;generate;--seq;128;--gen;8;--zero;auto")
tc_cli_fail(predict_zero_auto "--zero auto: only plan searches it; give one value" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;1;--seq;128;--zero;auto")
tc_cli_fail(predict_zero_range "--zero: expected 0, 1, 2, 3 or auto .plan., got '4'" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--mode;training;--dtype;bf16;--batch;1;--seq;128;--zero;4")
tc_cli_test(compare_training_bf16 "step_ms  zero  rc  MFU % +tokens/s.*\n +1 llama-3.1-8b +B200 +bf16 .*\n +2 llama-3.1-8b +H100-SXM +bf16 " ${TC} compare --model llama-3.1-8b --gpus H100-SXM,B200 --mode training --dtype bf16 --batch 8 --seq 2048 --dp 8 --zero 1)
tc_cli_test(plan_training_bf16 "rank model .*MFU %.*\n +1 llama-3.1-70b +H100-SXM +bf16 +64 +4096 " ${TC} plan --model llama-3.1-70b --gpu H100-SXM --gpus 64 --global-batch 64 --seq 4096 --dtype bf16 --zero 1 --top 3)

# compare and plan: rows, ranking, prices, errors.
add_test(NAME cli.compare COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/compare_test.sh ${TC})
add_test(NAME cli.capacity COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/capacity_test.sh ${TC})
# NeuSight families report (without clamping) a query outside their training range.
tc_cli_test(predict_kernel_outside_range "outside the training range \\(extrapolated\\): log2_b" ${TC} predict-kernel --op ln --shape 65536,8192 --gpu H100-SXM)
# Rows of 1,281 elements take PyTorch's two-kernel layer norm: the input read twice, written once,
# plus gamma and beta: (3 x 8,192 x 1,281 + 2 x 1,281) x 4 B = 125,937,672 B at the H200's
# 4,800 GB/s = 0.0262370 ms (rows of 1,280: two passes, 0.0174784 ms).
tc_cli_test(predict_kernel_ln_two_kernels "roofline_ms  0.026237 \\(memory-bound: its bytes at the sheet's DRAM bandwidth\\)" ${TC} predict-kernel --op ln --shape 8192,1281 --gpu H200)
tc_cli_test(predict_kernel_ln_two_kernels_named "two kernels \\(H not a multiple of 4" ${TC} predict-kernel --op ln --shape 8192,1281 --gpu H200)
tc_cli_test(predict_kernel_ln_one_kernel "roofline_ms  0.0174784 \\(memory-bound: its bytes at the sheet's DRAM bandwidth\\)" ${TC} predict-kernel --op ln --shape 8192,1280 --gpu H200)
# SGLang's DP attention: each of the 8 ranks caches its own 4 of the 32 sequences
# (4 x 4,097 x 61 x 576 x 2 B = 1.15 GB), the KV room is the group's; JSON states both.
tc_cli_test(predict_dp_attention "deepseek-v3 on H200, decode, batch 32, cached context 4096, fp8_block \\(KV cache bf16\\), tp 8, DP attention\nmemory/GPU +[0-9.]+ GB \\([0-9.]+ GB weights \\+ [0-9.]+ GB activations \\+ 1\\.15 GB KV cache\\).*\nKV room +[0-9]+ tokens beside the weights and activations \\(8 DP-attention ranks, each caching its own sequences\\): [0-9]+ sequences" ${TC} predict --model deepseek-v3 --gpu H200 --tp 8 --mode decode --batch 32 --context 4096 --dp-attention)
tc_cli_test(predict_dp_attention_json "\"kv_ranks\": 8,.*\"dp_attention\": true" ${TC} predict --model deepseek-v3 --gpu H200 --tp 8 --mode decode --batch 32 --context 4096 --dp-attention --format json)
tc_cli_fail(predict_dp_attention_tp1 "--dp-attention needs --tp 2 or more" "${TC};predict;--model;deepseek-v3;--gpu;H200;--mode;decode;--batch;32;--context;4096;--dp-attention")
tc_cli_test(predict_deepep "tp 8, DP attention, ep 8 \\(DeepEP all-to-all\\)\n.*\ncommunication +[0-9.]+ +[0-9.]+%\n" ${TC} predict --model deepseek-v3 --gpu H200 --tp 8 --ep 8 --mode decode --batch 256 --context 2048 --dp-attention --moe-a2a deepep)
tc_cli_test(predict_deepep_generate_json "\"parallel\": \\{.*\"dp_attention\": true,.*\"ep\": 8,.*\"moe_a2a\": \"deepep\"" ${TC} predict --model deepseek-v3 --gpu H200 --tp 8 --ep 8 --mode generate --batch 16 --seq 512 --gen 8 --dp-attention --moe-a2a deepep --format json)
tc_cli_fail(predict_deepep_value "--moe-a2a: expected none or deepep, got 'nccl'" "${TC};predict;--model;deepseek-v3;--gpu;H200;--tp;8;--ep;8;--mode;decode;--batch;32;--context;128;--dp-attention;--moe-a2a;nccl")
tc_cli_fail(predict_deepep_no_dpa "--moe-a2a deepep is modelled with --dp-attention" "${TC};predict;--model;deepseek-v3;--gpu;H200;--tp;8;--ep;8;--mode;decode;--batch;32;--context;128;--moe-a2a;deepep")
tc_cli_fail(predict_deepep_spec "--moe-a2a deepep with --spec-draft" "${TC};predict;--model;deepseek-v3;--gpu;H200;--tp;8;--ep;8;--mode;generate;--batch;8;--seq;128;--gen;8;--dp-attention;--moe-a2a;deepep;--spec-draft;mtp;--spec-accept;0.8")
tc_cli_fail(predict_deepep_eager "--moe-a2a does not apply to --mode inference" "${TC};predict;--model;gpt2-large;--gpu;H200;--batch;2;--seq;128;--moe-a2a;deepep")
tc_cli_test(compare_deepep " ep dpa  mb .*\n +[0-9]+ deepseek-v3 +H200 +fp8_block +256 +2048 +1 +8 +1 +8 +a2a +1 .*\n\\(dpa: SGLang's DP attention, each tp rank attending and caching its own sequences; a2a: with DeepEP's all-to-all MoE\\)" ${TC} compare --model deepseek-v3 --gpus H200 --tp 8 --ep 1,8 --mode decode --batch 256 --context 2048 --dp-attention --moe-a2a deepep)
tc_cli_test(compare_deepep_csv "dp_attention,moe_a2a,prefill_tp,prefill_ep,prefill_instances,decode_instances,spec_draft,[^\n]*\ndeepseek-v3,H200,decode,fp8_block,256,2048,[^\n]*,uniform,true,deepep,,,,,,,," ${TC} compare --model deepseek-v3 --gpus H200 --tp 8 --ep 8 --mode decode --batch 256 --context 2048 --dp-attention --moe-a2a deepep --format csv)
tc_cli_test(plan_deepep "\n +[0-9]+ deepseek-v3 +H100-SXM +fp8_block +512 +2048 +1 +16 +1 +16 +a2a +1 " ${TC} plan --model deepseek-v3 --gpu H100-SXM --gpus 16 --global-batch 512 --mode decode --context 2048 --dp-attention --moe-a2a deepep)
tc_cli_fail(compare_deepep_no_ep "--moe-a2a deepep needs an --ep equal to a --tp of 2 or more" "${TC};compare;--model;deepseek-v3;--gpus;H200;--tp;8;--ep;4;--mode;decode;--batch;8;--context;128;--dp-attention;--moe-a2a;deepep")
tc_cli_fail(compare_deepep_dense "--moe-a2a deepep: no model of the list has experts" "${TC};compare;--model;llama-3.1-8b;--gpus;H200;--tp;2;--ep;2;--mode;decode;--batch;8;--context;128;--dp-attention;--moe-a2a;deepep")
tc_cli_fail(plan_deepep_dense "--moe-a2a deepep: llama-3.1-8b has no experts" "${TC};plan;--model;llama-3.1-8b;--gpu;H200;--gpus;2;--global-batch;8;--mode;decode;--context;128;--dp-attention;--moe-a2a;deepep")
tc_cli_fail(plan_deepep_no_dpa "--moe-a2a deepep is modelled with --dp-attention" "${TC};plan;--model;deepseek-v3;--gpu;H200;--gpus;8;--global-batch;8;--mode;decode;--context;128;--moe-a2a;deepep")
tc_cli_test(capacity_deepep "of 40 requests, DP attention where tp > 1, DeepEP where tp = ep\n.*\n +[0-9]+ H100-SXM +2 " ${TC} capacity --model deepseek-v2-lite --gpus H100-SXM --tp 1,2 --ep 2 --seq 1024 --gen 32 --slo-tpot-ms 30 --requests 40 --dp-attention --moe-a2a deepep)
tc_cli_fail(capacity_deepep_no_ep "--moe-a2a deepep needs a --tp equal to --ep .1., of 2 or more" "${TC};capacity;--model;deepseek-v2-lite;--gpus;H100-SXM;--tp;2;--seq;128;--gen;8;--slo-tpot-ms;30;--dp-attention;--moe-a2a;deepep")
tc_cli_test(predict_disaggregated "tp 4, disaggregated: a prefill instance of tp 2\nttft_ms +[0-9.]+ +\\(the prefill instance's step [0-9.]+ \\+ the KV cache's move [0-9.]+: 1\\.05 GB over the node's links\\)\ntpot_ms .*\nbalance +[0-9.]+ +prefill instances per decode instance keep both busy.*\ndecode instance:\nmemory/GPU .*\nprefill instance:\nmemory/GPU .*-- prefill \\(the prefill instance\\)\n[^\n]*prefill, batch 8, prompt 1000, bf16 \\(KV cache bf16\\), tp 2\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --tp 4 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 2)
tc_cli_test(predict_disaggregated_json "\"disaggregation\": \\{\n +\"decode_instances\": 1,\n +\"decode_ms\": [0-9.]+,\n +\"gpus\": 10,\n +\"kv_transfer_gb\": 1\\.048576,\n +\"kv_transfer_link\": \"network\",.*\"prefill_tp\": 2\n +\\}.*\"parallel\": \\{.*\"tp\": 8\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --tp 8 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 2 --format json)
tc_cli_test(predict_disaggregated_rate "disaggregated: a prefill instance of tp 1\nttft_ms +[0-9.]+ +\\(mean over the requests, from arrival; the last [0-9.]+\\)\n.*\nsteps +[0-9]+ +\\([0-9]+ prefill steps; 2\\.62 GB of caches moved over the node's links in [0-9.]+ ms\\)\ngoodput +[0-9.]+ +requests/s \\([0-9]+ of 20 requests meet TPOT <= 20 ms\\)\nbalance " ${TC} predict --model llama-3.1-8b --gpu H100-SXM --mode generate --batch 20 --seq 1000 --gen 32 --prefill-tp 1 --request-rate 4 --slo-tpot-ms 20)
tc_cli_test(capacity_disaggregated "of 40 requests, each tp the decode instance beside a prefill instance of tp 1\n.*\n +[0-9]+ H100-SXM +1 +[0-9.]+ +[0-9.]+ " ${TC} capacity --model llama-3.1-8b --gpus H100-SXM --tp 1,2 --seq 1024 --gen 64 --slo-tpot-ms 8 --requests 40 --prefill-tp 1)
tc_cli_test(capacity_disaggregated_json "\"gpus_per_replica\": 2,.*\"prefill_ep\": 1,.*\"prefill_tp\": 1," ${TC} capacity --model llama-3.1-8b --gpus H100-SXM --tp 1 --seq 1024 --gen 64 --slo-tpot-ms 8 --requests 40 --prefill-tp 1 --format json)
tc_cli_test(capacity_disaggregated_balance "disaggregated: 2 prefill instances of tp 1, .*\nat that rate: [^\n]*\nbalance: +[0-9.]+ prefill instances per decode instance keep both busy at that rate \\(2 here\\)\n" ${TC} capacity --model llama-3.1-8b --gpus H100-SXM --tp 1 --seq 1024 --gen 64 --slo-tpot-ms 8 --requests 40 --prefill-tp 1 --prefill-instances 2)
tc_cli_fail(capacity_disaggregated_ep_alone "--prefill-ep needs --prefill-tp" "${TC};capacity;--model;llama-3.1-8b;--gpus;H100-SXM;--tp;1;--seq;128;--gen;8;--slo-tpot-ms;30;--prefill-ep;2")
tc_cli_fail(predict_disaggregated_decode "--prefill-tp applies to --mode generate" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;4;--mode;decode;--batch;8;--context;100;--prefill-tp;2")
tc_cli_fail(predict_disaggregated_max_seqs "--prefill-tp with --max-seqs: not modelled .disaggregated serving has no sequence cap" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;100;--gen;4;--max-seqs;4;--prefill-tp;2")
# A token budget with disaggregation: the prefill instances' chunked prefill (more steps than prompts' batches).
tc_cli_test(predict_disaggregated_chunked "chunked prefill: 512 tokens a step, [^\n]*disaggregated: a prefill instance of tp 2\n.*\nsteps +[0-9]+ +\\(4 prefill steps; " ${TC} predict --model llama-3.1-8b --gpu H100-SXM --tp 4 --mode generate --batch 8 --seq 200 --gen 4 --max-batched-tokens 512 --prefill-tp 2 --request-rate 1000000 --arrivals uniform)
tc_cli_fail(predict_disaggregated_ep_alone "--prefill-ep needs --prefill-tp" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;100;--gen;4;--prefill-ep;2")
tc_cli_fail(predict_disaggregated_heads "the prefill instance .--prefill-tp 3, --prefill-ep 1.: --tp 3: llama-3.1-8b's 32 heads" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;100;--gen;4;--prefill-tp;3")
tc_cli_fail(predict_disaggregated_prefix "--prefill-tp with --cached-prefix: not modelled" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;100;--gen;4;--cached-prefix;50;--prefill-tp;2")
tc_cli_test(predict_disaggregated_instances "tp 2, disaggregated: 2 prefill instances of tp 2\nttft_ms +[0-9.]+ +\\(the last cache's arrival: the prefill instances' steps side by side, the largest [0-9.]+; the KV caches' moves one after another as the steps end, [0-9.]+ in all: 4\\.29 GB over the node's links\\)\n.*busy; prefill: the instances' summed\\)\n.*-- prefill \\(a prefill instance's largest step\\)\n[^\n]*prefill, batch 8, prompt 2048, bf16 \\(KV cache bf16\\), tp 2\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --tp 2 --mode generate --batch 16 --seq 2048 --gen 128 --prefill-tp 2 --prefill-instances 2)
tc_cli_test(compare_disaggregated_instances_csv "\nllama-3\\.1-8b,H100-SXM,generate,bf16,8,1000,16,0,0,mixed,1,1,1,1,4,1,1,1,uniform,false,none,1,1,3,1,,,," ${TC} compare --model llama-3.1-8b --gpus H100-SXM --tp 1 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 1 --prefill-instances 3 --format csv)
# Several decode instances: the text names them, JSON counts their GPUs (1 + 2 x tp 2), compare
# CSV gives the column and the GPUs, capacity's balance says the ratio; refused without a
# prefill tp or at 0.
tc_cli_test(predict_disaggregated_decode_instances "disaggregated: a prefill instance of tp 1 feeding 2 decode instances\nttft_ms +[0-9.]+ +\\(mean over the requests of their decode instance's last cache's arrival: [^\n]*\ntpot_ms +[0-9.]+ +\\(mean over the requests, each decode instance decoding its share\\)\n.*\na decode instance \\(its largest share\\):\n" ${TC} predict --model llama-3.1-8b --gpu H100-SXM --tp 2 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 1 --decode-instances 2)
tc_cli_test(predict_disaggregated_decode_instances_json "\"disaggregation\": \\{\n +\"decode_instances\": 2,\n +\"decode_ms\": [0-9.]+,\n +\"gpus\": 5," ${TC} predict --model llama-3.1-8b --gpu H100-SXM --tp 2 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 1 --decode-instances 2 --format json)
tc_cli_test(compare_disaggregated_decode_instances_csv "\nllama-3\\.1-8b,H100-SXM,generate,bf16,8,1000,16,0,0,mixed,1,2,1,1,5,1,1,1,uniform,false,none,1,1,1,2,,,," ${TC} compare --model llama-3.1-8b --gpus H100-SXM --tp 2 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 1 --decode-instances 2 --format csv)
tc_cli_test(capacity_disaggregated_decode_instances "feeding 2 decode instances, .*\nengine: [^\n]*each decode instance decodes[^\n]*\n.*\nbalance: +[0-9.]+ prefill instances per decode instance keep both busy at that rate \\(1 per 2 here\\)\n" ${TC} capacity --model llama-3.1-8b --gpus H100-SXM --tp 1 --seq 1024 --gen 64 --slo-tpot-ms 8 --requests 40 --prefill-tp 1 --decode-instances 2)
# capacity: lists of instance counts, every combination a row with its pre column spelled as
# compare's (2x1:2 two prefill instances of tp 1 beside two decode instances, 1 one beside one).
tc_cli_test(capacity_disaggregated_layouts "beside prefill instances of tp 1 .pre: NxP N prefill instances of tp P, P one, :M beside M decode instances, as compare's.\nrank gpu +tp +pre +max_rate/s .*\n +[0-9]+ H100-SXM +1 2x1:2 +[0-9.]+.*\n +[0-9]+ H100-SXM +1 +1 +[0-9.]+" ${TC} capacity --model llama-3.1-8b --gpus H100-SXM --tp 1 --seq 1024 --gen 64 --slo-tpot-ms 8 --requests 40 --prefill-tp 1 --prefill-instances 1,2 --decode-instances 1,2)
tc_cli_fail(capacity_disaggregated_layouts_zero "--decode-instances '0,1': '0' is not a whole number in .1, 1024." "${TC};capacity;--model;llama-3.1-8b;--gpus;H100-SXM;--tp;1;--seq;1024;--gen;64;--slo-tpot-ms;8;--requests;40;--prefill-tp;1;--decode-instances;0,1")
tc_cli_test(compare_disaggregated_layouts " pre  mb .*\n +[0-9]+ llama-3\\.1-8b +H100-SXM +bf16 +8 +1000 +1 +2 +1 +1:2 +1 .*\n +[0-9]+ llama-3\\.1-8b +H100-SXM +bf16 +8 +1000 +1 +2 +1 +1 +1 " ${TC} compare --model llama-3.1-8b --gpus H100-SXM --tp 2 --mode generate --batch 8 --seq 1000 --gen 16 --prefill-tp 1 --decode-instances 1,2)
tc_cli_fail(predict_disaggregated_decode_instances_alone "--decode-instances needs --prefill-tp" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;1;--mode;generate;--batch;8;--seq;100;--gen;4;--decode-instances;2")
tc_cli_fail(predict_disaggregated_decode_instances_zero "--decode-instances: 0 out of range .1, 1024." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;1;--mode;generate;--batch;8;--seq;100;--gen;4;--prefill-tp;1;--decode-instances;0")
tc_cli_fail(predict_disaggregated_instances_alone "--prefill-instances needs --prefill-tp" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;1;--mode;generate;--batch;8;--seq;100;--gen;4;--prefill-instances;2")
tc_cli_fail(predict_disaggregated_instances_zero "--prefill-instances: 0 out of range .1, 1024." "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;1;--mode;generate;--batch;8;--seq;100;--gen;4;--prefill-tp;1;--prefill-instances;0")
tc_cli_fail(predict_disaggregated_zero "--prefill-tp: 0 out of range" "${TC};predict;--model;llama-3.1-8b;--gpu;H100-SXM;--tp;4;--mode;generate;--batch;8;--seq;100;--gen;4;--prefill-tp;0")
tc_cli_fail(predict_dp_attention_eager "--dp-attention does not apply to --mode inference" "${TC};predict;--model;gpt2-large;--gpu;H200;--tp;2;--batch;2;--seq;128;--dp-attention")
# compare and plan: the dpa column and its key; plan tries each one-stage layout with tp > 1 both ways.
tc_cli_test(compare_dp_attention " dpa  mb .*\n +1 deepseek-v3 +H200 +fp8_block +256 +2048 +1 +8 +1 +yes +1 .*\n\\(dpa: SGLang's DP attention, each tp rank attending and caching its own sequences\\)" ${TC} compare --model deepseek-v3 --gpus H200 --tp 8 --mode decode --batch 256 --context 2048 --dp-attention)
tc_cli_test(plan_dp_attention "\n +[0-9]+ deepseek-v3 +H200 +fp8_block +256 +2048 +1 +8 +1 +1 +yes +1 .*\n +[0-9]+ deepseek-v3 +H200 +fp8_block +256 +2048 +1 +8 +1 +1 +no +1 " ${TC} plan --model deepseek-v3 --gpu H200 --gpus 8 --global-batch 256 --mode decode --context 2048 --dp-attention)
tc_cli_fail(compare_dp_attention_training "--dp-attention does not apply to --mode training" "${TC};compare;--model;llama-3.1-8b;--gpus;H100-SXM;--tp;2;--mode;training;--dtype;bf16;--seq;1024;--dp-attention")
# capacity: DP attention on the rows with tp > 1, said in the header (one row) or the title (several).
tc_cli_test(capacity_dp_attention "deepseek-v2-lite on H100-SXM, 1024-token prompts, 32 output tokens, bf16, tp 2, DP attention, Poisson arrivals of 40 requests" ${TC} capacity --model deepseek-v2-lite --gpus H100-SXM --tp 2 --seq 1024 --gen 32 --slo-tpot-ms 30 --requests 40 --dp-attention)
tc_cli_test(capacity_dp_attention_rows "of 40 requests, DP attention where tp > 1\n" ${TC} capacity --model deepseek-v2-lite --gpus H100-SXM --tp 1,2 --seq 1024 --gen 32 --slo-tpot-ms 30 --requests 40 --dp-attention)
tc_cli_fail(compare_dp_attention_tp1 "--dp-attention needs a --tp of 2 or more" "${TC};compare;--model;llama-3.1-8b;--gpus;H100-SXM;--tp;1;--mode;decode;--batch;8;--context;128;--dp-attention")
tc_cli_fail(plan_dp_attention_one_gpu "--dp-attention needs --gpus 2 or more" "${TC};plan;--model;llama-3.1-8b;--gpu;H100-SXM;--gpus;1;--global-batch;8;--mode;decode;--context;128;--dp-attention")
tc_cli_fail(capacity_dp_attention_tp1 "--dp-attention needs a --tp of 2 or more" "${TC};capacity;--model;llama-3.1-8b;--gpus;H100-SXM;--tp;1;--seq;128;--gen;8;--slo-tpot-ms;30;--dp-attention")
# models --format json: the MTP layers a config states (DeepSeek-V3's one; --spec-draft mtp needs them).
tc_cli_test(models_json_mtp "\"mtp_layers\": 1,\n +\"name\": \"deepseek-v3\"" ${TC} models --format json)
tc_cli_test(models_json_no_mtp "\"mtp_layers\": 0,\n +\"name\": \"kimi-k2-thinking\"" ${TC} models --format json)
# SGLang's Triton fallback on datacenter Blackwell (a windowed prefill of head_dim 192): the
# fallback's own fitted roofline alone; TRT-LLM's head dims keep the network.
tc_cli_test(predict_kernel_triton_fallback "prior_ms +[0-9.]+ \\(the fitted roofline of the fallback library's own rows \\(triton\\), on the whole causal triangle at the BF16 rate, the work that kernel does; which that library's own network corrects\\)\ntasks +4096 CTAs \\(sequence x head x 128-query block; triton\\)\nbasis +context_attention \\(1 kernel\\): a twin of its training GPU: network\n" ${TC} predict-kernel --op attention_prefill --shape 4,4096,32,8,192 --window 1024 --gpu GB200)
tc_cli_test(predict_kernel_triton_fallback_json "\"fallback_prior\": true,.*\"library\": \"triton\"" ${TC} predict-kernel --op attention_prefill --shape 4,4096,32,8,192 --window 1024 --gpu B200 --format json)
tc_cli_test(predict_kernel_trtllm_head_dim "tasks +[0-9]+ CTAs \\(sequence x head x 128-query block; trtllm_mha\\)\nbasis +context_attention \\(1 kernel\\): a twin of one of its 3 training GPUs: network\n" ${TC} predict-kernel --op attention_prefill --shape 4,4096,32,8,128 --window 1024 --gpu GB200)
