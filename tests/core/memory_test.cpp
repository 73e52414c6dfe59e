// Memory per GPU (core/memory_model.h) against counts derived by hand for two models, and
// against the configurations NeuSight measured (a run that was measured fitted).
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/memory_model.h"
#include "test_util.h"

using namespace tilecast;

namespace {
const GpuRegistry& registry() {
  static GpuRegistry reg(gpu_dir());
  return reg;
}
ModelConfig model(const std::string& name) {
  return load_model_config(name, std::string(TILECAST_SOURCE_DIR) + "/configs/models");
}
}  // namespace

// GPT-2 large, batch 1 x 1024 tokens, FP32 training without optimizer state. Parameters:
// 774,030,080 (the published count). Activations per layer, t = s = 1024, h 1280, 20 heads,
// FFN 5120, dropout 0.1 on attention and hidden states:
//   attention: LN out 5,242,880 + QKV 15,728,640 + context 5,242,880 + softmax 83,886,080
//              + attention-dropout mask and output 104,857,600 + output mask 1,310,720 = 216,268,800
//   FFN:       LN out 5,242,880 + GELU in/out 41,943,040 + mask 1,310,720 = 48,496,640
// x 36 layers = 9,531,555,840, + embedding output and mask 6,553,600, + logits and their
// log-softmax 2 x 4 x 1024 x 50,257 = 411,705,344: 9,949,814,784 bytes.
TEST(Memory, Gpt2LargeTrainingByHand) {
  const auto m = training_memory(model("gpt2-large"), 1, 1024, {}, registry().resolve("H100-SXM"), false);
  EXPECT_DOUBLE_EQ(m.weights_gb, 4 * 774030080.0 / 1e9);
  EXPECT_DOUBLE_EQ(m.gradients_gb, m.weights_gb);
  EXPECT_EQ(m.optimizer_gb, 0);
  EXPECT_NEAR(m.activations_gb, 9949814784.0 / 1e9, 1e-9);
  const auto adam = training_memory(model("gpt2-large"), 1, 1024, {}, registry().resolve("H100-SXM"));
  EXPECT_DOUBLE_EQ(adam.optimizer_gb, 8 * 774030080.0 / 1e9);
}

// Llama 3.1 8B, batch 1 x 2048 tokens: 8,030,261,248 parameters (published), no dropout,
// GQA (32 query / 8 KV heads of 128), SwiGLU FFN 14336, vocab 128,256. Per layer:
//   attention: norm out 33,554,432 + Q/K/V 4 x 2048 x 48 x 128 = 50,331,648 + context
//              33,554,432 + softmax 4 x 32 x 2048^2 = 536,870,912 -> 654,311,424
//   FFN:       norm out 33,554,432 + gate, up, SiLU-mul 3 x 4 x 2048 x 14336 = 352,321,536
// x 32 = 33,285,996,544, + embedding 33,554,432 + logits 2 x 4 x 2048 x 128,256 =
// 2,101,346,304: 35,420,897,280 bytes.
TEST(Memory, Llama8bTrainingByHand) {
  const auto m = training_memory(model("llama-3.1-8b"), 1, 2048, {}, registry().resolve("H100-SXM"), false);
  EXPECT_DOUBLE_EQ(m.weights_gb, 4 * 8030261248.0 / 1e9);
  EXPECT_NEAR(m.activations_gb, 35420897280.0 / 1e9, 1e-9);
  EXPECT_FALSE(m.fits());  // 99.7 GB on an 80 GB GPU
}

TEST(Memory, ParallelLayoutsSplitWhatTheyShard) {
  const ModelConfig g = model("gpt2-large");
  const GpuSpec& a100 = registry().resolve("A100-SXM4-40GB");
  const auto one = training_memory(g, 4, 1024, {}, a100);
  Parallelism tp;
  tp.tp = 4;
  const auto t4 = training_memory(g, 4, 1024, tp, a100);
  EXPECT_DOUBLE_EQ(t4.weights_gb, one.weights_gb / 4);
  EXPECT_LT(t4.activations_gb, one.activations_gb);
  EXPECT_GT(t4.activations_gb, one.activations_gb / 4);  // norm inputs and masks are replicated
  Parallelism dp;
  dp.dp = 4;
  const auto d4 = training_memory(g, 4, 1024, dp, a100);
  EXPECT_DOUBLE_EQ(d4.weights_gb, one.weights_gb);  // replicas
  EXPECT_NEAR(d4.activations_gb, training_memory(g, 1, 1024, {}, a100).activations_gb, 1e-9);
}

