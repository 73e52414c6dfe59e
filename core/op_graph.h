#pragma once
// Operator graphs of whole transformer models, built in C++ from the model config (no
// tracing). One repeated layer is built once and carries a count. Each operator lists the
// kernels it launches in the forward pass, the backward pass and gradient accumulation.
// Rules and deliberate differences from NeuSight's parsed graphs: docs/model-graphs.md.
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/model_config.h"

namespace tilecast {

enum class Mode { kInference, kTraining };

// One kernel launch: a predicted kernel, or a pure memory pass (copies, gathers, masks)
// costed at DRAM bandwidth.
struct KernelCall {
  bool is_mem = false;
  KernelQuery query;   // !is_mem
  double bytes = 0;    // is_mem: bytes read + written
  static KernelCall kernel(const KernelQuery& q) { return {false, q, 0}; }
  static KernelCall mem(double bytes) { return {true, {}, bytes}; }
};

struct GraphOp {
  std::string name;  // e.g. "h.attn.c_attn"
  std::string kind;  // report group: linear, bmm, softmax, layernorm, elementwise, embedding, memory
  int64_t count = 1; // times it runs per step (layers)
  std::vector<KernelCall> fw, bw, acc;
};

struct OpGraph {
  std::string model;
  int64_t batch = 0, seq = 0;
  Mode mode = Mode::kInference;
  bool fused = false;
  double parameters = 0;  // for the optimizer estimate
  std::vector<GraphOp> ops;
};

// Throws ConfigError for non-positive batch/seq or seq above the model's positions.
OpGraph build_op_graph(const ModelConfig& m, int64_t batch, int64_t seq, Mode mode);
// torch.compile-style fusion for inference: maximal runs of non-GEMM operators become one
// kernel each (costed as one pass over the run's external inputs and final output, routed to
// the softmax/layernorm/elementwise model of its heaviest member). GEMMs stay.
OpGraph fuse_op_graph(const OpGraph& g);

// Helpers used by the builders and tests.
KernelQuery linear_q(int64_t m, int64_t n, int64_t k);          // (M,N) x (N->K)
KernelQuery bmm_q(int64_t b, int64_t m, int64_t n, int64_t k);  // (B,M,N) x (B,N,K)
KernelQuery vec_q(OpKind op, int64_t rows, int64_t h);

}  // namespace tilecast
