#pragma once
// What one GPU holds for a forecast (1 GB = 1e9 bytes), and whether it fits.
//
// Training (eager FP32 PyTorch with AdamW, as NeuSight's labels were measured): weights,
// gradients and both AdamW moments (4 + 4 + 8 bytes per parameter), and the activations the
// backward pass needs (no recomputation). Inference (eager FP32, whole sequence, no KV cache):
// weights and the largest set of tensors alive at once. Serving (predictor::serving_memory):
// weights in the serving dtype and the KV cache.
//
// The split over GPUs: tp divides the linear layers' weights and the per-head / FFN-width
// activations (Megatron-LM), pp divides the layers, dp replicates. Parameters per GPU are
// taken as P / (tp * pp) (embeddings and norms split like the rest: a small overstatement of
// the split, said here). Pipeline stages run 1F1B (Megatron-LM's schedule): the first stage
// holds the activations of min(pp, microbatches) microbatches; the last stage adds the logits.
#include <cstdint>
#include <string>

#include "core/gpu_spec.h"
#include "core/model_config.h"
#include "core/op_graph.h"

namespace tilecast {

// Share of the GPU's memory a forecast may use; the rest is the CUDA context, the caching
// allocator's fragmentation and library workspaces.
constexpr double kUsableMemoryFraction = 0.9;

struct MemoryEstimate {
  double weights_gb = 0, gradients_gb = 0, optimizer_gb = 0, activations_gb = 0, kv_cache_gb = 0;
  double capacity_gb = 0;  // the spec's memory in GB (1e9 B): an "80 GB" (GiB) card holds 85.9
  // Serving only (-1 otherwise): the KV-cache tokens the usable memory holds beside the weights
  // on the GPU that runs out first, and how many sequences of the forecast's length (its
  // prompt plus output, or context plus one; a sliding window caps it) that is.
  int64_t kv_capacity_tokens = -1, max_sequences = -1;
  // Serving with DP attention: the ranks whose own caches those two add up (tp); else 1.
  int64_t kv_ranks = 1;
  double total_gb() const { return weights_gb + gradients_gb + optimizer_gb + activations_gb + kv_cache_gb; }
  bool fits() const { return total_gb() <= kUsableMemoryFraction * capacity_gb; }
};

// Activations saved for the backward pass by one transformer layer, in bytes, for `tokens`
// tokens of sequences of `seq` tokens in FP32 (4-byte tensors, 1-byte dropout masks), on one
// GPU of a tp group:
//   attention: its input (norm output) 4th, Q/K/V 4t(a + 2 kv) d / tp, the context before the
//              output projection 4t a d / tp, the softmax output 4 (a / tp) t s, with
//              attention dropout (p > 0) its mask and output (1 + 4) (a / tp) t s, with hidden
//              dropout the output projection's mask t h;
//   FFN:       its input 4th, the activation's input and output 4t f / tp each (gated: the
//              gate and up projections, 3 x 4t f / tp), with hidden dropout the mask t h;
//   norms keep their input: counted above as the inputs of attention and FFN.
// (HF eager attention; the scaling and masking before the softmax keep nothing.)
double layer_activation_bytes(const ModelConfig& m, int64_t tokens, int64_t seq, int64_t tp);

// `optimizer_state`: AdamW's two FP32 moments (what a training run holds); false for a run
// that only times forward and backward, as NeuSight's training labels were measured.
MemoryEstimate training_memory(const ModelConfig& m, int64_t batch, int64_t seq, const Parallelism& par,
                               const GpuSpec& gpu, bool optimizer_state = true);
// Mixed-precision training (build_llm_training_graph), Megatron-LM's layout per GPU: `dtype`
// weights (2 B a parameter), FP32 main gradients (4 B: Megatron accumulates and all-reduces
// BF16 training's gradients in FP32) and, with `optimizer_state`, AdamW's FP32 master weights
// and two moments (12 B); ZeRO (par.zero) shards over the dp x cp ranks the optimizer state
// (1), the gradients too (2) and the weights too (3; each layer's gathered weights, transient,
// are not counted). Context parallelism: the activations of each rank's seq / cp tokens.
// Expert parallelism (par.ep > 1): each rank holds 1 / ep of the expert weights
// (expert_parameters), ZeRO sharding those over the dp x cp / ep ranks that share them; its
// activations are as without it (each rank's experts take t x top-k tokens on average, the
// count its own tokens send). Activations saved per token and layer, in the dtype, on one GPU of
// the tp group (FlashAttention: no score matrix):
//   the residual stream into each of the two norms and each norm's output (4h), Q, K and V
//   ((a + 2 kv) d / tp) and the attention output (a d / tp) plus its FP32 log-sum-exp (4 a / tp
//   bytes), the gate/up output (2F / tp) and the SiLU-mul output (F / tp); MoE: F = top-k x
//   the expert width (+ a shared expert's width);
// dtype fp8 (build_llm_training_graph): weights and activations in BF16, plus the FP8 copy and
// transpose of each weight of an FP8 GEMM (2 B a fp8_training_gemm_parameters), and the FP8
// GEMMs' saved inputs in FP8 (the input norm's output h; for a dense FFN the post-attention
// norm's output h and the SiLU-mul output F / tp too), with the attention output's FP8 copy
// (a d / tp) beside its BF16 one;
// par.sequence_parallel divides the 4h (and a recomputed layer's input) by tp too;
// with `recompute` each layer keeps only its input (h) and one layer's full set is alive while
// it recomputes. The first pipeline rank holds the microbatches pipeline_in_flight counts (1F1B:
// min(pp, microbatches); more with the interleaved schedule); the last adds
// the logits and their FP32 softmax for the loss (one microbatch).
// `hf_eager` (build_llm_training_graph's): Hugging Face's eager model with its parameters in
// `dtype` (model.to(dtype), as build_llm_training_graph's hf_eager graph runs it) and torch's
// AdamW: weights, gradients and both moments in the dtype (2 + 2 + 4 B a parameter in BF16; no
// FP32 master copy). Saved per token and layer (autograd's saved tensors): each RMSNorm's FP32
// input (4h, which pow and x * rsqrt share), its copy in the dtype before the weight and its
// output, the projections' input (2 e h); Qwen3's q/k norms the same over (a + kv) d without the
// output; SDPA's q, k, v and output and o_proj's contiguous copy of that output ((a + 2 kv) d +
// 2 a d) and SDPA's FP32 log-sum-exp (4a); SiLU's input, its output, up and the down
// projection's input (4F); the logits and their FP32 log-softmax as above. (transformers'
// Trainer with bf16=True on FP32 parameters instead keeps FP32 weights, gradients and moments,
// 16 B a parameter, plus autocast's BF16 copies: not modelled.)
MemoryEstimate llm_training_memory(const ModelConfig& m, int64_t batch, int64_t seq, DType dtype,
                                   const Parallelism& par, const GpuSpec& gpu, bool optimizer_state = true,
                                   bool recompute = false, bool hf_eager = false);
MemoryEstimate inference_memory(const ModelConfig& m, int64_t batch, int64_t seq, const Parallelism& par,
                                const GpuSpec& gpu);

// "weights 1.2 + gradients ... of 80 GB: fits" for tables.
std::string memory_summary(const MemoryEstimate& m);

}  // namespace tilecast
