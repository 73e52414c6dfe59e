#include "core/memory_model.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/units.h"

namespace tilecast {

namespace {

int64_t kv_heads_of(const ModelConfig& m) { return m.kv_heads > 0 ? m.kv_heads : m.heads; }

// FFN width each token passes through: the dense width, or top-k experts of their width
// (Switch routes each token to one expert of d_ff), plus a shared expert's.
// With dense layers among the MoE ones (DeepSeek's, Qwen-MoE's, Llama 4's), the mean over the layers.
double ffn_width(const ModelConfig& m) {
  if (m.experts_per_token > 0) {
    const double routed = double(m.experts_per_token) * (m.moe_ffn > 0 ? m.moe_ffn : m.ffn) + double(m.shared_expert_ffn);
    return (double(moe_layers(m)) * routed + double(m.dense_layers) * double(m.ffn)) / double(m.layers);
  }
  return double(m.ffn);
}

// Attention block's saved activations (see layer_activation_bytes).
double attention_bytes(const ModelConfig& m, double t, double s, double tp) {
  const double h = m.hidden, a = m.heads, kv = kv_heads_of(m), d = m.head_dim;
  double b = 4 * t * h + 4 * t * (a + 2 * kv) * d / tp + 4 * t * a * d / tp + 4 * (a / tp) * t * s;
  if (m.attention_dropout > 0) b += 5 * (a / tp) * t * s;
  if (m.hidden_dropout > 0) b += t * h;
  return b;
}

double ffn_bytes(const ModelConfig& m, double t, double tp) {
  const double h = m.hidden, f = ffn_width(m);
  double b = 4 * t * h + (m.gated_ffn ? 3 : 2) * 4 * t * f / tp;
  if (m.hidden_dropout > 0) b += t * h;
  return b;
}

void check_layout(const Parallelism& par, int64_t batch, int64_t seq) {
  if (par.dp < 1 || par.tp < 1 || par.pp < 1 || par.microbatches < 1)
    throw ConfigError("parallel layout: dp, tp, pp and microbatches must be >= 1");
  if (batch < 1 || seq < 1) throw ConfigError("batch and seq must be >= 1");
}

}  // namespace

double layer_activation_bytes(const ModelConfig& m, int64_t tokens, int64_t seq, int64_t tp) {
  return attention_bytes(m, double(tokens), double(seq), double(tp)) + ffn_bytes(m, double(tokens), double(tp));
}

MemoryEstimate training_memory(const ModelConfig& m, int64_t batch, int64_t seq, const Parallelism& par,
                               const GpuSpec& gpu, bool optimizer_state) {
  check_layout(par, batch, seq);
  MemoryEstimate r;
  r.capacity_gb = gpu.mem_gb();
  const double params = model_parameters(m) / double(par.tp * par.pp);
  r.weights_gb = 4 * params / 1e9;
  r.gradients_gb = 4 * params / 1e9;
  r.optimizer_gb = optimizer_state ? 8 * params / 1e9 : 0;  // AdamW exp_avg and exp_avg_sq in FP32
  const double micro_seqs = double(batch) / double(par.dp) / double(par.microbatches);
  const double in_flight = double(std::min(par.pp, par.microbatches));
  const double t = micro_seqs * seq * in_flight;  // tokens whose activations the first stage holds
  const double tp = double(par.tp), s = double(seq);
  double bytes = double(m.layers) * layer_activation_bytes(m, int64_t(t), seq, par.tp);
  // Encoder-decoder (Switch): decoder layers add a cross-attention block.
  bytes += double(m.decoder_layers) * (layer_activation_bytes(m, int64_t(t), seq, par.tp) + attention_bytes(m, t, s, tp));
  bytes /= double(par.pp);
  // Embedding output (and its dropout mask) on the first stage; the last stage's logits and
  // their log-softmax for the loss, one microbatch.
  const double t1 = micro_seqs * seq;
  bytes += (m.hidden_dropout > 0 ? 5 : 4) * t * m.hidden + 2 * 4 * t1 * double(m.vocab) / tp;
  r.activations_gb = bytes / 1e9;
  return r;
}

MemoryEstimate llm_training_memory(const ModelConfig& m, int64_t batch, int64_t seq, DType dtype,
                                   const Parallelism& par, const GpuSpec& gpu, bool optimizer_state, bool recompute,
                                   bool hf_eager) {
  check_layout(par, batch, seq);
  MemoryEstimate r;
  r.capacity_gb = gpu.mem_gb();
  const double e = dtype_size(training_storage_dtype(dtype));
  const bool fp8 = dtype == DType::kFp8;
  check_zero_stage(par.zero);
  check_training_expert_parallel(m, par);
  check_training_context_parallel(m, seq, par);
  check_virtual_pipeline(m, par);
  // ZeRO shards over the data- and context-parallel ranks together (Megatron-Core's dp-cp group);
  // with expert parallelism each rank holds 1 / ep of the experts, sharded over the ranks that
  // hold the same ones (rank_parameters).
  const double params = model_parameters(m), experts = par.ep > 1 ? expert_parameters(m) : 0;
  auto on_rank = [&](int stage) { return rank_parameters(params, experts, par, par.zero >= stage); };
  // FP8: Transformer Engine keeps each GEMM weight's FP8 copy and its transpose (1 B each).
  const double fp8_copies = fp8 ? 2.0 * rank_parameters(fp8_training_gemm_parameters(m), 0, par, par.zero >= 3) : 0;
  r.weights_gb = (e * on_rank(3) + fp8_copies) / 1e9;
  // FP32 main gradients; FP32 master weights, exp_avg, exp_avg_sq. Hugging Face's eager model:
  // gradients and the two moments in the parameters' dtype, no master copy.
  r.gradients_gb = (hf_eager ? e : 4) * on_rank(2) / 1e9;
  r.optimizer_gb = optimizer_state ? (hf_eager ? 2 * e : 12) * on_rank(1) / 1e9 : 0;
  const double tp = double(par.tp), h = m.hidden, a = m.heads, kv = kv_heads_of(m), d = m.head_dim;
  // Sequence parallelism splits the norms' inputs and outputs over the tp ranks too.
  const double norm_share = par.sequence_parallel ? tp : 1.0;
  // A GEMM's saved input (each norm's output, the SiLU-mul output) is FP8 under FP8 training;
  // the attention output is kept twice then: BF16 for FlashAttention's backward, FP8 for
  // o_proj's. A MoE's experts stay BF16, and so do the FFN's inputs (the post-attention norm's
  // output, the SiLU-mul output).
  const double gemm_in = fp8 ? 1.0 : e, ffn_in = fp8 && m.num_experts > 0 ? e : gemm_in, f = ffn_width(m);
  // Attention's saved tensors: q, k, v and the output, per rank. MLA: q and k at head_dim, v and
  // the output at v_head_dim, plus the latents (replicated): the two norms' inputs and the up
  // projections' inputs, 2 x (q latent + kv latent), and the rotary key.
  const double vd = double(value_head_dim(m));
  const double attention = is_mla(m) ? (2 * a * d + 2 * a * vd) / tp + 2.0 * double(m.q_lora_rank + m.kv_lora_rank) +
                                           double(m.qk_rope_dim)
                                     : ((a + 2 * kv) * d + a * d) / tp;
  // Hugging Face's eager model (one GPU or data parallelism: build_llm_training_graph refuses the
  // rest) saves what autograd keeps of its unfused modules (the header's list).
  const double per_token_layer =
      hf_eager ? 2 * (4 + 2 * e) * h + (m.qk_norm ? (4 + e) * (a + kv) * d : 0) + e * ((a + 2 * kv) * d + 2 * a * d) +
                     4 * a + 4 * e * f
               : e * (2 * h / norm_share + attention + 2 * f / tp) + (gemm_in + ffn_in) * h / norm_share +
                     ffn_in * f / tp + (fp8 ? a * vd / tp : 0) + 4 * a / tp +
                     (m.sandwich_norms ? 2 * e * h / norm_share : 0);  // the two post-norms' inputs
  const double micro_seqs = double(batch) / double(par.dp) / double(par.microbatches);
  const double t1 = micro_seqs * double(seq) / double(par.cp);                  // one microbatch's tokens
  // Held by the first pipeline rank: its layers' activations of the microbatches in flight (with
  // the interleaved schedule, more chunks of fewer layers; pipeline_in_flight).
  const PipelineInFlight in_flight = pipeline_in_flight(par);
  const double t = t1 * in_flight.stage_microbatches;
  const double stage_layers = double(m.layers) / double(par.pp);
  const double bytes = recompute ? stage_layers * t * e * h / norm_share + t1 * per_token_layer
                                 : stage_layers * t * per_token_layer;
  // The embedding output on the first stage; the logits and their FP32 softmax on the last.
  r.activations_gb = (bytes + e * t1 * in_flight.first_chunk_microbatches * h + (e + 4) * t1 * double(m.vocab) / tp) / 1e9;
  return r;
}

MemoryEstimate inference_memory(const ModelConfig& m, int64_t batch, int64_t seq, const Parallelism& par,
                                const GpuSpec& gpu) {
  check_layout(par, batch, seq);
  MemoryEstimate r;
  r.capacity_gb = gpu.mem_gb();
  r.weights_gb = 4 * model_parameters(m) / double(par.tp * par.pp) / 1e9;
  // Largest set alive at once (eager, no grad): the residual stream and a norm output, plus the
  // largest of the attention scores with their softmax, the FFN's intermediate tensors, or
  // the logits.
  const double t = double(batch) / double(par.dp) / double(par.microbatches) * seq, tp = double(par.tp);
  const double scores = 2 * 4 * (double(m.heads) / tp) * t * seq;
  const double ffn = (m.gated_ffn ? 3 : 2) * 4 * t * ffn_width(m) / tp;
  const double logits = 4 * t * double(m.vocab) / tp;
  r.activations_gb = (2 * 4 * t * m.hidden + std::max({scores, ffn, logits})) / 1e9;
  return r;
}

std::string memory_summary(const MemoryEstimate& m) {
  char buf[320];
  std::string parts;
  auto add = [&](const char* name, double gb) {
    if (gb <= 0) return;
    char p[64];
    std::snprintf(p, sizeof p, "%s%.2f GB %s", parts.empty() ? "" : " + ", gb, name);
    parts += p;
  };
  add("weights", m.weights_gb);
  add("gradients", m.gradients_gb);
  add("AdamW state", m.optimizer_gb);
  add("activations", m.activations_gb);
  add("KV cache", m.kv_cache_gb);
  std::snprintf(buf, sizeof buf, "memory/GPU    %10.2f GB (%s) of %.1f GB (%.0f GiB): %s\n", m.total_gb(),
                parts.c_str(), m.capacity_gb, m.capacity_gb * kBytesPerGb / kBytesPerGib,
                m.fits() ? "fits" : "DOES NOT FIT (above 90 % of the GPU's memory)");
  std::string out = buf;
  if (m.kv_capacity_tokens >= 0) {
    const std::string ranks =
        m.kv_ranks > 1 ? " (" + std::to_string(m.kv_ranks) + " DP-attention ranks, each caching its own sequences)" : "";
    std::snprintf(buf, sizeof buf, "KV room       %10lld tokens beside the weights%s%s: %lld sequences of this length\n",
                  static_cast<long long>(m.kv_capacity_tokens), m.activations_gb > 0 ? " and activations" : "",
                  ranks.c_str(), static_cast<long long>(m.max_sequences));
    out += buf;
  }
  return out;
}

}  // namespace tilecast
