#include "core/kernel_dataset.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/config_io.h"
#include "core/csv.h"
#include "core/error.h"
#include "core/log.h"
#include "core/op_graph.h"
#include "core/units.h"

namespace fs = std::filesystem;

namespace tilecast {
namespace {

// Columns NeuSight's CSVs carry plus the extra ones our collector appends.
const std::set<std::string>& known_columns() {
  static const std::set<std::string> cols = {
      "OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name",
      "Warps per SM", "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y",
      "Block z", "CUDA Version", "Kernels", "B", "M", "N", "K", "H", "large",
      // tilecast collector extras
      "dtype", "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes",
      "latency_spread_ms", "busy_ms", "call_ms", "status", "error_message", "tilecast_version", "git_commit",
      "collected_at", "config_id"};
  return cols;
}

bool parse_ax_b(const std::string& s, size_t pos, int* a, int* b) {
  size_t i = pos;
  auto digits = [&](int* out) {
    size_t start = i;
    long v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 6)
      v = v * 10 + (s[i++] - '0');
    if (i == start) return false;
    *out = static_cast<int>(v);
    return true;
  };
  if (!digits(a)) return false;
  if (i >= s.size() || s[i] != 'x') return false;
  ++i;
  return digits(b);
}

}  // namespace

namespace {
std::string lower(const std::string& text) {
  std::string s;
  for (char c : text) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

bool parse_tile_from_kernel_name(const std::string& kernel_name, int* tile1, int* tile2) {
  const std::string s = lower(kernel_name);
  for (const char* marker : {"_mt", "sgemm_", "tilesize"}) {
    size_t pos = 0;
    while ((pos = s.find(marker, pos)) != std::string::npos) {
      pos += std::char_traits<char>::length(marker);
      if (parse_ax_b(s, pos, tile1, tile2) && *tile1 > 0 && *tile2 > 0) return true;
    }
  }
  return false;
}

namespace {

// -- aiconfigurator's layout: one row of kAicLayouts per family.
std::string num_str(int64_t v) { return std::to_string(v); }
// A dtype column the family models; false for any other (the caller says what it skips).
bool aic_dtype(const AicRow& r, const char* column, OpKind op, DType* d) {
  return try_dtype_from_string(r.str(column), d) && dtype_refusal(op, *d).empty();
}
// gemm_perf.csv: F.linear(a[m, k], b[n, k]): m tokens, k in-features (our N), n out-features (our K).
bool aic_gemm_parse(const AicRow& r, KernelQuery* q, std::string* skip) {
  DType d;
  if (!aic_dtype(r, "gemm_dtype", OpKind::kGemm, &d)) {  // a dtype the gemm family does not model
    *skip = r.str("gemm_dtype");
    return false;
  }
  *q = gemm_q(r.dim("m", 1), r.dim("k", 1), r.dim("n", 1), d);
  return true;
}
std::vector<std::string> aic_gemm_values(const KernelQuery& q) {
  return {dtype_name(q.dtype), num_str(q.m), num_str(q.k), num_str(q.n)};
}
// {context,generation}_attention_perf.csv; decode: `step` tokens are cached before the new one,
// which attends to all of them and itself. window_size is absent from some files (0 = none).
bool aic_attention_parse(const AicRow& r, KernelQuery* q, std::string* skip) {
  const bool prefill = r.str("op_name") == "context_attention";
  const OpKind op = prefill ? OpKind::kAttnPrefill : OpKind::kAttnDecode;
  DType d, kvd;
  if (!aic_dtype(r, "attn_dtype", op, &d) || !aic_dtype(r, "kv_cache_dtype", op, &kvd)) {
    *skip = r.str("attn_dtype") + "/" + r.str("kv_cache_dtype");
    return false;
  }
  if (r.dim("beam_width", 1) != 1) {
    *skip = "beam_width > 1";
    return false;
  }
  const int64_t window = r.has("window_size") ? r.dim("window_size", 0) : 0;
  const int64_t b = r.dim("batch_size", 1), h = r.dim("num_heads", 1), kv = r.dim("num_key_value_heads", 1);
  const int64_t hd = r.dim("head_dim", 1);
  *q = prefill ? attention_prefill_q(b, r.dim("isl", 1), h, kv, hd, d, kvd, window)
               : attention_decode_q(b, r.dim("step", 0) + 1, h, kv, hd, d, kvd, window);
  return true;
}
std::vector<std::string> aic_attention_values(const KernelQuery& q) {
  const bool prefill = q.op == OpKind::kAttnPrefill;
  return {num_str(q.b), num_str(prefill ? q.m : 1), num_str(q.k), num_str(q.h), num_str(q.n), "1",
          dtype_name(q.dtype), dtype_name(q.kv_dtype), num_str(prefill ? 0 : q.ctx - 1)};
}
// moe_perf.csv: int4_wo and w4a16_mxfp4 are the weight-only int4 and mxfp4, nvfp4 the FP4 one,
// w4a8_mxfp4_mxfp8 (MXFP4 weights, MXFP8 activations; the B200's alone) mxfp4_mxfp8.
bool aic_moe_parse(const AicRow& r, KernelQuery* q, std::string* skip) {
  DType d;
  if (!aic_dtype(r, "moe_dtype", OpKind::kMoe, &d)) {
    *skip = r.str("moe_dtype");
    return false;
  }
  double alpha = 0;
  if (!try_parse_routing(r.str("distribution"), &alpha))
    r.fail("distribution", "expected balanced, uniform or power_law_<a> (0 < a <= 10), got '" + r.str("distribution") + "'");
  *q = moe_q(r.dim("num_tokens", 1), r.dim("hidden_size", 1), r.dim("inter_size", 1), r.dim("topk", 1),
             r.dim("num_experts", 1), r.dim("moe_tp_size", 1), r.dim("moe_ep_size", 1), d, alpha);
  return true;
}
std::vector<std::string> aic_moe_values(const KernelQuery& q) {
  return {dtype_name(q.dtype), num_str(q.b), num_str(q.h), num_str(q.n), num_str(q.topk), num_str(q.experts),
          num_str(q.moe_tp), num_str(q.moe_ep), routing_name(q.routing_alpha)};
}

// A data row of an aiconfigurator-layout file.
class CsvAicRow : public AicRow {
 public:
  CsvAicRow(const CsvReader& csv, const std::vector<std::string>& f, long line) : csv_(csv), f_(f), line_(line) {}
  bool has(const char* column) const override {
    const int c = csv_.column(column);
    return c >= 0 && !f_[c].empty();
  }
  const std::string& str(const char* column) const override { return f_[col(column)]; }
  int64_t dim(const char* column, int64_t lo) const override {
    const int c = col(column);
    const long long v = parse_int_field(f_[c], csv_.path(), line_, column);
    if (v < lo || v > (int64_t{1} << 31))
      fail(column, f_[c] + " out of range [" + std::to_string(lo) + ", 2^31]");
    return v;
  }
  [[noreturn]] void fail(const char* column, const std::string& why) const override {
    throw DataError(where(csv_.path(), line_) + ": column '" + column + "': " + why);
  }

 private:
  int col(const char* column) const {
    const int c = csv_.column(column);
    if (c < 0) throw DataError(where(csv_.path(), 1) + ": missing column '" + column + "'");
    return c;
  }
  const CsvReader& csv_;
  const std::vector<std::string>& f_;
  long line_;
};

// ../shared/llm-kernels/aiconfigurator/<GPU>/<op>_perf.csv (SGLang kernels, BF16/FP8).
std::vector<KernelSample> read_aiconfigurator_csv(CsvReader& csv) {
  const std::string& path = csv.path();
  for (const char* req : {"device", "op_name", "latency"})
    if (csv.column(req) < 0) throw DataError(where(path, 1) + ": missing column '" + req + "'");
  const int c_dev = csv.column("device"), c_op = csv.column("op_name"), c_lat = csv.column("latency");
  const int c_src = csv.column("kernel_source");
  const int c_status = csv.column("status");  // `tilecast collect` files: failed configs have no latency
  const int c_fw = csv.column("framework");
  std::vector<KernelSample> rows;
  std::map<std::pair<Family, std::string>, int64_t> skipped;  // rows not modelled, by family and what
  std::string known;
  for (const auto& l : aic_layouts()) known += (known.empty() ? "" : ", ") + std::string(l.op_name);
  std::vector<std::string> f;
  while (csv.next(f)) {
    const long line = csv.line();
    if (c_status >= 0 && !f[c_status].empty() && f[c_status] != "ok") continue;
    const AicLayout* layout = nullptr;
    for (const auto& l : aic_layouts())
      if (f[c_op] == l.op_name) layout = &l;
    if (!layout)
      throw DataError(where(path, line) + ": column 'op_name': '" + f[c_op] + "' is not modelled (" + known + " are)");
    const CsvAicRow row(csv, f, line);
    const bool sglang = c_fw >= 0 && lower(f[c_fw]) == "sglang";
    KernelSample s;
    std::string skip;
    if (!layout->parse(row, &s.query, &skip)) {
      ++skipped[{layout->family, skip}];
      continue;
    }
    s.file = path;
    s.line = line;
    validate_query(s.query, where(path, line));
    s.latency_ms = parse_double_field(f[c_lat], path, line, "latency");
    if (s.latency_ms <= 0 || s.latency_ms > kMaxKernelLatencyMs)
      throw DataError(where(path, line) + ": column 'latency': " + f[c_lat] + " ms outside (0, 1e7]");
    s.device = f[c_dev];
    if (s.device.empty()) throw DataError(where(path, line) + ": column 'device' is empty");
    if (c_src >= 0) s.library = f[c_src];
    s.sglang_window_zero = sglang && is_attention(layout->family) && row.has("window_size") && s.query.window == 0;
    rows.push_back(std::move(s));
  }
  for (const auto& kv : skipped)
    TC_LOG(Warn) << path << ": skipped " << kv.second << " rows of " << family_name(kv.first.first) << " '"
                 << kv.first.second << "' (not modelled; " << family_name(kv.first.first) << " is modelled in "
                 << dtype_set_names(family_traits(kv.first.first).dtypes)
                 << (is_attention(kv.first.first) ? ", beam width 1 only)" : ")");
  return rows;
}

// ../shared/llm-kernels/vidur/<gpu>/<org>/<model>/mlp.csv (FP16 per-layer ops of the Sarathi
// engine, medians in ms). The GPU comes from the folder name (the files carry none): vidur's
// data/profiling/compute/ folders, whose README names the machines (A100 80GB DGX, H100 DGX,
// A40 nodes); only a100 and a40 are in ../shared, h100 is read so that the same layout of the
// held-out GPU is scored like the others.
std::vector<KernelSample> read_vidur_csv(CsvReader& csv) {
  const std::string& path = csv.path();
  static const std::map<std::string, std::string> kDevices = {
      {"a100", "NVIDIA A100-SXM4-80GB"}, {"a40", "NVIDIA A40"}, {"h100", "NVIDIA H100 80GB HBM3"}};
  const fs::path p(path);
  const std::string gpu_dir = p.parent_path().parent_path().parent_path().filename().string();
  auto dev = kDevices.find(gpu_dir);
  if (dev == kDevices.end())
    throw DataError(path + ": vidur file outside vidur/<a100|a40|h100>/<org>/<model>/ (GPU folder '" + gpu_dir +
                    "' unknown)");
  auto col = [&](const std::string& name) {
    const int c = csv.column(name);
    if (c < 0) throw DataError(where(path, 1) + ": missing column '" + name + "'");
    return c;
  };
  const int c_t = col("num_tokens"), c_tp = col("num_tensor_parallel_workers"), c_h = col("n_head"),
            c_kv = col("n_kv_head"), c_e = col("n_embd"), c_f = col("n_expanded_embd"), c_g = col("use_gated_mlp");
  std::vector<KernelSample> rows;
  std::vector<std::string> f;
  while (csv.next(f)) {
    const long line = csv.line();
    auto dim = [&](int c, const char* name) -> int64_t {
      const long long v = parse_int_field(f[c], path, line, name);
      if (v < 1 || v > (int64_t{1} << 31))
        throw DataError(where(path, line) + ": column '" + name + "': " + f[c] + " out of range [1, 2^31]");
      return v;
    };
    const int64_t t = dim(c_t, "num_tokens"), tp = dim(c_tp, "num_tensor_parallel_workers");
    const int64_t heads = dim(c_h, "n_head"), kv = dim(c_kv, "n_kv_head"), h = dim(c_e, "n_embd"),
                  ffn = dim(c_f, "n_expanded_embd");
    if (f[c_g] != "True" && f[c_g] != "False")
      throw DataError(where(path, line) + ": column 'use_gated_mlp': expected True or False, got '" + f[c_g] + "'");
    const bool gated = f[c_g] == "True";
    if (h % heads != 0 || heads % tp != 0 || kv % tp != 0 || ffn % tp != 0)
      throw DataError(where(path, line) + ": heads/hidden/ffn not divisible by the tensor-parallel size");
    const int64_t hd = h / heads;
    auto add = [&](const std::string& op, const KernelQuery& q) {
      const std::string name = "time_stats." + op + ".median";
      KernelSample s;
      s.file = path;
      s.line = line;
      s.query = q;
      validate_query(s.query, where(path, line));
      s.latency_ms = parse_double_field(f[col(name)], path, line, name);
      if (s.latency_ms <= 0 || s.latency_ms > kMaxKernelLatencyMs)
        throw DataError(where(path, line) + ": column '" + name + "': " + f[col(name)] + " ms outside (0, 1e7]");
      s.device = dev->second;
      s.library = "vidur";
      rows.push_back(std::move(s));
    };
    const DType d = DType::kFp16;
    auto mem = [&](OpKind op, int64_t width) { return vec_q(op, t, width, d); };
    // cuBLAS GEMMs of one tensor-parallel rank (F.linear: our N = in-features, K = out-features).
    add("attn_pre_proj", gemm_q(t, h, (heads + 2 * kv) * hd / tp, d));
    add("attn_post_proj", gemm_q(t, heads * hd / tp, h, d));
    add("mlp_up_proj", gemm_q(t, h, (gated ? 2 : 1) * ffn / tp, d));
    add("mlp_down_proj", gemm_q(t, ffn / tp, h, d));
    add("add", mem(OpKind::kResidualAdd, h));
    if (gated) {  // Llama-like (RMSNorm, rotary, SwiGLU); phi-2's LayerNorm/GELU rows are not these ops
      add("input_layernorm", mem(OpKind::kRmsNorm, h));
      add("post_attention_layernorm", mem(OpKind::kRmsNorm, h));
      add("attn_rope", mem(OpKind::kRope, (heads + kv) / tp * hd));
      add("mlp_act", mem(OpKind::kSiluMul, ffn / tp));
    }
  }
  return rows;
}

// ../shared/llm-kernels/llmservingsim/<hw>/<org>/<model>/<variant>/tp<N>/{dense,attention}.csv:
// vLLM layer and attention timings (microseconds) of one model; its dims come from meta.yaml two folders up
// (hf_overrides), the hidden size and head size from hf_overrides when it states them, else from
// the model id (the models' Hugging Face config.json files; head_dim is not always hidden / heads,
// e.g. Qwen3-32B: 5120 / 64 heads of 128).
std::vector<KernelSample> read_llmservingsim_csv(CsvReader& csv) {
  const std::string& path = csv.path();
  const fs::path tp_dir = fs::path(path).parent_path();
  const std::string meta_path = (tp_dir.parent_path() / "meta.yaml").string();
  if (!fs::exists(meta_path)) throw DataError(path + ": meta.yaml missing beside the tp folder (" + meta_path + ")");
  const YAML::Node meta = load_yaml_map(meta_path);
  auto field = [&](const YAML::Node& n, const char* key) {
    if (!n[key]) throw DataError(meta_path + ": missing field '" + key + "'");
    return n[key];
  };
  const std::string device = yaml_get<std::string>(field(meta, "gpu"), "gpu", meta_path);
  const std::string model = yaml_get<std::string>(field(meta, "model"), "model", meta_path);
  const std::string variant = yaml_get<std::string>(field(meta, "variant"), "variant", meta_path);
  const YAML::Node hf = field(field(meta, "engine_effective"), "hf_overrides");
  const int64_t heads = yaml_get<int64_t>(field(hf, "num_attention_heads"), "num_attention_heads", meta_path);
  const int64_t kv = yaml_get<int64_t>(field(hf, "num_key_value_heads"), "num_key_value_heads", meta_path);
  const int64_t ffn = yaml_get<int64_t>(field(hf, "intermediate_size"), "intermediate_size", meta_path);
  if (heads < 1 || kv < 1 || ffn < 1 || heads % kv != 0 || heads > (1 << 20) || ffn > (int64_t{1} << 31))
    throw DataError(meta_path + ": hf_overrides: num_attention_heads " + std::to_string(heads) + ", num_key_value_heads " +
                    std::to_string(kv) + ", intermediate_size " + std::to_string(ffn) +
                    " (each >= 1, the heads a multiple of the KV heads)");
  // (hidden_size, head_dim) of each model's config.json.
  static const std::map<std::string, std::pair<int64_t, int64_t>> kDims = {
      {"meta-llama/Llama-3.1-8B", {4096, 128}},     {"meta-llama/Llama-3.1-8B-Instruct", {4096, 128}},
      {"meta-llama/Llama-3.1-70B", {8192, 128}},    {"meta-llama/Llama-3.1-70B-Instruct", {8192, 128}},
      {"mistralai/Mistral-7B-v0.1", {4096, 128}},   {"mistralai/Mistral-7B-Instruct-v0.3", {4096, 128}},
      {"Qwen/Qwen3-8B", {4096, 128}},               {"Qwen/Qwen3-14B", {5120, 128}},
      {"Qwen/Qwen3-32B", {5120, 128}}};
  int64_t h = 0, hd = 0;
  if (hf["hidden_size"]) h = yaml_get<int64_t>(hf["hidden_size"], "hidden_size", meta_path);
  if (hf["head_dim"]) hd = yaml_get<int64_t>(hf["head_dim"], "head_dim", meta_path);
  if (auto dims = kDims.find(model); dims != kDims.end()) {
    if (h == 0) h = dims->second.first;
    if (hd == 0) hd = dims->second.second;
  }
  if (h == 0) throw DataError(meta_path + ": field 'model': hidden size of '" + model + "' unknown (no hf_overrides.hidden_size)");
  if (hd == 0 && h % heads == 0) hd = h / heads;  // no head_dim stated: hidden / heads, as Hugging Face defaults it
  if (h < 1 || hd < 1 || h > (int64_t{1} << 20) || hd > (int64_t{1} << 20))
    throw DataError(meta_path + ": hidden size " + std::to_string(h) + " / head_dim " + std::to_string(hd) + " out of range");
  DType d;
  if (!try_dtype_from_string(variant, &d)) throw DataError(meta_path + ": field 'variant': unknown dtype '" + variant + "'");
  const std::string tps = tp_dir.filename().string();
  char* end = nullptr;
  const long tp = tps.size() > 2 && tps.compare(0, 2, "tp") == 0 ? std::strtol(tps.c_str() + 2, &end, 10) : 0;
  if (tp < 1 || !end || *end != '\0' || heads % tp != 0 || kv % tp != 0 || ffn % tp != 0)
    throw DataError(path + ": folder '" + tps + "' is not tp<N> dividing the model's heads and FFN");
  std::vector<KernelSample> rows;
  std::vector<std::string> f;
  auto finish = [&](KernelSample& s, long line, const std::string& us_text) {
    validate_query(s.query, where(path, line));
    const double us = parse_double_field(us_text, path, line, "time_us");
    if (!(us > 0) || us > kMaxKernelLatencyMs * 1e3)
      throw DataError(where(path, line) + ": column 'time_us': " + us_text + " outside (0, 1e10]");
    s.file = path;
    s.line = line;
    s.latency_ms = us * 1e-3;
    s.device = device;
    s.library = "vllm";
    rows.push_back(std::move(s));
  };
  if (csv.column("prefill_chunk") >= 0) {
    // attention.csv: one attention call over a batch mixing a prefill chunk (prefill_chunk new
    // tokens after kv_prefill cached ones) and n_decode decode requests of kv_decode cached
    // tokens. Pure decode rows and single-prompt prefill chunks (after a cached prefix or not:
    // attention_chunk_q) are the modelled kernels; mixed batches are skipped (counted).
    const int c_pc = csv.column("prefill_chunk"), c_kp = csv.column("kv_prefill"), c_nd = csv.column("n_decode"),
              c_kd = csv.column("kv_decode"), c_us = csv.column("time_us");
    int64_t mixed = 0;
    while (csv.next(f)) {
      const long line = csv.line();
      auto num = [&](int c, const char* name) {
        const long long v = parse_int_field(f[c], path, line, name);
        if (v < 0 || v > (int64_t{1} << 31)) throw DataError(where(path, line) + ": column '" + name + "': out of range [0, 2^31]");
        return static_cast<int64_t>(v);
      };
      const int64_t pc = num(c_pc, "prefill_chunk"), kp = num(c_kp, "kv_prefill"), nd = num(c_nd, "n_decode"),
                    kd = num(c_kd, "kv_decode");
      KernelSample s;
      if (pc == 0 && nd > 0 && kd > 0) {
        s.query = attention_decode_q(nd, kd + 1, heads / tp, kv / tp, hd, d, d);
      } else if (nd == 0 && pc > 0) {
        s.query = attention_chunk_q(1, pc, kp, heads / tp, kv / tp, hd, d, d);
      } else {
        ++mixed;
        continue;
      }
      finish(s, line, f[c_us]);
    }
    if (mixed) {
      TC_LOG(Info) << path << ": skipped " << mixed << " rows mixing prefill and decode in one batch";
    }
    return rows;
  }
  if (csv.column("sequences") >= 0) {
    // per_sequence.csv: per-step costs by the number of sequences sampled. The sampler reads
    // each sequence's FP32 logits over the whole vocabulary (hf_overrides.vocab_size); lm_head
    // is a GEMM, whose rows the projections of dense.csv already give the GEMM family.
    const int64_t vocab = yaml_get<int64_t>(field(hf, "vocab_size"), "vocab_size", meta_path);
    if (vocab < 1 || vocab > (int64_t{1} << 24))
      throw DataError(meta_path + ": hf_overrides: vocab_size " + std::to_string(vocab) + " out of range [1, 2^24]");
    const int c_layer = csv.column("layer"), c_n = csv.column("sequences"), c_us = csv.column("time_us");
    while (csv.next(f)) {
      const long line = csv.line();
      const long long n = parse_int_field(f[c_n], path, line, "sequences");
      if (n < 1 || n > (int64_t{1} << 24))
        throw DataError(where(path, line) + ": column 'sequences': out of range [1, 2^24]");
      const std::string& layer = f[c_layer];
      if (layer == "lm_head") continue;
      if (layer != "sampler") throw DataError(where(path, line) + ": column 'layer': unknown layer '" + layer + "'");
      KernelSample s;
      s.query = vec_q(OpKind::kSampler, n, vocab, DType::kFp32);
      finish(s, line, f[c_us]);
    }
    return rows;
  }
  const int c_layer = csv.column("layer"), c_t = csv.column("tokens"), c_us = csv.column("time_us");
  while (csv.next(f)) {
    const long line = csv.line();
    const long long t = parse_int_field(f[c_t], path, line, "tokens");
    if (t < 1 || t > (int64_t{1} << 31)) throw DataError(where(path, line) + ": column 'tokens': out of range [1, 2^31]");
    const std::string& layer = f[c_layer];
    KernelQuery q;
    auto mem = [&](OpKind op, int64_t width) { q = vec_q(op, t, width, d); };
    if (layer == "layernorm" || layer == "final_layernorm") mem(OpKind::kRmsNorm, h);
    else if (layer == "act_fn") mem(OpKind::kSiluMul, ffn / tp);
    else if (layer == "rotary_emb") mem(OpKind::kRope, (heads + kv) / tp * hd);
    else if (layer == "qkv_proj") q = gemm_q(t, h, (heads + 2 * kv) * hd / tp, d);
    else if (layer == "o_proj") q = gemm_q(t, heads * hd / tp, h, d);
    else if (layer == "gate_up_proj") q = gemm_q(t, h, 2 * ffn / tp, d);
    else if (layer == "down_proj") q = gemm_q(t, ffn / tp, h, d);
    else if (layer == "embedding") continue;  // a gather, not one of the modelled ops
    else throw DataError(where(path, line) + ": column 'layer': unknown layer '" + layer + "'");
    KernelSample s;
    s.query = q;
    finish(s, line, f[c_us]);
  }
  return rows;
}

}  // namespace

const std::vector<AicLayout>& aic_layouts() {
  static const std::vector<AicLayout> table = {
      {Family::kGemm, "gemm", {"gemm_dtype", "m", "n", "k"}, false, aic_gemm_parse, aic_gemm_values},
      {Family::kAttnPrefill, "context_attention",
       {"batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "beam_width", "attn_dtype",
        "kv_cache_dtype", "step"},
       true, aic_attention_parse, aic_attention_values},
      {Family::kAttnDecode, "generation_attention",
       {"batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "beam_width", "attn_dtype",
        "kv_cache_dtype", "step"},
       true, aic_attention_parse, aic_attention_values},
      {Family::kMoe, "moe",
       {"moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size",
        "distribution"},
       true, aic_moe_parse, aic_moe_values},
  };
  return table;
}

const AicLayout* aic_layout(Family f) {
  for (const auto& l : aic_layouts())
    if (l.family == f) return &l;
  return nullptr;
}

std::vector<KernelSample> read_kernel_csv(const std::string& path) {
  CsvReader csv(path);
  if (csv.header().size() > 3 && csv.header()[0] == "framework" && csv.column("op_name") >= 0)
    return read_aiconfigurator_csv(csv);
  if (csv.column("num_tokens") >= 0 && csv.column("time_stats.add.median") >= 0) return read_vidur_csv(csv);
  if (csv.header() == std::vector<std::string>{"layer", "tokens", "time_us"} ||
      csv.header() == std::vector<std::string>{"layer", "sequences", "time_us"} ||
      csv.header() == std::vector<std::string>{"prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us"})
    return read_llmservingsim_csv(csv);
  for (const auto& name : csv.header())
    if (!known_columns().count(name))
      throw DataError(where(path, 1) + ": unknown column '" + name + "'");
  for (const char* req : {"OPName", "Latency", "Device", "B"})
    if (csv.column(req) < 0) throw DataError(where(path, 1) + ": missing column '" + req + "'");
  const int c_op = csv.column("OPName"), c_lat = csv.column("Latency"),
            c_dev = csv.column("Device"), c_kname = csv.column("Kernel Name");
  const int c_status = csv.column("status"), c_dtype = csv.column("dtype");
  const int c_grid[3] = {csv.column("Grid x"), csv.column("Grid y"), csv.column("Grid z")};
  const int c_block[3] = {csv.column("Block x"), csv.column("Block y"), csv.column("Block z")};
  const int c_b = csv.column("B"), c_m = csv.column("M"), c_n = csv.column("N"),
            c_k = csv.column("K"), c_h = csv.column("H");
  // tilecast collect wrote the GPU's busy time as Latency for every family until its rows
  // carried call_ms; NeuSight's families mean one call with the host (its data's Latency).
  const bool busy_time_latency = csv.column("tilecast_version") >= 0 && csv.column("call_ms") < 0;

  std::vector<KernelSample> rows;
  std::vector<std::string> f;
  while (csv.next(f)) {
    const long line = csv.line();
    // Rows our collector marks as failed (OOM, unsupported) carry no latency.
    if (c_status >= 0 && !f[c_status].empty() && f[c_status] != "ok") continue;
    KernelSample s;
    s.file = path;
    s.line = line;
    OpKind op;
    if (!try_op_kind_from_string(f[c_op], &op))
      throw DataError(where(path, line) + ": column 'OPName': unknown op '" + f[c_op] + "'");
    s.query.op = op;
    if (busy_time_latency && family_traits(op_family(op)).data == FamilyData::kNeuSight && c_kname >= 0 &&
        !f[c_kname].empty())
      throw DataError(where(path, line) + ": column 'Latency': the GPU's busy time (a tilecast collect file "
                      "without call_ms), not one call with the host as NeuSight's " + family_name(op_family(op)) +
                      " rows and forecasts mean; collect it again");
    s.latency_ms = parse_double_field(f[c_lat], path, line, "Latency");
    if (s.latency_ms <= 0 || s.latency_ms > kMaxKernelLatencyMs)
      throw DataError(where(path, line) + ": column 'Latency': " + f[c_lat] + " ms outside (0, " +
                      std::to_string(static_cast<long long>(kMaxKernelLatencyMs)) + "]");
    // A row of a dtype its family does not model (kFamilyTable) would be silently mixed into
    // it. NeuSight's files have no dtype column (FP32); the dtyped families (gemm, memory_op;
    // written by our collector) must carry theirs.
    const bool dtyped = is_dtyped(op_family(op));
    if (dtyped && (c_dtype < 0 || f[c_dtype].empty()))
      throw DataError(where(path, line) + ": column 'dtype': required for op " + f[c_op]);
    if (c_dtype >= 0 && !f[c_dtype].empty()) {
      if (!try_dtype_from_string(f[c_dtype], &s.query.dtype))
        throw DataError(where(path, line) + ": column 'dtype': unknown dtype '" + f[c_dtype] + "'");
      if (const std::string why = dtype_refusal(op, s.query.dtype); !why.empty())
        throw DataError(where(path, line) + ": column 'dtype': '" + f[c_dtype] + "' rows are not modelled: " + why);
    }
    s.device = f[c_dev];
    if (s.device.empty()) throw DataError(where(path, line) + ": column 'Device' is empty");
    auto dim = [&](int col, const char* name) -> int64_t {
      if (col < 0) throw DataError(where(path, 1) + ": missing column '" + name + "' for op " + f[c_op]);
      long long v = parse_int_field(f[col], path, line, name);
      if (v < 1 || v > (int64_t{1} << 31))
        throw DataError(where(path, line) + ": column '" + name + "': dimension " + f[col] +
                        " out of range [1, 2^31]");
      return v;
    };
    s.query.b = dim(c_b, "B");
    if (op_family(op) == Family::kGemm) {
      s.query = gemm_q(dim(c_m, "M"), dim(c_n, "N"), dim(c_k, "K"), s.query.dtype);
    } else if (is_gemm(op_family(op))) {
      s.query.m = dim(c_m, "M");
      s.query.n = dim(c_n, "N");
      s.query.k = dim(c_k, "K");
    } else {
      s.query.h = dim(c_h, "H");
    }
    validate_query(s.query, where(path, line));
    if (c_kname >= 0) s.kernel_name = f[c_kname];
    bool has_grid = true;
    for (int i = 0; i < 3; ++i) {
      if (c_grid[i] < 0 || c_block[i] < 0 || f[c_grid[i]].empty() || f[c_block[i]].empty()) {
        has_grid = false;
        continue;
      }
      s.grid[i] = parse_int_field(f[c_grid[i]], path, line, "Grid");
      s.block[i] = parse_int_field(f[c_block[i]], path, line, "Block");
    }
    int t1, t2;
    if (is_gemm(op_family(op)) && has_grid && parse_tile_from_kernel_name(s.kernel_name, &t1, &t2)) {
      s.measured_tile.tk = t1;
      s.measured_tile.tm = t2;
      const int64_t tiles_xy = ((s.query.k + t1 - 1) / t1) * ((s.query.m + t2 - 1) / t2);
      const int64_t gz = s.grid[2];
      // Split-K shows up as grid z > B with the x*y grid still covering the output tiles.
      if (s.grid[0] * s.grid[1] == tiles_xy && gz > s.query.b && gz % s.query.b == 0)
        s.measured_tile.split_k = static_cast<int>(gz / s.query.b);
      s.has_tile = true;
    }
    rows.push_back(std::move(s));
  }
  return rows;
}

std::string neusight_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TILECAST_NEUSIGHT_DIR"); env && *env) return env;
  if (neusight_dir_present("../shared/neusight")) return "../shared/neusight";
#ifdef TILECAST_SOURCE_DIR
  std::string from_src = std::string(TILECAST_SOURCE_DIR) + "/../shared/neusight";
  if (neusight_dir_present(from_src)) return from_src;
#endif
  return "../shared/neusight";
}

bool neusight_dir_present(const std::string& dir) {
  return fs::is_directory(fs::path(dir) / "kernels" / "nvidia");
}

std::string llm_kernels_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TILECAST_LLM_KERNELS_DIR"); env && *env) return env;
  if (fs::is_directory("../shared/llm-kernels/aiconfigurator")) return "../shared/llm-kernels";
#ifdef TILECAST_SOURCE_DIR
  std::string from_src = std::string(TILECAST_SOURCE_DIR) + "/../shared/llm-kernels";
  if (fs::is_directory(from_src + "/aiconfigurator")) return from_src;
#endif
  return "../shared/llm-kernels";
}

