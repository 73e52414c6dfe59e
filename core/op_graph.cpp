#include "core/op_graph.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tilecast {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kInference: return "inference";
    case Mode::kTraining: return "training";
    case Mode::kPrefill: return "prefill";
    case Mode::kDecode: return "decode";
  }
  return "?";
}

KernelQuery linear_q(int64_t m, int64_t n, int64_t k) {
  KernelQuery q;
  q.op = OpKind::kLinear;
  q.b = 1, q.m = m, q.n = n, q.k = k;
  return q;
}
KernelQuery bmm_q(int64_t b, int64_t m, int64_t n, int64_t k) {
  KernelQuery q;
  q.op = OpKind::kBmm;
  q.b = b, q.m = m, q.n = n, q.k = k;
  return q;
}
KernelQuery vec_q(OpKind op, int64_t rows, int64_t h, DType d) {
  KernelQuery q;
  q.op = op;
  q.b = rows, q.h = h;
  q.dtype = d;
  return q;
}

namespace {

constexpr double kF32 = 4.0;

// Appends operators in program order; `count` applies to everything added until changed.
class Builder {
 public:
  Builder(OpGraph& g) : g_(g) {}
  bool training() const { return g_.mode == Mode::kTraining; }
  int64_t tp() const { return g_.par.tp; }

  // Megatron-LM column-parallel linear: output features split over tp ranks; the backward
  // all-reduces the input gradient.
  void linear_col(const std::string& name, int64_t m, int64_t n, int64_t k, bool bias = true) {
    linear(name, m, n, (k + tp() - 1) / tp(), bias);
    if (tp() > 1 && training()) g_.ops.back().bw.push_back(KernelCall::all_reduce(kF32 * double(m) * n, tp()));
  }
  // Row-parallel linear: input features split; the forward all-reduces the output.
  void linear_row(const std::string& name, int64_t m, int64_t n, int64_t k, bool bias = true) {
    linear(name, m, (n + tp() - 1) / tp(), k, bias);
    if (tp() > 1) g_.ops.back().fw.push_back(KernelCall::all_reduce(kF32 * double(m) * k, tp()));
  }
  void set_count(int64_t c) { count_ = c, subset_ = false; }
  // The next ops run in `c` of the repeated layers only (GraphOp::layer_subset).
  void set_layer_subset(int64_t c) { count_ = c, subset_ = true; }
  void set_prefix(const std::string& p) { prefix_ = p; }

  GraphOp& op(const std::string& name, const std::string& kind) {
    GraphOp o;
    o.name = prefix_ + name;
    o.kind = kind;
    o.count = count_;
    o.layer_subset = subset_;
    g_.ops.push_back(o);
    return g_.ops.back();
  }

  // y = x W^T (+ b), x: (M, N), W: (K, N). Backward: dX = dY W, dW = dY^T X, db = sum(dY).
  void linear(const std::string& name, int64_t m, int64_t n, int64_t k, bool bias = true) {
    GraphOp& o = op(name, "linear");
    o.fw.push_back(KernelCall::kernel(linear_q(m, n, k)));
    if (!training()) return;
    o.bw.push_back(KernelCall::kernel_at_forward_rate(linear_q(m, k, n)));
    o.bw.push_back(KernelCall::kernel_at_forward_rate(linear_q(k, m, n)));
    if (bias) o.bw.push_back(KernelCall::mem(kF32 * (double(m) * k + k)));
    o.acc.push_back(KernelCall::kernel(vec_q(OpKind::kAdd, k, n)));
    if (bias) o.acc.push_back(KernelCall::kernel(vec_q(OpKind::kAdd, 1, k)));
  }

  // (B,M,N) x (B,N,K). Backward: dA = dC B^T (B,M,K,N), dB = A^T dC (B,N,M,K).
  void bmm(const std::string& name, int64_t b, int64_t m, int64_t n, int64_t k) {
    GraphOp& o = op(name, "bmm");
    o.fw.push_back(KernelCall::kernel(bmm_q(b, m, n, k)));
    if (!training()) return;
    o.bw.push_back(KernelCall::kernel(bmm_q(b, m, k, n)));
    o.bw.push_back(KernelCall::kernel(bmm_q(b, n, m, k)));
  }

  // Elementwise op on a (rows, h) tensor, with the autograd kernels of its backward.
  GraphOp& eltwise(const std::string& name, OpKind kind, int64_t rows, int64_t h, bool residual = false) {
    GraphOp& o = op(name, "elementwise");
    o.fw.push_back(KernelCall::kernel(vec_q(kind, rows, h)));
    if (!training()) return o;
    auto bw = [&](OpKind k) { o.bw.push_back(KernelCall::kernel(vec_q(k, rows, h))); };
    switch (kind) {
      case OpKind::kAdd:
        // AddBackward passes the gradient through; the kernel is the sum where the residual
        // stream forks (both branches' gradients meet).
        if (residual) bw(OpKind::kAdd);
        break;
      case OpKind::kAddU: break;
      case OpKind::kMul: bw(OpKind::kMul); bw(OpKind::kMul); break;
      case OpKind::kMulU: case OpKind::kDivU: bw(OpKind::kMulU); break;
      case OpKind::kDiv: bw(OpKind::kDiv); bw(OpKind::kDiv); break;
      case OpKind::kPow: case OpKind::kPowU: bw(OpKind::kPowU); bw(OpKind::kMul); bw(OpKind::kMulU); break;
      case OpKind::kTanh: case OpKind::kRelu: bw(OpKind::kMul); break;  // tanh/threshold_backward
      case OpKind::kGelu: bw(OpKind::kGelu); break;
      default: break;
    }
    return o;
  }

  void layernorm(const std::string& name, int64_t rows, int64_t h) {
    GraphOp& o = op(name, "layernorm");
    o.fw.push_back(KernelCall::kernel(vec_q(OpKind::kLayerNorm, rows, h)));
    if (!training()) return;
    // layer_norm_backward: the input-gradient kernel (a row pass like the forward) and the
    // gamma/beta column reduction over x and dy.
    o.bw.push_back(KernelCall::kernel(vec_q(OpKind::kLayerNorm, rows, h)));
    o.bw.push_back(KernelCall::mem(2 * kF32 * double(rows) * h));
    o.acc.push_back(KernelCall::kernel(vec_q(OpKind::kAdd, 1, h)));
    o.acc.push_back(KernelCall::kernel(vec_q(OpKind::kAdd, 1, h)));
  }

  void softmax(const std::string& name, int64_t rows, int64_t h) {
    GraphOp& o = op(name, "softmax");
    o.fw.push_back(KernelCall::kernel(vec_q(OpKind::kSoftmax, rows, h)));
    if (!training()) return;
    o.bw.push_back(KernelCall::kernel(vec_q(OpKind::kMul, rows, h)));
    o.bw.push_back(KernelCall::kernel(vec_q(OpKind::kSoftmax, rows, h)));
  }

  // Dropout only launches kernels in training (eval-mode dropout is the identity):
  // fused_dropout writes the output and a mask; the backward scales by the mask.
  void dropout(const std::string& name, int64_t rows, int64_t h) {
    if (!training()) return;
    GraphOp& o = op(name, "dropout");
    o.fw.push_back(KernelCall::kernel(vec_q(OpKind::kMul, rows, h)));
    o.bw.push_back(KernelCall::kernel(vec_q(OpKind::kMul, rows, h)));
  }

  // Pure data movement: `fw_bytes` read+written forward, `bw_bytes` backward.
  void mem(const std::string& name, double fw_bytes, double bw_bytes) {
    GraphOp& o = op(name, "memory");
    o.fw.push_back(KernelCall::mem(fw_bytes));
    if (training() && bw_bytes > 0) o.bw.push_back(KernelCall::mem(bw_bytes));
  }

  // Vocab-parallel embedding: each rank gathers its slice, the forward all-reduces.
  void vocab_parallel_reduce(int64_t tokens, int64_t h) {
    if (tp() > 1) g_.ops.back().fw.push_back(KernelCall::all_reduce(kF32 * double(tokens) * h, tp()));
  }

  // Row gather from a (vocab, h) table. Backward: zero the (vocab, h) gradient, scatter-add
  // the rows; AccumulateGrad adds it into .grad.
  void embedding(const std::string& name, int64_t tokens, int64_t vocab, int64_t h) {
    GraphOp& o = op(name, "embedding");
    o.fw.push_back(KernelCall::mem(2 * kF32 * double(tokens) * h + 8.0 * tokens));
    if (!training()) return;
    o.bw.push_back(KernelCall::mem(kF32 * double(vocab) * h + 3 * kF32 * double(tokens) * h));
    o.acc.push_back(KernelCall::kernel(vec_q(OpKind::kAdd, vocab, h)));
  }

