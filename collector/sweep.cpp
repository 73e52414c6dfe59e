#include "collector/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "core/config_io.h"
#include "core/error.h"
#include "core/fs_util.h"

namespace tilecast::collector {
namespace {

// Power-of-two cells covering [lo, hi]: [lo, 2^a), [2^a, 2^(a+1)), ..., [2^z, hi].
std::vector<std::pair<int64_t, int64_t>> pow2_cells(int64_t lo, int64_t hi_end) {
  std::vector<std::pair<int64_t, int64_t>> cells;
  while (lo <= hi_end) {
    int64_t p = 1;
    while (p <= lo) p <<= 1;  // next power of two above lo
    int64_t hi = std::min(hi_end, p - 1);
    cells.emplace_back(lo, hi);
    lo = hi + 1;
  }
  return cells;
}

const std::vector<std::pair<int64_t, int64_t>>& cells_of(const DimRange& d) { return d.cells; }

DimRange parse_dim(const YAML::Node& n, const std::string& name, const std::string& where) {
  DimRange d;
  d.name = name;
  constexpr int64_t kMax = int64_t{1} << 31;
  if (n.IsSequence()) {
    auto r = n.as<std::vector<int64_t>>();
    if (r.size() != 2 || r[0] < 1 || r[1] < r[0] || r[1] > kMax)
      throw ConfigError(where + ": expected [lo, hi] with 1 <= lo <= hi <= 2^31");
    d.cells = pow2_cells(r[0], r[1]);
  } else if (n.IsMap() && n["values"] && n.size() == 1) {
    auto v = n["values"].as<std::vector<int64_t>>();
    if (v.empty()) throw ConfigError(where + ".values: empty");
    for (int64_t x : v) {
      if (x < 1 || x > kMax) throw ConfigError(where + ".values: each must be in [1, 2^31]");
      d.cells.emplace_back(x, x);
    }
  } else if (n.IsMap() && n["edges"] && n.size() == 1) {
    auto e = n["edges"].as<std::vector<int64_t>>();
    if (e.size() < 2) throw ConfigError(where + ".edges: need at least two edges");
    for (size_t i = 0; i + 1 < e.size(); ++i) {
      if (e[i] < 1 || e[i + 1] <= e[i] || e[i + 1] > kMax + 1)
        throw ConfigError(where + ".edges: must increase from >= 1 (cells are [e_i, e_(i+1) - 1])");
      d.cells.emplace_back(e[i], e[i + 1] - 1);
    }
  } else {
    throw ConfigError(where + ": expected [lo, hi], {edges: [...]} or {values: [...]}");
  }
  return d;
}

// Checked product: ConfigError (naming the sweep) instead of a wrapped int64.
int64_t checked_mul(int64_t a, int64_t b, const std::string& where) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxSweepConfigs)
    throw ConfigError(where + ": sweep has more than " + std::to_string(kMaxSweepConfigs) +
                      " configs (reduce samples_per_cell, ops, dtypes or ranges)");
  return r;
}

int64_t configs_in(const FamilySweep& f, size_t n_dtypes, const std::string& where = "sweep") {
  int64_t n = checked_mul(static_cast<int64_t>(f.ops.size()), static_cast<int64_t>(n_dtypes), where);
  n = checked_mul(n, f.samples_per_cell, where);
  for (const auto& d : f.dims) n = checked_mul(n, static_cast<int64_t>(cells_of(d).size()), where);
  return n;
}

// One row per family: the sweep's dims (its YAML keys, in order) and how a draw becomes the
// family's --shape dims (core/kernel.h query_from_dims; nullptr: the same numbers). Attention
// draws KV heads and the GQA group so that every draw is a valid GQA shape (query heads =
// kv_heads x group); decode attends ctx cached tokens.
struct SweepSchema {
  Family family;
  std::vector<std::string> dims;
  std::vector<int64_t> (*to_shape)(const std::vector<int64_t>&);
};
std::vector<int64_t> attention_shape(const std::vector<int64_t>& v) { return {v[0], v[1], v[2] * v[3], v[2], v[4]}; }
const std::vector<SweepSchema>& sweep_schemas() {
  static const std::vector<SweepSchema> table = {
      {Family::kBmm, {"b", "m", "n", "k"}, nullptr},
      {Family::kLinear, {"m", "n", "k"}, nullptr},
      {Family::kElementwise, {"b", "h"}, nullptr},
      {Family::kSoftmax, {"b", "h"}, nullptr},
      {Family::kLayerNorm, {"b", "h"}, nullptr},
      {Family::kGemm, {"m", "n", "k"}, nullptr},
      {Family::kAttnPrefill, {"b", "s", "kv_heads", "group", "head_dim"}, attention_shape},
      {Family::kAttnDecode, {"b", "ctx", "kv_heads", "group", "head_dim"}, attention_shape},
      {Family::kMemoryOp, {"b", "h"}, nullptr},                         // b = tokens, h = width
      {Family::kMoe, {"t", "h", "f", "topk", "experts"}, nullptr},  // tokens, hidden, expert FFN width
  };
  return table;
}
const SweepSchema& sweep_schema(Family f) {
  for (const auto& s : sweep_schemas())
    if (s.family == f) return s;
  throw InternalError(std::string("no sweep schema for family ") + family_name(f));
}
std::vector<std::string> dim_names(Family f) { return sweep_schema(f).dims; }

}  // namespace