// NeuSight measured these training runs (forward + backward, no optimizer): each must fit.
// (The same models at batch 4 / 2 were not measured on the 24-32 GB GPUs.)
TEST(Memory, ConfigurationsNeuSightMeasuredFit) {
  struct Run { const char* gpu; const char* model; int64_t batch, seq; };
  const Run runs[] = {{"NVIDIA L4", "gpt2-large", 1, 1024},       {"NVIDIA L4", "bert-large", 8, 512},
                      {"Tesla V100-PCIE-32GB", "gpt2-large", 1, 1024}, {"AMD Instinct MI210", "gpt3-xl", 1, 2048},
                      {"AMD Instinct MI210", "gpt2-large", 4, 1024},   {"NVIDIA A100 80GB PCIe", "gpt3-2.7b", 1, 2048},
                      {"NVIDIA A100 80GB PCIe", "opt-1.3b", 2, 2048},  {"NVIDIA A100 80GB PCIe", "switch-xl4", 2, 512}};
  for (const Run& r : runs)
    EXPECT_TRUE(training_memory(model(r.model), r.batch, r.seq, {}, registry().resolve(r.gpu), false).fits())
        << r.model << " on " << r.gpu;
  // GPT-3 2.7B with AdamW's state does not fit the 80 GB card NeuSight timed it on without one.
  EXPECT_FALSE(training_memory(model("gpt3-2.7b"), 1, 2048, {}, registry().resolve("NVIDIA A100 80GB PCIe")).fits());
}