 private:
  OpGraph& g_;
  int64_t count_ = 1;
  bool subset_ = false;
  std::string prefix_;
};


// ---- One transformer builder: GPT-2, OPT, BERT, Switch and the LLM decoders ---------------
// Each Hugging Face model_type is a row of kArchTable: embeddings (position table, token
// types, relative position bias, embedding norm), decoder-only or encoder-decoder stacks, norm
// placement, fused or separate q/k/v, how scores are scaled and masked, the FFN (activation
// MLP, SwiGLU), routed experts (top-k or fixed capacity; every layer or every n-th) and the
// head, plus the module names its eager implementation launches kernels under (as llama.cpp's
// llm_build_* are driven by their hparams). The config supplies the sizes, GQA, q/k norms,
// q/k/v biases, MoE routing and dropout probabilities (p = 0 launches nothing). Kernels follow
// the eager FP32 implementation: RMSNorm is costed by the layer-norm kernel model, SiLU by the
// GELU one (same memory pattern, one transcendental per element), RoPE as its eager
// mul/neg/cat/mul/add, repeat_kv as a copy.
enum class PosKind { kTable, kOptOffset, kRotary, kRelativeBias };
enum class ScaleKind { kNone, kDivScores, kMulScores, kMulQuery };
enum class MaskKind { kNone, kCausalWhere, kPaddingAdd, kCausalAddMax, kCausalAdd, kPositionBias };
enum class FfnKind { kMlp, kSwiGlu };
// Routed experts: top-k of E, each expert on its routed tokens (Mixtral, Qwen3-MoE), or top-1
// into fixed per-expert buffers of batch x expert_capacity tokens (Switch).
enum class MoeKind { kTopK, kCapacity };
enum class HeadKind { kLmHead, kScaledLmHead, kBert };

// Module names of one attention sub-layer (self- or cross-attention).
struct AttnNames {
  const char* norm;          // its norm (before it when pre-norm, after the residual otherwise)
  const char* prefix;        // attention-core operator prefix
  const char* qkv;           // fused q/k/v projection; "" = separate q, k, v
  const char* q;
  const char* k;
  const char* v;
  const char* prob_dropout;  // the attention-probability dropout, inside the prefix
  const char* out_proj;
  const char* out_dropout;   // "" = none
  const char* residual;
  const char* post_norm = "";  // a norm of the sub-layer's output before the residual (Gemma 2)
};

// Module names of routed experts.
struct MoeNames {
  MoeKind kind;
  const char* router;
  const char* router_softmax;
  const char* routing;  // top-k / argmax and the routing tables
  const char* experts;  // expert FFN prefix
  const char* gather;   // tokens into the experts' inputs
  const char* combine;  // outputs times the routing weights
  const char* scatter;  // outputs back to the token order
};

struct ArchSpec {
  const char* type;
  PosKind pos;
  bool token_types;      // BERT's token-type table
  bool encoder_decoder;  // an encoder stack, then a decoder stack with cross-attention (T5)
  bool pre_norm;         // norms before attention and FFN (else after each residual: BERT)
  bool bias;             // biases on every projection (q/k/v also when the config's qkv_bias)
  ScaleKind scale;
  MaskKind mask;
  FfnKind ffn;
  HeadKind head;
  // Module names.
  const char* model;         // prefix of the embeddings and the final norm
  const char* tokens;        // token embedding (encoder-decoder: + the stack's name)
  const char* positions;     // position table
  const char* types;         // token-type table
  const char* embed_norm;    // "" = none
  const char* embed_dropout; // "" = none
  const char* layers;        // layer prefix (encoder-decoder: inside the stack's)
  const char* sparse_layers; // prefix of the layers with routed experts (every layer: = layers)
  AttnNames self_attn;
  AttnNames cross_attn;      // encoder-decoder only
  const char* ffn_norm;
  const char* ffn_prefix;    // FFN module prefix (the names below are inside it)
  const char* up;            // MLP: up projection; SwiGLU: up_proj (w3)
  const char* gate;          // SwiGLU: gate_proj (w1)
  const char* act;           // MLP: activation prefix
  const char* ffn_dropout_inner;  // MLP: dropout between the activation and the down projection
  const char* down;
  const char* ffn_dropout;
  const char* residual_2;
  MoeNames moe;
  const char* final_norm;    // "" = none
  const char* ffn_post_norm = "";  // a norm of the FFN's output before the residual (Gemma 2)
  // Why the eager FP32 graph (NeuSight's setting: Hugging Face's eager modules) is not built,
  // or nullptr where it is.
  const char* no_eager = nullptr;
};

constexpr AttnNames kNoAttn = {"", "", "", "", "", "", "", "", "", ""};
constexpr MoeNames kNoMoe = {MoeKind::kTopK, "", "", "", "", "", "", ""};

constexpr ArchSpec kGpt2Arch = {
    "gpt2", PosKind::kTable, false, false, true, true, ScaleKind::kDivScores, MaskKind::kCausalWhere, FfnKind::kMlp,
    HeadKind::kLmHead, "", "wte", "wpe", "", "", "embed_dropout", "h.", "h.",
    {"ln_1", "attn.", "attn.c_attn", "", "", "", "attn_dropout", "attn.c_proj", "attn.resid_dropout", "residual_1"},
    kNoAttn, "ln_2", "", "mlp.c_fc", "", "mlp.", "", "mlp.c_proj", "mlp.dropout", "residual_2", kNoMoe, "ln_f"};
constexpr ArchSpec kOptArch = {
    "opt", PosKind::kOptOffset, false, false, true, true, ScaleKind::kMulQuery, MaskKind::kCausalAddMax,
    FfnKind::kMlp, HeadKind::kLmHead, "", "embed_tokens", "embed_positions", "", "", "embed_dropout", "layers.",
    "layers.",
    {"self_attn_layer_norm", "self_attn.", "", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
     "attn_dropout", "self_attn.out_proj", "dropout_1", "residual_1"},
    kNoAttn, "final_layer_norm", "", "fc1", "", "", "", "fc2", "dropout_2", "residual_2", kNoMoe, "final_layer_norm"};
constexpr ArchSpec kBertArch = {
    "bert", PosKind::kTable, true, false, false, true, ScaleKind::kDivScores, MaskKind::kPaddingAdd, FfnKind::kMlp,
    HeadKind::kBert, "", "word_embeddings", "position_embeddings", "token_type_embeddings", "embeddings.layer_norm",
    "embeddings.dropout", "encoder.layer.", "encoder.layer.",
    {"attention.output.layer_norm", "attention.self.", "", "attention.self.query", "attention.self.key",
     "attention.self.value", "attn_dropout", "attention.output.dense", "attention.output.dropout",
     "attention.output.residual"},
    kNoAttn, "output.layer_norm", "", "intermediate.dense", "", "intermediate.", "", "output.dense",
    "output.dropout", "output.residual", kNoMoe, ""};
// Switch Transformers: T5's encoder-decoder with RMS norms (costed as layer norms), unscaled
// scores plus the relative position bias, no biases, a ReLU MLP, every sparse_step-th layer
// routed (top-1 into capacity buffers), an LM head tied to the embedding and scaled by d^-0.5.
constexpr ArchSpec kSwitchArch = {
    "switch_transformers", PosKind::kRelativeBias, false, true, true, false, ScaleKind::kNone,
    MaskKind::kPositionBias, FfnKind::kMlp, HeadKind::kScaledLmHead, "", "shared_embedding.", "", "", "", "",
    "dense_layer.", "sparse_layer.",
    {"self_attn_norm", "self_attn.", "", "self_attn.q", "self_attn.k", "self_attn.v", "dropout", "self_attn.o",
     "self_attn.out_dropout", "self_attn.residual"},
    {"cross_attn_norm", "cross_attn.", "", "cross_attn.q", "cross_attn.k", "cross_attn.v", "dropout", "cross_attn.o",
     "cross_attn.out_dropout", "cross_attn.residual"},
    "ff_norm", "ff.", "wi", "", "", "dropout", "wo", "ff.out_dropout", "ff.residual",
    {MoeKind::kCapacity, "moe.router", "moe.router_softmax", "moe.routing", "moe.expert.", "moe.expert_gather",
     "moe.scale_by_router_prob", "moe.expert_scatter"},
    "final_layer_norm"};
// The decoder families differ only in their FFN/MoE module names and whether q/k/v are one
// fused projection (`qkv`, "" = separate; a fused gate and up projection: `gate` "").
constexpr ArchSpec decoder_arch(const char* type, const char* ffn_prefix, const char* gate, const char* up,
                                const char* down, MoeNames moe, const char* qkv = "") {
  return {type, PosKind::kRotary, false, false, true, false, ScaleKind::kMulScores, MaskKind::kCausalAdd,
          FfnKind::kSwiGlu, HeadKind::kLmHead, "model.", "embed_tokens", "", "", "", "", "model.layers.",
          "model.layers.",
          {"input_layernorm", "self_attn.", qkv, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
           "attn_dropout", "self_attn.o_proj", "", "residual_1"},
          kNoAttn, "post_attention_layernorm", ffn_prefix, up, gate, "", "", down, "", "residual_2", moe, "norm"};
}
// Gemma 2 and 3: Llama's layer with a norm after the attention and after the FFN as well as
// before them (sandwich norms; the config's flags add the embedding scale, q/k norms and
// soft-caps).
constexpr ArchSpec gemma_arch(const char* type) {
  ArchSpec a = decoder_arch(type, "mlp.", "gate_proj", "up_proj", "down_proj", kNoMoe);
  a.self_attn.post_norm = "post_attention_layernorm";
  a.ffn_norm = "pre_feedforward_layernorm";
  a.ffn_post_norm = "post_feedforward_layernorm";
  return a;
}

// Qwen-MoE's routed experts (softmax, then top-k).
constexpr MoeNames kQwenMoe = {MoeKind::kTopK, "mlp.gate", "mlp.routing_softmax", "mlp.topk", "mlp.experts.",
                               "mlp.experts.gather", "mlp.experts.routing_weight", "mlp.experts.index_add"};
// DeepSeek-V2/V3's routed experts (sigmoid scores, group-limited top-k), and why their eager
// graph is not built.
constexpr MoeNames kDeepSeekMoe = {MoeKind::kTopK, "mlp.gate", "mlp.routing_sigmoid", "mlp.topk", "mlp.experts.",
                                   "mlp.experts.gather", "mlp.experts.routing_weight", "mlp.experts.index_add"};
constexpr const char* kMlaNoEager = "the eager FP32 graph of multi-head latent attention and its dense layers is not built";
// A row whose eager FP32 graph (NeuSight's setting: Hugging Face's eager modules) is not built,
// and why; build_op_graph refuses it in one line.
constexpr ArchSpec no_eager_arch(ArchSpec a, const char* why) {
  a.no_eager = why;
  return a;
}

constexpr ArchSpec kArchTable[] = {
    kGpt2Arch,
    kOptArch,
    kBertArch,
    kSwitchArch,
    decoder_arch("llama", "mlp.", "gate_proj", "up_proj", "down_proj", kNoMoe),
    decoder_arch("mistral", "mlp.", "gate_proj", "up_proj", "down_proj", kNoMoe),
    decoder_arch("qwen2", "mlp.", "gate_proj", "up_proj", "down_proj", kNoMoe),
    decoder_arch("qwen3", "mlp.", "gate_proj", "up_proj", "down_proj", kNoMoe),
    decoder_arch("mixtral", "block_sparse_moe.", "w1", "w3", "w2",
                 {MoeKind::kTopK, "block_sparse_moe.gate", "block_sparse_moe.routing_softmax", "block_sparse_moe.topk",
                  "block_sparse_moe.experts.", "block_sparse_moe.experts.gather",
                  "block_sparse_moe.experts.routing_weight", "block_sparse_moe.experts.index_add"}),
    decoder_arch("qwen3_moe", "mlp.", "gate_proj", "up_proj", "down_proj", kQwenMoe),
    decoder_arch("qwen2_moe", "mlp.", "gate_proj", "up_proj", "down_proj", kQwenMoe),
    // Phi-3 and Phi-4: Llama's layer with q/k/v and gate/up each one fused projection.
    decoder_arch("phi3", "mlp.", "", "gate_up_proj", "down_proj", kNoMoe, "self_attn.qkv_proj"),
    gemma_arch("gemma2"),
    gemma_arch("gemma3_text"),  // Gemma 3: Gemma 2's layer with q/k norms, no soft-caps (the config's)
    // gpt-oss: Mixtral's layer shape (top-k experts of one fused gate_up and a down projection,
    // with biases), attention sinks, every other layer windowed (the config's flags).
    no_eager_arch(decoder_arch("gpt_oss", "mlp.", "", "gate_up_proj", "down_proj",
                               {MoeKind::kTopK, "mlp.router", "mlp.routing_softmax", "mlp.topk", "mlp.experts.",
                                "mlp.experts.gather", "mlp.experts.routing_weight", "mlp.experts.index_add"}),
                  "Hugging Face's eager gpt-oss runs every expert on every token in inference (GptOssExperts), "
                  "which is not modelled"),
    // Llama 4: Llama's layer with routed and shared experts (in the MoE layers), chunked local
    // attention in 3 of 4 layers (the config's); its eager graph is not built.
    no_eager_arch(decoder_arch("llama4_text", "feed_forward.", "gate_proj", "up_proj", "down_proj",
                               {MoeKind::kTopK, "feed_forward.router", "feed_forward.routing_sigmoid",
                                "feed_forward.topk", "feed_forward.experts.", "feed_forward.experts.gather",
                                "feed_forward.experts.routing_weight", "feed_forward.experts.index_add"}),
                  "the eager FP32 graph of Llama 4's chunked attention and interleaved experts is not built"),
    // DeepSeek-V2/V3: multi-head latent attention, leading dense layers, routed and shared
    // experts (the config's fields).
    no_eager_arch(decoder_arch("deepseek_v2", "mlp.", "gate_proj", "up_proj", "down_proj", kDeepSeekMoe), kMlaNoEager),
    no_eager_arch(decoder_arch("deepseek_v3", "mlp.", "gate_proj", "up_proj", "down_proj", kDeepSeekMoe), kMlaNoEager),
    no_eager_arch(decoder_arch("kimi_k2", "mlp.", "gate_proj", "up_proj", "down_proj", kDeepSeekMoe), kMlaNoEager),
};

const ArchSpec* find_arch(const std::string& model_type) {
  for (const auto& a : kArchTable)
    if (model_type == a.type) return &a;
  return nullptr;
}

// Activation of the MLP FFN on (t, f).
void mlp_activation(Builder& b, const std::string& p, const std::string& act, int64_t t, int64_t f) {
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    // HF NewGELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), eight kernels in eager.
    b.eltwise(p + "gelu.mul", OpKind::kMulU, t, f);
    b.eltwise(p + "gelu.pow", OpKind::kPowU, t, f);
    b.eltwise(p + "gelu.mul_1", OpKind::kMulU, t, f);
    b.eltwise(p + "gelu.add", OpKind::kAdd, t, f);
    b.eltwise(p + "gelu.mul_2", OpKind::kMulU, t, f);
    b.eltwise(p + "gelu.tanh", OpKind::kTanh, t, f);
    b.eltwise(p + "gelu.add_1", OpKind::kAddU, t, f);
    b.eltwise(p + "gelu.mul_3", OpKind::kMul, t, f);
  } else if (act == "gelu") {
    b.eltwise(p + "gelu", OpKind::kGelu, t, f);
  } else {
    b.eltwise(p + "relu", OpKind::kRelu, t, f);
  }
}

// Rotary embedding of `heads` heads: q * cos + rotate_half(q) * sin, rotate_half = cat(-x2, x1).
void rotary_embedding(Builder& b, const std::string& p, int64_t t, int64_t heads, int64_t head_dim) {
  const int64_t rows = t * heads;
  b.eltwise(p + ".mul_cos", OpKind::kMul, rows, head_dim);
  b.eltwise(p + ".neg", OpKind::kMulU, rows, std::max<int64_t>(1, head_dim / 2));
  b.mem(p + ".cat", 2 * kF32 * double(rows) * head_dim, 2 * kF32 * double(rows) * head_dim);
  b.eltwise(p + ".mul_sin", OpKind::kMul, rows, head_dim);
  b.eltwise(p + ".add", OpKind::kAdd, rows, head_dim);
}

// SwiGLU on `t` tokens: down(silu(gate(x)) * up(x)). Column/row parallel when `parallel`.
void gated_ffn(Builder& b, const std::string& p, const ArchSpec& a, int64_t t, int64_t h, int64_t f, bool parallel) {
  if (!*a.gate) {  // one fused gate_up projection (Phi-3), its two halves viewed apart
    if (parallel) b.linear_col(p + a.up, t, h, 2 * f, false);
    else b.linear(p + a.up, t, h, 2 * f, false);
  } else if (parallel) {
    b.linear_col(p + a.gate, t, h, f, false);
    b.linear_col(p + a.up, t, h, f, false);
  } else {
    b.linear(p + a.gate, t, h, f, false);
    b.linear(p + a.up, t, h, f, false);
  }
  const int64_t fl = parallel ? f / b.tp() : f;
  b.eltwise(p + "act_fn", OpKind::kGelu, t, fl);  // SiLU: one transcendental per element
  b.eltwise(p + "mul", OpKind::kMul, t, fl);
  if (parallel) b.linear_row(p + a.down, t, f, h, false);
  else b.linear(p + a.down, t, f, h, false);
}

// Activation MLP on `t` tokens: down(act(up(x))), a dropout between them where the
// architecture has one. Column/row parallel (with tp = 1 a plain linear).
void mlp_ffn(Builder& b, const std::string& p, const ArchSpec& a, const ModelConfig& m, int64_t t, int64_t f) {
  b.linear_col(p + a.up, t, m.hidden, f, a.bias);
  mlp_activation(b, p + a.act, m.activation, t, f / b.tp());
  if (m.hidden_dropout > 0 && *a.ffn_dropout_inner) b.dropout(p + a.ffn_dropout_inner, t, f / b.tp());
  b.linear_row(p + a.down, t, f, m.hidden, a.bias);
}

// The FFN of one layer on `t` tokens of a batch of `batch` sequences: the dense one, or routed
// experts where the layer is sparse. `count` is how many such layers the group has.
//  - top-k (Mixtral, Qwen3-MoE): router, softmax, top-k; every expert runs its SwiGLU on the
//    tokens routed to it (balanced routing: t * k / E each), gathered before, weighted and
//    scattered (index_add) after;
//  - capacity (Switch): router, softmax, argmax; every expert runs the MLP on a fixed buffer of
//    batch * expert_capacity tokens (as in the labels), gathered and scattered back, and the
//    outputs are scaled by the router probability.
void ffn(Builder& b, const ArchSpec& a, const ModelConfig& m, int64_t batch, int64_t t, bool sparse, int64_t count) {
  const int64_t h = m.hidden;
  if (!sparse) {
    if (a.ffn == FfnKind::kSwiGlu) gated_ffn(b, a.ffn_prefix, a, t, h, m.ffn, true);
    else mlp_ffn(b, a.ffn_prefix, a, m, t, m.ffn);
    return;
  }
  const MoeNames& n = a.moe;
  const int64_t e = m.num_experts;
  b.linear(n.router, t, h, e, false);
  b.softmax(n.router_softmax, t, e);
  if (n.kind == MoeKind::kTopK) {
    const int64_t k = m.experts_per_token;
    const int64_t per_expert = std::max<int64_t>(1, (t * k + e - 1) / e);
    b.mem(n.routing, kF32 * 4.0 * t * e, kF32 * 2.0 * t * e);
    b.set_count(count * e);
    b.mem(n.gather, 2 * kF32 * double(per_expert) * h, 2 * kF32 * double(per_expert) * h);
    gated_ffn(b, n.experts, a, per_expert, h, m.moe_ffn, false);
    b.eltwise(n.combine, OpKind::kMul, per_expert, h);
    b.mem(n.scatter, 3 * kF32 * double(per_expert) * h, 2 * kF32 * double(per_expert) * h);
    b.set_count(count);
    if (m.shared_expert_ffn > 0) {  // Qwen2-MoE: + sigmoid(gate(x)) * shared_expert(x)
      const std::string s = a.ffn_prefix;
      gated_ffn(b, s + "shared_expert.", a, t, h, m.shared_expert_ffn, false);
      b.linear(s + "shared_expert_gate", t, h, 1, false);
      b.eltwise(s + "shared_expert_sigmoid", OpKind::kGelu, t, 1);  // one transcendental per element
      b.eltwise(s + "shared_expert_mul", OpKind::kMul, t, h);
      b.eltwise(s + "shared_expert_add", OpKind::kAdd, t, h);
    }
  } else {
    const int64_t cap_tokens = batch * m.expert_capacity;
    b.mem(n.routing, kF32 * 6.0 * t * e, kF32 * 2.0 * t * e);
    b.set_count(count * e);
    b.mem(n.gather, 2 * kF32 * double(cap_tokens) * h, 2 * kF32 * double(cap_tokens) * h);
    mlp_ffn(b, n.experts, a, m, cap_tokens, m.ffn);
    b.mem(n.scatter, 2 * kF32 * double(cap_tokens) * h, 2 * kF32 * double(cap_tokens) * h);
    b.set_count(count);
    b.eltwise(n.combine, OpKind::kMul, t, h);
  }
}

// Soft-capping in eager PyTorch (Gemma 2's scores and logits): x / cap, tanh, x cap.
void soft_cap(Builder& b, const std::string& p, int64_t rows, int64_t cols) {
  b.eltwise(p + ".div", OpKind::kDivU, rows, cols);
  b.eltwise(p + ".tanh", OpKind::kTanh, rows, cols);
  b.eltwise(p + ".mul", OpKind::kMulU, rows, cols);
}

