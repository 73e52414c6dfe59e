#include "core/op_kind.h"

#include "core/error.h"

namespace tilecast {



namespace {
constexpr bool table_in_order() {
  for (size_t i = 0; i < kOpTable.size(); ++i)
    if (static_cast<size_t>(kOpTable[i].kind) != i) return false;
  return true;
}
}  // namespace
static_assert(table_in_order(), "kOpTable must follow the order of OpKind");

const OpInfo& op_info(OpKind k) { return kOpTable.at(static_cast<size_t>(k)); }
const char* op_name(OpKind k) { return op_info(k).name; }
Family op_family(OpKind k) { return op_info(k).family; }

bool try_op_kind_from_string(const std::string& name, OpKind* out) {
  for (const auto& info : kOpTable)
    if (name == info.name) {
      *out = info.kind;
      return true;
    }
  if (name == "layernorm" || name == "layer_norm") {
    *out = OpKind::kLayerNorm;
    return true;
  }
  if (name == "attention_prefill") {
    *out = OpKind::kAttnPrefill;
    return true;
  }
  if (name == "attention_decode") {
    *out = OpKind::kAttnDecode;
    return true;
  }
  if (name == "rms_norm") {
    *out = OpKind::kRmsNorm;
    return true;
  }
  return false;
}

OpKind op_kind_from_string(const std::string& name) {
  OpKind k;
  if (try_op_kind_from_string(name, &k)) return k;
  std::string all;
  for (const auto& info : kOpTable) all += std::string(all.empty() ? "" : ", ") + info.name;
  throw DataError("unknown op '" + name + "' (known: " + all + ")");
}

const char* family_name(Family f) {
  switch (f) {
    case Family::kBmm: return "bmm";
    case Family::kLinear: return "linear";
    case Family::kElementwise: return "elementwise";
    case Family::kSoftmax: return "softmax";
    case Family::kLayerNorm: return "layernorm";
    case Family::kGemm: return "gemm";
    case Family::kAttnPrefill: return "context_attention";
    case Family::kAttnDecode: return "generation_attention";
    case Family::kMemoryOp: return "memory_op";
    case Family::kMoe: return "moe";
    case Family::kCount: break;
  }
  return "?";
}

Family family_from_string(const std::string& name) {
  for (Family f : kAllFamilies)
    if (name == family_name(f)) return f;
  if (name == "ln") return Family::kLayerNorm;
  if (name == "attention_prefill") return Family::kAttnPrefill;
  if (name == "attention_decode") return Family::kAttnDecode;
  if (name == "vec" || name == "elem") return Family::kElementwise;
  throw ConfigError("unknown predictor family '" + name +
                    "' (bmm, linear, elementwise, softmax, layernorm, gemm, attention_prefill, attention_decode, memory_op, moe)");
}

}  // namespace tilecast
