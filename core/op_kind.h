#pragma once
// Kernel op kinds and the predictor family each belongs to.
#include <array>
#include <string>
#include <vector>

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
  kSampler,      // the engine's sampler over one step's FP32 logits: (sequences, vocab)
  kMoe,          // fused MoE layer: top-k routing, grouped gate_up GEMM, SiLU-mul, grouped down GEMM
  kCount
};

// Element type of a kernel's inputs. fp8 is per-tensor scaled with the activation's scale
// computed per call (dynamic: an absmax pass, then the quantising pass), fp8_static per-tensor
// with a calibrated activation scale (the quantising pass only), fp8_block block-scaled (128x128
// weight scales, 1x128 activation groups, DeepSeek-style); all run on the FP8 tensor-core peak.
// int4 and mxfp4 are weight-only 4-bit formats (W4A16): INT4 weights with a 16-bit scale per
// group of 128 (GPTQ/AWQ checkpoints, Marlin kernels), MXFP4 weights with an 8-bit power-of-two
// scale per block of 32 (OCP microscaling, gpt-oss's experts); their activations are BF16 and
// the weights are dequantised to BF16 for the tensor cores. Fused MoE only (the data's int4_wo
// and w4a16_mxfp4 rows). nvfp4 is NVIDIA's FP4 (E2M1) with an FP8 scale per block of 16 for
// weights and activations alike (W4A4: the activation quantised per call), on Blackwell's FP4
// tensor-core peak; GEMM and fused MoE (the B200's nvfp4 rows). mxfp4_mxfp8 is W4A8: MXFP4
// weights (as mxfp4) and the BF16 activation quantised per call to MXFP8 (E4M3, an 8-bit
// power-of-two scale per block of 32), multiplied natively by Blackwell's block-scaled tensor
// cores at the FP8 peak; fused MoE only (the B200's w4a8_mxfp4_mxfp8 rows, gpt-oss's experts).
// Names, sizes and parsing: core/kernel.h.
enum class DType { kFp32, kTf32, kFp16, kBf16, kFp8, kFp8Block, kFp8Static, kInt4, kMxfp4, kNvfp4, kMxfp4Mxfp8 };
constexpr DType kAllDTypes[] = {DType::kFp32,  DType::kTf32,  DType::kFp16,      DType::kBf16,
                                DType::kFp8,   DType::kFp8Block, DType::kFp8Static, DType::kInt4,
                                DType::kMxfp4, DType::kNvfp4, DType::kMxfp4Mxfp8};

// A set of dtypes, one bit per DType.
using DTypeSet = unsigned;
constexpr DTypeSet dtype_bit(DType d) { return 1u << static_cast<unsigned>(d); }
constexpr DTypeSet kFp32Only = dtype_bit(DType::kFp32);
// The model's activation dtypes (memory-bound layer ops run in them).
constexpr DTypeSet kActivationDTypes = kFp32Only | dtype_bit(DType::kFp16) | dtype_bit(DType::kBf16);
// Attention and KV caches: no GEMM scaling scheme (block or static FP8 scaling).
constexpr DTypeSet kAttentionDTypes =
    kActivationDTypes | dtype_bit(DType::kTf32) | dtype_bit(DType::kFp8);
constexpr DTypeSet kGemmDTypes =
    kAttentionDTypes | dtype_bit(DType::kFp8Block) | dtype_bit(DType::kFp8Static) | dtype_bit(DType::kNvfp4);
