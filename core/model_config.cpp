#include "core/model_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config_io.h"
#include "core/error.h"
#include "core/gpu_spec.h"

namespace fs = std::filesystem;

namespace tilecast {
namespace {

int64_t int_field(const nlohmann::json& j, const std::string& path, const std::vector<std::string>& keys,
                  bool required = true, int64_t fallback = 0) {
  for (const auto& k : keys) {
    if (!j.contains(k) || j[k].is_null()) continue;
    if (!j[k].is_number_integer())
      throw ConfigError(path + ": field '" + k + "': expected an integer");
    int64_t v = j[k].get<int64_t>();
    if (v < 1 || v > (int64_t{1} << 24))
      throw ConfigError(path + ": field '" + k + "': " + std::to_string(v) + " out of range [1, 2^24]");
    return v;
  }
  if (required) throw ConfigError(path + ": missing field '" + keys.front() + "'");
  return fallback;
}

std::string resolve_path(const std::string& spec, const std::string& dir) {
  if (fs::exists(spec) && fs::is_regular_file(spec)) return spec;
  if (spec.find('/') != std::string::npos || (spec.size() > 5 && spec.substr(spec.size() - 5) == ".json"))
    throw ConfigError(spec + ": model config not found");
  std::string key = normalize_gpu_key(spec);
  for (const auto& name : bundled_models(dir))
    if (normalize_gpu_key(name) == key) return (fs::path(dir) / (name + ".json")).string();
  const fs::path aliases = fs::path(dir) / "aliases.yaml";
  if (fs::exists(aliases)) {
    YAML::Node a = YAML::LoadFile(aliases.string());
    for (const auto& kv : a)
      if (normalize_gpu_key(kv.first.as<std::string>()) == key)
        return (fs::path(dir) / (kv.second.as<std::string>() + ".json")).string();
  }
  std::string all;
  for (const auto& n : bundled_models(dir)) all += (all.empty() ? "" : ", ") + n;
  throw ConfigError("unknown model '" + spec + "' (bundled: " + all + "; or pass a config.json path)");
}

// The weight blocks of an fp8_block checkpoint (`field` of quantization_config, null when absent):
// 128 x 128, as the data's block-scaled kernels, or one line naming the field.
void check_fp8_blocks(const nlohmann::json* blocks, const std::string& path, const std::string& field) {
  if (!blocks || *blocks != nlohmann::json::array({128, 128}))
    throw ConfigError(path + ": field 'quantization_config." + field + "': " +
                      (blocks ? blocks->dump() : std::string("absent")) +
                      " is not modelled (fp8_block scales 128x128 blocks)");
}

// compressed-tensors' `quantization_config` (llm-compressor's checkpoints: RedHatAI's FP8
// models, Kimi-K2-Thinking's 4-bit experts). An FP8 `kv_cache_scheme` makes the cache fp8.
// Every config group must be one scheme:
//   FP8 W8A8 (float 8-bit weights and input activations): the GEMMs in fp8 (dynamic activation
//     scales) or fp8_static, or fp8_block with 128 x 128 weight blocks;
//   W4A16 (int 4-bit weights, group-wise, no activation quantisation) on a MoE model whose
//     `ignore` list keeps attention unquantised (an entry naming self_attn): the experts in int4.
// Anything else is one line naming the field.
void read_compressed_tensors(const nlohmann::json& q, const std::string& path, ModelConfig& m) {
  // Errors name the field by its dotted path under quantization_config.
  auto fail = [&](const std::string& field, const std::string& why) {
    return ConfigError(path + ": field 'quantization_config." + field + "': " + why);
  };
  // An FP8 KV cache (kv_cache_scheme), beside the weights' scheme or alone.
  const bool kv_scheme = q.contains("kv_cache_scheme") && !q["kv_cache_scheme"].is_null();
  if (kv_scheme) {
    const auto& k = q["kv_cache_scheme"];
    if (!k.is_object() || !k.contains("num_bits") || k["num_bits"] != 8 || !k.contains("type") || k["type"] != "float")
      throw fail("kv_cache_scheme", (k.is_object() ? k.dump() : std::string("not an object")) +
                                        " is not modelled (an FP8 cache: num_bits 8, type float)");
    m.kv_cache_dtype = "fp8";
  }
  const bool no_groups = !q.contains("config_groups") || q["config_groups"].is_null() ||
                         (q["config_groups"].is_object() && q["config_groups"].empty());
  if (no_groups && kv_scheme) return;
  if (no_groups || !q["config_groups"].is_object()) throw fail("config_groups", "expected an object of quantisation schemes");
  auto num = [&](const nlohmann::json& o, const std::string& at, const char* k) -> int64_t {
    if (!o.contains(k) || !o[k].is_number_integer()) throw fail(at + "." + k, "expected an integer");
    return o[k].get<int64_t>();
  };
  auto text = [&](const nlohmann::json& o, const std::string& at, const char* k) -> std::string {
    if (!o.contains(k) || o[k].is_null()) return "";
    if (!o[k].is_string()) throw fail(at + "." + k, "expected a string");
    return o[k].get<std::string>();
  };
  std::string scheme;
  int64_t group = 0;
  for (const auto& [name, g] : q["config_groups"].items()) {
    const std::string at = "config_groups." + name, wat = at + ".weights", aat = at + ".input_activations";
    if (!g.is_object() || !g.contains("weights") || !g["weights"].is_object())
      throw fail(at, "expected an object with 'weights'");
    const auto& w = g["weights"];
    const bool act = g.contains("input_activations") && !g["input_activations"].is_null();
    const int64_t bits = num(w, wat, "num_bits");
    const std::string type = text(w, wat, "type"), strategy = text(w, wat, "strategy");
    std::string this_scheme;
    if (bits == 8 && type == "float" && act) {
      const auto& a = g["input_activations"];
      if (!a.is_object() || num(a, aat, "num_bits") != 8 || text(a, aat, "type") != "float")
        throw fail(aat, "only FP8 (8-bit float) activations are modelled with FP8 weights");
      const bool dynamic = a.contains("dynamic") && a["dynamic"].is_boolean() && a["dynamic"].get<bool>();
      if (strategy == "block") {
        check_fp8_blocks(w.contains("block_structure") ? &w["block_structure"] : nullptr, path, wat + ".block_structure");
        this_scheme = "fp8_block";
      } else {
        this_scheme = dynamic ? "fp8" : "fp8_static";
      }
    } else if (bits == 4 && type == "int" && !act) {
      if (strategy != "group" && strategy != "channel")
        throw fail(wat + ".strategy", "'" + strategy + "' is not modelled for 4-bit weights (group, channel)");
      const int64_t gs = strategy == "group" ? num(w, wat, "group_size") : 0;
      if (strategy == "group" && (gs < 8 || gs > 65536))
        throw fail(wat + ".group_size", std::to_string(gs) + " out of range [8, 65536]");
      if (scheme == "int4" && gs != group)
        throw fail("config_groups", "groups of different sizes (" + std::to_string(group) + ", " + std::to_string(gs) +
                                        ") are not modelled");
      group = gs;
      this_scheme = "int4";
    } else {
      throw fail(at, std::to_string(bits) + "-bit " + (type.empty() ? "" : type + " ") + "weights" +
                         (act ? " with quantised activations" : " alone") +
                         " are not modelled (compressed-tensors: FP8 W8A8, or 4-bit integer weights on a MoE model's "
                         "experts)");
    }
    if (!scheme.empty() && this_scheme != scheme)
      throw fail("config_groups", "schemes '" + scheme + "' and '" + this_scheme + "' mixed are not modelled");
    scheme = this_scheme;
  }
  if (scheme != "int4") {
    m.quantized_dtype = scheme;
    return;
  }
  if (m.num_experts == 0)
    throw ConfigError(path + ": field 'quantization_config': 4-bit integer weights on a model without experts are not "
                      "modelled (int4 is modelled for a MoE model's experts, Marlin's kernels)");
  // The experts alone: the ignore list must keep attention (and so the dense layers with it,
  // as llm-compressor's MoE recipes do) out of the scheme.
  bool keeps_attention = false;
  if (q.contains("ignore") && q["ignore"].is_array())
    for (const auto& e : q["ignore"])
      if (e.is_string() && e.get<std::string>().find("self_attn") != std::string::npos) keeps_attention = true;
  if (!keeps_attention)
    throw fail("ignore", "no entry keeps self_attn unquantised; 4-bit integer weights are modelled on the experts alone");
  m.expert_dtype = "int4";
  m.expert_group_size = group;
}
}  // namespace

std::vector<std::string> bundled_models(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig load_model_config(const std::string& spec, const std::string& models_dir) {
  const std::string path = resolve_path(spec, models_dir);
  nlohmann::json j = load_json_object(path);
  ModelConfig m;
  m.origin = path;
  m.name = fs::path(path).stem().string();
  if (!j.contains("model_type") || !j["model_type"].is_string())
    throw ConfigError(path + ": missing field 'model_type'");
  if (j["model_type"] == "gemma3" || j["model_type"] == "llama4") {
    // Image-text configs (Gemma 3's, Llama 4's): the language model is their text_config (a
    // gemma3_text or llama4_text config; Gemma's leaves Gemma3TextConfig's defaults out: 262,208
    // tokens, 131,072 positions); the vision tower and image tokens are not forecast. The top
    // level's dtype and quantisation stand.
    const std::string type = j["model_type"];
    if (!j.contains("text_config") || !j["text_config"].is_object())
      throw ConfigError(path + ": field 'text_config': a " + type + " config holds its language model there");
    nlohmann::json text = j["text_config"];
    text["model_type"] = type + "_text";
    for (const char* k : {"torch_dtype", "quantization_config", "tie_word_embeddings"})
      if (j.contains(k) && !text.contains(k)) text[k] = j[k];
    if (type == "gemma3") {
      if (!text.contains("vocab_size")) text["vocab_size"] = 262208;
      if (!text.contains("max_position_embeddings")) text["max_position_embeddings"] = 131072;
    }
    j = text;
  }
  m.model_type = j["model_type"].get<std::string>();
  // A field of the wrong JSON type is an error, never a silent default; null means absent.
  auto str = [&](const char* k, const std::string& dflt) {
    if (!j.contains(k) || j[k].is_null()) return dflt;
    if (!j[k].is_string()) throw ConfigError(path + ": field '" + k + "': expected a string");
    return j[k].get<std::string>();
  };
  auto boolean = [&](const char* k, bool dflt) {
    if (!j.contains(k) || j[k].is_null()) return dflt;
    if (!j[k].is_boolean()) throw ConfigError(path + ": field '" + k + "': expected true or false");
    return j[k].get<bool>();
  };
  // Hugging Face names of the same sizes in each dense family.
  struct Keys {
    const char* type;
    std::vector<std::string> hidden, layers, heads, ffn, positions;
    const char* act_key;
    const char* act_default;
  };
  static const Keys dense[] = {
      {"gpt2", {"n_embd"}, {"n_layer"}, {"n_head"}, {"n_inner"}, {"n_positions", "n_ctx"}, "activation_function", "gelu_new"},
      {"bert", {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"}, {"intermediate_size"},
       {"max_position_embeddings"}, "hidden_act", "gelu"},
      {"opt", {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"}, {"ffn_dim"},
       {"max_position_embeddings"}, "activation_function", "relu"}};
  const Keys* keys = nullptr;
  for (const auto& k : dense)
    if (m.model_type == k.type) keys = &k;
  if (keys) {
    m.hidden = int_field(j, path, keys->hidden);
    m.layers = int_field(j, path, keys->layers);
    m.heads = int_field(j, path, keys->heads);
    // GPT-2 configs may leave n_inner null: 4 x hidden.
    m.ffn = int_field(j, path, keys->ffn, m.model_type != "gpt2", 4 * m.hidden);
    m.vocab = int_field(j, path, {"vocab_size"});
    m.max_positions = int_field(j, path, keys->positions);
    m.activation = str(keys->act_key, keys->act_default);
    if (m.model_type == "opt") {
      m.embed_dim = int_field(j, path, {"word_embed_proj_dim"}, false, m.hidden);
      if (j.contains("do_layer_norm_before") && !j["do_layer_norm_before"].is_null()) {
        if (!j["do_layer_norm_before"].is_boolean())
          throw ConfigError(path + ": field 'do_layer_norm_before': expected true or false");
        m.final_layer_norm = j["do_layer_norm_before"].get<bool>();
      }
    }
  } else if (m.model_type == "switch_transformers") {
    m.hidden = int_field(j, path, {"d_model"});
    m.layers = int_field(j, path, {"num_layers"});
    m.decoder_layers = int_field(j, path, {"num_decoder_layers"}, false, m.layers);
    m.heads = int_field(j, path, {"num_heads"});
    m.head_dim = int_field(j, path, {"d_kv"});
    m.ffn = int_field(j, path, {"d_ff"});
    m.vocab = int_field(j, path, {"vocab_size"});
    m.num_experts = int_field(j, path, {"num_experts"});
    m.expert_capacity = int_field(j, path, {"expert_capacity"});
    m.encoder_sparse_step = int_field(j, path, {"encoder_sparse_step"}, false, 2);
    m.decoder_sparse_step = int_field(j, path, {"decoder_sparse_step"}, false, 2);
    m.activation = str("feed_forward_proj", "relu");
  } else if (is_llm_family(m.model_type)) {
    // Hugging Face LlamaConfig and its relatives (llama.cpp's hparams): one key set, with
    // the family's fixed traits below.
    m.hidden = int_field(j, path, {"hidden_size"});
    m.layers = int_field(j, path, {"num_hidden_layers"});
    m.heads = int_field(j, path, {"num_attention_heads"});
    m.kv_heads = int_field(j, path, {"num_key_value_heads"}, false, m.heads);
    m.head_dim = int_field(j, path, {"head_dim"}, false, 0);
    m.ffn = int_field(j, path, {"intermediate_size"});
    m.vocab = int_field(j, path, {"vocab_size"});
    m.max_positions = int_field(j, path, {"max_position_embeddings"});
    // Gemma 2 names its activation `hidden_activation` (GeGLU: gelu_pytorch_tanh).
    const bool gemma = m.model_type == "gemma2" || m.model_type == "gemma3_text";
    m.activation = gemma ? str("hidden_activation", str("hidden_act", "gelu_pytorch_tanh")) : str("hidden_act", "silu");
    m.rms_norm = m.gated_ffn = m.rope = true;
    m.tie_embeddings = boolean("tie_word_embeddings", gemma);
    // `attention_bias` puts biases on q, k, v and o (Llama's and gpt-oss's, whose default is on);
    // Qwen2's q/k/v biases are fixed, o has none.
    m.o_bias = boolean("attention_bias", m.model_type == "gpt_oss");
    m.qkv_bias = m.model_type == "qwen2" || m.model_type == "qwen2_moe" || m.o_bias;
    m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe" || m.model_type == "gemma3_text";
    if (gemma) {
      m.sandwich_norms = m.embed_scale = true;
      auto cap = [&](const char* k) {
        if (!j.contains(k) || j[k].is_null()) return 0.0;
        if (!j[k].is_number()) throw ConfigError(path + ": field '" + k + "': expected a number or null");
        const double v = j[k].get<double>();
        if (!(v > 0 && v < 1e6)) throw ConfigError(path + ": field '" + k + "': " + std::to_string(v) + " not in (0, 1e6)");
        return v;
      };
      m.attn_softcap = cap("attn_logit_softcapping");
      m.final_softcap = cap("final_logit_softcapping");
    }
    // Phi-3.5/Phi-4-mini rotate part of each head (partial_rotary_factor); RoPE is costed over
    // the whole head, an upper bound on a memory op of a few percent of a step.
    // Sliding windows, per family when the config does not list `layer_types`: Mistral,
    // Mixtral and Phi-3 window every layer when `sliding_window` is a number (null: full
    // attention); Gemma 2 every other layer from the first (Gemma2Config's default); the Qwen
    // families only with `use_sliding_window`, and then the layers from `max_window_layers` on
    // (Qwen2Config: default 28); Llama has none. A config's `layer_types` (transformers 4.53 on)
    // names each layer's kind and overrides those defaults. A window of the model's positions or
    // more never binds.
    const bool qwen = m.model_type.rfind("qwen", 0) == 0;
    const bool alternate = m.model_type == "gemma2" || m.model_type == "gpt_oss";  // every other layer windowed
    const bool windowed_family = m.model_type == "mistral" || m.model_type == "mixtral" || m.model_type == "phi3" ||
                                 gemma || m.model_type == "gpt_oss" ||
                                 (qwen && boolean("use_sliding_window", false));
    if (windowed_family && j.contains("sliding_window") && !j["sliding_window"].is_null())
      m.sliding_window = int_field(j, path, {"sliding_window"});
    // Llama 4: chunked attention (attention_chunk_size) in the RoPE layers, full attention in the
    // NoPE ones (no_rope_layers[i] = 0; Llama4TextConfig's default every 4th layer).
    if (m.model_type == "llama4_text" && j.contains("attention_chunk_size") && !j["attention_chunk_size"].is_null()) {
      m.sliding_window = int_field(j, path, {"attention_chunk_size"});
      m.chunked_attention = true;
      m.full_attention_layers = m.layers / 4;
      if (j.contains("no_rope_layers") && !j["no_rope_layers"].is_null() && !j["no_rope_layers"].empty()) {  // []: the default
        const auto& nr = j["no_rope_layers"];
        if (!nr.is_array() || int64_t(nr.size()) != m.layers)
          throw ConfigError(path + ": field 'no_rope_layers': expected a list of " + std::to_string(m.layers) +
                            " flags (1: RoPE and chunked attention, 0: NoPE and full attention)");
        m.full_attention_layers = 0;
        for (const auto& f : nr) {
          if (!f.is_number_integer() || (f != 0 && f != 1))
            throw ConfigError(path + ": field 'no_rope_layers': " + f.dump() + " is not 0 or 1");
          if (f == 0) ++m.full_attention_layers;
        }
      }
    }
    if (alternate) {
      m.full_attention_layers = m.layers / 2;
    } else if (m.model_type == "gemma3_text") {
      // Gemma3TextConfig: every sliding_window_pattern-th layer (default 6) attends in full.
      m.full_attention_layers = m.layers / int_field(j, path, {"sliding_window_pattern"}, false, 6);
    } else if (qwen && m.sliding_window > 0) {
      if (j.contains("max_window_layers") && !j["max_window_layers"].is_null() &&
          (!j["max_window_layers"].is_number_integer() || j["max_window_layers"].get<int64_t>() < 0))
        throw ConfigError(path + ": field 'max_window_layers': expected an integer >= 0");
      const int64_t full = j.contains("max_window_layers") && !j["max_window_layers"].is_null()
                               ? j["max_window_layers"].get<int64_t>()
                               : 28;
      m.full_attention_layers = std::min(full, m.layers);
    }
    if (j.contains("layer_types") && !j["layer_types"].is_null()) {
      const auto& types = j["layer_types"];
      if (!types.is_array() || int64_t(types.size()) != m.layers)
        throw ConfigError(path + ": field 'layer_types': expected a list of " + std::to_string(m.layers) +
                          " layer kinds (num_hidden_layers)");
      int64_t full = 0;
      // Local layers are one kind: sliding (the window) or, in Llama 4, chunked.
      const char* local = m.chunked_attention ? "chunked_attention" : "sliding_attention";
      for (const auto& t : types) {
        const std::string kind = t.is_string() ? t.get<std::string>() : std::string();
        if (kind == "full_attention") ++full;
        else if (kind != local)
          throw ConfigError(path + ": field 'layer_types': layer kind '" + (t.is_string() ? kind : t.dump()) +
                            "' is not modelled here (full_attention, " + local + ")");
      }
      if (full < m.layers && m.sliding_window == 0) {
        if (!j.contains("sliding_window") || j["sliding_window"].is_null())
          throw ConfigError(path + ": field 'sliding_window': 'layer_types' lists sliding_attention layers, but no window");
        m.sliding_window = int_field(j, path, {"sliding_window"});
      }
      m.full_attention_layers = full;
    }
    if (m.sliding_window >= m.max_positions || m.full_attention_layers >= m.layers) m.sliding_window = 0;
    if (m.sliding_window == 0) m.full_attention_layers = 0;
    if (m.model_type == "llama4_text") {
      // Llama 4: top-k (top-1) of num_local_experts experts of intermediate_size beside a shared
      // expert of that width, summed without a gate, in every interleave_moe_layer_step-th layer
      // (Hugging Face: layers step - 1, 2 step - 1, ...; or the config's moe_layers); the others
      // a dense FFN of intermediate_size_mlp. q and k L2-normalised (use_qk_norm).
      m.num_experts = int_field(j, path, {"num_local_experts"});
      m.experts_per_token = int_field(j, path, {"num_experts_per_tok"});
      m.moe_ffn = m.shared_expert_ffn = m.ffn;
      m.ffn = int_field(j, path, {"intermediate_size_mlp"}, false, 16384);
      m.qk_norm = boolean("use_qk_norm", true);
      m.qk_norm_weights = false;
      int64_t moe = 0;
      if (j.contains("moe_layers") && !j["moe_layers"].is_null()) {
        if (!j["moe_layers"].is_array()) throw ConfigError(path + ": field 'moe_layers': expected a list of layer indices");
        std::vector<bool> seen(static_cast<size_t>(m.layers), false);
        for (const auto& i : j["moe_layers"]) {
          if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= m.layers ||
              seen[static_cast<size_t>(i.get<int64_t>())])
            throw ConfigError(path + ": field 'moe_layers': " + i.dump() + " is not a distinct layer index in [0, " +
                              std::to_string(m.layers - 1) + "]");
          seen[static_cast<size_t>(i.get<int64_t>())] = true;
          ++moe;
        }
      } else {
        moe = m.layers / int_field(j, path, {"interleave_moe_layer_step"}, false, 1);
      }
      if (moe == 0) throw ConfigError(path + ": fields 'moe_layers'/'interleave_moe_layer_step': no layer routes to the experts");
      m.dense_layers = m.layers - moe;
    } else if (m.model_type == "mixtral" || m.model_type == "gpt_oss") {
      m.num_experts = int_field(j, path, {"num_local_experts"});
      m.experts_per_token = int_field(j, path, {"num_experts_per_tok", "experts_per_token"});
      m.moe_ffn = m.ffn;
      m.attention_sinks = m.expert_bias = m.model_type == "gpt_oss";
    } else if (m.model_type == "qwen3_moe" || m.model_type == "qwen2_moe") {
      m.num_experts = int_field(j, path, {"num_experts"});
      m.experts_per_token = int_field(j, path, {"num_experts_per_tok"});
      m.moe_ffn = int_field(j, path, {"moe_intermediate_size"});
      // Hugging Face's rule: layer i routes unless it is in mlp_only_layers or (i + 1) is not a
      // multiple of decoder_sparse_step; the others have a dense FFN of intermediate_size.
      const int64_t step = int_field(j, path, {"decoder_sparse_step"}, false, 1);
      std::vector<bool> dense(static_cast<size_t>(m.layers), false);
      if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
        if (!j["mlp_only_layers"].is_array())
          throw ConfigError(path + ": field 'mlp_only_layers': expected a list of layer indices");
        for (const auto& i : j["mlp_only_layers"]) {
          if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= m.layers)
            throw ConfigError(path + ": field 'mlp_only_layers': " + i.dump() + " is not a layer index in [0, " +
                              std::to_string(m.layers - 1) + "]");
          dense[static_cast<size_t>(i.get<int64_t>())] = true;
        }
      }
      for (int64_t i = 0; i < m.layers; ++i)
        if (dense[static_cast<size_t>(i)] || (i + 1) % step != 0) ++m.dense_layers;
      if (m.dense_layers == m.layers)
        throw ConfigError(path + ": fields 'mlp_only_layers'/'decoder_sparse_step': no layer routes to the experts");
      if (m.model_type == "qwen2_moe") {
        m.shared_expert_ffn = int_field(j, path, {"shared_expert_intermediate_size"});
        m.shared_expert_gate = true;
      }
    } else if (m.model_type == "deepseek_v2" || m.model_type == "deepseek_v3" || m.model_type == "kimi_k2") {
      // DeepSeek-V2/V3 (and Kimi K2, V3's architecture with 64 heads and 384 experts): MLA, then
      // first_k_dense_replace dense layers and routed experts (group-limited top-k: the routing's
      // cost is the router GEMM's) beside n_shared_experts shared ones of the same width, summed
      // without a gate.
      m.num_experts = int_field(j, path, {"n_routed_experts"});
      m.experts_per_token = int_field(j, path, {"num_experts_per_tok"});
      m.moe_ffn = int_field(j, path, {"moe_intermediate_size"});
      m.shared_expert_ffn = int_field(j, path, {"n_shared_experts"}, false, 0) * m.moe_ffn;
      m.expert_groups = int_field(j, path, {"n_group"}, false, 1);
      m.expert_groups_per_token = int_field(j, path, {"topk_group"}, false, 1);
      if (m.expert_groups < 1 || m.num_experts % m.expert_groups != 0)
        throw ConfigError(path + ": field 'n_group': " + std::to_string(m.expert_groups) + " does not divide the " +
                          std::to_string(m.num_experts) + " routed experts");
      if (m.expert_groups_per_token < 1 || m.expert_groups_per_token > m.expert_groups ||
          m.expert_groups_per_token * (m.num_experts / m.expert_groups) < m.experts_per_token)
        throw ConfigError(path + ": field 'topk_group': " + std::to_string(m.expert_groups_per_token) +
                          " groups must be 1 to n_group (" + std::to_string(m.expert_groups) +
                          ") and hold the token's " + std::to_string(m.experts_per_token) + " experts");
      if (j.contains("num_nextn_predict_layers") && !j["num_nextn_predict_layers"].is_null()) {
        const auto& n = j["num_nextn_predict_layers"];
        if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 16)
          throw ConfigError(path + ": field 'num_nextn_predict_layers': expected an integer in [0, 16]");
        m.mtp_layers = n.get<int64_t>();
      }
      if (j.contains("first_k_dense_replace") && !j["first_k_dense_replace"].is_null()) {
        if (!j["first_k_dense_replace"].is_number_integer() || j["first_k_dense_replace"].get<int64_t>() < 0 ||
            j["first_k_dense_replace"].get<int64_t>() >= m.layers)
          throw ConfigError(path + ": field 'first_k_dense_replace': expected an integer in [0, " +
                            std::to_string(m.layers - 1) + "]");
        m.dense_layers = j["first_k_dense_replace"].get<int64_t>();
      }
      if (int_field(j, path, {"moe_layer_freq"}, false, 1) != 1)
        throw ConfigError(path + ": field 'moe_layer_freq': only every layer after the dense ones routed is modelled");
      m.q_lora_rank = int_field(j, path, {"q_lora_rank"}, false, 0);  // null: V2-Lite's one q_proj
      m.kv_lora_rank = int_field(j, path, {"kv_lora_rank"});
      m.qk_rope_dim = int_field(j, path, {"qk_rope_head_dim"});
      m.v_head_dim = int_field(j, path, {"v_head_dim"});
      m.head_dim = int_field(j, path, {"qk_nope_head_dim"}) + m.qk_rope_dim;
      m.kv_heads = m.heads;  // every head its own key and value, up-projected from the latent
    }
    if (m.num_experts > 0 && m.experts_per_token > m.num_experts)
      throw ConfigError(path + ": field 'num_experts_per_tok': " + std::to_string(m.experts_per_token) +
                        " exceeds the " + std::to_string(m.num_experts) + " experts");
    if (m.heads % m.kv_heads != 0)
      throw ConfigError(path + ": field 'num_key_value_heads': " + std::to_string(m.heads) +
                        " attention heads are not a multiple of " + std::to_string(m.kv_heads));
  } else {
    throw ConfigError(path + ": field 'model_type': unsupported '" + m.model_type + "' (" + model_type_list() + ")");
  }
  m.torch_dtype = str("torch_dtype", "");
  if (j.contains("quantization_config") && !j["quantization_config"].is_null()) {
    const auto& q = j["quantization_config"];
    const std::string method =
        q.is_object() && q.contains("quant_method") && q["quant_method"].is_string() ? q["quant_method"].get<std::string>()
                                                                                      : std::string();
    if (method == "mxfp4") {
      // Hugging Face's MXFP4 quantiser converts the MoE experts alone (gpt-oss).
      if (m.num_experts == 0)
        throw ConfigError(path + ": field 'quantization_config': quant_method 'mxfp4' on a model without experts "
                          "is not modelled (MXFP4 is modelled for a MoE model's experts, as gpt-oss stores them)");
      m.expert_dtype = "mxfp4";
    } else if (method == "compressed-tensors") {
      read_compressed_tensors(q, path, m);
    } else if (method != "fp8") {
      throw ConfigError(path + ": field 'quantization_config': quant_method '" + method +
                        "' is not modelled (fp8: per-tensor, static or 128x128 block-scaled GEMMs; mxfp4: a MoE "
                        "model's experts; compressed-tensors: FP8 W8A8, or 4-bit integer experts); delete the field "
                        "to forecast the unquantised model, with --dtype to choose its GEMMs");
    } else if (q.contains("weight_block_size") && !q["weight_block_size"].is_null()) {
      check_fp8_blocks(&q["weight_block_size"], path, "weight_block_size");
      m.quantized_dtype = "fp8_block";
    } else {
      const bool static_act = q.contains("activation_scheme") && q["activation_scheme"] == "static";
      m.quantized_dtype = static_act ? "fp8_static" : "fp8";
    }
  }
  // Dropout probabilities (they decide which tensors training keeps for the backward pass).
  auto prob = [&](std::initializer_list<const char*> keys, double dflt) {
    for (const char* k : keys) {
      if (!j.contains(k) || j[k].is_null()) continue;
      if (!j[k].is_number()) throw ConfigError(path + ": field '" + k + "': expected a number");
      const double v = j[k].get<double>();
      if (!(v >= 0 && v < 1)) throw ConfigError(path + ": field '" + k + "': " + std::to_string(v) + " not in [0, 1)");
      return v;
    }
    return dflt;
  };
  const bool llm = is_llm_family(m.model_type);
  m.attention_dropout = prob({"attn_pdrop", "attention_probs_dropout_prob", "attention_dropout", "dropout_rate"},
                             llm ? 0.0 : 0.1);
  m.hidden_dropout = llm ? 0.0 : prob({"resid_pdrop", "hidden_dropout_prob", "dropout", "dropout_rate"}, 0.1);
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0)
      throw ConfigError(path + ": hidden size " + std::to_string(m.hidden) + " is not divisible by " +
                        std::to_string(m.heads) + " heads");
    m.head_dim = m.hidden / m.heads;
  }
  static const char* acts[] = {"gelu", "gelu_new", "relu", "gelu_pytorch_tanh", "silu"};
  // The gated families: SiLU (SwiGLU), or Gemma's tanh GELU (GeGLU), one transcendental per
  // element either way.
  const bool gated_act = m.activation == "silu" || ((m.model_type == "gemma2" || m.model_type == "gemma3_text") &&
                                                    m.activation == "gelu_pytorch_tanh");
  if (std::find(std::begin(acts), std::end(acts), m.activation) == std::end(acts) || (m.gated_ffn != gated_act))
    throw ConfigError(path + ": activation '" + m.activation + "' is not modelled for " + m.model_type +
                      " (gelu, gelu_new, relu; silu for the gated LLM families, gelu_pytorch_tanh for Gemma's)");
  return m;
}

