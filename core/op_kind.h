#pragma once
// Kernel op kinds and the predictor family each belongs to.
#include <array>
#include <string>

namespace tilecast {

enum class OpKind {
  kBmm,
  kLinear,
  kAdd,
  kAddU,
  kMul,
  kMulU,
  kDiv,
  kDivU,
  kPow,
  kPowU,
  kRelu,
  kGelu,
  kTanh,
  kSoftmax,
  kLayerNorm,
  kGemm,  // tensor-core GEMM (BF16/FP16/FP8/TF32), as serving engines launch it
  kAttnPrefill,  // causal FlashAttention-style prefill (aiconfigurator's context_attention)
  kAttnDecode,   // decode attention over a KV cache (generation_attention)
  // Memory-bound LLM layer ops in the model's dtype (vLLM/SGLang custom kernels): a physics
  // model with a per-launch floor, fitted on measured layer ops (family memory_op).
  kRmsNorm,      // RMSNorm of (tokens, H)
  kSiluMul,      // SwiGLU activation: silu(gate) * up, (tokens, 2F) -> (tokens, F)
  kRope,         // rotary embedding of q and k in place: (tokens, (heads + kv_heads) * head_dim)
  kResidualAdd,  // residual add of (tokens, H)
  kMoe,          // fused MoE layer: top-k routing, grouped gate_up GEMM, SiLU-mul, grouped down GEMM
  kCount
};

// One MLP per family.
enum class Family { kBmm, kLinear, kElementwise, kSoftmax, kLayerNorm, kGemm, kAttnPrefill, kAttnDecode, kMemoryOp, kMoe, kCount };

struct OpInfo {
  OpKind kind;
  const char* name;       // NeuSight's OPName ("ln" for layer norm)
  Family family;
  double bytes_per_elem;  // DRAM traffic per output element (inputs + output) in elements of 4 B
                          // (memory ops: in elements of the query's dtype)
  double flops_per_elem;  // arithmetic per output element (approximate instruction cost)
  bool scalar_operand;    // "u" variants: tensor op Python scalar
};

// Order must follow OpKind (checked by static_assert in op_kind.cpp).
// bytes: binary tensor ops read 2 and write 1 FP32 element (12 B); unary/scalar ops 8 B.
// flops: rough instruction cost per element (exp/erf/log-based ops are multi-instruction);
// they only place the op on the roofline, the MLP learns the rest.
inline constexpr std::array<OpInfo, static_cast<size_t>(OpKind::kCount)> kOpTable = {{
    {OpKind::kBmm, "bmm", Family::kBmm, 0, 0, false},
    {OpKind::kLinear, "linear", Family::kLinear, 0, 0, false},
    {OpKind::kAdd, "add", Family::kElementwise, 12, 1, false},
    {OpKind::kAddU, "addu", Family::kElementwise, 8, 1, true},
    {OpKind::kMul, "mul", Family::kElementwise, 12, 1, false},
    {OpKind::kMulU, "mulu", Family::kElementwise, 8, 1, true},
    {OpKind::kDiv, "div", Family::kElementwise, 12, 4, false},
    {OpKind::kDivU, "divu", Family::kElementwise, 8, 4, true},
    {OpKind::kPow, "pow", Family::kElementwise, 12, 16, false},
    {OpKind::kPowU, "powu", Family::kElementwise, 8, 16, true},
    {OpKind::kRelu, "relu", Family::kElementwise, 8, 1, false},
    {OpKind::kGelu, "gelu", Family::kElementwise, 8, 20, false},
    {OpKind::kTanh, "tanh", Family::kElementwise, 8, 10, false},
    {OpKind::kSoftmax, "softmax", Family::kSoftmax, 8, 5, false},
    {OpKind::kLayerNorm, "ln", Family::kLayerNorm, 8, 8, false},
    {OpKind::kGemm, "gemm", Family::kGemm, 0, 0, false},
    {OpKind::kAttnPrefill, "context_attention", Family::kAttnPrefill, 0, 0, false},
    {OpKind::kAttnDecode, "generation_attention", Family::kAttnDecode, 0, 0, false},
    // Memory ops: elements moved per element of the (tokens, H) query (dtype-sized).
    {OpKind::kRmsNorm, "rmsnorm", Family::kMemoryOp, 2, 4, false},
    {OpKind::kSiluMul, "silu_mul", Family::kMemoryOp, 3, 6, false},
    {OpKind::kRope, "rope", Family::kMemoryOp, 2, 3, false},
    {OpKind::kResidualAdd, "residual_add", Family::kMemoryOp, 3, 1, false},
    {OpKind::kMoe, "moe", Family::kMoe, 0, 0, false},
}};

const OpInfo& op_info(OpKind k);
const char* op_name(OpKind k);
Family op_family(OpKind k);
// Accepts NeuSight names plus "layernorm"/"layer_norm"; throws DataError on unknown names.
OpKind op_kind_from_string(const std::string& name);
bool try_op_kind_from_string(const std::string& name, OpKind* out);

// One row per kernel family: what the rest of tilecast asks of a family is read from here
// (names, where its data comes from, how it is modelled, its shape schema for --shape).
enum class FamilyData { kNeuSight, kLlmKernels };  // ../shared/neusight or ../shared/llm-kernels
enum class FamilyModel { kMlp, kPhysics };         // a trained network, or fitted coefficients
struct FamilyTraits {
  Family family;
  const char* name;     // manifest key, --family value, file stem of collected data
  const char* alias1;   // other accepted spellings ("" = none)
  const char* alias2;
  FamilyData data;
  FamilyModel model;
  bool dtyped;          // takes --dtype beyond fp32 (tensor cores, serving dtypes)
  const char* shape;    // --shape schema, for help and errors
};
// Order must follow Family (checked by static_assert in op_kind.cpp).
inline constexpr std::array<FamilyTraits, static_cast<size_t>(Family::kCount)> kFamilyTable = {{
    {Family::kBmm, "bmm", "", "", FamilyData::kNeuSight, FamilyModel::kMlp, false, "B,M,N,K"},
    {Family::kLinear, "linear", "", "", FamilyData::kNeuSight, FamilyModel::kMlp, false, "M,N,K"},
    {Family::kElementwise, "elementwise", "vec", "elem", FamilyData::kNeuSight, FamilyModel::kMlp, false, "B,H"},
    {Family::kSoftmax, "softmax", "", "", FamilyData::kNeuSight, FamilyModel::kMlp, false, "B,H"},
    {Family::kLayerNorm, "layernorm", "ln", "", FamilyData::kNeuSight, FamilyModel::kMlp, false, "B,H"},
    {Family::kGemm, "gemm", "", "", FamilyData::kLlmKernels, FamilyModel::kMlp, true, "M,N,K"},
    {Family::kAttnPrefill, "context_attention", "attention_prefill", "", FamilyData::kLlmKernels, FamilyModel::kMlp,
     true, "B,S,H,KV,D"},
    {Family::kAttnDecode, "generation_attention", "attention_decode", "", FamilyData::kLlmKernels, FamilyModel::kMlp,
     true, "B,CTX,H,KV,D"},
    {Family::kMemoryOp, "memory_op", "", "", FamilyData::kLlmKernels, FamilyModel::kPhysics, true, "T,W"},
    {Family::kMoe, "moe", "", "", FamilyData::kLlmKernels, FamilyModel::kMlp, true, "T,H,F,K,E"},
}};
inline const FamilyTraits& family_traits(Family f) { return kFamilyTable.at(static_cast<size_t>(f)); }

const char* family_name(Family f);  // the table's name: "bmm", ..., "moe"
Family family_from_string(const std::string& name);  // name or alias; throws ConfigError listing them
constexpr std::array<Family, 10> kAllFamilies = {Family::kBmm,       Family::kLinear,     Family::kElementwise,
                                                 Family::kSoftmax,   Family::kLayerNorm,  Family::kGemm,
                                                 Family::kAttnPrefill, Family::kAttnDecode, Family::kMemoryOp,
                                                 Family::kMoe};
static_assert(kAllFamilies.size() == static_cast<size_t>(Family::kCount), "kAllFamilies lists every family");
// MLP families (every family but memory_op, whose physics coefficients are fitted, not learnt).
inline bool is_mlp_family(Family f) { return family_traits(f).model == FamilyModel::kMlp; }
// NeuSight's FP32 families (trained on its five GPUs) and the LLM-era ones (../shared/llm-kernels).
constexpr std::array<Family, 5> kNeuSightFamilies = {Family::kBmm, Family::kLinear, Family::kElementwise,
                                                     Family::kSoftmax, Family::kLayerNorm};
inline bool is_llm_kernel_family(Family f) { return family_traits(f).data == FamilyData::kLlmKernels; }
inline bool is_attention(Family f) { return f == Family::kAttnPrefill || f == Family::kAttnDecode; }
// SIMT FP32 GEMMs of NeuSight's data (tiles from the tile table).
inline bool is_gemm(Family f) { return f == Family::kBmm || f == Family::kLinear; }
// Any family whose shape is M,N,K.
inline bool has_mnk(Family f) { return is_gemm(f) || f == Family::kGemm; }

}  // namespace tilecast