// One attention sub-layer, self or cross: q/k/v projections (fused or separate; GQA), per-head
// q/k norms, rotary positions, repeat_kv, score scaling, mask, softmax, probability dropout,
// context, head merge, output projection, dropout, residual add. Keys and values come from
// `kv_seq` tokens per sequence (the encoder's, for cross-attention).
void attention_layer(Builder& b, const AttnNames& s, ScaleKind scale, MaskKind mask, bool rotary, bool bias,
                     const ModelConfig& m, int64_t batch, int64_t seq, int64_t kv_seq) {
  const int64_t t = batch * seq, kv_t = batch * kv_seq, h = m.hidden, hd = m.head_dim;
  const int64_t heads = m.heads / b.tp(), kv = m.kv_heads / b.tp();
  const std::string p = s.prefix;
  if (*s.qkv) {  // GPT-2's c_attn (3 h), Phi-3's qkv_proj (GQA)
    b.linear_col(s.qkv, t, h, (m.heads + 2 * m.kv_heads) * hd, bias || m.qkv_bias);
  } else {
    const bool qkv_bias = bias || m.qkv_bias;
    b.linear_col(s.q, t, h, m.heads * hd, qkv_bias);
    b.linear_col(s.k, kv_t, h, m.kv_heads * hd, qkv_bias);
    b.linear_col(s.v, kv_t, h, m.kv_heads * hd, qkv_bias);
  }
  if (m.qk_norm) {
    b.layernorm(p + "q_norm", t * heads, hd);
    b.layernorm(p + "k_norm", kv_t * kv, hd);
  }
  if (rotary) {
    rotary_embedding(b, p + "rotary_q", t, heads, hd);
    rotary_embedding(b, p + "rotary_k", kv_t, kv, hd);
  }
  if (kv < heads) {  // repeat_kv: expand + reshape copies k and v to every query head
    const double bytes = 2 * kF32 * double(kv_t) * heads * hd;
    b.mem(p + "repeat_kv", 2 * bytes, 2 * bytes);
  }
  if (scale == ScaleKind::kMulQuery) b.eltwise(p + "q_scale", OpKind::kMulU, t, heads * hd);
  const int64_t bh = batch * heads, rows = bh * seq;
  b.bmm(p + "scores", bh, seq, hd, kv_seq);
  if (scale == ScaleKind::kDivScores || scale == ScaleKind::kMulScores)
    b.eltwise(p + "scale", scale == ScaleKind::kDivScores ? OpKind::kDivU : OpKind::kMulU, rows, kv_seq);
  if (m.attn_softcap > 0) soft_cap(b, p + "softcap", rows, kv_seq);
  switch (mask) {
    case MaskKind::kNone: break;
    case MaskKind::kCausalWhere:  // torch.where(causal_mask, w, -inf): reads the bool mask and w, writes w
      b.mem(p + "causal_mask", 2 * kF32 * double(rows) * kv_seq + double(seq) * kv_seq, 2 * kF32 * double(rows) * kv_seq);
      break;
    case MaskKind::kPaddingAdd: b.eltwise(p + "mask_add", OpKind::kAddU, rows, kv_seq); break;
    case MaskKind::kCausalAddMax:  // mask add, then clamp to finfo.min (torch.max)
      b.eltwise(p + "mask_add", OpKind::kAdd, rows, kv_seq);
      b.eltwise(p + "mask_max", OpKind::kAddU, rows, kv_seq).unnamed_by_neusight = true;  // NeuSight: max_1, misc
      break;
    case MaskKind::kCausalAdd: b.eltwise(p + "causal_mask", OpKind::kAdd, rows, kv_seq); break;
    case MaskKind::kPositionBias: b.eltwise(p + "position_bias", OpKind::kAdd, rows, kv_seq); break;  // T5
  }
  b.softmax(p + "softmax", rows, kv_seq);
  if (m.attention_dropout > 0) b.dropout(p + s.prob_dropout, rows, kv_seq);
  b.bmm(p + "context", bh, seq, kv_seq, hd);
  const double t_q = double(t) * heads * hd;
  b.mem(p + "merge_heads", 2 * kF32 * t_q, 2 * kF32 * t_q);  // permute(...).contiguous()
  b.linear_row(s.out_proj, t, m.heads * hd, h, bias);
  if (m.hidden_dropout > 0 && *s.out_dropout) b.dropout(s.out_dropout, t, h);
  if (*s.post_norm) b.layernorm(s.post_norm, t, h);
  b.eltwise(s.residual, OpKind::kAdd, t, h, true);
}

// T5's position bias (T5Attention.compute_bias), built once per stack by its first layer and
// added to the scores of every layer: the bucketed (seq, seq, heads) gather, then `position_bias
// + mask`, which broadcasts it over the batch (the padding mask; the decoder's causal one). In
// training the one bias tensor all `layers` layers add gets the sum of their score gradients,
// which autograd adds as they arrive (layers - 1 kernels), then sums over the batch and
// scatters into the bucket table. A decoder's cross-attention adds a bias of its own in every
// layer: zeros (no relative bias, no gradient) plus the encoder's mask.
void t5_position_bias(Builder& b, const ModelConfig& m, int64_t batch, int64_t seq, int64_t layers, bool decoder) {
  const int64_t heads = m.heads / b.tp(), rows = batch * heads * seq;
  const double bias_bytes = kF32 * double(heads) * seq * seq;
  // Backward: the batch sum (reads batch x bias, writes bias), the gather's scatter (reads the
  // gradient and the int64 bucket of every (query, key) pair).
  b.mem("relative_position_bias", 2 * bias_bytes, double(batch + 2) * bias_bytes + 8.0 * seq * seq);
  GraphOp& mask = b.eltwise("position_bias_mask", OpKind::kAdd, rows, seq);
  if (b.training())
    for (int64_t i = 1; i < layers; ++i) mask.bw.push_back(KernelCall::kernel(vec_q(OpKind::kAdd, rows, seq)));
  if (!decoder) return;
  b.mem("cross_position_bias", bias_bytes, 0);  // torch.zeros
  b.eltwise("cross_position_bias_mask", OpKind::kAdd, rows, seq);
}

// One stack of layers ("" for decoder-only and encoder-only models, "encoder"/"decoder" for
// encoder-decoder ones): its embeddings, its layers (dense ones first, then the sparse ones of
// an every-n-th MoE), its final norm.
void build_stack(Builder& b, const ArchSpec& a, const ModelConfig& m, int64_t batch, int64_t seq,
                 const std::string& stack) {
  const int64_t t = batch * seq, h = m.hidden;
  const int64_t e = embed_width(m);
  const bool hidden_dropout = m.hidden_dropout > 0, decoder = stack == "decoder";
  const std::string sp = stack.empty() ? "" : stack + ".";
  // Embeddings.
  b.set_count(1);
  b.set_prefix(a.model);
  b.embedding(a.tokens + stack, t, m.vocab, e);
  b.vocab_parallel_reduce(t, e);
  if (e != h) b.linear("project_in", t, e, h, false);
  int adds = 0;
  if (a.token_types) b.embedding(a.types, t, 2, h), ++adds;
  if (a.pos == PosKind::kTable) {
    b.embedding(a.positions, seq, m.max_positions, h), ++adds;
  } else if (a.pos == PosKind::kOptOffset) {
    b.mem("positions", 3 * 8.0 * t, 0);  // attention-mask cumsum -> position ids
    b.embedding(a.positions, t, m.max_positions + 2, h), ++adds;
  }
  for (int i = 0; i < adds; ++i) b.eltwise(i == 0 ? "embed_add" : "embed_add_" + std::to_string(i), OpKind::kAdd, t, h);
  if (m.embed_scale) b.eltwise("embed_scale", OpKind::kMulU, t, h);  // Gemma: x sqrt(hidden)
  if (*a.embed_norm) b.layernorm(a.embed_norm, t, h);
  if (hidden_dropout && *a.embed_dropout) b.dropout(a.embed_dropout, t, h);
  // Layers: every `step`-th one routed when the config has experts (step 0: all of them).
  const int64_t layers = decoder ? m.decoder_layers : m.layers;
  if (a.pos == PosKind::kRelativeBias) {
    b.set_prefix(a.model + sp);
    t5_position_bias(b, m, batch, seq, layers, decoder);
  }
  const int64_t step = decoder ? m.decoder_sparse_step : m.encoder_sparse_step;
  const int64_t sparse = m.num_experts == 0 ? 0 : step > 0 ? layers / step : moe_layers(m);
  for (const bool is_sparse : {false, true}) {
    const int64_t count = is_sparse ? sparse : layers - sparse;
    if (count == 0) continue;
    b.set_count(count);
    b.set_prefix(sp + (is_sparse ? a.sparse_layers : a.layers));
    const bool rotary = a.pos == PosKind::kRotary;
    if (a.pre_norm) b.layernorm(a.self_attn.norm, t, h);
    attention_layer(b, a.self_attn, a.scale, a.mask, rotary, a.bias, m, batch, seq, seq);
    if (!a.pre_norm) b.layernorm(a.self_attn.norm, t, h);
    if (decoder) {  // cross-attention over the encoder's tokens (T5: plus its zero bias and mask)
      b.layernorm(a.cross_attn.norm, t, h);
      const MaskKind cross = a.mask == MaskKind::kPositionBias ? MaskKind::kPositionBias : MaskKind::kNone;
      attention_layer(b, a.cross_attn, a.scale, cross, rotary, a.bias, m, batch, seq, seq);
    }
    if (a.pre_norm) b.layernorm(a.ffn_norm, t, h);
    ffn(b, a, m, batch, t, is_sparse, count);
    if (*a.ffn_post_norm) b.layernorm(a.ffn_post_norm, t, h);
    if (hidden_dropout && *a.ffn_dropout) b.dropout(a.ffn_dropout, t, h);
    b.eltwise(a.residual_2, OpKind::kAdd, t, h, true);
    if (!a.pre_norm) b.layernorm(a.ffn_norm, t, h);
  }
  b.set_count(1);
  b.set_prefix(a.model + sp);
  if (*a.final_norm && m.final_layer_norm) b.layernorm(a.final_norm, t, h);
}

void build_transformer(Builder& b, const ArchSpec& a, const ModelConfig& m, int64_t batch, int64_t seq) {
  const int64_t t = batch * seq, h = m.hidden;
  const int64_t e = embed_width(m);
  if (a.encoder_decoder) {
    build_stack(b, a, m, batch, seq, "encoder");
    build_stack(b, a, m, batch, seq, "decoder");
  } else {
    build_stack(b, a, m, batch, seq, "");
  }
  // Head.
  b.set_prefix("");
  if (e != h) b.linear("project_out", t, h, e, false);
  if (a.head == HeadKind::kLmHead) {
    b.linear_col("lm_head", t, e, m.vocab, false);  // weight tied to the token embedding
    if (m.final_softcap > 0) soft_cap(b, "lm_head.softcap", t, m.vocab / b.tp());
  } else if (a.head == HeadKind::kScaledLmHead) {
    b.eltwise("lm_head.scale", OpKind::kMulU, t, h);  // tied embedding: scale by d_model^-0.5
    b.linear("lm_head", t, h, m.vocab, false);
  } else if (b.training()) {
    // BertForPreTraining heads: masked-LM transform + decoder, next-sentence pooler.
    b.linear("cls.predictions.transform.dense", t, h, h);
    b.eltwise("cls.predictions.transform.gelu", OpKind::kGelu, t, h);
    b.layernorm("cls.predictions.transform.layer_norm", t, h);
    b.linear("cls.predictions.decoder", t, h, m.vocab);
    b.mem("pooler.first_token", 2 * kF32 * double(batch) * h, 2 * kF32 * double(batch) * h);
    b.linear("pooler.dense", batch, h, h);
    b.eltwise("pooler.tanh", OpKind::kTanh, batch, h);
    b.linear("cls.seq_relationship", batch, h, 2);
  } else {
    // BertForSequenceClassification: pooler + 2-way classifier.
    b.mem("pooler.first_token", 2 * kF32 * double(batch) * h, 0);
    b.linear("pooler.dense", batch, h, h);
    b.eltwise("pooler.tanh", OpKind::kTanh, batch, h);
    b.linear("classifier", batch, h, 2);
  }
}

// --batch in [1, 65536], --seq in [1, 2^max_seq_log2] and within m's positions; ConfigError
// naming the flag otherwise.
void check_batch_and_seq(const ModelConfig& m, int64_t batch, int64_t seq, int max_seq_log2) {
  if (batch < 1 || batch > 65536) throw ConfigError("--batch: " + std::to_string(batch) + " out of range [1, 65536]");
  if (seq < 1 || seq > (int64_t{1} << max_seq_log2))
    throw ConfigError("--seq: " + std::to_string(seq) + " out of range [1, 2^" + std::to_string(max_seq_log2) + "]");
  if (m.max_positions > 0 && seq > m.max_positions)
    throw ConfigError("--seq: " + std::to_string(seq) + " exceeds " + m.name + "'s " + std::to_string(m.max_positions) +
                      " positions");
}

}  // namespace

OpGraph build_op_graph(const ModelConfig& m, int64_t batch, int64_t seq, Mode mode,
                       const Parallelism& par) {
  check_batch_and_seq(m, batch, seq, 20);
  for (int64_t v : {par.dp, par.tp, par.pp, par.microbatches})
    if (v < 1 || v > 4096) throw ConfigError("--dp/--tp/--pp/--microbatches: " + std::to_string(v) + " out of range [1, 4096]");
  if (batch % (par.dp * par.microbatches) != 0)
    throw ConfigError("--batch " + std::to_string(batch) + " is not divisible by dp x microbatches = " +
                      std::to_string(par.dp * par.microbatches));
  if (par.zero != 0 || par.sequence_parallel || par.ep != 1 || par.cp != 1 || par.vpp != 1)
    throw ConfigError(std::string(par.zero != 0 ? "--zero"
                                  : par.ep != 1 ? "--ep"
                                  : par.cp != 1 ? "--cp"
                                  : par.vpp != 1 ? "--vpp"
                                                 : "--sequence-parallel") +
                      " applies to mixed-precision training (--mode training --dtype bf16|fp16|fp8)" +
                      (par.ep != 1 ? " and serving (--mode prefill|decode|generate)" : "") + ", not to --mode " +
                      mode_name(mode) + " in fp32 (eager PyTorch)");
  const ArchSpec* arch = find_arch(m.model_type);
  if (!arch) throw ConfigError("unsupported model_type '" + m.model_type + "'");
  if (arch->no_eager)
    throw ConfigError("--mode " + std::string(mode_name(mode)) + " (eager FP32) of " + m.name + " (" + m.model_type +
                      "): " + arch->no_eager + "; use --mode prefill|decode|generate, or --mode training --dtype "
                      "bf16|fp16|fp8");
  if (par.tp > 1 && (arch->encoder_decoder || m.heads % par.tp != 0 || m.ffn % par.tp != 0 ||
                     m.kv_heads % par.tp != 0 || m.num_experts > 0))
    throw ConfigError("--tp " + std::to_string(par.tp) + ": " + m.name +
                      (arch->encoder_decoder || m.num_experts > 0
                           ? " (tensor parallelism of " + m.model_type + " is not modelled yet)"
                           : ": heads, key/value heads and FFN width must be divisible by it"));
  if (par.pp > m.layers) throw ConfigError("--pp " + std::to_string(par.pp) + " exceeds the " + std::to_string(m.layers) + " layers");
  // Megatron-LM's uniform split: every stage holds layers / pp layers (it asserts divisibility).
  if (m.layers % par.pp != 0)
    throw ConfigError("--pp " + std::to_string(par.pp) + ": " + m.name + "'s " + std::to_string(m.layers) +
                      " layers do not split evenly into " + std::to_string(par.pp) +
                      " stages (Megatron-LM needs num_layers divisible by the pipeline size)");
  if (arch->encoder_decoder && par.pp > 1)
    throw ConfigError("--pp: pipeline parallelism of " + m.model_type + " is not modelled");
  if (m.dense_layers > 0 && par.pp > 1)  // the stages' split of the two kinds is not tracked
    throw ConfigError("--pp: pipeline parallelism of the eager graph of " + m.name +
                      ", whose dense and MoE layers differ, is not modelled");
  OpGraph g;
  g.model = m.name;
  g.batch = batch;
  g.seq = seq;
  g.mode = mode;
  g.par = par;
  g.micro_batch = batch / (par.dp * par.microbatches);
  g.layers = m.layers;
  g.hidden = m.hidden;
  g.pipeline_send_bytes = par.pp > 1 ? 4.0 * double(g.micro_batch) * double(seq) * double(m.hidden) : 0;
  g.parameters = model_parameters(m);
  Builder b(g);
  const int64_t mb = g.micro_batch;
  build_transformer(b, *arch, m, mb, seq);
  // Training: gradients of tied weights (GPT-2/OPT lm_head = wte) accumulate twice; the
  // second AccumulateGrad is already on the lm_head Linear, whose own weight is that table.
  return g;
}

