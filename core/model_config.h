#pragma once
// Transformer model sizes read from a Hugging Face config.json.
#include <cstdint>
#include <string>
#include <vector>

namespace tilecast {

struct ModelConfig {
  std::string name;        // bundled name or file stem
  std::string model_type;  // bert, gpt2, opt, switch_transformers, or an LLM family (is_llm_family)
  int64_t hidden = 0;      // d_model
  int64_t layers = 0;      // (encoder) layers
  int64_t heads = 0;
  int64_t head_dim = 0;    // hidden / heads (switch: d_kv)
  int64_t ffn = 0;         // feed-forward width
  int64_t vocab = 0;
  int64_t max_positions = 0;  // 0 = unlimited (relative positions)
  std::string activation;     // "gelu", "gelu_new", "relu", "silu"
  // LLM families (llama, mistral, qwen2, qwen3, mixtral, qwen3_moe, phi3, qwen2_moe, gemma2,
  // gemma3_text (and gemma3's text_config), gpt_oss, llama4_text (and llama4's text_config),
  // deepseek_v2, deepseek_v3, kimi_k2)
  int64_t kv_heads = 0;           // num_key_value_heads (GQA); == heads for plain multi-head attention
  bool rms_norm = false;          // RMSNorm instead of LayerNorm
  bool gated_ffn = false;         // SwiGLU: down(act(gate(x)) * up(x))
  bool rope = false;              // rotary positions (no position table)
  bool qkv_bias = false;          // biases on q/k/v projections (qwen2)
  bool o_bias = false;            // a bias on the output projection too (`attention_bias`: Llama's, gpt-oss's)
  // gpt-oss: a learned sink logit per head (a column of the softmax that takes no value), and
  // biases on the router and on every expert's gate_up and down projections.
  bool attention_sinks = false;
  bool expert_bias = false;
  bool qk_norm = false;           // RMSNorm over each head of q and k (qwen3)
  bool qk_norm_weights = true;    // with a weight (Llama 4's is an L2 norm without one)
  bool tie_embeddings = true;     // lm_head shares the token embedding table
  int64_t experts_per_token = 0;  // MoE top-k (num_experts > 0)
  int64_t moe_ffn = 0;            // expert FFN width (moe_intermediate_size, or intermediate_size)
  // Shared experts beside the routed ones, their total width (qwen2_moe's
  // shared_expert_intermediate_size, DeepSeek's n_shared_experts x moe_intermediate_size, Llama
  // 4's intermediate_size): a gated FFN every token passes through, added to the routed
  // experts' output (scaled by sigmoid(a 1-wide projection) where shared_expert_gate); 0 = none.
  int64_t shared_expert_ffn = 0;
  bool shared_expert_gate = false;  // Qwen2-MoE's sigmoid gate on it (DeepSeek's shared experts have none)
  // Group-limited routing (DeepSeek-V2/V3's n_group, topk_group): the experts in `expert_groups`
  // consecutive groups, each token's top-k drawn from the `expert_groups_per_token` groups it
  // picks. 1 and 1: plain top-k.
  int64_t expert_groups = 1, expert_groups_per_token = 1;
  // A MoE model's layers with a dense FFN of `ffn` instead of experts: DeepSeek's leading
  // first_k_dense_replace, Qwen-MoE's mlp_only_layers and the layers decoder_sparse_step skips.
  int64_t dense_layers = 0;
  // Multi-head latent attention (DeepSeek-V2/V3; is_mla): queries through a rank-`q_lora_rank`
  // bottleneck (0: one projection), keys and values from a cached latent of `kv_lora_rank` plus
  // a shared rotary key of `qk_rope_dim`; each head's query and key are head_dim = nope + rope
  // wide, its value v_head_dim.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, v_head_dim = 0;
  // Sliding-window attention over the last `sliding_window` tokens in every layer (Mistral's,
  // Mixtral's and Phi-3's `sliding_window`); 0 = full causal attention. Serving graphs and their KV cache
  // honour it; the eager graphs compute full scores under a mask, as Hugging Face does.
  int64_t sliding_window = 0;
  // Of those layers, how many attend over the whole context all the same (per-layer windows:
  // Gemma 2's every other layer, Qwen's layers below `max_window_layers`, a config's
  // `layer_types` "full_attention" entries); 0 with no window. windowed_layers() is the rest.
  int64_t full_attention_layers = 0;
  // Llama 4's chunked local attention: the windowed layers attend within aligned chunks of
  // `sliding_window` tokens (attention_chunk_size) rather than over a sliding window.
  bool chunked_attention = false;
  // Gemma 2 and 3: an RMSNorm after the attention and after the FFN too ("sandwich" norms: four
  // a layer), token embeddings scaled by sqrt(hidden), and (Gemma 2) tanh soft-capping of the
  // attention scores and of the final logits (cap x tanh(x / cap); 0 = none).
  bool sandwich_norms = false;
  bool embed_scale = false;
  double attn_softcap = 0, final_softcap = 0;
  std::string torch_dtype;        // as the config states it ("bfloat16", "float32", ...), may be empty
  // The GEMM dtype a `quantization_config` implies (quant_method "fp8": fp8_block with a
  // weight_block_size, fp8_static with a static activation scheme, else fp8; compressed-tensors
  // FP8 W8A8 likewise); empty without one. Serving forecasts default to it. Other quantisation
  // methods are refused.
  std::string quantized_dtype;
  // The routed experts' weight format when it differs from the GEMMs' (quant_method "mxfp4":
  // gpt-oss's checkpoints store the experts in MXFP4, everything else in torch_dtype), else
  // empty: the experts take the serving dtype. A weight-only format (int4, mxfp4) runs the
  // fused MoE kernel on BF16 activations. `predict`, `compare` and `plan --expert-dtype` set it
  // (predictor::apply_expert_dtype). compressed-tensors' weight-only 4-bit integers on the
  // experts alone (Kimi-K2-Thinking) are int4, their group size in expert_group_size (the
  // modelled int4 kernels, the data's Marlin ones, scale groups of 128; 0: that size).
  std::string expert_dtype;
  int64_t expert_group_size = 0;
  // The KV cache's dtype a compressed-tensors `kv_cache_scheme` states (FP8: "fp8"); empty
  // without one: the cache takes the activations' dtype. `--kv-dtype` overrides it.
  std::string kv_cache_dtype;
  // DeepSeek-V3's multi-token-prediction modules (num_nextn_predict_layers), which SGLang and
  // vLLM run as the draft of speculative decoding (--spec-draft mtp: mtp_draft_config); 0 = none.
  int64_t mtp_layers = 0;
  // This config is such a module (mtp_draft_config): its layer's input is the next token's
  // embedding and the target's last hidden state, each RMS-normalised, concatenated and projected
  // back to the hidden width (eh_proj); the embedding table and the LM head are the target's.
  bool mtp_module = false;
  // Training dropout: on the attention probabilities (attn_pdrop, attention_probs_dropout_prob,
  // attention_dropout, dropout_rate) and on the hidden states (resid_pdrop, hidden_dropout_prob,
  // dropout, dropout_rate). p = 0 launches nothing and keeps no mask (PyTorch returns the input).
  double attention_dropout = 0, hidden_dropout = 0;
  // opt only
  int64_t embed_dim = 0;          // word_embed_proj_dim (== hidden unless projected, OPT-350m)
  bool final_layer_norm = true;   // do_layer_norm_before
  // switch_transformers only
  int64_t decoder_layers = 0;
  int64_t num_experts = 0;
  int64_t expert_capacity = 0;
  int64_t encoder_sparse_step = 0, decoder_sparse_step = 0;
  std::string origin;
};

// `spec` is a path to a config.json or a bundled name in `models_dir` (also NeuSight's
// names, e.g. "gpt2_large", through configs/models/aliases.yaml). Unknown model types,
// missing or non-positive fields throw ConfigError naming the file and field.
ModelConfig load_model_config(const std::string& spec, const std::string& models_dir);
std::vector<std::string> bundled_models(const std::string& models_dir);
// The draft that speculative decoding with a model's own multi-token-prediction module runs
// (`--spec-draft mtp`): one decoder layer of the target's (a MoE layer, MLA), fed by eh_proj, with
// the target's embedding and LM head. ConfigError naming the model when it has no such module.
ModelConfig mtp_draft_config(const ModelConfig& target);
// Every Hugging Face model_type tilecast reads, once: the key set its config.json uses.
// The graph builder has a row of kArchTable (core/op_graph.cpp) for each, and no other
// (graph_model_types(); checked by a test).
enum class ConfigSchema {
  kDense,      // gpt2, bert, opt: their own key names for the same sizes
  kSwitch,     // T5-style keys (d_model, d_kv, d_ff, num_experts)
  kHfDecoder,  // LlamaConfig and its relatives: the decoder-only LLM families
};
struct ModelTypeInfo {
  const char* type;
  ConfigSchema schema;
};
inline constexpr ModelTypeInfo kModelTypes[] = {
    {"bert", ConfigSchema::kDense},          {"gpt2", ConfigSchema::kDense},
    {"opt", ConfigSchema::kDense},           {"switch_transformers", ConfigSchema::kSwitch},
    {"llama", ConfigSchema::kHfDecoder},     {"mistral", ConfigSchema::kHfDecoder},
    {"qwen2", ConfigSchema::kHfDecoder},     {"qwen3", ConfigSchema::kHfDecoder},
    {"mixtral", ConfigSchema::kHfDecoder},   {"qwen3_moe", ConfigSchema::kHfDecoder},
    {"phi3", ConfigSchema::kHfDecoder},      {"qwen2_moe", ConfigSchema::kHfDecoder},
    {"gemma2", ConfigSchema::kHfDecoder},    {"gemma3_text", ConfigSchema::kHfDecoder},
    {"gpt_oss", ConfigSchema::kHfDecoder},   {"llama4_text", ConfigSchema::kHfDecoder},
    {"deepseek_v2", ConfigSchema::kHfDecoder}, {"deepseek_v3", ConfigSchema::kHfDecoder},
    {"kimi_k2", ConfigSchema::kHfDecoder},  // Moonshot's Kimi K2: DeepSeek-V3's architecture
};
// The types of kModelTypes, comma-separated (all, or only the decoder-only LLM families).
std::string model_type_list(bool llm_only = false);
// Decoder-only LLM families built by the parameterised decoder (RMSNorm, RoPE, GQA, SwiGLU, MoE).
bool is_llm_family(const std::string& model_type);
// ConfigError "<mode_flag>: serving graphs cover the decoder families (...), not '<type>'" unless
// is_llm_family: every serving mode's one refusal (mode_flag e.g. "--mode generate").
void require_serving_family(const ModelConfig& m, const std::string& mode_flag);
// Layers that attend over the last `sliding_window` tokens only (0 without a window).
inline int64_t windowed_layers(const ModelConfig& m) {
  return m.sliding_window > 0 ? m.layers - m.full_attention_layers : 0;
}
inline bool is_mla(const ModelConfig& m) { return m.kv_lora_rank > 0; }
// The width of each head's value (and of the attention output): MLA's v_head_dim, else head_dim.
inline int64_t value_head_dim(const ModelConfig& m) { return is_mla(m) ? m.v_head_dim : m.head_dim; }
// The attention's FLOPs as a share of those at head_dim for queries, keys and values alike: 1,
// or MLA's (head_dim + v_head_dim) / (2 head_dim) (scores over head_dim, the sum over values).
inline double attention_value_share(const ModelConfig& m) {
  return double(m.head_dim + value_head_dim(m)) / (2.0 * double(m.head_dim));
}
// Layers with routed experts (all of a MoE model's but its dense ones).
inline int64_t moe_layers(const ModelConfig& m) { return m.num_experts > 0 ? m.layers - m.dense_layers : 0; }
// The width a token's MLA latent cache entry holds per layer (latent + rotary key), 0 otherwise.
inline int64_t mla_cache_width(const ModelConfig& m) { return is_mla(m) ? m.kv_lora_rank + m.qk_rope_dim : 0; }
// RMSNorms (or layer norms) in one layer of a decoder family: two, four with sandwich norms.
inline int64_t norms_per_layer(const ModelConfig& m) { return m.sandwich_norms ? 4 : 2; }
// Width of the token embeddings: word_embed_proj_dim where the config projects them
// (OPT-350m: narrower than the model), else the hidden size.
inline int64_t embed_width(const ModelConfig& m) { return m.embed_dim > 0 ? m.embed_dim : m.hidden; }
// Parameter count (weights + biases + norms + embeddings), for the optimizer estimate.
double model_parameters(const ModelConfig& m);
// One decoder layer's attention projection weights (no biases, norms or sinks): q, k, v and o;
// MLA's q_a and q_b (or one q_proj), kv_a to the latent and the rotary key, kv_b to every head's
// key (nope part) and value, and o_proj from the values.
double attention_weights(const ModelConfig& m);
// The decoder families' (is_llm_family) weights whose GEMMs FP8 training runs in FP8
// (build_llm_training_graph): every layer's Q, K, V and output projections and a dense model's
// gated FFN (a MoE model's shared expert); no biases, norms, router, routed experts (BF16),
// embedding or LM head. ConfigError
// for other model types.
double fp8_training_gemm_parameters(const ModelConfig& m);
// The decoder families' MoE expert weights (every layer's experts: gate, up and down
// projections), the share of model_parameters that expert parallelism splits; 0 for a dense
// model. ConfigError for other model types.
double expert_parameters(const ModelConfig& m);

}  // namespace tilecast
