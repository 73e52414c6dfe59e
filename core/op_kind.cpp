#include "core/op_kind.h"

#include "core/error.h"

namespace tilecast {

namespace {
// True if row i of a table describes enumerator i (the tables are indexed by the enum).
template <typename Row, size_t N, typename Key>
constexpr bool rows_in_enum_order(const std::array<Row, N>& table, Key key) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(key(table[i])) != i) return false;
  return true;
}
}  // namespace
static_assert(rows_in_enum_order(kOpTable, [](const OpInfo& r) { return r.kind; }),
              "kOpTable must follow the order of OpKind");
static_assert(rows_in_enum_order(kFamilyTable, [](const FamilyTraits& r) { return r.family; }),
              "kFamilyTable must follow the order of Family");

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
  TC_CHECK(f != Family::kCount, "family_name of Family::kCount");
  return family_traits(f).name;
}

std::string family_names() {
  std::string all;
  for (const auto& t : kFamilyTable) all += std::string(all.empty() ? "" : ", ") + t.name;
  return all;
}

std::vector<OpKind> family_ops(Family f) {
  std::vector<OpKind> ops;
  for (const auto& info : kOpTable)
    if (info.family == f) ops.push_back(info.kind);
  return ops;
}

Family family_from_string(const std::string& name) {
  for (const auto& t : kFamilyTable)
    if (name == t.name || (*t.alias1 && name == t.alias1) || (*t.alias2 && name == t.alias2)) return t.family;
  throw ConfigError("unknown predictor family '" + name + "' (" + family_names() + ")");
}

}  // namespace tilecast