double expected_experts_hit(int64_t tokens, int64_t k, int64_t e) {
  const double p_miss = std::pow(1.0 - double(k) / double(e), double(tokens));
  return std::max(1.0, double(e) * (1.0 - p_miss));
}

double rank_parameters(double parameters, double expert_parameters, const Parallelism& par, bool sharded) {
  const double replica = double(par.tp * par.pp), ep = double(par.ep), peers = double(par.dp * par.cp);
  return (parameters - expert_parameters) / (replica * (sharded ? peers : 1.0)) +
         expert_parameters / (replica * ep * (sharded ? peers / ep : 1.0));
}

std::string training_expert_parallel_error(const ModelConfig& m, const Parallelism& par) {
  const std::string flag = "--ep " + std::to_string(par.ep);
  if (par.ep < 1 || par.ep > 4096) return flag + ": out of range [1, 4096]";
  if (par.ep == 1) return "";
  if (m.num_experts == 0) return flag + ": " + m.name + " has no experts (expert parallelism is for MoE models)";
  if ((par.dp * par.cp) % par.ep != 0 || m.num_experts % par.ep != 0)
    return flag + ": must divide --dp (" + std::to_string(par.dp) + ")" +
           (par.cp > 1 ? " x --cp (" + std::to_string(par.cp) + ")" : "") + " and " + m.name + "'s " +
           std::to_string(m.num_experts) +
           " experts (training splits the experts over data-parallel ranks, as Megatron-Core's "
           "expert-model-parallel-size)";
  // Megatron-Core takes the ep ranks from the dp x cp ranks, cp first: an ep group within the
  // cp group, or whole cp groups; other splits are not modelled.
  if (par.cp > 1 && par.cp % par.ep != 0 && par.ep % par.cp != 0)
    return flag + " with --cp " + std::to_string(par.cp) +
           ": one must divide the other (an expert-parallel group within a context-parallel group, or "
           "whole context-parallel groups)";
  return "";
}

void check_training_expert_parallel(const ModelConfig& m, const Parallelism& par) {
  if (std::string e = training_expert_parallel_error(m, par); !e.empty()) throw ConfigError(e);
}

std::string training_context_parallel_error(const ModelConfig& m, int64_t seq, const Parallelism& par) {
  const std::string flag = "--cp " + std::to_string(par.cp);
  if (par.cp < 1 || par.cp > 4096) return flag + ": out of range [1, 4096]";
  if (par.cp == 1) return "";
  if (seq % (2 * par.cp) != 0)
    return flag + ": --seq " + std::to_string(seq) +
           " must be divisible by 2 x cp (Megatron-Core's load-balanced split gives each rank two chunks)";
  if (m.sliding_window > 0)
    return flag + ": context parallelism of a sliding-window model (" + m.name +
           (m.chunked_attention ? ", chunked attention" : "") + ") is not modelled";
  return "";
}

void check_training_context_parallel(const ModelConfig& m, int64_t seq, const Parallelism& par) {
  if (std::string e = training_context_parallel_error(m, seq, par); !e.empty()) throw ConfigError(e);
}

std::string virtual_pipeline_error(const ModelConfig& m, const Parallelism& par) {
  const std::string flag = "--vpp " + std::to_string(par.vpp);
  if (par.vpp < 1 || par.vpp > 4096) return flag + ": out of range [1, 4096]";
  if (par.vpp == 1) return "";
  if (par.pp < 2) return flag + ": the interleaved schedule needs --pp 2 or more";
  if (m.layers % (par.pp * par.vpp) != 0)
    return flag + ": " + m.name + "'s " + std::to_string(m.layers) + " layers do not split into pp x vpp = " +
           std::to_string(par.pp * par.vpp) + " equal model chunks";
  if (par.microbatches % par.pp != 0)
    return flag + ": --microbatches " + std::to_string(par.microbatches) + " must be a multiple of --pp " +
           std::to_string(par.pp) + " (Megatron-LM's interleaved schedule runs the microbatches in groups of pp)";
  return "";
}

void check_virtual_pipeline(const ModelConfig& m, const Parallelism& par) {
  if (std::string e = virtual_pipeline_error(m, par); !e.empty()) throw ConfigError(e);
}

PipelineInFlight pipeline_in_flight(const Parallelism& par) {
  const double p = double(par.pp), m = double(par.microbatches), v = double(par.vpp);
  if (par.vpp <= 1) return {std::min(p, m), std::min(p, m)};
  // Megatron-LM's warm-up on rank 0: 2 (pp - 1) + (vpp - 1) pp chunk forwards, then the first
  // steady forward, before any backward frees a chunk: pp microbatches through each chunk in
  // turn, then pp - 1 more through the first.
  const double chunks = std::min(p * v + p - 1, m * v);
  return {chunks / v, std::min(m, 2 * p - 1)};
}

void check_zero_stage(int zero) {
  if (zero < 0 || zero > 3) throw ConfigError("--zero: " + std::to_string(zero) + " out of range [0, 3]");
}

void check_pipeline_stages(int64_t layers, int64_t pp) {
  if (pp < 1 || pp > layers)
    throw ConfigError("--pp " + std::to_string(pp) + ": expected 1.." + std::to_string(layers) + " stages (the model's layers)");
}

std::vector<int64_t> pipeline_stage_layers(int64_t layers, int64_t pp) {
  check_pipeline_stages(layers, pp);
  std::vector<int64_t> stages(static_cast<size_t>(pp), layers / pp);
  const int64_t extra = layers % pp;
  for (int64_t i = 2; i < extra + 2; ++i) ++stages[static_cast<size_t>(pp - i)];
  return stages;
}

std::vector<std::string> graph_model_types() {
  std::vector<std::string> out;
  for (const auto& a : kArchTable) out.push_back(a.type);
  return out;
}