const std::vector<std::string>& llm_training_gpu_dirs() {
  static const std::vector<std::string> dirs = {"A100-SXM4-80GB", "L40S", "B200"};
  return dirs;
}

std::vector<std::string> llm_training_files(const std::string& root, Family f) {
  TC_CHECK(is_llm_kernel_family(f), "no LLM-era data for this family");
  if (f == Family::kMemoryOp) {  // layer ops: vidur (A100, A40; every model) and llmservingsim (RTX 4090)
    // Only the training GPUs' folders: the sources' other GPUs (vidur's h100, ...) are held out
    // and judge the forecasts, and a copy of them beside these must not train (as
    // llm_training_gpu_dirs() keeps aiconfigurator's held-out GPUs out).
    static const std::map<std::string, std::set<std::string>> kTrainingFolders = {{"vidur", {"a100", "a40"}},
                                                                                   {"llmservingsim", {"RTX4090"}}};
    std::vector<std::string> files;
    for (const auto& [sub, gpus] : kTrainingFolders) {
      const fs::path base = fs::path(root) / sub;
      if (!fs::is_directory(base)) throw DataError(base.string() + ": folder missing (set TILECAST_LLM_KERNELS_DIR or --llm-dir)");
      for (const auto& e : fs::recursive_directory_iterator(base)) {
        const fs::path name = e.path().filename();
        if (!e.is_regular_file() || (name != "mlp.csv" && name != "dense.csv" && name != "per_sequence.csv")) continue;
        const std::string gpu = e.path().lexically_relative(base).begin()->string();
        if (gpus.count(gpu)) {
          files.push_back(e.path().string());
        } else {
          TC_LOG(Info) << e.path().string() << ": left out of training (" << sub << " folder '" << gpu
                       << "' is not a training GPU)";
        }
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw DataError(root + ": no vidur mlp.csv or llmservingsim dense.csv files");
    return files;
  }
  if (f == Family::kGemm) {
    // aiconfigurator's SGLang GEMMs, plus the cuBLAS GEMMs of the layer-op sources (vidur:
    // A100, A40 in FP16; LLMServingSim: RTX 4090 in BF16); readers return their other ops too.
    std::vector<std::string> files = llm_training_files(root, Family::kMemoryOp);
    for (const auto& gpu : llm_training_gpu_dirs()) {
      const fs::path p = fs::path(root) / "aiconfigurator" / gpu / "gemm_perf.csv";
      if (!fs::exists(p)) throw DataError(p.string() + ": training file missing (set TILECAST_LLM_KERNELS_DIR or --llm-dir)");
      files.push_back(p.string());
    }
    return files;
  }
  const std::string file = std::string(family_name(f)) + "_perf.csv";  // gemm, context_attention, ...
  std::vector<std::string> files;
  for (const auto& gpu : llm_training_gpu_dirs()) {
    const fs::path p = fs::path(root) / "aiconfigurator" / gpu / file;
    if (!fs::exists(p)) throw DataError(p.string() + ": training file missing (set TILECAST_LLM_KERNELS_DIR or --llm-dir)");
    files.push_back(p.string());
  }
  return files;
}

const std::vector<std::string>& training_gpus(const std::string& vendor) {
  static const std::vector<std::string> nvidia = {"Tesla P4", "Tesla P100-PCIE-16GB",
                                                  "Tesla V100-PCIE-32GB", "Tesla T4",
                                                  "NVIDIA A100-PCIE-40GB"};
  static const std::vector<std::string> amd = {"AMD Instinct MI100", "AMD Instinct MI210"};
  if (vendor == "amd") return amd;
  if (vendor != "nvidia") throw ConfigError("--vendor: expected nvidia or amd, got '" + vendor + "'");
  return nvidia;
}

std::vector<std::string> training_files(const std::string& root, Family f, const std::string& vendor) {
  // NeuSight's files are named by op (its OPName): every op of the family's row in kOpTable.
  TC_CHECK(family_traits(f).data == FamilyData::kNeuSight, "no NeuSight data for this family");
  std::vector<std::string> ops;
  for (OpKind k : family_ops(f)) ops.push_back(op_name(k));
  std::vector<std::string> files;
  const bool amd = vendor == "amd";
  for (const auto& op : ops)
    for (const auto& gpu : training_gpus(vendor)) {
      const fs::path p =
          amd ? fs::path(root) / "kernels" / "amd" / (is_gemm(f) ? "test" : "train") / "collect" / op / "p2.4.1" / (gpu + ".csv")
              : fs::path(root) / "kernels" / "nvidia" / "train" / op / "p2.1.0" / (gpu + ".csv");
      if (!fs::exists(p)) throw DataError(p.string() + ": training file missing");
      files.push_back(p.string());
    }
  return files;
}

namespace {
constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
// 64-bit FNV-1a of `n` bytes, continuing from `h`.
uint64_t fnv1a(const char* data, size_t n, uint64_t h = kFnvOffset) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

// The groups of a cross-row rule (not_full_attention, moe_ep_not_rank_local) whose median pair
// ratio, over at least `min_pairs` pairs, `flag` accepts.
template <class Group, class Flag>
std::set<Group> groups_by_median(std::map<Group, std::vector<double>>& ratios, int min_pairs, Flag flag) {
  std::set<Group> flagged;
  for (auto& [g, r] : ratios) {
    if (static_cast<int>(r.size()) < min_pairs) continue;
    std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
    if (flag(r[r.size() / 2])) flagged.insert(g);
  }
  return flagged;
}
}  // namespace

Implausible implausible_row(const KernelQuery& q, double latency_ms, const GpuSpec& gpu, double compute_slack) {
  constexpr double kSlack = 1.5;
  const double compute_ms = 1e3 * fastest_s(q, gpu);  // a row is a kernel alone: at its boost clock
  if (latency_ms * compute_slack < compute_ms) return Implausible::kCompute;
  const double beyond_l2 = std::max(0.0, query_bytes(q) - gpu.l2_cache_mb * kBytesPerMib);
  if (latency_ms * kSlack < 1e3 * transfer_s(beyond_l2, gpu.mem_bw_gbps)) return Implausible::kMemory;
  return Implausible::kNone;
}

std::vector<bool> not_full_attention(const std::vector<KernelSample>& rows) {
  using Group = std::tuple<std::string, OpKind, std::string>;  // device, op, library (attention only)
  auto attention = [](const KernelQuery& q) { return is_attention(op_family(q.op)); };
  auto span = [](const KernelQuery& q) { return q.op == OpKind::kAttnDecode ? q.ctx : q.m; };
  auto twin_key = [](const KernelQuery& q) {  // the shape without its window
    KernelQuery full = q;
    full.window = 0;
    return query_shape_string(full) + "/" + dtype_name(q.dtype) + "/" + dtype_name(q.kv_dtype);
  };
  std::map<Group, std::map<std::string, double>> full_ms;  // window-0 latency per shape
  for (const auto& s : rows)
    if (attention(s.query) && s.query.window == 0)
      full_ms[{s.device, s.query.op, s.library}][twin_key(s.query)] = s.latency_ms;
  std::map<Group, std::vector<double>> ratios;  // t(window 0) / t(window w), span >= 16 w
  for (const auto& s : rows) {
    const KernelQuery& q = s.query;
    if (!attention(q) || q.window <= 0 || span(q) < kFullAttentionSpanOverWindow * q.window) continue;
    auto g = full_ms.find({s.device, q.op, s.library});
    if (g == full_ms.end()) continue;
    auto t = g->second.find(twin_key(q));
    // Equal latencies to the last digit are one measurement filed under two windows (the B200's
    // TRT-LLM decode rows of window 8,192 repeat its window-0 rows): no evidence either way.
    if (t != g->second.end() && t->second != s.latency_ms) ratios[g->first].push_back(t->second / s.latency_ms);
  }
  const std::set<Group> flagged =
      groups_by_median(ratios, kFullAttentionMinPairs, [](double median) { return median < kFullAttentionMinRatio; });
  std::vector<bool> out(rows.size(), false);
  if (flagged.empty()) return out;
  for (size_t i = 0; i < rows.size(); ++i)
    out[i] = rows[i].query.window == 0 && flagged.count({rows[i].device, rows[i].query.op, rows[i].library});
  return out;
}

std::vector<bool> moe_ep_not_rank_local(const std::vector<KernelSample>& rows) {
  using Group = std::tuple<std::string, std::string, DType>;  // device, library, dtype
  auto probe = [](const KernelQuery& q) {
    return q.op == OpKind::kMoe && q.routing_alpha == 0 && q.b >= kMoeEpProbeMinTokens;
  };
  auto twin_key = [](const KernelQuery& q) {  // the layer at ep 1
    KernelQuery one = q;
    one.moe_ep = 1;
    return query_shape_string(one);
  };
  std::map<Group, std::map<std::string, double>> ep1_ms;
  for (const auto& s : rows)
    if (probe(s.query) && s.query.moe_ep == 1) ep1_ms[{s.device, s.library, s.query.dtype}][twin_key(s.query)] = s.latency_ms;
  std::map<Group, std::vector<double>> ratios;  // t(ep 8) / t(ep 1)
  for (const auto& s : rows) {
    if (!probe(s.query) || s.query.moe_ep != kMoeEpProbeDegree) continue;
    auto g = ep1_ms.find({s.device, s.library, s.query.dtype});
    if (g == ep1_ms.end()) continue;
    auto t = g->second.find(twin_key(s.query));
    if (t != g->second.end()) ratios[g->first].push_back(s.latency_ms / t->second);
  }
  const std::set<Group> flagged =
      groups_by_median(ratios, kMoeEpMinPairs, [](double median) { return median > kMoeEpMaxRatio; });
  std::vector<bool> out(rows.size(), false);
  if (flagged.empty()) return out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const KernelQuery& q = rows[i].query;
    out[i] = q.op == OpKind::kMoe && q.moe_ep > 1 && flagged.count({rows[i].device, rows[i].library, q.dtype});
  }
  return out;
}

namespace {
// One registry lookup per device, not per row.
class SpecOf {
 public:
  explicit SpecOf(const GpuRegistry& gpus) : gpus_(gpus) {}
  const GpuSpec* operator()(const std::string& device) {
    auto it = spec_.find(device);
    return it != spec_.end() ? it->second : spec_.emplace(device, gpus_.find(device)).first->second;
  }

 private:
  const GpuRegistry& gpus_;
  std::map<std::string, const GpuSpec*> spec_;
};
}  // namespace

int64_t resolve_sglang_window_zero(std::vector<KernelSample>& rows, const GpuRegistry& gpus) {
  SpecOf spec(gpus);
  int64_t n = 0;
  for (auto& s : rows) {
    if (!s.sglang_window_zero) continue;
    const GpuSpec* g = spec(s.device);
    if (g && sglang_window_zero_is_own_key(s.query, *g)) {
      s.query.window = 1;
      ++n;
    }
  }
  return n;
}

LibraryFilterCounts filter_spec_library(std::vector<KernelSample>& rows, const GpuRegistry& gpus) {
  LibraryFilterCounts n;
  SpecOf spec(gpus);
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const KernelSample& s) {
                              const GpuSpec* g = s.sglang_window_zero ? spec(s.device) : nullptr;
                              const bool own_key = g && sglang_window_zero_is_own_key(s.query, *g);
                              n.sglang_own_key += own_key;
                              return own_key;
                            }),
             rows.end());
  // Rows flagged over the whole file (before any row of it is dropped).
  {
    const std::vector<bool> partial = not_full_attention(rows), whole_layer = moe_ep_not_rank_local(rows);
    std::vector<KernelSample> kept;
    kept.reserve(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      if (partial[i])
        ++n.not_full_attention;
      else if (whole_layer[i])
        ++n.moe_ep_not_rank_local;
      else
        kept.push_back(std::move(rows[i]));
    }
    rows.swap(kept);
  }
  // (device, library) pairs with rows: a library the spec implies for a query (the family's, for
  // MoE its dtype's too) is kept as the only one where the device has rows of it.
  std::set<std::pair<std::string, std::string>> has_spec_library;
  for (const auto& s : rows)
    if (const GpuSpec* g = spec(s.device))
      if (const char* lib = kernel_library(s.query, *g); lib && s.library == lib) has_spec_library.insert({s.device, lib});
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const KernelSample& s) {
                              const GpuSpec* g = spec(s.device);
                              if (!g) return false;
                              const Family fam = op_family(s.query.op);
                              const char* lib = kernel_library(s.query, *g);
                              if (lib && !s.library.empty() && s.library != lib && has_spec_library.count({s.device, lib}))
                                return ++n.other_library, true;
                              if (!is_attention(fam)) return false;
                              switch (implausible_row(s.query, s.latency_ms, *g, kTrainingComputeSlack)) {
                                case Implausible::kCompute: return ++n.impossible_compute, true;
                                case Implausible::kMemory: return ++n.impossible_memory, true;
                                case Implausible::kNone: break;
                              }
                              return false;
                            }),
             rows.end());
  return n;
}

bool fallback_library_row(const KernelSample& s, const GpuSpec& gpu) {
  return fallback_attention(s.query, gpu) && s.library == attention_library(s.query, gpu);
}

bool shape_held_out(const KernelQuery& q, int percent) {
  // fp8_static hashes as fp8, as before it was a dtype of its own: the held-out sets stay those
  // every recorded figure was measured on.
  const char* dtype = q.dtype == DType::kFp8Static ? "fp8" : dtype_name(q.dtype);
  const std::string key = std::string(op_name(q.op)) + "/" + dtype + "/" + query_shape_string(q);
  return static_cast<int>(fnv1a(key.data(), key.size()) % 100) < percent;
}

void check_holdout_percent(int percent) {
  if (percent < 1 || percent > 50)
    throw ConfigError("--holdout-shapes: expected a percentage in 1..50, got " + std::to_string(percent));
}

std::string files_hash(const std::vector<std::string>& paths) {
  uint64_t h = kFnvOffset;
  std::vector<char> buf(1 << 16);
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw DataError(p + ": cannot open file");
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      h = fnv1a(buf.data(), static_cast<size_t>(in.gcount()), h);
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace tilecast