std::string model_type_list(bool llm_only) {
  std::string out;
  for (const auto& t : kModelTypes)
    if (!llm_only || t.schema == ConfigSchema::kHfDecoder) out += (out.empty() ? "" : ", ") + std::string(t.type);
  return out;
}

bool is_llm_family(const std::string& type) {
  for (const auto& t : kModelTypes)
    if (type == t.type) return t.schema == ConfigSchema::kHfDecoder;
  return false;
}

void require_serving_family(const ModelConfig& m, const std::string& mode_flag) {
  if (!is_llm_family(m.model_type))
    throw ConfigError(mode_flag + ": serving graphs cover the decoder families (" + model_type_list(true) + "), not '" +
                      m.model_type + "'");
}

double attention_weights(const ModelConfig& m) {
  const double h = m.hidden, q = double(m.heads) * m.head_dim, kv = double(m.kv_heads) * m.head_dim;
  if (!is_mla(m)) return 2 * h * q + 2 * h * kv;
  const double ql = double(m.q_lora_rank), kvl = double(m.kv_lora_rank), nope = double(m.head_dim - m.qk_rope_dim);
  const double heads = double(m.heads), vd = double(m.v_head_dim);
  return (ql > 0 ? h * ql + ql * q : h * q) + h * (kvl + m.qk_rope_dim) + kvl * heads * (nope + vd) + heads * vd * h;
}