namespace {
// The FFN width a tp check names: the first of the expert (or dense) width, the shared experts'
// and a MoE model's dense layers' that tp does not split, else the expert (or dense) width.
int64_t tp_ffn_width(const ModelConfig& m, int64_t tp) {
  const int64_t ffn = m.num_experts > 0 ? m.moe_ffn : m.ffn;
  if (ffn % tp != 0) return ffn;
  if (m.shared_expert_ffn % tp != 0) return m.shared_expert_ffn;
  return m.dense_layers > 0 && m.ffn % tp != 0 ? m.ffn : ffn;  // a MoE model's dense layers
}

// The layout checks every serving graph makes (tp, ep, routing, dtype); the activation dtype.
DType check_serving_layout(const ModelConfig& m, Mode phase, DType dtype, int64_t tp, int64_t ep, double routing_alpha,
                           bool dp_attention, bool moe_all_to_all) {
  require_serving_family(m, "--mode " + std::string(mode_name(phase)));
  if (tp < 1 || tp > 4096) throw ConfigError("--tp: " + std::to_string(tp) + " out of range [1, 4096]");
  if (dp_attention && tp < 2)
    throw ConfigError("--dp-attention needs --tp 2 or more (the ranks that split the sequences' attention)");
  // DP attention keeps every head on every rank: only the FFN splits over tp.
  const int64_t atp = attention_tp(tp, dp_attention);
  if (const int64_t ffn = tp_ffn_width(m, tp); m.heads % atp != 0 || ffn % tp != 0)
    throw ConfigError("--tp " + std::to_string(tp) + ": " + m.name + "'s " +
                      (atp > 1 ? std::to_string(m.heads) + " heads and " : std::string()) + "FFN width " +
                      std::to_string(ffn) + " must be divisible by it");
  serving_kv_heads_per_rank(m, atp);  // throws where tp splits the KV heads neither way
  if (ep != 1) {
    if (m.num_experts == 0)
      throw ConfigError("--ep " + std::to_string(ep) + ": " + m.name + " has no experts (expert parallelism is for MoE models)");
    if (ep < 1 || tp % ep != 0 || m.num_experts % ep != 0)
      throw ConfigError("--ep " + std::to_string(ep) + ": must divide --tp (" + std::to_string(tp) + ") and " + m.name +
                        "'s " + std::to_string(m.num_experts) + " experts");
  }
  if (moe_all_to_all) {
    if (m.num_experts == 0)
      throw ConfigError("--moe-a2a deepep: " + m.name + " has no experts (DeepEP dispatches tokens to MoE experts)");
    if (!dp_attention)
      throw ConfigError("--moe-a2a deepep is modelled with --dp-attention (each rank dispatching its own sequences' "
                        "tokens, as SGLang runs DeepEP)");
    if (ep != tp)
      throw ConfigError("--moe-a2a deepep needs --ep equal to --tp (" + std::to_string(tp) +
                        "): DeepEP spreads the experts over every rank");
  }
  if (!valid_routing(routing_alpha))
    throw ConfigError("--routing: power-law exponent " + g_text(routing_alpha) + " out of range [0, 10]");
  if (routing_alpha > 0 && m.num_experts == 0)
    throw ConfigError("--routing " + routing_name(routing_alpha) + ": " + m.name + " has no experts");
  const DType act = activation_dtype(dtype);  // activations
  if (act == DType::kTf32) throw ConfigError("--dtype tf32: serving runs in fp32, fp16, bf16 or fp8");
  return act;
}

// The attention kernels of query `q` in a layer with the model's local attention (`local`) or in
// a full-attention one: q without a window; q over the sliding window; or, with chunked
// attention (Llama 4's), q within aligned chunks of `sliding_window` tokens as vLLM runs it, each
// chunk its own causal sequence: a prompt (or a chunk of it after a cached prefix) cut at the
// chunk boundaries into its first piece (after the part of its chunk already cached), its whole
// chunks and its last piece; a decode over the tokens of its own chunk.
std::vector<KernelQuery> layer_attention(const KernelQuery& q, const ModelConfig& m, bool local) {
  KernelQuery w = q;
  w.window = local && !m.chunked_attention ? m.sliding_window : 0;
  if (!local || !m.chunked_attention) return {w};
  const int64_t c = m.sliding_window;
  if (q.op == OpKind::kAttnDecode) {
    w.ctx = (q.ctx - 1) % c + 1;
    return {w};
  }
  std::vector<KernelQuery> out;
  const int64_t first_end = std::min(q.prefix + q.m, (q.prefix / c + 1) * c);
  const int64_t first = first_end - q.prefix, rest = q.m - first;
  out.push_back(attention_chunk_q(q.b, first, q.prefix % c, q.k, q.h, q.n, q.dtype, q.kv_dtype));
  if (rest / c > 0) out.push_back(attention_prefill_q(q.b * (rest / c), c, q.k, q.h, q.n, q.dtype, q.kv_dtype));
  if (rest % c > 0) out.push_back(attention_prefill_q(q.b, rest % c, q.k, q.h, q.n, q.dtype, q.kv_dtype));
  return out;
}

// A layer's attention op: one in every layer, or with per-layer windows two, `name`.sliding (or
// `name`.chunked) in the layers with local attention and `name` in the full-attention ones, each
// run in its share of the layers (GraphOp::layer_subset). `fill(op, local)` adds the op's calls
// (layer_attention).
template <class Fill>
void attention_ops(Builder& b, const ModelConfig& m, const std::string& name, Fill fill) {
  const int64_t windowed = windowed_layers(m);
  if (windowed == 0 || windowed == m.layers) {
    fill(b.op(name, "attention"), windowed > 0);
    return;
  }
  b.set_layer_subset(windowed);
  fill(b.op(name + (m.chunked_attention ? ".chunked" : ".sliding"), "attention"), true);  // before the next
  b.set_layer_subset(m.layers - windowed);                                                   // op moves the ops
  fill(b.op(name, "attention"), false);
  b.set_count(m.layers);
}

// A layer's rotary embedding and the q/k norms that go with it (`fill` adds them): in every
// layer, or in a chunked-attention model (Llama 4) in its RoPE layers only, its chunked ones: the
// NoPE layers, which attend in full, neither rotate q and k nor L2-normalise them (HF's and
// vLLM's Llama4 attention build the qk norm only where use_rope).
template <class Fill>
void rope_ops(Builder& b, const ModelConfig& m, Fill fill) {
  const int64_t rope_layers = m.chunked_attention ? windowed_layers(m) : m.layers;
  if (rope_layers == m.layers) return fill();
  if (rope_layers == 0) return;
  b.set_layer_subset(rope_layers);
  fill();
  b.set_count(m.layers);
}

// A serving GEMM in the model's GEMM dtype, into `o`'s forward. A static FP8 scale's GEMM
// (fp8_static) takes its activation in FP8 (the kernel data time it so: activation_quant_bytes,
// core/kernel.cpp), cast from BF16 before it by a kernel of its own, as SGLang's FP8 linear runs
// its static per-tensor quantisation (vLLM can fuse it into the RMSNorm before): that cast
// (kFp8CastBytesPerValue: 3 bytes a value), then the GEMM. The cast is a streaming kernel of its own,
// costed as the memory_op family's residual add over the same bytes (eager_pass_q), so it pays
// a kernel's floor: the L40S's dynamic FP8 GEMMs, whose per-token quantisation is such a
// kernel, take 1.6-1.9 us more than its static ones up to 32 tokens (check 2 of
// scripts/llm-data-checks.py), far more than those tokens' bytes at DRAM bandwidth.
void serving_gemm(GraphOp& o, int64_t rows, int64_t in, int64_t out, DType dtype) {
  const KernelQuery q = gemm_q(rows, in, out, dtype);
  if (dtype == DType::kFp8Static)
    o.fw.push_back(KernelCall::kernel(eager_pass_q(rows, in, kFp8CastBytesPerValue, DType::kBf16)));
  o.fw.push_back(KernelCall::kernel(q));
}

// A layer's FFN: the dense one, the routed experts, or (a MoE model with dense layers: DeepSeek's
// leading ones, Qwen-MoE's mlp_only_layers) both, each in its share of the layers
// (GraphOp::layer_subset).
template <class Dense, class Moe>
void ffn_ops(Builder& b, const ModelConfig& m, Dense dense, Moe moe) {
  if (m.num_experts == 0) return dense();
  if (m.dense_layers == 0) return moe();
  b.set_layer_subset(m.dense_layers);
  dense();
  b.set_layer_subset(moe_layers(m));
  moe();
  b.set_count(m.layers);
}

// DeepSeek's multi-head latent attention as SGLang runs it, on one rank of the tp group (heads
// split, the latent projections replicated), up to the output projection: the queries through
// their latent (or one q_proj), the keys' latent and rotary key, their norms, the rotation of
// each head's rotary part and the shared key's, the latent cache write; prompt chunks in the MHA
// form (every cached and new token's latent up-projected to each head's key and value by
// kv_b_proj, then FlashAttention at the query/key width head_dim, the value width counted by the
// FLOPs' share (head_dim + v_head_dim) / (2 head_dim)); decodes absorbed (each head's query into
// the latent by w_kc, MLA decode over the latent cache, back to the value width by w_vc; the
// two per-head products, a bmm over the heads, each costed as one GEMM of its FLOPs and weights
// with every head's outputs as its columns, so that its tiles are the bmm's grid (heads x one
// head's tiles); its input is one head's, which understates the activations read by the other
// heads'). `attention`: the step's attention queries as the builders make them.
void mla_serving_attention(Builder& b, const ModelConfig& m, int64_t t, int64_t tp, DType dtype, DType kv_dtype,
                           const std::vector<KernelQuery>& attention) {
  const DType act = activation_dtype(dtype);
  const int64_t h = m.hidden, heads = m.heads / tp, hd = m.head_dim, rope = m.qk_rope_dim, nope = hd - rope;
  const int64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, vd = value_head_dim(m);
  auto kernel = [&](const std::string& name, const std::string& kind, const KernelQuery& q) {
    b.op(name, kind).fw.push_back(KernelCall::kernel(q));
  };
  auto gemm = [&](const std::string& name, int64_t rows, int64_t in, int64_t out) {
    serving_gemm(b.op(name, "gemm"), rows, in, out, dtype);
  };
  if (ql > 0) {
    gemm("self_attn.fused_qkv_a_proj_with_mqa", t, h, ql + kvl + rope);
    kernel("self_attn.q_a_layernorm", "memory_op", vec_q(OpKind::kRmsNorm, t, ql, act));
    gemm("self_attn.q_b_proj", t, ql, heads * hd);
  } else {
    gemm("self_attn.q_proj", t, h, heads * hd);
    gemm("self_attn.kv_a_proj_with_mqa", t, h, kvl + rope);
  }
  kernel("self_attn.kv_a_layernorm", "memory_op", vec_q(OpKind::kRmsNorm, t, kvl, act));
  kernel("self_attn.rotary_emb", "memory_op", vec_q(OpKind::kRope, t, (heads + 1) * rope, act));
  b.op("self_attn.kv_cache_write", "memory").fw.push_back(
      KernelCall::mem(2.0 * double(t) * double(kvl + rope) * dtype_size(kv_dtype)));
  int64_t kv_tokens = 0, decodes = 0;
  for (const KernelQuery& q : attention) {
    if (q.op == OpKind::kAttnPrefill) kv_tokens += q.b * (q.m + q.prefix);
    else decodes += q.b;
  }
  if (kv_tokens > 0) gemm("self_attn.kv_b_proj", kv_tokens, kvl, heads * (nope + vd));
  if (decodes > 0) gemm("self_attn.w_kc", decodes, nope, kvl * heads);
  GraphOp& attn = b.op("self_attn.attn", "attention");
  for (const KernelQuery& q : attention)
    attn.fw.push_back(q.op == OpKind::kAttnPrefill
                          ? KernelCall::kernel_scaled(q, attention_value_share(m))
                          : KernelCall::mla_decode(attention_decode_q(q.b, q.ctx, heads, 1, kvl + rope, q.dtype,
                                                                      q.kv_dtype),
                                                   kvl));
  // Not one GEMM of reduction kvl x heads and vd columns: that is one or two CTAs down a
  // reduction of up to 65,536 (DeepSeek-V3 under DP attention), 0.114 ms on an H200 against
  // 0.015 ms for the bmm's grid (docs/model-graphs.md).
  if (decodes > 0) gemm("self_attn.w_vc", decodes, kvl, heads * vd);
}

// A serving MoE layer's fused experts kernel over the group's `t` tokens: each expert's FFN split
// `moe_tp` ways, the experts over `ep` ranks, in the graph's expert dtype and routing; int4
// experts at the checkpoint's own scale groups (Kimi-K2-Thinking's 32) read those scales.
KernelQuery serving_experts_q(const ModelConfig& m, const OpGraph& g, int64_t t, int64_t moe_tp, int64_t ep) {
  KernelQuery q = moe_q(t, m.hidden, m.moe_ffn, m.experts_per_token, m.num_experts, moe_tp, ep, *g.expert_dtype,
                        g.routing_alpha);
  if (q.dtype == DType::kInt4) set_weight_group(q, m.expert_group_size);
  return q;
}

// A serving MoE layer's shared experts (vLLM's Qwen2-MoE, SGLang's DeepSeek) over `rows` tokens,
// their gated FFN split `split` ways; Qwen2-MoE's 1-wide gate and sigmoid(gate) x shared + routed
// costed as a residual add of the two outputs (DeepSeek's sum is inside the routed kernel's
// combine). Nothing for a model without them.
void serving_shared_experts(Builder& b, const ModelConfig& m, int64_t rows, int64_t split, DType dtype, DType act) {
  const int64_t s = m.shared_expert_ffn, h = m.hidden;
  if (s == 0) return;
  auto kernel = [&](const std::string& name, const std::string& kind, const KernelQuery& q) {
    b.op(name, kind).fw.push_back(KernelCall::kernel(q));
  };
  serving_gemm(b.op("mlp.shared_expert.gate_up_proj", "gemm"), rows, h, 2 * s / split, dtype);
  kernel("mlp.shared_expert.act_fn", "memory_op", vec_q(OpKind::kSiluMul, rows, s / split, act));
  serving_gemm(b.op("mlp.shared_expert.down_proj", "gemm"), rows, s / split, h, dtype);
  if (m.shared_expert_gate) {
    kernel("mlp.shared_expert_gate", "gemm", gemm_q(rows, h, 1, act));
    kernel("mlp.shared_expert_combine", "memory_op", vec_q(OpKind::kResidualAdd, rows, h, act));
  }
}

// A MoE layer under DeepEP (Parallelism::moe_all_to_all), on the busiest rank: the router and
// the shared experts (whole on every rank, SGLang's under DeepEP) on its `ta` own tokens; the
// dispatch of their copies to the ranks holding their experts; the rank's E / ep experts over
// what the group's `t` tokens route to them, the kernel the tp-split layout runs with ep = tp
// but dispatched (no pass over other ranks' pairs: moe_other_rank_bytes); the combine of the
// experts' outputs back to their tokens' ranks. No all-reduce.
void deepep_moe(Builder& b, const ModelConfig& m, const OpGraph& g, int64_t t, int64_t ta, int64_t ep, DType act) {
  b.op("mlp.gate", "gemm").fw.push_back(KernelCall::kernel(gemm_q(ta, m.hidden, m.num_experts, act)));
  serving_shared_experts(b, m, ta, 1, g.dtype, act);
  // SGLang runs DeepEP's low-latency kernels for decode batches and its normal ones otherwise;
  // both dispatch FP8 (a 4-byte scale per 128 values) to FP8 experts, and combine in the
  // activation dtype.
  const bool low_latency = g.mode == Mode::kDecode;
  const double e = dtype_size(act), values = double(ta) * double(m.hidden);  // one copy of the rank's tokens
  const double dispatch_elem = is_fp8(*g.expert_dtype) ? 1.0 + 4.0 / 128.0 : e;
  auto exchange = [&](const std::string& name, double bytes) {
    b.op(name, "communication").fw.push_back(KernelCall::deepep(bytes, ep, expert_routing(m), low_latency));
  };
  exchange("mlp.dispatch", values * dispatch_elem);
  KernelQuery experts = serving_experts_q(m, g, t, 1, ep);
  experts.moe_dispatched = true;  // the dispatch brought only the rank's own pairs
  b.op("mlp.experts", "moe").fw.push_back(KernelCall::kernel(experts));
  exchange("mlp.combine", values * e);
}

// One forward pass of a serving engine on one rank of the tp group: `t` tokens through the
// embedding, every layer and the final norm, the attention kernels `attention` (the model's
// head layout per rank, without a window: layer_attention gives each layer its own) and the LM
// head over `logits_rows` tokens. g's identity fields are the caller's.
// `dp_attention` (Parallelism::dp_attention): the rank's own `ta` tokens through the embedding,
// the norms and the attention block with every head (attention_tp 1, no all-reduce after
// o_proj); the FFN over all `t` tokens, its all-reduce standing for the all-gather before it
// and the reduce-scatter after it (together an all-reduce's traffic, as sequence parallelism
// counts them). Without it, ta = t.
// `moe_all_to_all`: each MoE layer as deepep_moe builds it.
void add_serving_layers(OpGraph& g, const ModelConfig& m, int64_t t, int64_t logits_rows, DType dtype, DType kv_dtype,
                        int64_t tp, int64_t ep, const std::vector<KernelQuery>& attention, int64_t ta,
                        bool dp_attention, bool moe_all_to_all) {
  const DType act = activation_dtype(dtype);
  const int64_t atp = attention_tp(tp, dp_attention);
  const int64_t kv = serving_kv_heads_per_rank(m, atp);
  const int64_t h = m.hidden, hd = m.head_dim, heads = m.heads / atp;
  const double e = dtype_size(act);
  Builder b(g);
  auto kernel = [&](const std::string& name, const std::string& kind, const KernelQuery& q) {
    b.op(name, kind).fw.push_back(KernelCall::kernel(q));
  };
  auto gemm = [&](const std::string& name, int64_t rows, int64_t in, int64_t out) {
    serving_gemm(b.op(name, "gemm"), rows, in, out, dtype);
  };
  auto all_reduce = [&](int64_t rows) {  // row-parallel output summed over the tp group
    if (tp > 1) g.ops.back().fw.push_back(KernelCall::all_reduce(e * double(rows) * h, tp));
  };
  b.set_prefix("model.");
  b.op("embed_tokens", "memory").fw.push_back(KernelCall::mem(2 * e * double(ta) * h));
  if (m.embed_scale) b.op("embed_scale", "memory").fw.push_back(KernelCall::mem(2 * e * double(ta) * h));
  if (m.mtp_module) {
    // DeepSeek's MTP module (SGLang's DeepseekModelNextN): the next token's embedding and the
    // target's hidden state, each RMS-normalised, concatenated and projected back to the hidden
    // width by eh_proj, an unquantised linear layer on every rank.
    kernel("enorm", "memory_op", vec_q(OpKind::kRmsNorm, ta, h, act));
    kernel("hnorm", "memory_op", vec_q(OpKind::kRmsNorm, ta, h, act));
    kernel("eh_proj", "gemm", gemm_q(ta, 2 * h, h, act));
  }
  b.set_count(m.layers);
  b.set_prefix("model.layers.");
  // vLLM and SGLang add the residual inside the RMSNorm that follows it (fused_add_rms_norm:
  // one kernel reads the sublayer output and the residual stream, writes the sum and its norm),
  // so a step launches no residual adds: each layer's two norms and the final one take in the
  // residual before them, and the first layer's input norm, with no residual yet, is a plain
  // RMSNorm of the same (T, hidden). All are costed by the RMSNorm model of that query, which
  // is how the one measured fused kernel (vLLM's, the RTX 4090's `layernorm` rows) entered
  // its fit.
  kernel("input_layernorm", "memory_op", vec_q(OpKind::kRmsNorm, ta, h, act));
  if (is_mla(m)) {
    mla_serving_attention(b, m, ta, atp, dtype, kv_dtype, attention);
  } else {
    gemm("self_attn.qkv_proj", ta, h, (heads + 2 * kv) * hd);
    rope_ops(b, m, [&] {
      if (m.qk_norm) {
        kernel("self_attn.q_norm", "memory_op", vec_q(OpKind::kRmsNorm, ta * heads, hd, act));
        kernel("self_attn.k_norm", "memory_op", vec_q(OpKind::kRmsNorm, ta * kv, hd, act));
      }
      kernel("self_attn.rotary_emb", "memory_op", vec_q(OpKind::kRope, ta, (heads + kv) * hd, act));
    });
    // New keys and values into the paged cache (read + write, in the cache dtype).
    b.op("self_attn.kv_cache_write", "memory").fw.push_back(
        KernelCall::mem(2.0 * 2.0 * double(ta) * kv * hd * dtype_size(kv_dtype)));
    // The attention kernels take any soft-cap of the scores in their loop (FlashAttention's and
    // FlashInfer's softcap): costed as without it.
    attention_ops(b, m, "self_attn.attn", [&](GraphOp& op, bool local) {
      for (const KernelQuery& q : attention)
        for (const KernelQuery& piece : layer_attention(q, m, local)) op.fw.push_back(KernelCall::kernel(piece));
    });
  }
  gemm("self_attn.o_proj", ta, heads * value_head_dim(m), h);
  if (!dp_attention) all_reduce(t);
  // Sandwich norms (vLLM's Gemma 2): the attention output's own RMSNorm, then the pre-FFN one
  // fused with the residual add; after the FFN another plain one. DP attention: on the rank's
  // own tokens, before the gather.
  if (m.sandwich_norms) kernel("post_attention_layernorm", "memory_op", vec_q(OpKind::kRmsNorm, ta, h, act));
  kernel(m.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm", "memory_op",
         vec_q(OpKind::kRmsNorm, ta, h, act));
  ffn_ops(b, m, [&] {
    gemm("mlp.gate_up_proj", t, h, 2 * m.ffn / tp);
    // SiLU-mul, or Gemma's GELU(tanh)-mul: the same passes, costed by the SiLU-mul model.
    kernel("mlp.act_fn", "memory_op", vec_q(OpKind::kSiluMul, t, m.ffn / tp, act));
    gemm("mlp.down_proj", t, m.ffn / tp, h);
    all_reduce(t);
  }, [&] {
    // Router GEMM in the activation dtype, then one fused MoE kernel (top-k, grouped gate_up
    // GEMM, SiLU-mul, grouped down GEMM, weighted combine): the experts split over ep ranks of
    // the tp group and each expert's FFN over tp / ep (moe_tp), every rank taking all T tokens'
    // assignments to its experts (the most loaded rank's under skewed routing); the partial
    // outputs summed by the tp all-reduce.
    if (moe_all_to_all) {
      deepep_moe(b, m, g, t, ta, ep, act);
      return;
    }
    kernel("mlp.gate", "gemm", gemm_q(t, h, m.num_experts, act));
    kernel("mlp.experts", "moe", serving_experts_q(m, g, t, tp / ep, ep));
    // The shared experts split over tp as a dense FFN, their partial sums joining the routed
    // experts' before the one all-reduce.
    serving_shared_experts(b, m, t, tp, dtype, act);
    all_reduce(t);
  });
  if (m.sandwich_norms) kernel("post_feedforward_layernorm", "memory_op", vec_q(OpKind::kRmsNorm, ta, h, act));
  b.set_count(1);
  b.set_prefix("model.");
  kernel("norm", "memory_op", vec_q(OpKind::kRmsNorm, ta, h, act));
  b.set_prefix("");
  // Logits of each sequence's last token only, vocab-parallel; the gather of the shards costs
  // half an all-reduce of the FP32 logits. The head stays in the activation dtype under FP8,
  // NVFP4 or 4-bit experts (vLLM's and ModelOpt's quantised checkpoints leave lm_head
  // unquantised), as its table is counted in the memory forecast.
  kernel("lm_head", "gemm", gemm_q(logits_rows, h, (m.vocab + tp - 1) / tp, act));
  if (tp > 1) g.ops.back().fw.push_back(KernelCall::all_reduce(0.5 * 4.0 * double(logits_rows) * m.vocab, tp));
  if (m.final_softcap > 0) {
    // vLLM's logits soft-cap: logits / cap, tanh, x cap, three passes over the gathered logits.
    GraphOp& o = b.op("logits_softcap", "memory");
    for (int i = 0; i < 3; ++i) o.fw.push_back(KernelCall::mem(2 * e * double(logits_rows) * m.vocab));
  }
  // The sampler over the gathered FP32 logits (vLLM's: temperature, softmax, the draw), one
  // call a step on the whole vocabulary. DP attention (SGLang's default, without
  // --enable-dp-lm-head): the head runs vocab-parallel on every rank's last hidden states,
  // gathered, and each rank samples its own sequences' rows.
  kernel("sampler", "memory_op",
         vec_q(OpKind::kSampler, attention_share(logits_rows, tp, dp_attention), m.vocab, DType::kFp32));
}

// ---- Hugging Face transformers' eager decoder in BF16/FP16 (--hf-eager) --------------------
// One kernel eager PyTorch launches: its DRAM traffic per element of the tensor it runs over,
// `act` elements in the activation dtype plus `f32` bytes of FP32; `per_row`: over one value a
// row (an RMSNorm's variance and its reciprocal square root). Backward lists follow the
// autograd formulas (derivatives.yaml) of each forward kernel.
struct EagerPass {
  const char* what;
  double act;
  double f32;
  bool per_row = false;
};
using EagerPasses = std::vector<EagerPass>;

// LlamaRMSNorm: x.to(float32); variance = x.pow(2).mean(-1); x * rsqrt(variance + eps);
// weight * x.to(dtype).
const EagerPasses kEagerRmsNormFw = {
    {"to(float32)", 1, 4},      {"pow(2)", 0, 8},          {"mean(-1)", 0, 4},    {"+ eps", 0, 8, true},
    {"rsqrt", 0, 8, true},      {"x * rsqrt", 0, 8},       {"to(dtype)", 1, 4},   {"weight * x", 2, 0}};
const EagerPasses kEagerRmsNormBw = {
    {"weight * x: grad x", 2, 0},           {"weight * x: grad weight (product)", 3, 0},
    {"weight * x: grad weight (sum)", 1, 0}, {"to(dtype): to(float32)", 1, 4},
    {"x * rsqrt: grad x", 0, 8},            {"x * rsqrt: grad rsqrt (product)", 0, 12},
    {"x * rsqrt: grad rsqrt (sum)", 0, 4},  {"rsqrt: result.pow(3)", 0, 8, true},
    {"rsqrt: * grad", 0, 12, true},         {"rsqrt: * -0.5", 0, 8, true},
    {"mean: expand / H", 0, 4},             {"pow(2): x.pow(1)", 0, 8},
    {"pow(2): * 2", 0, 8},                  {"pow(2): * grad", 0, 12},
    {"x's two gradients summed", 0, 12},    {"to(float32): to(dtype)", 1, 4}};
// apply_rotary_pos_emb on q or k: x * cos + rotate_half(x) * sin, rotate_half = cat(-x2, x1)
// (cos and sin broadcast over the heads: per token, not counted). Backward: both products'
// gradients, the negation's (half), the two halves' slice_backward (zeros, then the half
// copied in), the three gradients of x summed (two adds).
const EagerPasses kEagerRopeFw = {{"x * cos", 2, 0}, {"-x2 (half)", 1, 0}, {"cat", 2, 0}, {"* sin", 2, 0}, {"+", 3, 0}};
const EagerPasses kEagerRopeBw = {{"* sin: grad", 2, 0},         {"-x2: grad (half)", 1, 0},
                                  {"x1: slice_backward", 2, 0},  {"x2: slice_backward", 2, 0},
                                  {"* cos: grad", 2, 0},         {"gradients summed", 3, 0},
                                  {"gradients summed", 3, 0}};
// act_fn(gate) * up (SiLU); backward: the product's two gradients and silu_backward.
const EagerPasses kEagerSiluMulFw = {{"silu(gate)", 2, 0}, {"* up", 3, 0}};
const EagerPasses kEagerSiluMulBw = {{"* up: grad gate", 3, 0}, {"* up: grad up", 3, 0}, {"silu_backward", 3, 0}};
// A copy in the activation dtype: the attention output's transpose(1, 2).contiguous() (its
// backward hands SDPA a strided gradient, no kernel); DynamicCache's torch.cat of the new keys,
// and of the new values, onto its empty cache (backward: views).
const EagerPasses kEagerCopy = {{"copy", 2, 0}};
const EagerPasses kEagerCacheCat = {{"cat(keys)", 2, 0}, {"cat(values)", 2, 0}};
// transformers' ForCausalLMLoss: logits.float(), cross_entropy (log_softmax, nll_loss of one
// value a row); backward: nll_loss's gradient (zeros, scattered), log_softmax's, to(dtype).
const EagerPasses kEagerLossFw = {{"logits.float()", 1, 4}, {"log_softmax", 0, 8}, {"nll_loss", 0, 8, true}};
const EagerPasses kEagerLossBw = {{"nll_loss: grad", 0, 4}, {"log_softmax: grad", 0, 12}, {"float(): to(dtype)", 1, 4}};

// check_hf_eager_model's decoder on `t` tokens, `attention` each layer's SDPA call, the LM head
// over `logits_rows` of them. Training (`backward`): every kernel's gradient kernels, the loss
// over every token's logits, each layer's forward again in its backward where `recompute`
// (transformers' gradient checkpointing). Inference: the first token sampled.
void add_hf_eager_layers(OpGraph& g, const ModelConfig& m, int64_t t, int64_t logits_rows, const KernelQuery& attention,
                         DType act, bool backward, bool recompute) {
  const ArchSpec& a = *find_arch(m.model_type);  // check_hf_eager_model
  const double e = dtype_size(act);
  const int64_t h = m.hidden, hd = m.head_dim, heads = m.heads, kv = m.kv_heads, f = m.ffn;
  Builder b(g);
  auto passes = [&](std::vector<KernelCall>& out, const EagerPasses& ps, int64_t rows, int64_t width) {
    for (const EagerPass& p : ps)
      out.push_back(KernelCall::kernel(eager_pass_q(rows, p.per_row ? 1 : width, p.act * e + p.f32, act)));
  };
  auto eager = [&](const std::string& name, int64_t rows, int64_t width, const EagerPasses& fw, const EagerPasses& bw) {
    GraphOp& o = b.op(name, "memory_op");
    passes(o.fw, fw, rows, width);
    if (backward) passes(o.bw, bw, rows, width);
  };
  auto rmsnorm = [&](const std::string& name, int64_t rows, int64_t width) {
    eager(name, rows, width, kEagerRmsNormFw, kEagerRmsNormBw);
  };
  auto gemm = [&](const std::string& name, int64_t rows, int64_t in, int64_t out) {
    GraphOp& o = b.op(name, "gemm");
    o.fw.push_back(KernelCall::kernel(gemm_q(rows, in, out, act)));
    if (!backward) return;
    o.bw.push_back(KernelCall::kernel(gemm_q(rows, out, in, act)));  // dx = dy W
    o.bw.push_back(KernelCall::kernel(gemm_q(out, rows, in, act)));  // dW = dy^T x
  };
  auto residual = [&](const std::string& name) {
    GraphOp& o = b.op(name, "memory_op");
    o.fw.push_back(KernelCall::kernel(vec_q(OpKind::kResidualAdd, t, h, act)));
    if (backward) o.bw.push_back(KernelCall::kernel(vec_q(OpKind::kResidualAdd, t, h, act)));  // the fork's sum
  };
  b.set_prefix(a.model);
  {
    GraphOp& o = b.op(a.tokens, "memory");
    o.fw.push_back(KernelCall::mem(2 * e * double(t) * h));
    if (backward) o.bw.push_back(KernelCall::mem(3 * e * double(t) * h));  // dy read, its rows' gradients updated
  }
  b.set_count(m.layers);
  b.set_prefix(a.layers);
  const size_t first_layer_op = g.ops.size();
  const AttnNames& s = a.self_attn;
  const std::string p = s.prefix;
  rmsnorm(s.norm, t, h);
  if (*s.qkv) {
    gemm(s.qkv, t, h, (heads + 2 * kv) * hd);
  } else {
    gemm(s.q, t, h, heads * hd);
    gemm(s.k, t, h, kv * hd);
    gemm(s.v, t, h, kv * hd);
  }
  if (m.qk_norm) {
    rmsnorm(p + "q_norm", t * heads, hd);
    rmsnorm(p + "k_norm", t * kv, hd);
  }
  eager(p + "rotary_q", t, heads * hd, kEagerRopeFw, kEagerRopeBw);
  eager(p + "rotary_k", t, kv * hd, kEagerRopeFw, kEagerRopeBw);
  // transformers' DynamicCache, which LlamaModel fills in training too unless gradient
  // checkpointing turns use_cache off: keys and values each concatenated onto the empty cache.
  if (!recompute) eager(p + "past_key_values.update", t, kv * hd, kEagerCacheCat, {});
  {
    GraphOp& o = b.op(p + "sdpa", "attention");
    o.fw.push_back(KernelCall::kernel(attention));
    if (backward) o.bw.push_back(KernelCall::kernel_scaled(attention, 2.5));  // as build_llm_training_graph's
  }
  eager(p + "attn_output.contiguous", t, heads * hd, kEagerCopy, {});
  gemm(s.out_proj, t, heads * hd, h);
  residual(s.residual);
  rmsnorm(a.ffn_norm, t, h);
  const std::string fp = a.ffn_prefix;
  if (*a.gate) {
    gemm(fp + a.gate, t, h, f);
    gemm(fp + a.up, t, h, f);
  } else {  // Phi-3's gate_up_proj, chunked into its halves (views)
    gemm(fp + a.up, t, h, 2 * f);
  }
  eager(fp + "act_fn", t, f, kEagerSiluMulFw, kEagerSiluMulBw);
  gemm(fp + a.down, t, f, h);
  residual(a.residual_2);
  if (recompute)
    for (size_t i = first_layer_op; i < g.ops.size(); ++i) {
      GraphOp& op = g.ops[i];
      op.bw.insert(op.bw.begin(), op.fw.begin(), op.fw.end());
    }
  b.set_count(1);
  b.set_prefix(a.model);
  rmsnorm(a.final_norm, t, h);
  b.set_prefix("");
  gemm("lm_head", logits_rows, h, m.vocab);
  if (backward)
    eager("loss", t, m.vocab, kEagerLossFw, kEagerLossBw);
  else
    b.op("sampler", "memory_op")
        .fw.push_back(KernelCall::kernel(vec_q(OpKind::kSampler, logits_rows, m.vocab, DType::kFp32)));
}

// The graph's account of the model's local attention (its outputs state it).
void set_attention_window(OpGraph& g, const ModelConfig& m) {
  g.sliding_window = m.sliding_window;
  g.window_layers = windowed_layers(m);
  g.chunked_window = m.chunked_attention && g.window_layers > 0;
}

// The fields every serving graph sets alike.
OpGraph serving_graph_of(const ModelConfig& m, Mode phase, DType dtype, DType kv_dtype, int64_t tp, int64_t ep,
                         double routing_alpha, bool dp_attention, bool moe_all_to_all) {
  OpGraph g;
  g.model = m.name;
  g.layers = m.layers;
  g.hidden = m.hidden;
  g.mode = phase;
  g.par.tp = tp;
  g.par.ep = ep;
  g.par.dp_attention = dp_attention;
  g.par.moe_all_to_all = moe_all_to_all;
  g.routing_alpha = routing_alpha;
  set_attention_window(g, m);
  g.parameters = model_parameters(m);
  g.dtype = dtype;
  g.kv_dtype = kv_dtype;
  const DType experts = serving_expert_dtype(m, dtype);  // validates a dense model's too
  if (m.num_experts > 0) g.expert_dtype = experts;
  return g;
}
}  // namespace