// Llama 3.1 8B in BF16 mixed precision, batch 1 x 2048 tokens, one GPU: 2 B of weights, 4 B of
// FP32 main gradients and 12 B of master weights and moments per parameter. Saved activations
// per token and layer (h 4096, 32 heads and 8 KV heads of 128, F 14336): 2 x (4 x 4096 + 48 x
// 128 + 32 x 128 + 3 x 14336) + 4 x 32 = 139,392 B; x 2048 tokens x 32 layers = 9,135,194,112,
// + the embedding output 2 x 2048 x 4096 = 16,777,216 + the logits and their FP32 softmax
// (2 + 4) x 2048 x 128,256 = 1,576,009,728: 10,727,981,056 bytes. With full recomputation the
// layers keep their inputs, 32 x 2048 x 2 x 4096 = 536,870,912, and one layer's full set,
// 139,392 x 2048 = 285,474,816: 2,415,132,672 bytes.
TEST(Memory, Llama8bMixedPrecisionTrainingByHand) {
  const ModelConfig m = model("llama-3.1-8b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const auto r = llm_training_memory(m, 1, 2048, DType::kBf16, {}, h100);
  EXPECT_DOUBLE_EQ(r.weights_gb, 2 * 8030261248.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.gradients_gb, 4 * 8030261248.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.optimizer_gb, 12 * 8030261248.0 / 1e9);
  EXPECT_NEAR(r.activations_gb, 10727981056.0 / 1e9, 1e-9);
  EXPECT_FALSE(r.fits());  // 155 GB
  const auto rc = llm_training_memory(m, 1, 2048, DType::kBf16, {}, h100, true, true);
  EXPECT_NEAR(rc.activations_gb, 2415132672.0 / 1e9, 1e-9);
  // ZeRO over 8 data-parallel ranks: stage 1 shards the 12 B, stage 2 the gradients too, stage 3
  // the weights too; each rank runs 1 of the 8 sequences.
  Parallelism p;
  p.dp = 8;
  for (int z = 0; z <= 3; ++z) {
    p.zero = z;
    const auto s = llm_training_memory(m, 8, 2048, DType::kBf16, p, h100);
    EXPECT_DOUBLE_EQ(s.optimizer_gb, 12 * 8030261248.0 / (z >= 1 ? 8 : 1) / 1e9) << z;
    EXPECT_DOUBLE_EQ(s.gradients_gb, 4 * 8030261248.0 / (z >= 2 ? 8 : 1) / 1e9) << z;
    EXPECT_DOUBLE_EQ(s.weights_gb, 2 * 8030261248.0 / (z >= 3 ? 8 : 1) / 1e9) << z;
    EXPECT_NEAR(s.activations_gb, r.activations_gb, 1e-9) << z;
  }
  p.zero = 1;
  EXPECT_TRUE(llm_training_memory(m, 8, 2048, DType::kBf16, p, h100, true, true).fits());  // 60 GB
  // Sequence parallelism over tp 2 halves the norms' 4h too: 2 x (4 x 4096 / 2 + 48 x 128 / 2 +
  // 32 x 128 / 2 + 3 x 14336 / 2) + 4 x 32 / 2 = 69,696 B a token and layer; x 2048 x 32 =
  // 4,567,597,056, + 16,777,216 + the logits of 128,256 / 2 columns (2 + 4) x 2048 x 64,128 =
  // 788,004,864: 5,372,379,136 bytes.
  Parallelism t2;
  t2.tp = 2, t2.sequence_parallel = true;
  EXPECT_NEAR(llm_training_memory(m, 1, 2048, DType::kBf16, t2, h100).activations_gb, 5372379136.0 / 1e9, 1e-9);
  p.zero = 5;
  EXPECT_THROW(llm_training_memory(m, 8, 2048, DType::kBf16, p, h100), ConfigError);
}

// Hugging Face's eager model (hf_eager), Llama-3.1-8B in BF16 parameters, one H100, 2,048 tokens:
// weights, gradients and AdamW's two moments all in BF16, 2 + 2 + 4 B a parameter. Saved a token
// and layer, from autograd's saved tensors: two RMSNorms x (FP32 input 4 x 4096 + the BF16 copy
// before the weight 2 x 4096 + the output 2 x 4096) = 65,536; SDPA's q, k, v and output and
// o_proj's contiguous copy, 2 x (48 x 128 + 2 x 32 x 128) = 28,672, its FP32 log-sum-exp 4 x 32
// = 128; SiLU's input and output, up, and down's input, 4 x 2 x 14,336 = 114,688: 209,024 B
// (the engine's 139,392). x 2048 x 32 = 13,698,596,864, + the embedding output 16,777,216 +
// the logits and their FP32 log-softmax 1,576,009,728 = 15,291,383,808 bytes. Gradient
// checkpointing: 32 x 2048 x 2 x 4096 + one layer's 209,024 x 2048 + the same two =
// 2,557,739,008.
TEST(Memory, Llama8bHfEagerTrainingByHand) {
  const ModelConfig m = model("llama-3.1-8b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const auto r = llm_training_memory(m, 1, 2048, DType::kBf16, {}, h100, true, false, true);
  EXPECT_DOUBLE_EQ(r.weights_gb, 2 * 8030261248.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.gradients_gb, 2 * 8030261248.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.optimizer_gb, 4 * 8030261248.0 / 1e9);
  EXPECT_NEAR(r.activations_gb, 15291383808.0 / 1e9, 1e-9);
  EXPECT_NEAR(llm_training_memory(m, 1, 2048, DType::kBf16, {}, h100, true, true, true).activations_gb,
              2557739008.0 / 1e9, 1e-9);
  EXPECT_DOUBLE_EQ(llm_training_memory(m, 1, 2048, DType::kBf16, {}, h100, false, false, true).optimizer_gb, 0);
  // Qwen3-32B adds its q and k norms' FP32 inputs and BF16 copies, (4 + 2) x (64 + 8) x 128 =
  // 55,296 B a token and layer: 2 x 8 x 5120 + 55,296 + 2 x (80 x 128 + 128 x 128) + 4 x 64 +
  // 8 x 25,600 = 395,520; x 1024 tokens x 64 layers + 2 x 1024 x 5120 + 6 x 1024 x 151,936.
  const ModelConfig q = model("qwen3-32b");
  EXPECT_NEAR(llm_training_memory(q, 1, 1024, DType::kBf16, {}, h100, true, false, true).activations_gb,
              (395520.0 * 1024 * 64 + 2.0 * 1024 * 5120 + 6.0 * 1024 * 151936) / 1e9, 1e-9);
}

// FP8 training (Transformer Engine): BF16 weights plus an FP8 copy and transpose of each FP8
// GEMM's weight; the FP8 GEMMs' saved inputs in FP8. Llama-3.1-8B, one H100, 2,048 tokens.
TEST(Memory, Llama8bFp8TrainingByHand) {
  const ModelConfig m = model("llama-3.1-8b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const auto r = llm_training_memory(m, 1, 2048, DType::kFp8, {}, h100);
  // 32 x (2 x 4,096 x 4,096 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336) = 6,979,321,856 weights,
  // 2 B each of copies.
  EXPECT_DOUBLE_EQ(r.weights_gb, (2 * 8030261248.0 + 2 * 6979321856.0) / 1e9);
  EXPECT_DOUBLE_EQ(r.gradients_gb, 4 * 8030261248.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.optimizer_gb, 12 * 8030261248.0 / 1e9);
  // A token and layer: BF16 2 x (2 x 4,096 (the norms' inputs) + 48 x 128 (Q, K, V) + 32 x 128
  // (attention output) + 2 x 14,336 (gate/up)) = 94,208; FP8 4,096 + 4,096 (the norms' outputs)
  // + 14,336 (SiLU-mul output) + 4,096 (o_proj's copy of the attention output) = 26,624; the
  // log-sum-exp 4 x 32 = 128: 120,960 (BF16 training: 139,392). x 2,048 x 32 = 7,927,234,560,
  // + the embedding output 2 x 2,048 x 4,096 = 16,777,216 + the logits (2 + 4) x 2,048 x 128,256
  // = 1,576,009,728: 9,520,021,504 bytes.
  EXPECT_NEAR(r.activations_gb, 9520021504.0 / 1e9, 1e-9);
  // Mixtral-8x7B: only the attention projections are FP8 (the experts stay BF16), so the copies
  // are 2 B x 32 x (2 x 4,096 x 4,096 + 2 x 4,096 x 1,024) = 2,684,354,560 bytes, and only the
  // input norm's output (4,096) and o_proj's copy (4,096) are saved in FP8 beside BF16's set.
  const ModelConfig mx = model("mixtral-8x7b");
  const auto b = llm_training_memory(mx, 1, 2048, DType::kBf16, {}, h100);
  const auto f = llm_training_memory(mx, 1, 2048, DType::kFp8, {}, h100);
  EXPECT_NEAR(f.weights_gb - b.weights_gb, 2684354560.0 / 1e9, 1e-9);
  // (4,096 x 1 + 4,096 x 1) - 4,096 x 2 = 0 bytes a token and layer: the same activations.
  EXPECT_NEAR(f.activations_gb, b.activations_gb, 1e-9);
}

// Mixtral-8x7B with expert parallelism: 46,702,792,704 parameters (32 layers x (attention
// 41,943,040 + 8 experts x 3 x 4,096 x 14,336 + router 32,768 + norms 8,192) + embedding and
// head 2 x 32,000 x 4,096 + final norm 4,096), of them 45,097,156,608 expert weights (32 x 8 x
// 176,160,768), the other 1,605,636,096 dense. dp 8, ep 8: each rank holds one expert a layer,
// 1,605,636,096 + 5,637,144,576 = 7,242,780,672 parameters.
TEST(Memory, MixtralExpertParallelTrainingByHand) {
  const ModelConfig m = model("mixtral-8x7b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  Parallelism par;
  par.dp = 8, par.ep = 8;
  const auto r = llm_training_memory(m, 8, 1024, DType::kBf16, par, h100);
  EXPECT_DOUBLE_EQ(r.weights_gb, 2 * 7242780672.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.gradients_gb, 4 * 7242780672.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.optimizer_gb, 12 * 7242780672.0 / 1e9);
  // ZeRO-1 shards the dense state over the 8 dp ranks and the experts' over the dp / ep = 1
  // ranks that hold each: 12 x (200,704,512 + 5,637,144,576) bytes, as ZeRO-1 without ep.
  par.zero = 1;
  const auto z = llm_training_memory(m, 8, 1024, DType::kBf16, par, h100);
  EXPECT_DOUBLE_EQ(z.optimizer_gb, 12 * 5837849088.0 / 1e9);
  EXPECT_DOUBLE_EQ(z.weights_gb, r.weights_gb);
  // ep 2 of dp 8, ZeRO-2: the gradients of 4 experts a layer over 4 ranks, the dense ones over 8:
  // 4 x (200,704,512 + 22,548,578,304 / 4) bytes.
  par.ep = 2, par.zero = 2;
  const auto e2 = llm_training_memory(m, 8, 1024, DType::kBf16, par, h100);
  EXPECT_DOUBLE_EQ(e2.gradients_gb, 4 * (200704512.0 + 5637144576.0) / 1e9);
  EXPECT_DOUBLE_EQ(e2.weights_gb, 2 * (1605636096.0 + 22548578304.0) / 1e9);
  // Activations do not depend on ep (each rank's experts take t x top-k tokens on average).
  par.ep = 1;
  EXPECT_DOUBLE_EQ(e2.activations_gb, llm_training_memory(m, 8, 1024, DType::kBf16, par, h100).activations_gb);
  // Layouts it does not model: one line naming --ep.
  par.ep = 3, par.zero = 0;
  expect_error<ConfigError>([&] { llm_training_memory(m, 8, 1024, DType::kBf16, par, h100); },
                            {"--ep 3", "must divide --dp (8)", "8 experts"});
  par.ep = 2;
  expect_error<ConfigError>([&] { llm_training_memory(model("llama-3.1-8b"), 8, 1024, DType::kBf16, par, h100); },
                            {"--ep 2", "no experts"});
}

// Llama-3.1-8B (8,030,261,248 parameters) over dp 2 x cp 4: each rank saves the activations of
// its quarter of every sequence (all of them scale with the rank's tokens), and ZeRO-1 shards
// the AdamW state over the 8 ranks of the dp-cp group.
TEST(Memory, ContextParallelSplitsActivationsAndShardsOverDpCp) {
  const ModelConfig m = model("llama-3.1-8b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  Parallelism par;
  par.dp = 2, par.zero = 1;
  const auto one = llm_training_memory(m, 2, 8192, DType::kBf16, par, h100);
  par.cp = 4;
  const auto four = llm_training_memory(m, 2, 8192, DType::kBf16, par, h100);
  EXPECT_NEAR(four.activations_gb, one.activations_gb / 4, 1e-9);
  EXPECT_DOUBLE_EQ(four.optimizer_gb, 12 * 8030261248.0 / 8 / 1e9);
  EXPECT_DOUBLE_EQ(one.optimizer_gb, 12 * 8030261248.0 / 2 / 1e9);
  EXPECT_DOUBLE_EQ(four.weights_gb, 2 * 8030261248.0 / 1e9);
  par.cp = 3;
  expect_error<ConfigError>([&] { llm_training_memory(m, 2, 8192, DType::kBf16, par, h100); }, {"--cp 3"});
}

// Expert parallelism drawn from dp x cp ranks: Mixtral-8x7B on dp 4 x cp 2 with ep 8 holds what
// dp 8 x ep 8 holds (one expert a layer: 7,242,780,672 parameters,
// MixtralExpertParallelTrainingByHand); ZeRO-1 shards the dense part over the 8 dp x cp ranks
// and each expert over the dp x cp / ep = 1 rank holding it: all 46,702,792,704 / 8.
TEST(Memory, ExpertParallelOverDpTimesCp) {
  const ModelConfig m = model("mixtral-8x7b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  Parallelism par;
  par.dp = 4, par.cp = 2, par.ep = 8, par.zero = 1;
  const auto r = llm_training_memory(m, 16, 2048, DType::kBf16, par, h100);
  EXPECT_DOUBLE_EQ(r.weights_gb, 2 * 7242780672.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.optimizer_gb, 12 * 46702792704.0 / 8 / 1e9);
  par.dp = 8, par.cp = 1;
  EXPECT_NEAR(llm_training_memory(m, 16, 2048, DType::kBf16, par, h100).activations_gb, r.activations_gb, 1e-9);
  par.dp = 2, par.cp = 2;  // 4 ranks for 8 expert shards
  expect_error<ConfigError>([&] { llm_training_memory(m, 16, 2048, DType::kBf16, par, h100); },
                            {"--ep 8", "must divide --dp (2) x --cp (2)"});
}

// Megatron-LM's interleaved 1F1B (vpp model chunks a pipeline rank) holds more activations on
// the first rank. Llama-3.1-8B, pp 4, 8 microbatches of 1 x 2,048 tokens, 139,392 B a token
// and layer (Llama8bMixedPrecisionTrainingByHand). Plain 1F1B: rank 0 holds its 8 layers for
// 4 microbatches (32 layer-microbatches) and the embedding output of 4. vpp 2 (chunks of 4
// layers): the warm-up runs 2 (4 - 1) + (2 - 1) 4 = 10 chunk forwards, then one steady forward
// before the first backward: 4 microbatches through chunk 0, 4 through chunk 1, 3 more through
// chunk 0, i.e. 11 chunks = 44 layer-microbatches, 7 embedding outputs. vpp 4 (chunks of 2):
// 2 x 3 + 3 x 4 + 1 = 19 chunks = 38 layer-microbatches, 7 embedding outputs. Each + the
// logits of one microbatch, (2 + 4) x 2,048 x 128,256 B:
//   44 x 2,048 x 139,392 + 2 x 2,048 x 7 x 4,096 + 1,576,009,728 = 14,254,342,144 B
//   38 x 2,048 x 139,392 + 117,440,512 + 1,576,009,728            = 12,541,493,248 B
// With 4 microbatches every chunk forward is warm-up: 4 microbatches through each of the 8
// layers, as without interleaving (10,778,312,704 B).
TEST(Memory, InterleavedPipelineHoldsMoreChunksByHand) {
  const ModelConfig m = model("llama-3.1-8b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  Parallelism par;
  par.pp = 4, par.microbatches = 8;
  EXPECT_NEAR(llm_training_memory(m, 8, 2048, DType::kBf16, par, h100).activations_gb, 10778312704.0 / 1e9, 1e-9);
  par.vpp = 2;
  EXPECT_NEAR(llm_training_memory(m, 8, 2048, DType::kBf16, par, h100).activations_gb, 14254342144.0 / 1e9, 1e-9);
  par.vpp = 4;
  EXPECT_NEAR(llm_training_memory(m, 8, 2048, DType::kBf16, par, h100).activations_gb, 12541493248.0 / 1e9, 1e-9);
  par.microbatches = 4, par.vpp = 2;
  EXPECT_NEAR(llm_training_memory(m, 4, 2048, DType::kBf16, par, h100).activations_gb, 10778312704.0 / 1e9, 1e-9);
  // Megatron-LM's checks: chunks of equal layers, microbatches in groups of pp, a pipeline.
  par.vpp = 3;
  expect_error<ConfigError>([&] { llm_training_memory(m, 4, 2048, DType::kBf16, par, h100); },
                            {"--vpp 3", "32 layers", "12 equal model chunks"});
  par.vpp = 2, par.microbatches = 6;
  expect_error<ConfigError>([&] { llm_training_memory(m, 6, 2048, DType::kBf16, par, h100); },
                            {"--vpp 2", "--microbatches 6", "multiple of --pp 4"});
  par.pp = 1, par.microbatches = 1;
  expect_error<ConfigError>([&] { llm_training_memory(m, 1, 2048, DType::kBf16, par, h100); }, {"--vpp 2", "--pp 2"});
}

// Qwen2-57B-A14B's shared expert saves what a dense SwiGLU of its width saves: its gate/up
// output (2 x 20,480) and its SiLU-mul output (20,480), BF16: 122,880 B a token and layer, x
// 2,048 tokens x 28 layers = 7,046,430,720 B beyond the same model without it; and its
// weights, 3 x 3,584 x 20,480 + 3,584 a layer.
TEST(Memory, SharedExpertActivationsByHand) {
  ModelConfig m = model("qwen2-57b-a14b");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const auto with = llm_training_memory(m, 1, 2048, DType::kBf16, {}, h100);
  ModelConfig without = m;
  without.shared_expert_ffn = 0;
  const auto r = llm_training_memory(without, 1, 2048, DType::kBf16, {}, h100);
  EXPECT_NEAR(with.activations_gb - r.activations_gb, 7046430720.0 / 1e9, 1e-9);
  EXPECT_DOUBLE_EQ(model_parameters(m) - model_parameters(without), 28 * (3 * 3584.0 * 20480 + 3584));
}