// Fused MoE: the data's bf16, fp16, fp8 (per-tensor), fp8_block, the weight-only int4 and
// mxfp4, nvfp4 and mxfp4_mxfp8; fp32 from `tilecast collect`.
constexpr DTypeSet kMoeDTypes = kActivationDTypes | dtype_bit(DType::kFp8) | dtype_bit(DType::kFp8Block) |
                                dtype_bit(DType::kInt4) | dtype_bit(DType::kMxfp4) | dtype_bit(DType::kNvfp4) |
                                dtype_bit(DType::kMxfp4Mxfp8);

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
    // The sampler reads each sequence's logits (temperature, softmax, the draw): one element
    // of the query's dtype (FP32 in vLLM) moved per logit; its passes are in the fitted factor.
    {OpKind::kSampler, "sampler", Family::kMemoryOp, 1, 8, false},
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
  DTypeSet dtypes;      // the dtypes it models (NeuSight's families: fp32 only)
  DType default_dtype;  // predict-kernel's --dtype when none is given
  const char* shape;    // --shape schema, for help and errors
};
// Order must follow Family (checked by static_assert in op_kind.cpp).
inline constexpr std::array<FamilyTraits, static_cast<size_t>(Family::kCount)> kFamilyTable = {{
    {Family::kBmm, "bmm", "", "", FamilyData::kNeuSight, FamilyModel::kMlp, kFp32Only, DType::kFp32, "B,M,N,K"},
    {Family::kLinear, "linear", "", "", FamilyData::kNeuSight, FamilyModel::kMlp, kFp32Only, DType::kFp32, "M,N,K"},
    {Family::kElementwise, "elementwise", "vec", "elem", FamilyData::kNeuSight, FamilyModel::kMlp, kFp32Only,
     DType::kFp32, "B,H"},
    {Family::kSoftmax, "softmax", "", "", FamilyData::kNeuSight, FamilyModel::kMlp, kFp32Only, DType::kFp32, "B,H"},
    {Family::kLayerNorm, "layernorm", "ln", "", FamilyData::kNeuSight, FamilyModel::kMlp, kFp32Only, DType::kFp32,
     "B,H"},
    {Family::kGemm, "gemm", "", "", FamilyData::kLlmKernels, FamilyModel::kMlp, kGemmDTypes, DType::kBf16, "M,N,K"},
    {Family::kAttnPrefill, "context_attention", "attention_prefill", "", FamilyData::kLlmKernels, FamilyModel::kMlp,
     kAttentionDTypes, DType::kBf16, "B,S,H,KV,D"},
    {Family::kAttnDecode, "generation_attention", "attention_decode", "", FamilyData::kLlmKernels, FamilyModel::kMlp,
     kAttentionDTypes, DType::kBf16, "B,CTX,H,KV,D"},
    {Family::kMemoryOp, "memory_op", "", "", FamilyData::kLlmKernels, FamilyModel::kPhysics, kActivationDTypes,
     DType::kBf16, "T,W"},
    {Family::kMoe, "moe", "", "", FamilyData::kLlmKernels, FamilyModel::kMlp, kMoeDTypes, DType::kBf16, "T,H,F,K,E"},
}};
inline const FamilyTraits& family_traits(Family f) { return kFamilyTable.at(static_cast<size_t>(f)); }

const char* family_name(Family f);  // the table's name: "bmm", ..., "moe"
Family family_from_string(const std::string& name);  // name or alias; throws ConfigError listing them
std::string family_names();                          // every family's name, comma-separated
std::vector<OpKind> family_ops(Family f);            // the family's ops, in kOpTable order
constexpr std::array<Family, 10> kAllFamilies = {Family::kBmm,       Family::kLinear,     Family::kElementwise,
                                                 Family::kSoftmax,   Family::kLayerNorm,  Family::kGemm,
                                                 Family::kAttnPrefill, Family::kAttnDecode, Family::kMemoryOp,
                                                 Family::kMoe};
static_assert(kAllFamilies.size() == static_cast<size_t>(Family::kCount), "kAllFamilies lists every family");
// Takes dtypes beyond fp32 (tensor cores, serving dtypes), i.e. its rows and queries carry one.
inline bool is_dtyped(Family f) { return family_traits(f).dtypes != kFp32Only; }
inline bool family_models_dtype(Family f, DType d) { return (family_traits(f).dtypes & dtype_bit(d)) != 0; }
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