ExpertRouting expert_routing(const ModelConfig& m) {
  return {m.num_experts, m.experts_per_token, m.expert_groups, m.expert_groups_per_token};
}

double deepep_hit_probability(const ExpertRouting& r, int64_t ep, int64_t ranks) {
  const int64_t e = r.experts, k = r.topk, g = r.groups, tg = r.groups_per_token;
  TC_CHECK(e > 0 && ep >= 1 && e % ep == 0 && ranks >= 1 && ranks <= ep && g >= 1 && e % g == 0 && tg >= 1 &&
               tg <= g && k >= 1 && k <= tg * (e / g),
           "DeepEP routing of a MoE layout");
  const int64_t per_group = e / g, pool = tg * per_group, held = e / ep * ranks;
  // C(pool - s, k) / C(pool, k): the token's k experts of its groups' `pool` miss s of them.
  auto miss = [&](int64_t s) {
    double p = 1;
    for (int64_t i = 0; i < k; ++i) p *= std::max(0.0, double(pool - s - i)) / double(pool - i);
    return p;
  };
  // ways[c][s]: the sets of c groups (of those seen so far) holding s of the ranks' experts.
  std::vector<std::vector<double>> ways(static_cast<size_t>(tg + 1), std::vector<double>(static_cast<size_t>(held + 1), 0));
  ways[0][0] = 1;
  for (int64_t gi = 0; gi < g; ++gi) {
    const int64_t in = std::clamp<int64_t>(held - gi * per_group, 0, per_group);  // held experts in group gi
    for (int64_t c = std::min(tg, gi + 1); c >= 1; --c)
      for (int64_t s = held; s >= in; --s) ways[size_t(c)][size_t(s)] += ways[size_t(c - 1)][size_t(s - in)];
  }
  double sets = 0, missed = 0;
  for (int64_t s = 0; s <= held; ++s) sets += ways[size_t(tg)][size_t(s)], missed += ways[size_t(tg)][size_t(s)] * miss(s);
  return 1 - missed / sets;
}