// fp8_static: only the gemm family models it (dtype_refusal refuses it for the others), and the
// collector runs it as a static per-tensor cast and torch._scaled_mm.
DType sweep_dtype(const std::string& dtype) {
  DType d;
  if (!try_dtype_from_string(dtype, &d) || dtype != dtype_name(d) ||
      (d != DType::kFp32 && d != DType::kFp16 && d != DType::kBf16 && d != DType::kFp8Static))
    throw ConfigError("unknown dtype '" + dtype + "' (fp32, fp16, bf16, fp8_static)");
  return d;
}

Sweep load_sweep(const std::string& path) {
  const YAML::Node root = load_yaml_map(path);
  reject_unknown_keys(root, {"name", "seed", "warmup", "repeats", "dtypes", "families"}, path);
  Sweep s;
  s.origin = path;
  try {
    s.name = root["name"] ? root["name"].as<std::string>() : path;
    if (root["seed"]) s.seed = root["seed"].as<uint64_t>();
    if (root["warmup"]) s.warmup = root["warmup"].as<int>();
    if (root["repeats"]) s.repeats = root["repeats"].as<int>();
    if (root["dtypes"]) s.dtypes = root["dtypes"].as<std::vector<std::string>>();
  } catch (const YAML::Exception&) {
    throw ConfigError(path + ": a top-level field has the wrong type");
  }
  if (s.warmup < 0 || s.warmup > 1000) throw ConfigError(path + ": field 'warmup': out of range [0, 1000]");
  if (s.repeats < 1 || s.repeats > 10000) throw ConfigError(path + ": field 'repeats': out of range [1, 10000]");
  if (s.dtypes.empty()) throw ConfigError(path + ": field 'dtypes': empty");
  for (const auto& d : s.dtypes) {
    try {
      sweep_dtype(d);
    } catch (const ConfigError& e) {
      throw ConfigError(path + ": field 'dtypes': " + e.what());
    }
  }
  if (!root["families"] || !root["families"].IsMap() || root["families"].size() == 0)
    throw ConfigError(path + ": field 'families': expected a non-empty mapping");
  for (const auto& kv : root["families"]) {
    const std::string fname = yaml_key(kv.first, path + ": field 'families'");
    const std::string where = path + ": families." + fname;
    FamilySweep f;
    try {
      f.family = family_from_string(fname);
    } catch (const ConfigError&) {
      throw ConfigError(where + ": unknown family (" + family_names() + ")");
    }
    const YAML::Node n = kv.second;
    if (!n.IsMap()) throw ConfigError(where + ": expected a mapping");
    std::set<std::string> keys = {"samples_per_cell", "ops"};
    for (const auto& d : dim_names(f.family)) keys.insert(d);
    reject_unknown_keys(n, keys, where);
    try {
      if (n["samples_per_cell"]) f.samples_per_cell = n["samples_per_cell"].as<int>();
      if (f.family == Family::kElementwise || f.family == Family::kMemoryOp) {
        if (!n["ops"]) throw ConfigError(where + ": missing field 'ops'");
        for (const auto& o : n["ops"].as<std::vector<std::string>>()) {
          OpKind k;
          if (!try_op_kind_from_string(o, &k) || op_family(k) != f.family)
            throw ConfigError(where + ".ops: '" + o + "' is not an op of family " + fname);
          f.ops.push_back(k);
        }
      } else {
        if (n["ops"]) throw ConfigError(where + ": field 'ops' is for elementwise and memory_op only");
        f.ops = family_ops(f.family);  // the family's one op
      }
      for (const auto& d : dim_names(f.family)) {
        if (!n[d]) throw ConfigError(where + ": missing range '" + d + "' ([lo, hi], {edges: [...]} or {values: [...]})");
        f.dims.push_back(parse_dim(n[d], d, where + "." + d));
      }
      if (f.family == Family::kMoe) {  // every draw must route top-k of at least k experts
        const int64_t max_topk = f.dims[3].cells.back().second, min_experts = f.dims[4].cells.front().first;
        if (max_topk > min_experts)
          throw ConfigError(where + ": topk reaches " + std::to_string(max_topk) + " but experts start at " +
                            std::to_string(min_experts) + " (top-k must not exceed the experts)");
      }
    } catch (const YAML::Exception&) {
      throw ConfigError(where + ": a field has the wrong type");
    }
    if (f.samples_per_cell < 1 || f.samples_per_cell > 100000)
      throw ConfigError(where + ".samples_per_cell: out of range [1, 100000]");
    if (f.ops.empty()) throw ConfigError(where + ".ops: empty");
    for (const auto& d : s.dtypes)
      if (const std::string why = dtype_refusal(f.ops.front(), sweep_dtype(d)); !why.empty())
        throw ConfigError(where + ": the sweep's dtype " + d + " is not modelled: " + why +
                          " (sweep this family in a file of its own)");
    s.families.push_back(f);
  }
  int64_t total = 0;
  for (const auto& f : s.families) {
    total += configs_in(f, s.dtypes.size(), path);
    if (total > kMaxSweepConfigs) checked_mul(total, 1, path);
  }
  return s;
}

