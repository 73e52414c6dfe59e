#pragma once
// Operator graphs of whole transformer models, built in C++ from the model config (no
// tracing). One repeated layer is built once and carries a count. Each operator lists the
// kernels it launches in the forward pass, the backward pass and gradient accumulation.
// Rules and deliberate differences from NeuSight's parsed graphs: docs/model-graphs.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/model_config.h"

namespace tilecast {

// kInference/kTraining: eager FP32 PyTorch (NeuSight's setting). kPrefill/kDecode: an LLM
// serving engine (vLLM/SGLang kernels) in BF16/FP16/FP8: one prefill of the prompts, or one
// decode step of every sequence.
enum class Mode { kInference, kTraining, kPrefill, kDecode };
const char* mode_name(Mode m);  // inference, training, prefill, decode

enum class Collective { kNone, kAllReduce, kAllToAll, kRing, kDeepEp };

// How a MoE layer routes a token: top-`topk` of `experts`, drawn from `groups_per_token` of
// `groups` consecutive groups of experts (DeepSeek's group-limited routing; 1 of 1: plain top-k).
struct ExpertRouting {
  int64_t experts = 0, topk = 0, groups = 1, groups_per_token = 1;
};

// One kernel launch: a predicted kernel, a pure memory pass (copies, gathers, masks) costed
// at DRAM bandwidth, an all-reduce over the interconnect (tensor parallelism), an all-to-all
// (training's expert parallelism: a MoE layer's token dispatch and combine over the ep group)
// or a ring of hand-overs (training's context parallelism: the attention's K and V), or
// serving's DeepEP dispatch or combine (Parallelism::moe_all_to_all); pipeline
// transfers and data-parallel gradients are costed by the step timeline instead.
struct KernelCall {
  bool is_mem = false;
  KernelQuery query;   // neither mem nor collective
  double bytes = 0;    // is_mem: bytes read + written; collective: each rank's message bytes
  Collective collective = Collective::kNone;
  int64_t group = 1;   // collective: GPUs taking part
  // A backward GEMM costed at its operator's forward GEMM rate: the forecast of the op's first
  // forward kernel (same family) x this call's multiply-adds (b m n k) / that kernel's. The FP32 linear's
  // input and weight gradients (docs/model-graphs.md): the kernel data time forward (TN)
  // GEMMs only, and the per-op labels show the backward at twice the forward.
  bool at_forward_rate = false;
  // The kernel's forecast times this: a backward kernel no data times, costed from its forward
  // (build_llm_training_graph: FlashAttention's backward, the fused MoE layer's).
  double scale = 1;
  // Decoding sequences that share one attention call with prompt chunks (a mixed step of vLLM's
  // chunked prefill): where that call is FlashAttention-2's varlen kernel the decodes are costed
  // by varlen_decode_ms (predictor/graph_predictor.h), else as their own decode kernel.
  bool varlen_decode = false;
  // Multi-head latent attention's decode (DeepSeek's absorbed MLA, FlashMLA-style): the query is
  // a decode of q.k heads over one shared latent "KV head" (q.h = 1) of q.n = latent + rotary
  // dims, whose first mla_value_dim dims are also the values; costed by mla_decode_bounds
  // (core/kernel.h) under the decode family's fitted roofline, not by its networks. 0: a plain call.
  int64_t mla_value_dim = 0;
  // Collective::kDeepEp: `bytes` is one copy of the rank's tokens (tokens x hidden x the element
  // bytes sent); the copies that travel follow from the layer's routing, its experts spread
  // evenly over the `group` ranks, and from the kernels' mode (predictor's deepep_traffic).
  ExpertRouting deepep_routing = {};
  bool deepep_low_latency = false;
  static KernelCall kernel(const KernelQuery& q) { return {false, q, 0, Collective::kNone, 1}; }
  static KernelCall deepep(double token_bytes, int64_t group, const ExpertRouting& routing, bool low_latency) {
    KernelCall c{false, {}, token_bytes, Collective::kDeepEp, group};
    c.deepep_routing = routing, c.deepep_low_latency = low_latency;
    return c;
  }
  static KernelCall mla_decode(const KernelQuery& q, int64_t value_dim) {
    KernelCall c = kernel(q);
    c.mla_value_dim = value_dim;
    return c;
  }
  static KernelCall kernel_scaled(const KernelQuery& q, double scale) {
    return {false, q, 0, Collective::kNone, 1, false, scale};
  }
  static KernelCall kernel_at_forward_rate(const KernelQuery& q) {
    return {false, q, 0, Collective::kNone, 1, true};
  }
  static KernelCall mem(double bytes) { return {true, {}, bytes, Collective::kNone, 1}; }
  static KernelCall all_reduce(double bytes, int64_t group) {
    return {false, {}, bytes, Collective::kAllReduce, group};
  }
  static KernelCall all_to_all(double bytes, int64_t group) {
    return {false, {}, bytes, Collective::kAllToAll, group};
  }
  // Context parallelism's ring: group - 1 point-to-point hand-overs of `bytes` to the next rank
  // of the cp group, overlapped with the kernels listed before it in the same pass of its op
  // (only what outlasts them is on the critical path).
  static KernelCall ring(double bytes, int64_t group) { return {false, {}, bytes, Collective::kRing, group}; }
  bool is_kernel() const { return !is_mem && collective == Collective::kNone; }
};

// Multi-GPU layout of one training step or forward pass. The batch given to
// build_op_graph is the global batch; each data-parallel rank runs batch / dp, split into
// `microbatches` for the pipeline. Tensor parallelism (Megatron-LM style) shards attention
// heads and MLP columns and adds all-reduces; pipeline stages split the layers.
struct Parallelism {
  int64_t dp = 1, tp = 1, pp = 1, microbatches = 1;
  // Expert parallelism of the MoE layers (1 = none). Serving: the experts split over `ep`
  // ranks of the tensor-parallel group, each expert's FFN over the remaining tp / ep.
  // Mixed-precision training (Megatron-Core's expert-model-parallel-size): the experts split
  // over `ep` ranks of the data-parallel group (with cp, of the dp x cp ranks, cp first), each
  // expert's FFN over tp as the dense layers', tokens dispatched to them and combined back by
  // all-to-alls; the expert weights' gradients are reduced over the dp x cp / ep ranks that
  // hold the same experts.
  int64_t ep = 1;
  // Mixed-precision training: ZeRO stage of the data-parallel ranks (0: every rank holds it
  // all; 1: the optimizer state sharded over dp, as Megatron-LM's distributed optimizer;
  // 2: the gradients too; 3: the weights too, gathered for each layer's forward and backward,
  // as FSDP's full shard).
  int zero = 0;
  // Mixed-precision training with tp > 1: Megatron-LM's sequence parallelism (the norms,
  // residual adds and their saved inputs split over the tp ranks by tokens; each all-reduce a
  // reduce-scatter and an all-gather of the same traffic).
  bool sequence_parallel = false;
  // Mixed-precision training: context parallelism (Megatron-Core's context-parallel-size):
  // each sequence split over `cp` ranks, every op but attention on its seq / cp tokens, the
  // attention a ring over the cp group (docs/model-graphs.md). A replica is tp x cp x pp GPUs:
  // tp fastest, then cp, then the pipeline stages. With ep the expert-parallel ranks come from
  // the dp x cp ranks, cp first.
  int64_t cp = 1;
  // Mixed-precision training with pp > 1: Megatron-LM's interleaved 1F1B schedule
  // (--num-virtual-stages-per-pipeline-rank): each pipeline rank holds vpp model chunks of
  // layers / (pp x vpp) layers, chunk c of rank r being virtual stage c pp + r; the pipeline's
  // fill and drain shrink vpp-fold (docs/model-graphs.md). 1 = the plain 1F1B schedule.
  int64_t vpp = 1;
  // Serving with tp > 1: SGLang's DP attention (--enable-dp-attention with --dp equal to --tp):
  // each rank of the tp group runs the attention of its own share of the sequences with every
  // head and keeps only their KV cache; the hidden states are gathered for the FFN or MoE,
  // which stays split over the tp group, and scattered back after it
  // (docs/model-graphs.md, "DP attention").
  bool dp_attention = false;
  // Serving with DP attention and ep = tp: SGLang's DeepEP MoE (--moe-a2a-backend deepep): each
  // rank routes its own tokens and sends them to the ranks holding their experts by all-to-all
  // (dispatch) and the experts' outputs back (combine), in place of the gather and the
  // all-reduce; the shared experts run whole on every rank on its own tokens
  // (docs/model-graphs.md, "DeepEP").
  bool moe_all_to_all = false;
  int64_t gpus() const { return dp * tp * cp * pp; }
};

struct GraphOp {
  std::string name;  // e.g. "h.attn.c_attn"
  std::string kind;  // report group: linear, bmm, softmax, layernorm, elementwise, embedding, memory
  int64_t count = 1; // times it runs per step (layers)
  std::vector<KernelCall> fw, bw, acc;
  // A node NeuSight's parsed graphs name "misc" rather than a VEC kind (OPT's torch.max
  // against finfo.min): its per-node labels count it in no kind, so eval-models' per-kind
  // comparison leaves it out too. Whole-model forecasts include it like any op.
  bool unnamed_by_neusight = false;
  // Runs in `count` of the repeated layers only, not a multiple of them (a model with per-layer
  // attention windows: its windowed layers' attention and its full layers'): part of the
  // repeated layer all the same, whose cost is the mean over the layers.
  bool layer_subset = false;
};

// One step of a serving engine's continuous batching (vLLM's and SGLang's chunked prefill):
// prompt chunks and decoding sequences in one forward pass.
struct ServingChunk {
  int64_t seqs = 0;    // prompts in this group
  int64_t tokens = 0;  // tokens of each prompt this step runs
  int64_t prefix = 0;  // tokens of each prompt already cached by earlier steps
};
struct ServingStep {
  std::vector<ServingChunk> prefill;
  int64_t decode_seqs = 0;     // sequences decoding one token each
  int64_t decode_context = 0;  // tokens cached before it, the mean over those sequences
  // Logits per prompt chunk: 1 (its last token) or all its tokens (a speculative-decoding
  // verify step scores every draft token).
  bool chunk_logits_all = false;
  int64_t tokens() const;      // tokens of the forward pass
  int64_t sequences() const;   // sequences of the forward pass (0: not a scheduled step)
};

struct OpGraph {
  std::string model;
  int64_t batch = 0, seq = 0;  // global batch
  int64_t micro_batch = 0;     // batch one GPU runs per microbatch (= batch / dp / microbatches)
  int64_t layers = 0;          // repeated layers (ops with count == layers belong to them)
  int64_t hidden = 0;          // model width
  // Bytes one pipeline stage sends the next per microbatch (eager: the FP32 activations,
  // micro_batch x seq x hidden; serving: hidden states and residual in the activation dtype).
  double pipeline_send_bytes = 0;
  Parallelism par;
  Mode mode = Mode::kInference;
  bool fused = false;
  double parameters = 0;  // for the optimizer estimate
  // Training with expert parallelism (par.ep > 1): the model's expert weights
  // (expert_parameters), of `parameters`, which ep splits and the dp x cp / ep ranks holding
  // the same experts reduce; 0 otherwise.
  double expert_parameters = 0;
  // FP8 training (build_llm_training_graph): the FP8 GEMMs' weights on one tp rank, all stages
  // (fp8_training_gemm_parameters / tp), cast to FP8 once a step (ModelForecast::
  // fp8_weight_cast_ms); 0 otherwise.
  double fp8_weight_parameters = 0;
  std::vector<GraphOp> ops;
  // Serving graphs (kPrefill/kDecode): GEMM dtype, KV-cache dtype, and per sequence the
  // prompt tokens (prefill) or the tokens cached before the new one (decode).
  DType dtype = DType::kFp32, kv_dtype = DType::kFp32;
  // Serving a MoE model: its routed experts' dtype (serving_expert_dtype); none for a dense model.
  std::optional<DType> expert_dtype;
  int64_t context = 0;
  // serving MoE: token routing (kUniformRouting, the default; 0 balanced; else a power law of this exponent)
  double routing_alpha = kUniformRouting;
  int64_t sliding_window = 0;  // serving: the model's attention window (ModelConfig), 0 = none
  int64_t window_layers = 0;   // the layers it applies to (windowed_layers), 0 = none
  bool chunked_window = false; // the window is Llama 4's aligned chunks (ModelConfig::chunked_attention)
  ServingStep step;  // build_serving_step_graph: the step it is (empty for every other graph)
  int64_t cached_prefix = 0;  // build_serving_graph's prefill: prompt tokens already cached
  // The model as Hugging Face transformers runs it eagerly (build_hf_eager_prefill_graph,
  // build_llm_training_graph's hf_eager), not an engine's fused kernels.
  bool hf_eager = false;
  // Bytes of a gradient, and of each value the optimizer keeps, a parameter: FP32 (Megatron-LM's
  // main gradients and AdamW state; the eager FP32 graphs), but the parameters' own dtype in
  // Hugging Face's eager model (its parameters in BF16/FP16, torch's AdamW on them).
  double state_bytes() const { return hf_eager ? dtype_size(dtype) : 4.0; }
  // Eager PyTorch, whose host issues the kernels one call at a time: NeuSight's FP32 inference
  // and training graphs and Hugging Face's eager model (not a fused graph, a serving engine or
  // Megatron-LM's mixed-precision step).
  bool eager() const {
    return hf_eager || (!fused && (mode == Mode::kInference || (mode == Mode::kTraining && dtype == DType::kFp32)));
  }
};

// Throws ConfigError for non-positive batch/seq, seq above the model's positions, or a
// parallel layout that does not divide the batch, heads or layers.
OpGraph build_op_graph(const ModelConfig& m, int64_t batch, int64_t seq, Mode mode,
                       const Parallelism& par = {});
// One step of an LLM serving engine on each GPU of a tensor-parallel group, for the decoder
// families (is_llm_family): kPrefill runs `batch` prompts of `tokens` tokens; kDecode one new
// token for each of `batch` sequences whose KV cache holds `tokens` tokens before it. GEMMs
// are tensor-core `gemm` kernels in `dtype` (fp8: FP8 weights and activations, BF16 elsewhere),
// attention is FlashAttention-style prefill/decode over a `kv_dtype` cache (over the model's
// sliding window where it has one), and RMSNorm (with the engines' fused residual add), RoPE and
// SiLU-mul are memory ops; MoE layers are a router GEMM and one fused
// MoE kernel (family moe). Rules: docs/model-graphs.md#serving. Throws ConfigError for other
// model types, sizes out of range, or a tp that does not divide heads and FFN, or neither
// divides nor is a multiple of the KV heads (serving_kv_heads_per_rank).
// MoE layers: `ep` expert-parallel ranks of the tp group (must divide tp and the experts; a
// dense model takes 1), tokens routed by `routing_alpha` (kUniformRouting: each token's picks at
// random; 0 balanced, as the benchmark spreads them; else power law, the forecast of the most
// loaded rank).
// KV heads each of `tp` tensor-parallel ranks holds in a serving engine: kv_heads / tp, or 1 when
// tp is a multiple of the KV heads (vLLM and SGLang then replicate each KV head, and its K/V
// projection weights and cache, on tp / kv_heads ranks). ConfigError when neither divides.
int64_t serving_kv_heads_per_rank(const ModelConfig& m, int64_t tp);
// Serving with `tp` ranks, with or without DP attention (Parallelism::dp_attention): the ranks
// that split the attention heads (tp, or 1: every rank holds every head), and of `n` sequences
// those the busiest rank attends and caches (all of them, or ceil(n / tp)).
inline int64_t attention_tp(int64_t tp, bool dp_attention) { return dp_attention ? 1 : tp; }
inline int64_t attention_share(int64_t n, int64_t tp, bool dp_attention) {
  return dp_attention ? (n + tp - 1) / tp : n;
}
// A MoE model's routing (its top-k, experts and expert groups).
ExpertRouting expert_routing(const ModelConfig& m);
// The chance that a token's top-k distinct experts, drawn by a balanced router, include one of
// the experts that the first `ranks` of `ep` ranks hold (experts / ep each, in order): without
// groups 1 - C(E - E ranks / ep, k) / C(E, k); with group-limited routing the mean over the
// token's equally likely sets of groups of C(S - s, k) / C(S, k) missed, S the experts of its
// groups and s those of them the ranks hold. DeepEP's normal kernels send a token once to each
// rank it hits (ranks = 1) and, between nodes, once to each node (ranks = a node's; every rank
// and node taken as the first's).
double deepep_hit_probability(const ExpertRouting& r, int64_t ep, int64_t ranks);
// The dtype a serving graph's fused MoE kernels take for a MoE model served in `dtype`: the
// config's expert_dtype (gpt-oss's MXFP4, or `predict --expert-dtype`) where it has one, else
// `dtype`. ConfigError naming the expert dtype when it is not one the MoE family models or the
// model has no experts.
DType serving_expert_dtype(const ModelConfig& m, DType dtype);
// Bytes an expert weight takes in memory served in `dtype`: its dtype's (weight_bytes_per_elem),
// or, for int4 experts with the config's own scale group size (expert_group_size), 4 bits plus
// a 16-bit scale per group.
double serving_expert_bytes_per_weight(const ModelConfig& m, DType dtype);
// Why `d` cannot be the dtype of m's routed experts ("" when it can): m has no experts, or the
// MoE family does not model `d`.
std::string expert_dtype_refusal(const ModelConfig& m, DType d);
// Pipeline parallelism (`pp` > 1 stages of layers, as pipeline_stage_layers splits them): the
// engines keep min(pp, batch) microbatches in flight, so the graph is one microbatch of
// ceil(batch / microbatches) sequences (g.micro_batch; g.batch stays `batch`), with
// g.par.pp and g.par.microbatches set and each stage boundary sending the hidden states and
// the residual (g.pipeline_send_bytes).
// `cached_prefix` (kPrefill): the first tokens of every prompt are in the KV cache already
// (prefix caching: a shared system prompt), so the step runs the other tokens - cached_prefix,
// whose attention also reads the cached ones (attention_chunk_q); ConfigError naming
// --cached-prefix unless 0 <= cached_prefix < tokens.
// `dp_attention` (Parallelism::dp_attention): the graph is the busiest rank's, its attention
// that of ceil(sequences / tp) of them with every head (the embedding, norms, attention and
// o_proj on their tokens), the FFN's over every token of the step, its all-gather and
// reduce-scatter one all-reduce's traffic; no all-reduce after o_proj. ConfigError naming
// --dp-attention with tp 1 or pp > 1.
// `moe_all_to_all` (Parallelism::moe_all_to_all, needs dp_attention and ep = tp): each MoE
// layer's router and shared experts on the rank's own tokens, its experts reached by DeepEP's
// dispatch and combine (KernelCall::deepep; low-latency kernels in decode, normal ones
// otherwise; FP8 dispatch for FP8 experts, the combine in the activation dtype); dense
// layers as under DP attention. ConfigError naming --moe-a2a otherwise.
OpGraph build_serving_graph(const ModelConfig& m, Mode phase, int64_t batch, int64_t tokens, DType dtype,
                            DType kv_dtype, int64_t tp, int64_t ep = 1, double routing_alpha = kUniformRouting, int64_t pp = 1,
                            int64_t cached_prefix = 0, bool dp_attention = false, bool moe_all_to_all = false);
// A scheduled step of one tp group (no pipeline stages): the tokens of every prompt chunk and
// decoding sequence through each GEMM and memory op, one attention kernel per chunk group
// (attention_chunk_q: a chunk after a cached prefix) and one for the decoding sequences, and
// the LM head over the last token of each sequence of the step (vLLM computes the logits of a
// partial prompt too and drops them). Mode kPrefill when the step has prompt chunks, else
// kDecode; g.step is `step`. ConfigError (prefixed "serving step:") for empty steps, chunk sizes
// out of range or positions beyond the model's, and the layout errors of build_serving_graph.
// `dp_attention`: as build_serving_graph's, each prompt-chunk group and the decoding sequences
// spread evenly over the ranks (the busiest rank takes ceil(sequences / tp) of each).
OpGraph build_serving_step_graph(const ModelConfig& m, const ServingStep& step, DType dtype, DType kv_dtype, int64_t tp,
                                 int64_t ep = 1, double routing_alpha = kUniformRouting, bool dp_attention = false,
                                 bool moe_all_to_all = false);
// Mixed-precision training of the decoder families (is_llm_family) as Megatron-LM runs it
// (docs/model-graphs.md, "Mixed-precision training"): `dtype` (bf16 or fp16; fp8 below) weights and
// activations, tensor-core GEMMs, FlashAttention, fused RMSNorm/RoPE/SiLU-mul kernels, the LM
// head and a vocab-parallel cross-entropy; Megatron-LM's column/row tensor parallelism
// (par.sequence_parallel: its sequence parallelism, below), 1F1B pipeline stages, data parallelism (batch = the global batch,
// split over dp and microbatches). Backward kernels:
//   GEMM y = x W^T, x (t, n), W (k, n): the input gradient (t, k -> n) and the weight gradient
//     (k rows, t inner, n out) as gemm kernels of their own shapes;
//   FlashAttention: 2.5x the forward's time (its backward runs five matmul passes to the
//     forward's two; no backward timings in the data);
//   fused MoE: 2x the forward's time (the input and the weight gradients of each grouped GEMM);
//   RMSNorm: a pass over 1.5x the rows (reads x and dy, writes dx); SiLU-mul: over 5/3 the rows
//     (reads gate, up and dy, writes both gradients); RoPE: the same rotation; each residual
//     add sums the two branches' gradients;
//   loss: reads the logits forward, reads them and writes their gradient backward.
// `recompute` (full activation checkpointing): each layer's forward runs again in its backward.
// par.sequence_parallel: the RMSNorms and residual adds run on tokens / tp rows.
// dtype fp8: Transformer Engine's FP8 recipe as Megatron-LM runs it (--fp8-format hybrid,
// per-tensor scales): the layers' dense GEMMs (QKV, o_proj, gate_up, down; all three of each:
// forward, input and weight gradients) in fp8, each with its input's quantisation as the gemm
// family counts it; weights, activations, attention, norms, collectives, the router, the fused
// MoE (the moe family's FP8 is SGLang's serving kernels', not Transformer Engine's grouped GEMMs:
// docs/model-graphs.md) and the LM head in BF16 (training_storage_dtype);
// g.fp8_weight_parameters for the weights' casts.
// ConfigError for other model types, fp32/fp8_block/fp8_static, sizes or layouts out of range.
// `hf_eager`: the model as Hugging Face transformers trains it without compilation (bf16/fp16,
// attn_implementation "sdpa"; data parallelism, microbatches and recompute, its gradient
// checkpointing, only): the layers check_hf_eager_model describes, the LM head over every token
// and transformers' ForCausalLMLoss (logits.float(), log_softmax, nll_loss) with their backward.
OpGraph build_llm_training_graph(const ModelConfig& m, int64_t batch, int64_t seq, DType dtype,
                                 const Parallelism& par, bool recompute = false, bool hf_eager = false);
// Whether transformers' eager decoder is built for m with prompts of `seq` tokens: the eager
// decoder (LlamaForCausalLM and its kin: llama, mistral, qwen2,
// qwen3, phi3) in bf16/fp16 with attn_implementation "sdpa", on one GPU (`--hf-eager`;
// docs/model-graphs.md, "Hugging Face eager"): every module's own PyTorch kernels instead of an
// engine's fused ones. RMSNorm is its eight kernels (to FP32, pow, mean, + eps, rsqrt, x *
// rsqrt, back to the dtype, x weight), RoPE five on q and five on k (x cos, neg, cat, x sin,
// +), SiLU-mul two, the attention output's transpose a copy, q/k/v and gate/up separate GEMMs
// where the model's modules are (Phi-3's fused ones stay fused), the residual adds their own
// kernels, K and V concatenated into the DynamicCache, SDPA as the `context_attention` family;
// backward (`backward`) each kernel's autograd formula (RMSNorm 16 kernels, RoPE 7 a tensor,
// SiLU-mul 3). Every elementwise kernel is costed by the memory_op family's residual add
// over the same bytes (eager_pass_q). ConfigError naming --hf-eager for models it does not
// build (MoE, MLA, Gemma's sandwich norms and soft-caps, Llama 4's chunked attention) and for
// a prompt as long as a sliding window or longer (SDPA then takes a materialised mask).
void check_hf_eager_model(const ModelConfig& m, int64_t seq);
// An eager elementwise kernel over `rows` x `width` elements moving `bytes_per_elem` bytes
// each: the memory_op family's residual add (two reads, one write in `act`) of the same bytes.
KernelQuery eager_pass_q(int64_t rows, int64_t width, double bytes_per_elem, DType act);
// The prefill of `batch` prompts of `seq` tokens in Hugging Face's eager model (no_grad, its
// DynamicCache filled, logits of each prompt's last token, the first token sampled): the time
// to first token of `model.generate` without an engine. ConfigError as check_hf_eager_model, and
// for dtypes other than bf16/fp16.
OpGraph build_hf_eager_prefill_graph(const ModelConfig& m, int64_t batch, int64_t seq, DType dtype);
// ConfigError naming --pp unless 1 <= pp <= layers.
void check_pipeline_stages(int64_t layers, int64_t pp);
// Parameters on one training rank: `parameters` split tp x pp ways by a replica, of which the
// `expert_parameters` (0 without expert parallelism) also ep ways; with `sharded` (ZeRO's shard
// of a stage) the rest divided over the dp x cp ranks and the experts' over the dp x cp / ep
// ranks that hold the same experts.
double rank_parameters(double parameters, double expert_parameters, const Parallelism& par, bool sharded);
// Training's expert parallelism (Parallelism::ep): why the layout cannot run it, naming --ep
// ("" where it can): unless 1 <= ep <= 4096 and, above 1, the model has experts, ep divides
// both dp x cp and the experts, and ep and cp divide one another (Megatron-Core's ep ranks are
// drawn from the dp x cp ranks, cp first). The check_ function throws it as a ConfigError.
std::string training_expert_parallel_error(const ModelConfig& m, const Parallelism& par);
void check_training_expert_parallel(const ModelConfig& m, const Parallelism& par);
// Training's context parallelism (Parallelism::cp): why the layout cannot run it, naming --cp
// ("" where it can): unless 1 <= cp <= 4096 and, above 1, 2 x cp divides seq and the model
// has no sliding window. The check_ function throws it as a ConfigError.
std::string training_context_parallel_error(const ModelConfig& m, int64_t seq, const Parallelism& par);
void check_training_context_parallel(const ModelConfig& m, int64_t seq, const Parallelism& par);
// Training's interleaved pipeline (Parallelism::vpp): why the layout cannot run it, naming
// --vpp ("" where it can): unless 1 <= vpp <= 4096 and, above 1, pp > 1, the layers split into
// pp x vpp equal chunks and the microbatches are a multiple of pp (Megatron-LM's checks for the
// interleaved schedule). check_virtual_pipeline throws that reason as a ConfigError.
std::string virtual_pipeline_error(const ModelConfig& m, const Parallelism& par);
void check_virtual_pipeline(const ModelConfig& m, const Parallelism& par);
// Training with pipeline stages: the microbatches whose activations the first pipeline rank
// holds at its peak, counted in whole-stage units (layers / pp layers each), and those of its
// first model chunk (the one with the embedding). 1F1B: min(pp, microbatches) of both; the
// interleaved schedule's warm-up runs pp x vpp + pp - 1 chunk forwards before the first
// backward (2 pp - 1 of them of the first chunk), capped by the microbatches x vpp there are.
struct PipelineInFlight {
  double stage_microbatches = 1;
  double first_chunk_microbatches = 1;
};
PipelineInFlight pipeline_in_flight(const Parallelism& par);
// ConfigError naming --zero unless 0 <= zero <= 3 (Parallelism::zero).
void check_zero_stage(int zero);
// Layers of each of `pp` pipeline stages, in order, as vLLM splits them (get_pp_indices):
// layers / pp each, the remainder one apiece to the stages before the last, from the last but
// one backwards (the last stage also holds the head). Even splits are Megatron-LM's too.
// ConfigError unless 1 <= pp <= layers.
std::vector<int64_t> pipeline_stage_layers(int64_t layers, int64_t pp);
// Expected number of distinct experts hit when `tokens` tokens each pick `k` of `e` experts
// uniformly: e (1 - (1 - k/e)^tokens), at least 1.
double expected_experts_hit(int64_t tokens, int64_t k, int64_t e);
// The model types the graph builder has an architecture row for (kArchTable), in its order.
std::vector<std::string> graph_model_types();

// torch.compile-style fusion for inference: maximal runs of non-GEMM operators become one
// kernel each (costed as one pass over the run's external inputs and final output, routed to
// the softmax/layernorm/elementwise model of its heaviest member). GEMMs stay.
OpGraph fuse_op_graph(const OpGraph& g);

// Helpers used by the builders and tests.
KernelQuery linear_q(int64_t m, int64_t n, int64_t k);          // (M,N) x (N->K)
KernelQuery bmm_q(int64_t b, int64_t m, int64_t n, int64_t k);  // (B,M,N) x (B,N,K)
KernelQuery vec_q(OpKind op, int64_t rows, int64_t h, DType d = DType::kFp32);

}  // namespace tilecast