double fp8_training_gemm_parameters(const ModelConfig& m) {
  if (!is_llm_family(m.model_type))
    throw ConfigError("FP8 training covers the decoder families, not '" + m.model_type + "'");
  const double h = m.hidden;
  // A shared expert's GEMMs run in FP8 as a dense FFN's do; routed experts stay BF16; a MoE
  // model's leading dense layers are dense FFNs.
  const double moe = double(moe_layers(m)), dense = double(m.layers) - moe;
  return double(m.layers) * attention_weights(m) + dense * 3 * h * double(m.ffn) + moe * 3 * h * double(m.shared_expert_ffn);
}

double expert_parameters(const ModelConfig& m) {
  if (!is_llm_family(m.model_type))
    throw ConfigError("expert parallelism covers the decoder families, not '" + m.model_type + "'");
  const double bias = m.expert_bias ? 2.0 * double(m.moe_ffn) + double(m.hidden) : 0;  // gate_up and down biases
  return double(moe_layers(m)) * double(m.num_experts) * (3.0 * double(m.hidden) * double(m.moe_ffn) + bias);
}

ModelConfig mtp_draft_config(const ModelConfig& target) {
  if (target.mtp_layers < 1)
    throw ConfigError("--spec-draft mtp: " + target.name +
                      " has no multi-token-prediction module (its config's num_nextn_predict_layers is " +
                      std::to_string(target.mtp_layers) + ")");
  ModelConfig d = target;
  d.name = target.name + "-mtp";
  // The engines run the first module for every draft token (DeepSeek's checkpoints have one).
  d.layers = 1;
  d.dense_layers = 0;  // first_k_dense_replace counts the main layers: the module routes
  d.full_attention_layers = 0;
  d.mtp_layers = 0;
  d.mtp_module = true;
  return d;
}