int64_t sweep_size(const Sweep& s) {
  int64_t n = 0;
  for (const auto& f : s.families) n += configs_in(f, s.dtypes.size(), s.origin);
  return n;
}

std::string sweep_fingerprint(const Sweep& s) {
  std::ostringstream os;
  os << "seed=" << s.seed << ";warmup=" << s.warmup << ";repeats=" << s.repeats << ";dtypes=";
  for (const auto& d : s.dtypes) os << d << ',';
  for (const auto& f : s.families) {
    os << ";family=" << family_name(f.family) << ";samples=" << f.samples_per_cell << ";ops=";
    for (OpKind o : f.ops) os << op_name(o) << ',';
    for (const auto& d : f.dims) {
      os << ";" << d.name << "=";
      for (const auto& c : d.cells) os << c.first << '-' << c.second << ',';
    }
  }
  return sha256_hex(os.str()).substr(0, 16);
}

SweepConfig sweep_config(const Sweep& s, int64_t index) {
  TC_CHECK(index >= 0 && index < sweep_size(s), "sweep index out of range");
  int64_t rest = index;
  size_t fi = 0;
  while (rest >= configs_in(s.families[fi], s.dtypes.size())) rest -= configs_in(s.families[fi++], s.dtypes.size());
  const FamilySweep& f = s.families[fi];
  // Mixed radix: sample (fastest), cells of each dim, dtype, op (slowest).
  int64_t r = rest;
  r /= f.samples_per_cell;
  std::vector<std::pair<int64_t, int64_t>> chosen;
  for (const auto& d : f.dims) {
    const auto& cells = cells_of(d);
    chosen.push_back(cells[r % static_cast<int64_t>(cells.size())]);
    r /= static_cast<int64_t>(cells.size());
  }
  const std::string& dtype = s.dtypes[r % s.dtypes.size()];
  r /= static_cast<int64_t>(s.dtypes.size());
  const OpKind op = f.ops[r];

  std::mt19937_64 rng(s.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(index));
  std::vector<int64_t> v;
  for (const auto& c : chosen) v.push_back(std::uniform_int_distribution<int64_t>(c.first, c.second)(rng));
  SweepConfig c;
  c.index = index;
  c.dtype = dtype;
  c.query.op = op;
  c.query.dtype = sweep_dtype(dtype);
  const SweepSchema& schema = sweep_schema(f.family);
  if (schema.to_shape) v = schema.to_shape(v);
  // RoPE rotates head_dim-wide halves: the width is a whole number of 64-wide heads.
  if (op == OpKind::kRope) v[1] = std::max<int64_t>(64, (v[1] + 63) / 64 * 64);
  c.query = query_from_dims(op, v, c.query.dtype, s.origin + ": config " + std::to_string(index));
  std::string shape = query_shape_string(c.query);
  std::replace(shape.begin(), shape.end(), ',', 'x');  // ids stay plain CSV fields
  c.id = std::string(op_name(op)) + "/" + dtype + "/" + shape;
  return c;
}

Shard parse_shard(const std::string& text) {
  // Whole-string decimal I/N only: "1.5/2", "0/2/3", "0x1/2", " 1/2" are refused.
  static const std::regex re(R"(^([0-9]{1,9})/([0-9]{1,9})$)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw ConfigError("--shard: expected I/N with decimal integers (e.g. 0/4), got '" + text + "'");
  Shard s;
  s.index = std::stoll(m[1]);
  s.count = std::stoll(m[2]);
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw ConfigError("--shard: need 0 <= I < N, got '" + text + "'");
  return s;
}

}  // namespace tilecast::collector
