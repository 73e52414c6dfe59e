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

namespace {
constexpr bool family_table_in_order() {
  for (size_t i = 0; i < kFamilyTable.size(); ++i)
    if (static_cast<size_t>(kFamilyTable[i].family) != i) return false;
  return true;
}
}  // namespace
static_assert(family_table_in_order(), "kFamilyTable must follow the order of Family");

const char* family_name(Family f) {
  TC_CHECK(f != Family::kCount, "family_name of Family::kCount");
  return family_traits(f).name;
}

Family family_from_string(const std::string& name) {
  std::string all;
  for (const auto& t : kFamilyTable) {
    if (name == t.name || (*t.alias1 && name == t.alias1) || (*t.alias2 && name == t.alias2)) return t.family;
    all += std::string(all.empty() ? "" : ", ") + t.name;
  }
  throw ConfigError("unknown predictor family '" + name + "' (" + all + ")");
}

}  // namespace tilecast