double model_parameters(const ModelConfig& m) {
  const double h = m.hidden, f = m.ffn, v = m.vocab;
  if (is_llm_family(m.model_type)) {
    const double q = double(m.heads) * m.head_dim, kv = double(m.kv_heads) * m.head_dim;
    // The projections; MLA's two latent norms (the query latent's where it has one).
    double attn = attention_weights(m) + (is_mla(m) ? double(m.q_lora_rank + m.kv_lora_rank) : 0);
    if (m.qkv_bias) attn += q + 2 * kv;
    if (m.o_bias) attn += h;
    if (m.qk_norm && m.qk_norm_weights) attn += 2.0 * m.head_dim;
    if (m.attention_sinks) attn += double(m.heads);
    // Routed experts and their router (with biases: gpt-oss); a shared expert and its 1-wide gate.
    const double e = double(m.num_experts), expert_bias = m.expert_bias ? e * (2 * double(m.moe_ffn) + h) + e : 0;
    const double shared = m.shared_expert_ffn > 0 ? 3 * h * double(m.shared_expert_ffn) + (m.shared_expert_gate ? h : 0) : 0;
    const double ffn = m.num_experts > 0 ? e * 3 * h * double(m.moe_ffn) + h * e + expert_bias + shared : 3 * h * f;
    // A MoE model's leading dense layers (DeepSeek's) have the dense FFN instead.
    const double dense = double(m.dense_layers) * (3 * h * f - ffn);
    // An MTP module: its layer and tables (serving memory stores the tables once, with the
    // target) and eh_proj (2 h -> h), enorm and hnorm.
    const double mtp_input = m.mtp_module ? 2 * h * h + 2 * h : 0;
    return v * h * (m.tie_embeddings ? 1 : 2) + m.layers * (attn + ffn + double(norms_per_layer(m)) * h) + dense + h +
           mtp_input;
  }
  if (m.model_type == "switch_transformers") {
    const double inner = double(m.heads) * m.head_dim;
    const double attn = 4 * h * inner + h;  // q,k,v,o (no bias) + norm
    const double dense_ff = 2 * h * f + h;
    const double moe_ff = m.num_experts * 2 * h * f + h * m.num_experts + h;
    auto stack = [&](int64_t layers, int64_t step, double extra_attn) {
      double p = 0;
      for (int64_t i = 0; i < layers; ++i) p += attn + extra_attn + ((i % step == step - 1) ? moe_ff : dense_ff);
      return p;
    };
    return v * h + stack(m.layers, m.encoder_sparse_step, 0) + stack(m.decoder_layers, m.decoder_sparse_step, attn) + 2 * h;
  }
  const double layer = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;  // attn + mlp + 2 LNs
  const double e = double(embed_width(m));
  double emb = v * e + double(m.max_positions) * h + (e != h ? 2 * e * h : 0);
  if (m.model_type == "bert") emb += 2 * h + 2 * h;  // token types + embedding LN
  return emb + m.layers * layer + 2 * h;
}

}  // namespace tilecast