OpGraph build_serving_graph(const ModelConfig& m, Mode phase, int64_t batch, int64_t tokens, DType dtype,
                            DType kv_dtype, int64_t tp, int64_t ep, double routing_alpha, int64_t pp,
                            int64_t cached_prefix, bool dp_attention, bool moe_all_to_all) {
  TC_CHECK(phase == Mode::kPrefill || phase == Mode::kDecode, "serving graph of a training/inference mode");
  const DType act = check_serving_layout(m, phase, dtype, tp, ep, routing_alpha, dp_attention, moe_all_to_all);
  if (dp_attention && pp > 1)
    throw ConfigError("--dp-attention with --pp " + std::to_string(pp) + ": DP attention is modelled on one pipeline stage");
  if (batch < 1 || batch > 65536) throw ConfigError("--batch: " + std::to_string(batch) + " out of range [1, 65536]");
  const char* tok_flag = phase == Mode::kPrefill ? "--seq" : "--context";
  if (tokens < (phase == Mode::kPrefill ? 1 : 0) || tokens > (1 << 22))
    throw ConfigError(std::string(tok_flag) + ": " + std::to_string(tokens) + " out of range [" +
                      (phase == Mode::kPrefill ? "1" : "0") + ", 2^22]");
  if (m.max_positions > 0 && tokens + (phase == Mode::kDecode ? 1 : 0) > m.max_positions)
    throw ConfigError(std::string(tok_flag) + ": " + std::to_string(tokens) + " exceeds " + m.name + "'s " +
                      std::to_string(m.max_positions) + " positions");
  check_pipeline_stages(m.layers, pp);
  if (cached_prefix != 0 && (phase != Mode::kPrefill || cached_prefix < 0 || cached_prefix >= tokens))
    throw ConfigError("--cached-prefix: " + std::to_string(cached_prefix) + " out of range [0, " +
                      (phase == Mode::kPrefill ? std::to_string(tokens - 1) + "] (the prompt's tokens less one to run)"
                                               : std::string("0] in decode")));
  // vLLM and SGLang keep pp microbatches in flight (one per stage); a batch smaller than that
  // runs one sequence per microbatch. The largest microbatch paces the pipeline.
  const int64_t microbatches = std::min(pp, batch);
  const int64_t seqs = (batch + microbatches - 1) / microbatches;  // sequences in this graph
  OpGraph g = serving_graph_of(m, phase, dtype, kv_dtype, tp, ep, routing_alpha, dp_attention, moe_all_to_all);
  g.batch = batch;
  g.seq = phase == Mode::kPrefill ? tokens : 1;
  g.micro_batch = seqs;
  g.par.pp = pp;
  g.par.microbatches = microbatches;
  g.context = tokens;
  g.cached_prefix = cached_prefix;
  const int64_t t = phase == Mode::kPrefill ? seqs * (tokens - cached_prefix) : seqs;  // tokens in this step
  // vLLM and SGLang hand the next stage the hidden states and the residual (each rank of the
  // tp group sends its full copy to its peer).
  g.pipeline_send_bytes = pp > 1 ? 2.0 * dtype_size(act) * double(t) * double(m.hidden) : 0;
  // DP attention: the busiest rank's sequences, every head.
  const int64_t atp = attention_tp(tp, dp_attention), rank_seqs = attention_share(seqs, tp, dp_attention);
  const int64_t heads = m.heads / atp, kv = serving_kv_heads_per_rank(m, atp);
  const KernelQuery attn =
      phase == Mode::kPrefill
          ? attention_chunk_q(rank_seqs, tokens - cached_prefix, cached_prefix, heads, kv, m.head_dim, act, kv_dtype)
          : attention_decode_q(rank_seqs, tokens + 1, heads, kv, m.head_dim, act, kv_dtype);
  const int64_t ta = phase == Mode::kPrefill ? rank_seqs * (tokens - cached_prefix) : rank_seqs;
  add_serving_layers(g, m, t, seqs, dtype, kv_dtype, tp, ep, {attn}, ta, dp_attention, moe_all_to_all);
  return g;
}

int64_t ServingStep::tokens() const {
  int64_t t = decode_seqs;
  for (const auto& c : prefill) t += c.seqs * c.tokens;
  return t;
}

int64_t ServingStep::sequences() const {
  int64_t n = decode_seqs;
  for (const auto& c : prefill) n += c.seqs;
  return n;
}

OpGraph build_serving_step_graph(const ModelConfig& m, const ServingStep& step, DType dtype, DType kv_dtype, int64_t tp,
                                 int64_t ep, double routing_alpha, bool dp_attention, bool moe_all_to_all) {
  const Mode phase = step.prefill.empty() ? Mode::kDecode : Mode::kPrefill;
  const DType act = check_serving_layout(m, phase, dtype, tp, ep, routing_alpha, dp_attention, moe_all_to_all);
  const int64_t positions = m.max_positions > 0 ? m.max_positions : (int64_t{1} << 22);
  auto bad = [](const std::string& what) { throw ConfigError("serving step: " + what); };
  if (step.decode_seqs < 0 || step.decode_context < 0) bad("negative decode sequences or context");
  if (step.decode_seqs > 0 && step.decode_context + 1 > positions)
    bad(std::to_string(step.decode_context) + " cached tokens exceed " + m.name + "'s " + std::to_string(positions) +
        " positions");
  for (const auto& c : step.prefill) {
    if (c.seqs < 1 || c.tokens < 1 || c.prefix < 0) bad("a prompt chunk needs >= 1 prompt and token, prefix >= 0");
    if (c.prefix + c.tokens > positions)
      bad("a prompt of " + std::to_string(c.prefix + c.tokens) + " tokens exceeds " + m.name + "'s " +
          std::to_string(positions) + " positions");
  }
  const int64_t t = step.tokens(), seqs = step.sequences();
  if (seqs < 1 || seqs > 65536 || t > (int64_t{1} << 24))
    bad(std::to_string(seqs) + " sequences of " + std::to_string(t) + " tokens out of range (1-65536 sequences, "
        "at most 2^24 tokens)");
  OpGraph g = serving_graph_of(m, phase, dtype, kv_dtype, tp, ep, routing_alpha, dp_attention, moe_all_to_all);
  g.batch = seqs;
  g.micro_batch = seqs;
  g.seq = step.prefill.empty() ? 1 : step.prefill.front().tokens;
  g.context = step.prefill.empty() ? step.decode_context : step.prefill.front().prefix + step.prefill.front().tokens;
  g.step = step;
  // DP attention: the busiest rank's share of each group of sequences, every head.
  const int64_t atp = attention_tp(tp, dp_attention);
  auto on_rank = [&](int64_t n) { return attention_share(n, tp, dp_attention); };
  const int64_t heads = m.heads / atp, kv = serving_kv_heads_per_rank(m, atp);
  std::vector<KernelQuery> attention;
  int64_t ta = 0;
  for (const auto& c : step.prefill) {
    attention.push_back(attention_chunk_q(on_rank(c.seqs), c.tokens, c.prefix, heads, kv, m.head_dim, act, kv_dtype));
    ta += on_rank(c.seqs) * c.tokens;
  }
  if (step.decode_seqs > 0) {
    attention.push_back(attention_decode_q(on_rank(step.decode_seqs), step.decode_context + 1, heads, kv, m.head_dim,
                                           act, kv_dtype));
    ta += on_rank(step.decode_seqs);
  }
  int64_t logits = seqs;
  if (step.chunk_logits_all)
    for (const auto& c : step.prefill) logits += c.seqs * (c.tokens - 1);
  add_serving_layers(g, m, t, logits, dtype, kv_dtype, tp, ep, attention, ta, dp_attention, moe_all_to_all);
  // Prompt chunks beside decodes: the engine's one attention call over the mixed batch.
  if (!step.prefill.empty() && step.decode_seqs > 0)
    for (auto& op : g.ops)
      for (auto& call : op.fw)
        if (call.is_kernel() && call.query.op == OpKind::kAttnDecode && call.mla_value_dim == 0) call.varlen_decode = true;
  return g;
}

