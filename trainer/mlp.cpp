#include "trainer/mlp.h"

#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/fs_util.h"
#include "trainer/weights_manifest.h"

namespace tilecast::trainer {

MlpImpl::MlpImpl(int64_t in_features, int64_t hidden, int64_t num_layers) {
  net = torch::nn::Sequential();
  int64_t width = in_features;
  for (int64_t i = 0; i + 1 < num_layers; ++i) {
    net->push_back(torch::nn::Linear(width, hidden));
    net->push_back(torch::nn::ReLU());
    width = hidden;
  }
  net->push_back(torch::nn::Linear(width, 1));
  register_module("net", net);
  mean = register_buffer("mean", torch::zeros({in_features}));
  inv_std = register_buffer("inv_std", torch::ones({in_features}));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return net->forward((x - mean) * inv_std).squeeze(-1);
}

void MlpImpl::fit_normalizer(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  mean.copy_(x.mean(0));
  // Constant features (e.g. split_k on a family that never splits) keep a unit scale.
  inv_std.copy_(1.0 / x.std(0).clamp_min(1e-3));
}

std::vector<int64_t> layer_widths(const Mlp& m) {
  std::vector<int64_t> w;
  for (const auto& child : m->net->children())
    if (auto* lin = child->as<torch::nn::LinearImpl>()) {
      if (w.empty()) w.push_back(lin->weight.size(1));
      w.push_back(lin->weight.size(0));
    }
  return w;
}

void save_checkpoint(const Mlp& m, const std::string& path) {
  std::ostringstream buf;
  try {
    torch::save(m, buf);
  } catch (const c10::Error& e) {
    throw RuntimeError(path + ": cannot serialise checkpoint: " + e.what_without_backtrace());
  }
  write_file_atomic(path, buf.str());
  to_dense(m).save(net_file_for(path));
}

Mlp load_checkpoint(const std::string& path, const std::vector<int64_t>& widths) {
  if (widths.size() < 2) throw ConfigError(path + ": layer widths of the manifest are empty");
  Mlp m(widths.front(), widths.size() > 2 ? widths[1] : 1, static_cast<int64_t>(widths.size()) - 1);
  try {
    torch::load(m, path);
  } catch (const c10::Error&) {
    throw ConfigError(path + ": cannot load checkpoint (trained with another architecture than "
                      "manifest.yaml says)");
  }
  if (layer_widths(m) != widths) throw ConfigError(path + ": layer widths differ from manifest.yaml's 'layer_widths'");
  m->eval();
  return m;
}

predictor::DenseMlp to_dense(const Mlp& m) {
  torch::NoGradGuard no_grad;
  auto vec = [](const torch::Tensor& t) {
    auto c = t.detach().to(torch::kFloat32).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  predictor::DenseMlp d;
  d.mean = vec(m->mean);
  d.inv_std = vec(m->inv_std);
  for (const auto& child : m->net->children())
    if (auto* lin = child->as<torch::nn::LinearImpl>()) {
      predictor::DenseLayer L;
      L.in = lin->weight.size(1);
      L.out = lin->weight.size(0);
      L.weight = vec(lin->weight);
      L.bias = vec(lin->bias);
      d.layers.push_back(std::move(L));
    }
  return d;
}

torch::Tensor latency_from_output(const torch::Tensor& o, const torch::Tensor& base) {
  return base * torch::exp(o.clamp(kMinLogSlowdown, kMaxLogSlowdown));
}

torch::Tensor smape_loss(const torch::Tensor& pred, const torch::Tensor& target) {
  return (2.0 * (pred - target).abs() / (pred.abs() + target.abs() + 1e-12)).mean();
}

void configure_torch_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  torch::set_num_threads(threads);
}

}  // namespace tilecast::trainer
