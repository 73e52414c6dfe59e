#pragma once
// The per-family MLP: standardises its input with stored statistics (buffers, so one
// torch::save carries them), then Linear+ReLU layers to one output o. The kernel model
// reads o as log(1/utilisation): latency = base_time * exp(clamp(o)). Includes torch:
// keep this header out of non-torch translation units.
#include <torch/torch.h>

namespace tilecast::trainer {

// o is clamped to this range: utilisation within [exp(-kMaxLogSlowdown), exp(-kMinLogSlowdown)].
constexpr double kMinLogSlowdown = -3.0;
constexpr double kMaxLogSlowdown = 14.0;

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in_features, int64_t hidden, int64_t num_layers);
  // x: [batch, in_features], raw features -> [batch] log-slowdown o.
  torch::Tensor forward(const torch::Tensor& x);
  // Sets the standardisation statistics from training features [rows, in_features].
  void fit_normalizer(const torch::Tensor& x);

  torch::nn::Sequential net{nullptr};
  torch::Tensor mean, inv_std;
};
TORCH_MODULE(Mlp);

// [inputs, outputs of each Linear layer...] of a network, as recorded in the manifest.
std::vector<int64_t> layer_widths(const Mlp& m);
// Serialises a network (torch::save) and writes it atomically; a write failure throws
// RuntimeError naming `path` and leaves any previous file there untouched.
void save_checkpoint(const Mlp& m, const std::string& path);

// latency = base * exp(clamp(o)); both [batch].
torch::Tensor latency_from_output(const torch::Tensor& o, const torch::Tensor& base);
// Symmetric MAPE, mean(2|p - y| / (|p| + |y| + eps)).
torch::Tensor smape_loss(const torch::Tensor& pred, const torch::Tensor& target);

// torch::set_num_threads from the machine's core count (libtorch defaults to 1 here).
void configure_torch_threads(int threads = 0);

}  // namespace tilecast::trainer