OpGraph build_llm_training_graph(const ModelConfig& m, int64_t batch, int64_t seq, DType dtype,
                                 const Parallelism& par, bool recompute, bool hf_eager) {
  const std::string mode = std::string("--mode training --dtype ") + dtype_name(dtype);
  if (!is_llm_family(m.model_type))
    throw ConfigError(mode + ": mixed-precision training covers the decoder families (" + model_type_list(true) +
                      "), not '" + m.model_type + "'");
  if (is_fp8(dtype) && dtype != DType::kFp8)
    throw ConfigError(mode + ": FP8 training is modelled as Transformer Engine's per-tensor recipe, --dtype fp8");
  if (dtype != DType::kBf16 && dtype != DType::kFp16 && dtype != DType::kFp8)
    throw ConfigError(mode + ": mixed-precision training runs in bf16, fp16 or fp8 (fp32 is the eager FP32 training of "
                      "NeuSight's data)");
  check_batch_and_seq(m, batch, seq, 20);
  for (int64_t v : {par.dp, par.tp, par.pp, par.microbatches})
    if (v < 1 || v > 4096)
      throw ConfigError("--dp/--tp/--pp/--microbatches: " + std::to_string(v) + " out of range [1, 4096]");
  check_training_expert_parallel(m, par);
  check_training_context_parallel(m, seq, par);
  check_zero_stage(par.zero);
  if (par.sequence_parallel && par.tp < 2) throw ConfigError("--sequence-parallel needs --tp 2 or more");
  if (batch % (par.dp * par.microbatches) != 0)
    throw ConfigError("--batch " + std::to_string(batch) + " is not divisible by dp x microbatches = " +
                      std::to_string(par.dp * par.microbatches));
  const int64_t micro_tokens = batch / (par.dp * par.microbatches) * seq;
  if (micro_tokens > (int64_t{1} << 24))
    throw ConfigError("--batch " + std::to_string(batch) + " x --seq " + std::to_string(seq) + ": " +
                      std::to_string(micro_tokens) +
                      " tokens a microbatch on one data-parallel rank, above 2^24 (raise --dp or --microbatches)");
  const int64_t tp = par.tp;
  // Megatron-LM splits heads, query groups (KV heads) and the FFN widths over the tp ranks.
  if (const int64_t ffn = tp_ffn_width(m, tp); m.heads % tp != 0 || m.kv_heads % tp != 0 || ffn % tp != 0)
    throw ConfigError("--tp " + std::to_string(tp) + ": " + m.name + "'s " + std::to_string(m.heads) + " heads, " +
                      std::to_string(m.kv_heads) + " key/value heads and FFN width " + std::to_string(ffn) +
                      " must be divisible by it");
  if (par.pp > m.layers || m.layers % par.pp != 0)
    throw ConfigError("--pp " + std::to_string(par.pp) + ": " + m.name + "'s " + std::to_string(m.layers) +
                      " layers do not split evenly into " + std::to_string(par.pp) +
                      " stages (Megatron-LM needs num_layers divisible by the pipeline size)");
  check_virtual_pipeline(m, par);
  if (hf_eager) {
    // The model first: a family the eager graph does not build is refused whatever the layout.
    check_hf_eager_model(m, seq);
    if (dtype == DType::kFp8)
      throw ConfigError("--hf-eager: Hugging Face's eager training runs in bf16 or fp16; fp8 is Transformer Engine's "
                        "recipe (without --hf-eager)");
    if (par.tp != 1 || par.pp != 1 || par.cp != 1 || par.ep != 1 || par.sequence_parallel || par.zero != 0)
      throw ConfigError("--hf-eager: one GPU or data parallelism (--dp, --microbatches) only; --tp, --pp, --cp, --ep, "
                        "--sequence-parallel and --zero are Megatron-LM's layouts");
  }
  OpGraph g;
  g.model = m.name;
  g.batch = batch;
  g.seq = seq;
  g.mode = Mode::kTraining;
  g.par = par;
  g.micro_batch = batch / (par.dp * par.microbatches);
  g.layers = m.layers;
  g.hidden = m.hidden;
  g.parameters = model_parameters(m);
  g.expert_parameters = par.ep > 1 ? expert_parameters(m) : 0;
  g.dtype = dtype;
  // FP8 (Transformer Engine's recipe): the layers' dense GEMMs in FP8, everything else (weights,
  // activations, attention, norms, collectives, router, the fused MoE, LM head) in BF16.
  const DType act = training_storage_dtype(dtype), mm = dtype;
  g.kv_dtype = act;
  if (mm == DType::kFp8) g.fp8_weight_parameters = fp8_training_gemm_parameters(m) / double(par.tp);
  set_attention_window(g, m);
  if (hf_eager) {
    g.hf_eager = true;
    const int64_t t = g.micro_batch * seq;
    add_hf_eager_layers(g, m, t, t, attention_prefill_q(g.micro_batch, seq, m.heads, m.kv_heads, m.head_dim, act, act),
                        act, true, recompute);
    return g;
  }
  const double e = dtype_size(act);
  // Context parallelism: every op but attention sees the rank's seq / cp tokens of each sequence.
  const int64_t t = g.micro_batch * seq / par.cp, h = m.hidden, hd = m.head_dim, heads = m.heads / tp, kv = m.kv_heads / tp;
  // Sequence parallelism: the ops between the tp regions see t / tp tokens.
  const int64_t ts = par.sequence_parallel ? (t + tp - 1) / tp : t;
  g.pipeline_send_bytes = par.pp > 1 ? e * double(t) * double(h) : 0;  // the hidden states
  Builder b(g);
  auto all_reduce = [&](double bytes) { return KernelCall::all_reduce(bytes, tp); };
  // y = x W^T: x (rows, in), W (out, in). Column-parallel: the input gradient is all-reduced
  // backward; row-parallel: the output forward; both (rows, h). The router is replicated.
  enum Split { kReplicated, kColumn, kRow };
  auto gemm = [&](const std::string& name, int64_t rows, int64_t in, int64_t out, Split split, DType d) {
    GraphOp& o = b.op(name, "gemm");
    o.fw.push_back(KernelCall::kernel(gemm_q(rows, in, out, d)));
    o.bw.push_back(KernelCall::kernel(gemm_q(rows, out, in, d)));  // dx = dy W
    o.bw.push_back(KernelCall::kernel(gemm_q(out, rows, in, d)));  // dW = dy^T x
    if (tp > 1 && split == kColumn) o.bw.push_back(all_reduce(e * double(rows) * h));
    if (tp > 1 && split == kRow) o.fw.push_back(all_reduce(e * double(rows) * h));
  };
  // A memory-bound op whose backward is a pass of the same kind over `bw_rows` rows.
  auto memop = [&](const std::string& name, OpKind k, int64_t rows, int64_t width, int64_t bw_rows) {
    GraphOp& o = b.op(name, "memory_op");
    o.fw.push_back(KernelCall::kernel(vec_q(k, rows, width, act)));
    o.bw.push_back(KernelCall::kernel(vec_q(k, bw_rows, width, act)));
  };
  auto rmsnorm = [&](const std::string& name, int64_t rows, int64_t width) {
    memop(name, OpKind::kRmsNorm, rows, width, rows + rows / 2);
  };
  b.set_prefix("model.");
  {
    GraphOp& o = b.op("embed_tokens", "memory");
    o.fw.push_back(KernelCall::mem(2 * e * double(t) * h));
    if (tp > 1) o.fw.push_back(all_reduce(e * double(t) * h));  // vocab-parallel embedding
    o.bw.push_back(KernelCall::mem(3 * e * double(t) * h));      // dy read, its rows' gradients updated
  }
  if (m.embed_scale) {  // Gemma: x sqrt(hidden), forward and backward a pass each
    GraphOp& o = b.op("embed_scale", "memory");
    o.fw.push_back(KernelCall::mem(2 * e * double(t) * h));
    o.bw.push_back(KernelCall::mem(2 * e * double(t) * h));
  }
  const size_t first_layer_op = g.ops.size();
  b.set_count(m.layers);
  b.set_prefix("model.layers.");
  rmsnorm("input_layernorm", ts, h);
  // MLA (Megatron-Core's MLASelfAttention): the down projections to the query and key/value
  // latents replicated on the tp ranks, their norms, the up projections split by heads, then
  // FlashAttention at the query/key width with the value width counted by the FLOPs' share.
  const double attn_share = attention_value_share(m);
  if (is_mla(m)) {
    const int64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, rope = m.qk_rope_dim;
    if (ql > 0) {
      gemm("self_attn.linear_q_down_proj", t, h, ql, kReplicated, mm);
      rmsnorm("self_attn.q_layernorm", t, ql);
      gemm("self_attn.linear_q_up_proj", t, ql, heads * hd, kColumn, mm);
    } else {
      gemm("self_attn.linear_q_proj", t, h, heads * hd, kColumn, mm);
    }
    gemm("self_attn.linear_kv_down_proj", t, h, kvl + rope, kReplicated, mm);
    rmsnorm("self_attn.kv_layernorm", t, kvl);
    gemm("self_attn.linear_kv_up_proj", t, kvl, heads * (hd - rope + value_head_dim(m)), kColumn, mm);
    memop("self_attn.rotary_emb", OpKind::kRope, t, (heads + 1) * rope, t);
  } else {
    gemm("self_attn.qkv_proj", t, h, (heads + 2 * kv) * hd, kColumn, mm);
    rope_ops(b, m, [&] {
      if (m.qk_norm) {
        rmsnorm("self_attn.q_norm", t * heads, hd);
        rmsnorm("self_attn.k_norm", t * kv, hd);
      }
      memop("self_attn.rotary_emb", OpKind::kRope, t, (heads + kv) * hd, t);
    });
  }
  if (par.cp == 1) {
    attention_ops(b, m, "self_attn.core_attention", [&](GraphOp& o, bool local) {
      for (const KernelQuery& q :
           layer_attention(attention_prefill_q(g.micro_batch, seq, heads, kv, hd, act, act), m, local)) {
        o.fw.push_back(KernelCall::kernel_scaled(q, attn_share));
        o.bw.push_back(KernelCall::kernel_scaled(q, 2.5 * attn_share));
      }
    });
  } else {
    // Megatron-Core's ring attention with the load-balanced split: the sequence in 2 cp chunks
    // of c tokens, rank r holding chunks r and 2 cp - 1 - r. Each of its cp steps is one
    // FlashAttention call of 2 c^2 (query, key) pairs: the first causal over its own 2 c
    // tokens, each later one its 2 c queries (or its last chunk's c) over c (or 2 c) keys
    // from another rank. So each step is costed as a causal prompt of 2 c = seq / cp tokens,
    // the same work, cp of them; meanwhile the K and V of its 2 c tokens go round the ring
    // (cp - 1 hand-overs; backward their gradients too), overlapped with those kernels.
    GraphOp& o = b.op("self_attn.core_attention", "attention");
    const KernelQuery step = attention_prefill_q(g.micro_batch, seq / par.cp, heads, kv, hd, act, act);
    const double kv_bytes = e * double(t) * double(kv) * double(hd + value_head_dim(m));
    o.fw = {KernelCall::kernel_scaled(step, attn_share * double(par.cp)), KernelCall::ring(kv_bytes, par.cp)};
    o.bw = {KernelCall::kernel_scaled(step, 2.5 * attn_share * double(par.cp)), KernelCall::ring(2.0 * kv_bytes, par.cp)};
  }
  gemm("self_attn.o_proj", t, heads * value_head_dim(m), h, kRow, mm);
  if (m.sandwich_norms) rmsnorm("post_attention_layernorm", ts, h);  // Gemma 2: the output's own norm
  memop("residual_1", OpKind::kResidualAdd, ts, h, ts);
  rmsnorm(m.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm", ts, h);
  ffn_ops(b, m, [&] {
    gemm("mlp.gate_up_proj", t, h, 2 * m.ffn / tp, kColumn, mm);
    // SiLU-mul reads 2F and writes F forward; backward reads gate, up and dy, writes two: 5F.
    memop("mlp.act_fn", OpKind::kSiluMul, t, m.ffn / tp, (5 * t + 2) / 3);
    gemm("mlp.down_proj", t, m.ffn / tp, h, kRow, mm);
  }, [&] {
    // The router (replicated), then one fused MoE kernel per rank (each expert's FFN split
    // over the tp ranks), its backward at twice its time; the partial outputs all-reduced.
    gemm("mlp.gate", t, h, m.num_experts, kReplicated, act);
    // Expert parallelism: every token's top-k copies sent to the ranks holding their experts
    // and the outputs sent back (Megatron-Core's all-to-all token dispatcher), each a pass of
    // the gradients backward. A rank's E / ep experts then take t x top-k tokens in all, the
    // work of the layer without expert parallelism, whose forecast (the rank's t tokens over all
    // E experts) costs it: the family's ep rows are SGLang's serving kernels, whose ranks route
    // every token of the group (on Triton GPUs 1.0-3.8x that layer's time at equal work from
    // 1,024 tokens a rank on, scripts/moe-scaling.py), and a layer of E / ep experts alone
    // lies outside the family's layer shapes. It reads every expert's weights where the rank
    // holds 1 / ep of them: no faster than a grouped GEMM over the rank's own experts.
    const int64_t ep = par.ep;
    const double routed_bytes = e * double(t) * double(m.experts_per_token) * double(h);
    auto exchange = [&](const std::string& name) {
      GraphOp& o = b.op(name, "communication");
      o.fw.push_back(KernelCall::all_to_all(routed_bytes, ep));
      o.bw.push_back(KernelCall::all_to_all(routed_bytes, ep));
    };
    if (ep > 1) exchange("mlp.token_dispatch");
    const KernelQuery q = moe_q(t, h, m.moe_ffn, m.experts_per_token, m.num_experts, tp, 1, act, kUniformRouting);
    {
      GraphOp& o = b.op("mlp.experts", "moe");
      o.fw.push_back(KernelCall::kernel(q));
      o.bw.push_back(KernelCall::kernel_scaled(q, 2.0));
      if (tp > 1) {
        o.fw.push_back(all_reduce(e * double(t) * h));
        o.bw.push_back(all_reduce(e * double(t) * h));
      }
    }
    if (ep > 1) exchange("mlp.token_combine");
    if (const int64_t s = m.shared_expert_ffn; s > 0) {
      // Shared experts (Megatron-Core's SharedExpertMLP): a gated FFN split over tp as the
      // dense one, in the GEMM dtype; Qwen2-MoE's 1-wide gate (replicated) and the
      // sigmoid-scaled add, costed as a residual add forward and backward.
      gemm("mlp.shared_expert.gate_up_proj", t, h, 2 * s / tp, kColumn, mm);
      memop("mlp.shared_expert.act_fn", OpKind::kSiluMul, t, s / tp, (5 * t + 2) / 3);
      gemm("mlp.shared_expert.down_proj", t, s / tp, h, kRow, mm);
      if (m.shared_expert_gate) {
        gemm("mlp.shared_expert_gate", t, h, 1, kReplicated, act);
        memop("mlp.shared_expert_combine", OpKind::kResidualAdd, t, h, t);
      }
    }
  });
  if (m.sandwich_norms) rmsnorm("post_feedforward_layernorm", ts, h);
  memop("residual_2", OpKind::kResidualAdd, ts, h, ts);
  if (recompute)
    for (size_t i = first_layer_op; i < g.ops.size(); ++i) {
      GraphOp& op = g.ops[i];
      op.bw.insert(op.bw.begin(), op.fw.begin(), op.fw.end());
    }
  b.set_count(1);
  b.set_prefix("model.");
  rmsnorm("norm", ts, h);
  b.set_prefix("");
  const int64_t vocab = (m.vocab + tp - 1) / tp;
  gemm("lm_head", t, h, vocab, kColumn, act);
  {
    // Vocab-parallel cross-entropy: the logits read forward (max, sum of exponentials and the
    // target's logit, each all-reduced over the tp group as t FP32 values), read again and
    // their gradient written backward.
    GraphOp& o = b.op("loss", "memory");
    o.fw.push_back(KernelCall::mem(e * double(t) * vocab));
    for (int i = 0; i < 3 && tp > 1; ++i) o.fw.push_back(all_reduce(4.0 * double(t)));
    o.bw.push_back(KernelCall::mem(2 * e * double(t) * vocab));
  }
  if (m.final_softcap > 0) {
    // Gemma 2's logits soft-cap (x / cap, tanh, x cap), three passes over the rank's logits
    // forward and three backward (tanh's gradient from its output).
    GraphOp& o = b.op("logits_softcap", "memory");
    for (int i = 0; i < 3; ++i) {
      o.fw.push_back(KernelCall::mem(2 * e * double(t) * vocab));
      o.bw.push_back(KernelCall::mem(2 * e * double(t) * vocab));
    }
  }
  return g;
}

void check_hf_eager_model(const ModelConfig& m, int64_t seq) {
  const ArchSpec* a = find_arch(m.model_type);
  const char* why = nullptr;
  if (!a || !is_llm_family(m.model_type)) why = "covers the dense decoder families";
  else if (m.num_experts > 0) why = "is not built for routed experts (transformers' eager MoE loops over its experts)";
  else if (is_mla(m)) why = "is not built for multi-head latent attention";
  else if (m.sandwich_norms || m.embed_scale || m.attn_softcap > 0 || m.final_softcap > 0)
    why = "is not built for Gemma's sandwich norms, embedding scale and soft-caps";
  else if (m.chunked_attention) why = "is not built for Llama 4's chunked attention";
  else if (a->ffn != FfnKind::kSwiGlu) why = "covers SwiGLU decoders";
  if (why)
    throw ConfigError("--hf-eager of " + m.name + " (" + m.model_type + "): Hugging Face's eager graph " + why +
                      " (llama, mistral, qwen2, qwen3, phi3)");
  // transformers skips the mask (SDPA's is_causal) only while the keys are fewer than the
  // window (masking_utils' _ignore_causal_mask_sdpa: kv_length < local_attention_size).
  if (windowed_layers(m) > 0 && seq >= m.sliding_window)
    throw ConfigError("--hf-eager of " + m.name + ": --seq " + std::to_string(seq) + " reaches its sliding window of " +
                      std::to_string(m.sliding_window) +
                      " tokens, where transformers hands SDPA a materialised mask (not modelled)");
}

KernelQuery eager_pass_q(int64_t rows, int64_t width, double bytes_per_elem, DType act) {
  TC_CHECK(rows >= 1 && width >= 1 && bytes_per_elem > 0, "eager pass of a positive size");
  const double w = std::round(bytes_per_elem * double(width) / (3.0 * dtype_size(act)));
  return vec_q(OpKind::kResidualAdd, rows, std::max<int64_t>(1, static_cast<int64_t>(w)), act);
}

OpGraph build_hf_eager_prefill_graph(const ModelConfig& m, int64_t batch, int64_t seq, DType dtype) {
  if (dtype != DType::kBf16 && dtype != DType::kFp16)
    throw ConfigError(std::string("--hf-eager: Hugging Face's eager prefill is modelled in bf16 or fp16, not ") +
                      dtype_name(dtype));
  check_hf_eager_model(m, seq);
  check_batch_and_seq(m, batch, seq, 22);  // a prompt, as the serving graphs take it
  OpGraph g = serving_graph_of(m, Mode::kPrefill, dtype, dtype, 1, 1, 0, false, false);
  g.hf_eager = true;
  g.batch = batch;
  g.micro_batch = batch;
  g.seq = seq;
  g.context = seq;
  add_hf_eager_layers(g, m, batch * seq, batch,
                      attention_prefill_q(batch, seq, m.heads, m.kv_heads, m.head_dim, dtype, dtype), dtype, false,
                      false);
  return g;
}

std::string expert_dtype_refusal(const ModelConfig& m, DType d) {
  if (m.num_experts == 0) return m.name + " has no experts";
  return dtype_refusal(OpKind::kMoe, d);
}

DType serving_expert_dtype(const ModelConfig& m, DType dtype) {
  if (m.expert_dtype.empty()) return dtype;
  const std::string what = "expert dtype '" + m.expert_dtype + "' of " + m.name + ": ";
  DType d;
  if (!try_dtype_from_string(m.expert_dtype, &d))
    throw ConfigError(what + "unknown dtype (" + dtype_set_names(family_traits(Family::kMoe).dtypes) + ")");
  if (const std::string why = expert_dtype_refusal(m, d); !why.empty()) throw ConfigError(what + why);
  return d;
}

double serving_expert_bytes_per_weight(const ModelConfig& m, DType dtype) {
  const DType d = serving_expert_dtype(m, dtype);
  return d == DType::kInt4 ? int4_bytes_per_weight(m.expert_group_size) : weight_bytes_per_elem(d);
}

int64_t serving_kv_heads_per_rank(const ModelConfig& m, int64_t tp) {
  const int64_t kv = m.kv_heads;  // load_model_config sets it (heads when the config has none)
  if (tp < 1) throw ConfigError("--tp: " + std::to_string(tp) + " out of range [1, 4096]");
  if (kv % tp == 0) return kv / tp;
  if (tp % kv == 0) return 1;  // each KV head replicated on tp / kv ranks
  throw ConfigError("--tp " + std::to_string(tp) + ": " + m.name + "'s " + std::to_string(kv) +
                    " KV heads must be divisible by it, or it by them (each KV head then replicated)");
}

OpGraph fuse_op_graph(const OpGraph& g) {
  if (g.mode != Mode::kInference) throw ConfigError("--fusion models torch.compile inference only");
  OpGraph out = g;
  out.ops.clear();
  out.fused = true;
  auto fusible = [](const GraphOp& o) {
    if (o.kind == "linear" || o.kind == "bmm") return false;
    for (const auto& c : o.fw)
      if (c.collective != Collective::kNone) return false;
    return true;
  };
  size_t i = 0;
  while (i < g.ops.size()) {
    if (!fusible(g.ops[i])) {
      out.ops.push_back(g.ops[i++]);
      continue;
    }
    size_t j = i;
    while (j < g.ops.size() && fusible(g.ops[j]) && g.ops[j].count == g.ops[i].count) ++j;
    // One generated kernel for the run [i, j): its cost is one pass over the run's largest
    // tensor, in the routine of its heaviest member (softmax > layernorm > elementwise).
    GraphOp f;
    f.count = g.ops[i].count;
    f.name = g.ops[i].name + (j - i > 1 ? "+" + std::to_string(j - i - 1) : "");
    int rank = -1;
    KernelQuery rep;
    double max_bytes = 0, max_elems = 0;
    for (size_t k = i; k < j; ++k)
      for (const auto& c : g.ops[k].fw) {
        if (!c.is_kernel()) {
          max_bytes = std::max(max_bytes, c.bytes);
          continue;
        }
        const double elems = double(c.query.b) * c.query.h;
        const int r = c.query.op == OpKind::kSoftmax ? 2 : c.query.op == OpKind::kLayerNorm ? 1 : 0;
        if (r > rank || (r == rank && elems > max_elems)) {
          rank = r;
          rep = c.query;
          max_elems = elems;
        }
      }
    if (rank < 0) {
      f.kind = "memory";
      f.fw.push_back(KernelCall::mem(max_bytes));
    } else {
      f.kind = rank == 2 ? "softmax" : rank == 1 ? "layernorm" : "elementwise";
      if (rank == 0 && j - i > 1) rep.op = OpKind::kAdd;  // several inputs: a binary pass
      f.fw.push_back(KernelCall::kernel(rep));
    }
    out.ops.push_back(f);
    i = j;
  }
  return out;
}

}  // namespace tilecast
