#pragma once
// The per-family MLP: standardises its input with stored statistics (buffers, so one
// torch::save carries them), then Linear+ReLU layers to one output o. The kernel model
// reads o as log(1/utilisation): latency = base_time * exp(clamp(o)). Includes torch:
// keep this header out of non-torch translation units.
#include <torch/torch.h>

#include "predictor/dense_mlp.h"

namespace tilecast::trainer {

using predictor::kMaxLogSlowdown;
using predictor::kMinLogSlowdown;

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
// Serialises a network (torch::save) to `path` and its torch-free copy to
// net_file_for(path) (what forecasting reads), each atomically; a write failure throws
// RuntimeError naming the file and leaves any previous file there untouched.
void save_checkpoint(const Mlp& m, const std::string& path);
// Reads a checkpoint written by save_checkpoint into a network of the given shape;
// ConfigError naming `path` when it does not load or has other layer widths.
Mlp load_checkpoint(const std::string& path, const std::vector<int64_t>& layer_widths);
// The same network as plain arrays (predictor::DenseMlp).
predictor::DenseMlp to_dense(const Mlp& m);

// latency = base * exp(clamp(o)); both [batch].
torch::Tensor latency_from_output(const torch::Tensor& o, const torch::Tensor& base);
// Symmetric MAPE, mean(2|p - y| / (|p| + |y| + eps)).
torch::Tensor smape_loss(const torch::Tensor& pred, const torch::Tensor& target);

// torch::set_num_threads from the machine's core count (libtorch defaults to 1 here).
void configure_torch_threads(int threads = 0);

}  // namespace tilecast::trainer
