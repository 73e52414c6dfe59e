#include "predictor/graph_predictor.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <array>
#include <map>
#include <random>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/csv.h"
#include "core/error.h"
#include "core/units.h"

namespace tilecast::predictor {
namespace {
constexpr double kLinkEfficiency = 0.8;  // NCCL bus bandwidth / link peak on NVLink
constexpr double kSendRecvLatencyMs = 0.005;

// NCCL's own cost model of a ring all-reduce (ncclTopoTuneModel, src/graph/tuning.cc): per
// protocol a base latency, a latency per ring step over the link (2 (n-1) steps, of which
// 2 x nodes cross the network when the ring spans nodes), and the bytes at that protocol's share
// of the bus bandwidth; NCCL runs whichever its model calls fastest. The latencies are NCCL's
// tables `baseLat` (Ring) and `hwLat` (NVLink, PCI and NET rows), read from the libnccl.so.2
// (NCCL 2.28.9) that CUDA 13.0 ships. Shares: LL stores 4 bytes of data with a 4-byte flag
// (half the bandwidth), LL128 120 bytes of every 128, Simple all of it. NCCL enables LL128 on
// NVLink only.
struct RingProtocol {
  double base_us, nvlink_step_us, pcie_step_us, net_step_us, bandwidth_share;
  bool nvlink_only;
};
constexpr RingProtocol kRingProtocols[] = {
    {6.6, 0.6, 1.0, 2.7, 0.5, false},             // LL
    {14.0, 1.9, 2.5, 4.0, 120.0 / 128.0, true},   // LL128
    {8.4, 3.4, 5.7, 14.0, 1.0, false},            // Simple
};
// A point-to-point hop over the network adds NCCL's NET latency per LL step to the local one.
constexpr double kNetSendLatencyMs = 0.0027;

void need_interconnect(const GpuSpec& gpu) {
  if (!(gpu.interconnect_gbps > 0))
    throw ConfigError(gpu.origin + ": field 'interconnect_gbps' is needed for multi-GPU forecasts");
}
void need_network(const GpuSpec& gpu, const std::string& what) {
  if (!(gpu.network_gbps > 0))
    throw ConfigError(gpu.origin + ": field 'network_gbps' is needed for " + what + ", beyond one node of " +
                      std::to_string(gpu.gpus_per_node));
}
}  // namespace

GroupSpan group_span(int64_t group, int64_t stride, const GpuSpec& gpu) {
  const int64_t node = gpu.gpus_per_node;
  if (group <= 1 || node <= 0 || group * stride <= node) return {1, std::max<int64_t>(group, 1)};
  if (stride >= node) return {group, 1};
  const int64_t per_node = node / stride;  // members of the group on one node
  return {(group + per_node - 1) / per_node, per_node};
}

GroupSpan group_span(int64_t inner, int64_t inner_stride, int64_t outer, int64_t outer_stride, const GpuSpec& gpu) {
  if (outer <= 1) return group_span(inner, inner_stride, gpu);
  if (inner <= 1) return group_span(outer, outer_stride, gpu);
  const GroupSpan block = group_span(inner, inner_stride, gpu), blocks = group_span(outer, outer_stride, gpu);
  if (block.nodes > 1) return {block.nodes * outer, block.ranks_per_node};
  return {blocks.nodes, inner * blocks.ranks_per_node};
}

GroupSpan expert_parallel_span(const Parallelism& par, const GpuSpec& gpu) {
  if (par.cp % par.ep == 0) return group_span(par.ep, par.tp, gpu);
  return group_span(par.cp, par.tp, par.ep / par.cp, par.tp * par.cp * par.pp, gpu);
}

double all_reduce_ms(double bytes, int64_t group, const GpuSpec& gpu, int64_t stride) {
  if (group <= 1) return 0;
  need_interconnect(gpu);
  const double n = static_cast<double>(group), steps = 2 * (n - 1);
  const bool nvlink = gpu.interconnect_link() == "nvlink";
  const GroupSpan span = group_span(group, stride, gpu);
  // The group's members on one node share its link (a mesh: one link to each of them).
  double link_gbps = gpu.collective_gbps(span.ranks_per_node), net_steps = 0;
  if (span.nodes > 1) {
    need_network(gpu, "a group of " + std::to_string(group) + " GPUs" +
                          (stride > 1 ? " " + std::to_string(stride) + " apart" : ""));
    // Every ring crosses each node boundary twice per all-reduce, and rings leave a node
    // through the NICs of its ranks (one per GPU in the reference systems).
    net_steps = std::min(steps, 2.0 * double(span.nodes));
    link_gbps = std::min(link_gbps, double(span.ranks_per_node) * gpu.network_gbps);
  }
  double best = std::numeric_limits<double>::infinity();
  for (const RingProtocol& p : kRingProtocols) {
    if (p.nvlink_only && !nvlink) continue;
    const double latency_ms =
        (p.base_us + (steps - net_steps) * (nvlink ? p.nvlink_step_us : p.pcie_step_us) + net_steps * p.net_step_us) *
        1e-3;
    best = std::min(best, latency_ms + s_to_ms(transfer_s(steps / n * bytes,
                                                          p.bandwidth_share * kLinkEfficiency * link_gbps)));
  }
  return best;
}

double send_recv_ms(double bytes, const GpuSpec& gpu, bool across_nodes, const std::string& what) {
  need_interconnect(gpu);
  if (!across_nodes) return s_to_ms(transfer_s(bytes, kLinkEfficiency * gpu.interconnect_gbps)) + kSendRecvLatencyMs;
  need_network(gpu, what);
  return s_to_ms(transfer_s(bytes, kLinkEfficiency * gpu.network_gbps)) + kSendRecvLatencyMs + kNetSendLatencyMs;
}

double all_to_all_ms(double bytes, int64_t group, const GpuSpec& gpu, int64_t stride) {
  return all_to_all_ms(bytes, group, gpu, group_span(group, stride, gpu));
}

double all_to_all_ms(double bytes, int64_t group, const GpuSpec& gpu, const GroupSpan& span) {
  if (group <= 1) return 0;
  need_interconnect(gpu);
  const double n = double(group), local_peers = double(span.ranks_per_node - 1), remote_peers = n - double(span.ranks_per_node);
  // A 1/n share of the buffer to each peer, all at once (NCCL's grouped sends and receives):
  // the peers on this node through its link (a mesh: one link to each), the others through
  // its network port.
  const double local_s = transfer_s(bytes * local_peers / n, kLinkEfficiency * gpu.collective_gbps(span.ranks_per_node));
  double remote_s = 0, latency_ms = kSendRecvLatencyMs;
  if (remote_peers > 0) {
    need_network(gpu, "an all-to-all over " + std::to_string(group) + " GPUs on " + std::to_string(span.nodes) + " nodes");
    remote_s = transfer_s(bytes * remote_peers / n, kLinkEfficiency * gpu.network_gbps);
    latency_ms += kNetSendLatencyMs;
  }
  return latency_ms + s_to_ms(std::max(local_s, remote_s));
}

DeepEpTraffic deepep_traffic(const KernelCall& c, const GroupSpan& span) {
  TC_CHECK(c.collective == Collective::kDeepEp, "deepep_traffic of another collective");
  const double n = double(c.group), per_node = double(span.ranks_per_node), nodes = double(span.nodes);
  if (c.deepep_low_latency) {
    const double copies = c.bytes * double(c.deepep_routing.topk);
    return {copies * (per_node - 1) / n, copies * (n - per_node) / n};
  }
  const double p1 = deepep_hit_probability(c.deepep_routing, c.group, 1);
  const double pn = deepep_hit_probability(c.deepep_routing, c.group, span.ranks_per_node);
  return {c.bytes * p1 * (per_node - 1) * nodes, c.bytes * pn * (nodes - 1)};
}

double deepep_ms(const KernelCall& c, const GpuSpec& gpu, const GroupSpan& span) {
  if (c.group <= 1) return 0;
  need_interconnect(gpu);
  const DeepEpTraffic t = deepep_traffic(c, span);
  const double link_s = transfer_s(t.link_bytes, kLinkEfficiency * gpu.collective_gbps(span.ranks_per_node));
  double network_s = 0, latency_ms = kSendRecvLatencyMs;
  if (span.nodes > 1) {
    need_network(gpu, "DeepEP over " + std::to_string(c.group) + " GPUs on " + std::to_string(span.nodes) + " nodes");
    network_s = transfer_s(t.network_bytes, kLinkEfficiency * gpu.network_gbps);
    latency_ms += kNetSendLatencyMs;
  }
  return latency_ms + s_to_ms(std::max(link_s, network_s));
}

bool fa2_varlen_mixing(const GpuSpec& gpu, DType kv_dtype) {
  // vLLM's FlashAttention backend builds FA3 on Hopper (9.0) and FA2 on Ampere and Ada (8.x);
  // Blackwell runs other backends, and so does an FP8 KV cache on FA2 GPUs (FA2 has none).
  // Measured on one Ada GPU only.
  return gpu.vendor == "nvidia" && gpu.compute_capability >= 8.0 && gpu.compute_capability < 9.0 &&
         !is_fp8(kv_dtype);
}

double varlen_decode_ms(const KernelQuery& q, const GpuSpec& gpu) {
  if (q.op != OpKind::kAttnDecode) throw std::logic_error("varlen_decode_ms: a decode attention query");
  const int64_t keys = q.window > 0 ? std::min(q.ctx, q.window) : q.ctx;
  const double waves = std::ceil(double(q.b) * double(q.k) / double(gpu.num_sms));
  const double blocks = std::ceil(double(keys) / 128.0);
  return waves * blocks * kVarlenCyclesPerKeyBlock * (double(q.n) / 128.0) / (gpu.boost_clock_mhz * 1e3);
}

double mla_decode_ms(const KernelQuery& q, int64_t value_dim, const GpuSpec& gpu, const KernelPredictor& kp) {
  const auto& families = kp.set_for(gpu, Family::kAttnDecode).manifest().families;
  const auto it = families.find(family_name(Family::kAttnDecode));
  if (it == families.end() || !it->second.has_prior())
    throw ConfigError("MLA decode attention is costed by the generation_attention family's fitted roofline, which "
                      "these weights do not have (train the family with `prior: true`)");
  return s_to_ms(fitted_roofline_s(mla_decode_bounds(q, value_dim, gpu), it->second.prior));
}

double adamw_step_ms(double parameters, const GpuSpec& gpu, double value_bytes) {
  // Reads param, grad, exp_avg, exp_avg_sq and writes param, exp_avg, exp_avg_sq (7 values),
  // plus the foreach implementation's intermediate (sqrt(v)/bias-corrected denominators):
  // about 3 more passes. 10 values per parameter (40 B in FP32) at DRAM bandwidth.
  return s_to_ms(transfer_s(10.0 * value_bytes * parameters, gpu.mem_bw_gbps));
}

double graph_sum_ms(const OpGraph& g, const GpuSpec& gpu, const std::function<double(const KernelQuery&)>& kernel_ms) {
  if (g.par.tp > 1 || g.par.pp > 1 || g.par.ep > 1 || g.par.cp > 1)
    throw ConfigError("baseline sums cover single-GPU and data-parallel graphs only (no tp/pp/ep/cp collectives)");
  double sum = 0;
  for (const auto& op : g.ops)
    for (const auto* calls : {&op.fw, &op.bw, &op.acc})
      for (const auto& c : *calls) {
        if (c.collective != Collective::kNone) continue;
        double ms = 0;
        if (c.is_mem) {
          ms = s_to_ms(transfer_s(c.bytes, gpu.mem_bw_gbps));
        } else {
          ms = kernel_ms(c.query);
          if (std::isnan(ms)) return -1;
        }
        sum += ms * op.count;
      }
  return sum * g.par.microbatches;
}

void check_host_gap_us(double us) {
  if (!std::isfinite(us) || us < 0 || us > 1e4)
    throw ConfigError("--host-gap-us: expected 0..10000 microseconds, got " + std::to_string(us));
}

namespace {
// A model's step keeps the tensor cores busy back to back: its kernels at the clock the GPU's
// sheet rates such loads at, not the boost clock a kernel alone runs at (KernelQuery::sustained).
KernelQuery in_step(KernelQuery q) {
  q.sustained = true;
  return q;
}
}  // namespace

ModelForecast forecast_model(const OpGraph& g, const GpuSpec& gpu, const KernelPredictor& kp, double host_gap_us,
                             bool isolated) {
  check_host_gap_us(host_gap_us);
  const double gap_ms = host_gap_us * 1e-3;
  std::map<KernelQueryKey, size_t> index;
  std::vector<KernelQuery> unique;
  // Decodes costed by varlen_decode_ms, not by a kernel forecast.
  auto varlen = [&](const KernelCall& c) { return c.varlen_decode && fa2_varlen_mixing(gpu, c.query.kv_dtype); };
  // Serving's DeepEP all-to-alls run over the tp group itself (adjacent GPUs).
  const GroupSpan ep_span = g.par.ep <= 1            ? GroupSpan{}
                            : g.par.moe_all_to_all ? group_span(g.par.ep, 1, gpu)
                                                   : expert_parallel_span(g.par, gpu);
  auto collect = [&](const std::vector<KernelCall>& calls) {
    for (const auto& c : calls)
      if (c.is_kernel() && !c.at_forward_rate && !varlen(c) && c.mla_value_dim == 0 &&
          index.emplace(query_key(c.query), unique.size()).second) {
        unique.push_back(in_step(c.query));
      }
  };
  for (const auto& op : g.ops) {
    collect(op.fw);
    collect(op.bw);
    collect(op.acc);
  }
  const std::vector<KernelPrediction> preds = kp.predict(unique, gpu);
  // In the stream of a model: without the host time per call that isolated timings include.
  auto time_ms = [isolated](const KernelPrediction& p) { return isolated ? p.latency_ms : p.stream_ms; };
  // Collectives of one microbatch on its critical path (tp all-reduces, ep all-to-alls, what
  // cp rings leave exposed).
  double comm_in_ops = 0;
  int64_t launches = 0;    // one microbatch
  // `fw_gemm`: the op's first forward kernel, for its backward calls costed at that rate.
  auto cost = [&](const std::vector<KernelCall>& calls, int64_t count, const KernelCall* fw_gemm) {
    double ms = 0, kernels_ms = 0;  // kernels_ms: the kernels so far, which a ring overlaps
    for (const auto& c : calls) {
      if (c.collective == Collective::kRing) {
        // The hand-overs go round in lockstep: one leaving the node paces them all.
        const bool across = group_span(c.group, g.par.tp, gpu).nodes > 1;
        const double exposed =
            std::max(0.0, double(c.group - 1) * send_recv_ms(c.bytes, gpu, across, "a context-parallel ring between nodes") -
                              kernels_ms);
        ms += exposed;
        comm_in_ops += exposed * count;
        continue;
      }
      const double before = ms;
      if (c.collective == Collective::kNone) {
        launches += count;
        ms += gap_ms;
      }
      if (c.is_mem) {
        ms += s_to_ms(transfer_s(c.bytes, gpu.mem_bw_gbps));
      } else if (c.collective != Collective::kNone) {
        // An all-reduce over a tp group (adjacent GPUs) or an all-to-all over training's ep
        // group (data-parallel peers a replica of tp x cp x pp GPUs apart, with cp the cp
        // ranks first: expert_parallel_span) or serving's DeepEP group (the tp group).
        const double t = c.collective == Collective::kAllReduce ? all_reduce_ms(c.bytes, c.group, gpu)
                         : c.collective == Collective::kDeepEp  ? deepep_ms(c, gpu, ep_span)
                                                                 : all_to_all_ms(c.bytes, c.group, gpu, ep_span);
        ms += t;
        comm_in_ops += t * count;
      } else if (c.at_forward_rate) {
        if (!fw_gemm || fw_gemm->query.op != c.query.op)
          throw std::logic_error("forecast_model: a call at the forward rate needs a forward kernel of its family");
        // Multiply-adds (b m n k) of the two GEMMs: a gradient GEMM has no bias epilogue.
        auto mac = [](const KernelQuery& q) { return double(q.b) * double(q.m) * double(q.n) * double(q.k); };
        ms += time_ms(preds[index.at(query_key(fw_gemm->query))]) * mac(c.query) / mac(fw_gemm->query);
      } else if (c.mla_value_dim > 0) {
        ms += mla_decode_ms(in_step(c.query), c.mla_value_dim, gpu, kp) * c.scale;
      } else if (varlen(c)) {
        ms += varlen_decode_ms(in_step(c.query), gpu) * c.scale;
      } else {
        ms += time_ms(preds[index.at(query_key(c.query))]) * c.scale;
      }
      if (c.is_kernel()) kernels_ms += ms - before;
    }
    return ms;
  };
  ModelForecast f;
  f.model = g.model;
  f.gpu = gpu.name;
  f.batch = g.batch;  // global batch
  f.seq = g.seq;
  f.mode = g.mode;
  f.fused = g.fused;
  f.hf_eager = g.hf_eager;
  f.par = g.par;
  f.micro_batch = g.micro_batch;
  f.dtype = g.dtype;
  f.kv_dtype = g.kv_dtype;
  f.expert_dtype = g.expert_dtype;
  f.context = g.context;
  f.routing_alpha = g.routing_alpha;
  f.sliding_window = g.sliding_window;
  f.window_layers = g.window_layers;
  f.chunked_window = g.chunked_window;
  f.layers = g.layers;
  f.step = g.step;
  f.cached_prefix = g.cached_prefix;
  f.host_gap_us = host_gap_us;
  f.gpu_vendor = gpu.vendor;
  {
    std::map<Family, ForecastBasis> by_family;
    for (size_t i = 0; i < unique.size(); ++i) {
      const Family fam = op_family(unique[i].op);
      const KernelPrediction& p = preds[i];
      const ForecastBasis one = kernel_basis(fam, p);
      auto [it, fresh] = by_family.try_emplace(fam, one);
      if (!fresh) add_to_basis(it->second, one);
    }
    for (auto& kv : by_family) f.basis.push_back(std::move(kv.second));
  }
  if (!isolated) {
    std::set<Family> families;
    for (const auto& q : unique) families.insert(op_family(q.op));
    for (Family fam : families)
      if (const double us = kp.call_overhead_us(gpu, fam); us > 0) f.call_overhead_us[family_name(fam)] = us;
  }
  const Parallelism& par = g.par;
  // Per microbatch: the repeated layer (ops with count == layers) and the rest, with the
  // all-reduces inside each part (for the communication on the critical path).
  double layer_fw = 0, layer_bw = 0, pro_fw = 0, pro_bw = 0, epi_fw = 0, epi_bw = 0;
  double layer_comm = 0, pro_comm = 0, epi_comm = 0;
  int64_t fw_launches = 0;  // the forward's kernel calls, one microbatch (the eager floor below)
  bool seen_layer = false;
  for (const auto& op : g.ops) {
    const KernelCall* fw_gemm = !op.fw.empty() && op.fw.front().is_kernel() ? &op.fw.front() : nullptr;
    const double comm_before = comm_in_ops;
    const int64_t launches_before = launches;
    const double fw_ms = cost(op.fw, op.count, nullptr);
    fw_launches += launches - launches_before;
    OpForecast o{op.name, op.kind, op.count, fw_ms, cost(op.bw, op.count, fw_gemm), cost(op.acc, op.count, nullptr),
                 op.unnamed_by_neusight};
    const double comm = comm_in_ops - comm_before;
    const bool in_layer = g.layers > 1 && (op.count % g.layers == 0 || op.layer_subset);
    const double fw = o.fw_ms * o.count, bw = (o.bw_ms + o.acc_ms) * o.count;
    if (in_layer) {
      layer_fw += fw / g.layers;
      layer_bw += bw / g.layers;
      layer_comm += comm / g.layers;
      seen_layer = true;
    } else if (!seen_layer) {
      pro_fw += fw, pro_bw += bw, pro_comm += comm;
    } else {
      epi_fw += fw, epi_bw += bw, epi_comm += comm;
    }
    f.ops.push_back(o);
  }
  double all_fw = pro_fw + layer_fw * g.layers + epi_fw;
  // Eager PyTorch: the host issues every kernel (and copy), one call at a time, so a forward
  // cannot end before the host has made its calls, each taking the host time per call that the
  // training GPUs' isolated eager timings hold (the FP32 families' call_overhead_us, fitted on
  // their whole-model labels). A lower bound: the host runs ahead under long kernels, so only a
  // forward with too little GPU work per call in all is held to it. The backward's kernels come
  // from autograd's C++ engine and are left as they are; tensor and pipeline layouts (Megatron-LM,
  // not eager modules) have no floor.
  if (g.eager() && !isolated && par.tp == 1 && par.pp == 1) {
    f.host_call_us = kp.call_overhead_us(gpu, Family::kLinear);
    const double host_ms = double(fw_launches) * f.host_call_us * 1e-3;
    if (host_ms > all_fw) {
      f.host_floor_ms = (host_ms - all_fw) * par.microbatches;
      f.ops.push_back(OpForecast{"(eager host)", "host", par.microbatches, host_ms - all_fw, 0, 0, false});
      all_fw = host_ms;
    }
  }
  const double all_bw = pro_bw + layer_bw * g.layers + epi_bw;
  f.communication_ms = comm_in_ops * par.microbatches;
  f.kernel_launches = launches * par.microbatches;
  double pipeline_comm = 0;
  double last_microbatch_bw = all_bw;  // the backward the gradients' all-reduce can hide under
  double first_microbatch_fw = all_fw;  // the forward the next step's weight all-gather can hide under
  if (par.pp <= 1) {
    f.forward_ms = all_fw * par.microbatches;
    f.backward_ms = all_bw * par.microbatches;
  } else {
    // Stages as pipeline_stage_layers splits the layers (build_op_graph refuses uneven splits,
    // as Megatron-LM does; serving engines take them); the first stage adds the embeddings,
    // the last the head. Each stage boundary sends one microbatch's activations (and, in
    // training, their gradients back), on the critical path of every microbatch.
    const std::vector<int64_t> stages = pipeline_stage_layers(g.layers, par.pp);
    double slow_fw = 0, slow_bw = 0, slow_comm = 0, slow_total = -1;
    for (size_t i = 0; i < stages.size(); ++i) {
      const double n = double(stages[i]);
      const bool first = i == 0, last = i + 1 == stages.size();
      const double fw = layer_fw * n + (first ? pro_fw : 0) + (last ? epi_fw : 0);
      const double bw = layer_bw * n + (first ? pro_bw : 0) + (last ? epi_bw : 0);
      slow_fw = std::max(slow_fw, fw);
      slow_bw = std::max(slow_bw, bw);
      if (fw + bw > slow_total)  // the stage that paces the pipeline, and its all-reduces
        slow_total = fw + bw, slow_comm = layer_comm * n + (first ? pro_comm : 0) + (last ? epi_comm : 0);
    }
    last_microbatch_bw = slow_bw;
    first_microbatch_fw = slow_fw;
    const double all_comm = comm_in_ops;  // one microbatch through every stage
    // Stage s holds GPUs [s tp cp, (s + 1) tp cp) of its replica; rank r hands over to rank r
    // of the next stage, across the network where the two sit on different nodes.
    const int64_t node = gpu.gpus_per_node, stage = par.tp * par.cp;  // GPUs of a stage
    for (int64_t s = 1; s < par.pp; ++s) {
      bool across = false;
      for (int64_t r = 0; node > 0 && r < stage && !across; ++r)
        across = ((s - 1) * stage + r) / node != (s * stage + r) / node;
      pipeline_comm += (g.mode == Mode::kTraining ? 2 : 1) * send_recv_ms(g.pipeline_send_bytes, gpu, across);
    }
    // The tensor-parallel all-reduces on the critical path follow the same path as the time.
    if (g.mode == Mode::kDecode) {
      // Steady decoding (vLLM's and SGLang's pipeline schedulers): each microbatch's next step
      // waits for its own pass through every stage, and each stage serves every microbatch
      // once per step, so a step takes the longer of the two.
      const bool own_pass = all_fw + pipeline_comm >= par.microbatches * slow_fw;
      f.forward_ms = own_pass ? all_fw : par.microbatches * slow_fw - pipeline_comm;
      f.communication_ms = own_pass ? all_comm : par.microbatches * slow_comm;
    } else {
      // A batch arriving at once (training, eager inference, a prefill): the first microbatch
      // crosses every stage, the others follow at the pace of the slowest (GPipe and 1F1B
      // have the same bubble): slow m + (all - slow). The interleaved schedule's fill and
      // drain cross the pp ranks in chunks of 1 / vpp of a stage, so the part beyond the
      // slowest rank's own work shrinks vpp-fold: slow m + (all - slow) / vpp (Narayanan et
      // al., SC'21: a bubble of (pp - 1) / vpp stage times). Its extra hand-overs between
      // chunks, (vpp - 1) pp a microbatch each way, are taken as overlapped with the other
      // chunks' kernels (Megatron-LM's overlap_p2p_comm, on with a virtual pipeline): only the
      // fill's pp - 1 hand-overs below stay on the critical path, as without interleaving.
      const double v = double(par.vpp), m = double(par.microbatches);
      auto pipelined = [&](double all, double slow) {
        return par.vpp == 1 ? all + (m - 1) * slow : slow * m + (all - slow) / v;
      };
      f.forward_ms = pipelined(all_fw, slow_fw);
      f.backward_ms = pipelined(all_bw, slow_bw);
      f.communication_ms = pipelined(all_comm, slow_comm);
      f.pipeline_bubble_ms = f.forward_ms + f.backward_ms - m * (slow_fw + slow_bw);
    }
  }
  double dp_exposed = 0;
  if (par.dp * par.cp > 1 && g.mode == Mode::kTraining) {
    // DDP: gradients of this rank's shard, all-reduced in 25 MB buckets while the backward
    // runs; what does not fit under it, plus the last bucket, is exposed. With several
    // microbatches the gradients accumulate and are reduced once, during the last microbatch's
    // backward (DDP's no_sync, Megatron-LM's grad sync): only that backward hides it.
    // With context parallelism the cp ranks of a replica hold the same weights too: the group
    // is dp x cp (Megatron-Core's dp-cp group), contiguous without pipeline stages (cp peers
    // sit tp apart, dp peers a replica), else reduced within cp, then over dp on a cp-th of it.
    // With expert parallelism the expert weights (a 1 / ep share on each rank) are reduced
    // over the dp x cp / ep ranks that hold the same experts (expert_reduce_ms).
    const int64_t stride = par.tp * par.cp * par.pp;  // data-parallel peers sit a replica apart
    const double dense = g.parameters - g.expert_parameters, experts = g.expert_parameters / double(par.ep);
    const double weight_split = double(par.tp * par.pp);  // a replica splits the weights tp x pp ways
    // An all-reduce over `in` ranks `in_stride` apart inside each replica, repeated over `out`
    // ranks `out_stride` apart: one ring where the blocks tile the GPUs evenly (in x in_stride
    // == out_stride: without pipeline stages), else reduced within the block, then across on a
    // 1 / in share of the bytes.
    auto grouped_reduce_ms = [&](double bytes, int64_t in, int64_t in_stride, int64_t out, int64_t out_stride) {
      if (in == 1) return all_reduce_ms(bytes, out, gpu, out_stride);
      if (in * in_stride == out_stride) return all_reduce_ms(bytes, in * out, gpu, in_stride);
      return all_reduce_ms(bytes, in, gpu, in_stride) + all_reduce_ms(bytes / double(in), out, gpu, out_stride);
    };
    // The dense weights: the cp ranks of a replica (tp apart), then its dp peers.
    auto reduce_ms = [&](double bytes) { return grouped_reduce_ms(bytes, par.cp, par.tp, par.dp, stride); };
    // The ranks holding the same experts (the ep group's ranks drawn from the dp x cp ranks, cp
    // first): where ep spans whole cp groups (all of it without cp) they are data-parallel
    // peers ep / cp replicas apart; where ep divides cp, cp / ep of them in each cp group
    // (tp x ep apart), then the dp peers.
    auto expert_reduce_ms = [&](double bytes) {
      return par.ep % par.cp == 0
                 ? grouped_reduce_ms(bytes, 1, 1, par.dp * par.cp / par.ep, stride * (par.ep / par.cp))
                 : grouped_reduce_ms(bytes, par.cp / par.ep, par.tp * par.ep, par.dp, stride);
    };
    // All-reduce of every rank's weights at `bytes_per_parameter`.
    auto weights_all_reduce_ms = [&](double bytes_per_parameter) {
      return reduce_ms(bytes_per_parameter * dense / weight_split) +
             (experts > 0 ? expert_reduce_ms(bytes_per_parameter * experts / weight_split) : 0.0);
    };
    // ZeRO-3 gathers each layer's weights again for the backward: 1.5x the all-reduce's traffic
    // (a reduce-scatter and two all-gathers, each half of it).
    // Megatron-LM reduces FP32 main gradients; Hugging Face's eager model under DDP its
    // parameters' own (BF16/FP16) gradients.
    const double grad_bytes = g.state_bytes();
    const double ar = weights_all_reduce_ms(grad_bytes) * (par.zero == 3 ? 1.5 : 1.0);
    const double last_bucket = reduce_ms(std::min(grad_bytes * dense / weight_split, 25e6));
    const double hide_bw = par.microbatches > 1 ? last_microbatch_bw : f.backward_ms;
    if (g.dtype != DType::kFp32 && (par.zero == 1 || par.zero == 2)) {
      // Megatron-LM's distributed optimizer (--overlap-grad-reduce, --overlap-param-gather): the
      // FP32 gradients are reduce-scattered under the last microbatch's backward (half an
      // all-reduce) and the updated weights, in the training dtype, all-gathered under the next
      // step's first microbatch forward (half an all-reduce of those bytes).
      const double rs = 0.5 * ar;
      const double ag = 0.5 * weights_all_reduce_ms(dtype_size(training_storage_dtype(g.dtype)));
      dp_exposed = std::max(0.0, rs - hide_bw) + std::max(0.0, ag - first_microbatch_fw) + last_bucket;
    } else {
      dp_exposed = std::max(0.0, ar - hide_bw) + last_bucket;
    }
  }
  f.communication_ms += pipeline_comm + dp_exposed;
  // Per-op figures cover every microbatch of the step.
  for (auto& o : f.ops) {
    o.fw_ms *= par.microbatches;
    o.bw_ms *= par.microbatches;
    o.acc_ms *= par.microbatches;
  }
  if (g.fp8_weight_parameters > 0) {
    f.fp8_weight_cast_ms = s_to_ms(transfer_s(4.0 * g.fp8_weight_parameters / double(par.pp), gpu.mem_bw_gbps));
    f.forward_ms += f.fp8_weight_cast_ms;
  }
  f.total_ms = f.forward_ms + f.backward_ms + pipeline_comm + dp_exposed;
  // ZeRO 1-3: each data-parallel rank steps its shard of the parameters.
  f.optimizer_ms = g.mode == Mode::kTraining
                      ? adamw_step_ms(rank_parameters(g.parameters, g.expert_parameters, par, par.zero >= 1), gpu,
                                      g.state_bytes())
                      : 0;
  return f;
}

void set_training_throughput(ModelForecast& f, const OpGraph& g, const GpuSpec& gpu) {
  double flops = 0;
  for (const auto& op : g.ops)
    for (const auto& c : op.fw)
      if (c.is_kernel()) flops += query_flops(c.query) * c.scale * double(op.count);  // scale: cp ring steps
  // Forward + the backward's two passes, every microbatch; the graph is one tp rank's share of
  // every layer, which pp stages split.
  flops *= 3.0 * double(g.par.microbatches) / double(g.par.pp);
  const double step_s = (f.total_ms + f.optimizer_ms) * 1e-3;
  if (!(step_s > 0)) return;
  f.tokens_per_s = double(g.batch) * double(g.seq) / step_s;
  f.mfu_pct = 100.0 * flops / step_s / (sheet_peak_gflops(gemm_q(1, 1, 1, training_storage_dtype(g.dtype)), gpu) * 1e9);
}

nlohmann::json positive_or_null(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

ForecastBasis kernel_basis(Family fam, const KernelPrediction& p) {
  ForecastBasis b;
  b.family = fam;
  b.kernels = 1;
  b.outside_range = p.out_of_range.empty() ? 0 : 1;
  b.clamped = !p.out_of_range.empty() && p.clamped;
  b.capped = p.capped_by.empty() ? 0 : 1;
  b.capped_by = p.capped_by;
  b.lifted = p.lifted_by.empty() ? 0 : 1;
  b.lifted_by = p.lifted_by;
  b.standing = p.standing;
  b.network_weight = p.network_weight;  // 1 where the network corrects the GPU
  b.composite_weight = p.composite_weight;
  b.fixed_costs_to_network = p.prior_is_base && p.network_weight > 0 && p.network_weight < 1;
  if (p.unseen_error) b.unseen_errors.push_back(p.unseen_error);
  if (p.heldout_error) b.heldout_errors.push_back(p.heldout_error);
  return b;
}

const char* ForecastBasis::forecast_by() const {
  if (physics()) return "physics";
  if (network_weight >= 1) return "network";
  if (composite_weight > 0) return "network+fitted_roofline+gemm_composite";
  return network_weight > 0 ? "network+fitted_roofline" : "fitted_roofline";
}

namespace {
std::string vendor_text(const std::string& vendor) {
  if (vendor == "amd") return "AMD";
  if (vendor == "nvidia") return "NVIDIA";
  return vendor.empty() ? "such" : vendor;
}
}  // namespace

std::string basis_text(const std::vector<ForecastBasis>& basis, const std::string& vendor) {
  std::string out;
  char buf[1024];
  for (const auto& b : basis) {
    const GpuStanding& g = b.standing;
    const std::string of = std::to_string(g.training_gpus) + " training GPU" + (g.training_gpus == 1 ? "" : "s");
    const bool one = g.training_gpus == 1;
    std::string standing = g.training_gpus == 0 ? std::string("its training GPUs not recorded")
                           : g.trained_on         ? (one ? "its training GPU" : "one of its " + of)
                           : g.twin               ? (one ? "a twin of its training GPU" : "a twin of one of its " + of)
                                                  : (one ? "not its training GPU" : "not one of its " + of);
    if (!g.vendor_trained) standing += ", no " + vendor_text(vendor) + " GPU among them";
    std::string by;
    if (b.physics())
      by = "fitted physics";
    else if (b.network_weight >= 1)
      by = "network";
    else if (b.composite_weight > 0) {
      std::snprintf(buf, sizeof buf, "network^%.2f x fitted roofline^%.2f x stacked GEMMs^%.2f", b.network_weight,
                    1 - b.network_weight - b.composite_weight, b.composite_weight);
      by = buf;
    } else if (b.network_weight > 0) {
      std::snprintf(buf, sizeof buf, "network^%.2f x fitted roofline^%.2f", b.network_weight, 1 - b.network_weight);
      by = buf;
      if (b.fixed_costs_to_network) by += " (that weight times its share beyond its floor and waves)";
    } else
      by = "fitted roofline alone";
    std::string range;
    if (b.outside_range > 0)
      range = "; " + std::to_string(b.outside_range) + " outside its training range (" +
              (b.clamped ? "clamped to it" : "extrapolated") + ")";
    if (b.capped > 0)
      range += "; " + std::to_string(b.capped) + " capped at " + b.capped_by +
               "'s forecast (a training GPU this one betters in every spec)";
    if (b.lifted > 0)
      range += "; " + std::to_string(b.lifted) + " raised to " + b.lifted_by +
               "'s forecast (a training GPU that betters this one in every spec)";
    if (!b.unseen_errors.empty()) {
      range += "; leave-one-GPU-out error";
      for (size_t i = 0; i < b.unseen_errors.size(); ++i) range += (i ? ", " : " ") + b.unseen_errors[i]->text();
    }
    if (!b.heldout_errors.empty()) {
      range += "; error on the " + std::to_string(b.heldout_errors[0]->pct) + " % of shapes left out of training";
      for (size_t i = 0; i < b.heldout_errors.size(); ++i) range += (i ? ", " : " ") + b.heldout_errors[i]->text();
    }
    std::snprintf(buf, sizeof buf, "%-13s %s (%lld kernel%s): %s: %s", out.empty() ? "basis" : "",
                  family_name(b.family), static_cast<long long>(b.kernels), b.kernels == 1 ? "" : "s", standing.c_str(),
                  by.c_str());
    out += buf + range + "\n";
  }
  return out;
}

void add_to_basis(ForecastBasis& b, const ForecastBasis& x) {
  b.kernels += x.kernels;
  b.outside_range += x.outside_range;
  b.clamped = b.clamped || x.clamped;
  b.capped += x.capped;
  if (b.capped_by.empty()) b.capped_by = x.capped_by;
  b.lifted += x.lifted;
  if (b.lifted_by.empty()) b.lifted_by = x.lifted_by;
  for (const auto& e : x.unseen_errors)
    if (std::none_of(b.unseen_errors.begin(), b.unseen_errors.end(), [&](const auto& y) { return y->key == e->key; }))
      b.unseen_errors.push_back(e);
  for (const auto& e : x.heldout_errors)
    if (std::none_of(b.heldout_errors.begin(), b.heldout_errors.end(), [&](const auto& y) { return y->key == e->key; }))
      b.heldout_errors.push_back(e);
}

std::vector<ForecastBasis> merge_basis(const std::vector<ForecastBasis>& a, const std::vector<ForecastBasis>& b) {
  std::vector<ForecastBasis> out = a;
  for (const auto& x : b) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ForecastBasis& y) { return y.family == x.family; });
    if (it == out.end())
      out.push_back(x);
    else
      add_to_basis(*it, x);
  }
  return out;
}

namespace {
// Per op / dtype: the GPUs left out in turn, each one's MAPE and bias, and their mean; null
// where the basis quotes none.
nlohmann::json unseen_errors_json(const std::vector<std::shared_ptr<const UnseenGpuError>>& errors) {
  if (errors.empty()) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : errors) {
    nlohmann::json cells = nlohmann::json::array();
    for (size_t i = 0; i < e->left_out.size(); ++i)
      cells.push_back({{"left_out", e->left_out[i]}, {"mape_pct", e->mape_pct[i]}, {"bias", e->bias[i]}});
    a.push_back({{"key", e->key}, {"mean_mape_pct", e->mean_pct()}, {"min_mape_pct", e->min_pct()},
                 {"max_mape_pct", e->max_pct()}, {"cells", cells}});
  }
  return a;
}
// Per op / dtype on this training GPU: its held-out shapes' rows, MAPE and bias; null where none.
nlohmann::json heldout_errors_json(const std::vector<std::shared_ptr<const HeldoutShapesError>>& errors) {
  if (errors.empty()) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : errors)
    a.push_back({{"key", e->key}, {"gpu", e->gpu}, {"rows", e->rows}, {"mape_pct", e->mape_pct}, {"bias", e->bias},
                 {"heldout_pct", e->pct}});
  return a;
}
}  // namespace

nlohmann::json basis_json(const std::vector<ForecastBasis>& basis) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& b : basis)
    a.push_back({{"family", family_name(b.family)},
                 {"kernels", b.kernels},
                 {"gpu", b.standing.name()},
                 {"training_gpus", b.standing.training_gpus},
                 {"vendor_in_training", b.standing.vendor_trained},
                 {"forecast_by", b.forecast_by()},
                 {"network_weight", b.physics() ? nlohmann::json(nullptr) : nlohmann::json(b.network_weight)},
                 {"gemm_composite_weight", b.composite_weight},
                 {"fixed_costs_to_network", b.fixed_costs_to_network},
                 {"outside_training_range", b.outside_range},
                 {"clamped", b.clamped},
                 {"capped", b.capped},
                 {"capped_by", b.capped_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.capped_by)},
                 {"lifted", b.lifted},
                 {"lifted_by", b.lifted_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.lifted_by)},
                 {"unseen_gpu_error", unseen_errors_json(b.unseen_errors)},
                 {"heldout_shapes_error", heldout_errors_json(b.heldout_errors)}});
  return a;
}

namespace {
// Every operator's time (forward, backward and accumulation, times its count): with pipeline
// stages the work of every stage and microbatch, which overlap in the step.
double ops_work_ms(const ModelForecast& f) {
  double ms = 0;
  for (const auto& o : f.ops) ms += (o.fw_ms + o.bw_ms + o.acc_ms) * o.count;
  return ms;
}

struct KindShare {
  std::string kind;
  double ms = 0;
  double pct = 0;  // of the step; of the work (ops_work_ms) with pipeline stages
};
// The operators' time by kind, largest first: the table's "by kind" rows and JSON's `by_kind`.
std::vector<KindShare> kind_shares(const ModelForecast& f) {
  std::map<std::string, double> by_kind;
  for (const auto& o : f.ops) by_kind[o.kind] += (o.fw_ms + o.bw_ms + o.acc_ms) * o.count;
  const double share_of = f.par.pp > 1 ? ops_work_ms(f) : f.total_ms;
  std::vector<KindShare> out;
  for (const auto& kv : by_kind) out.push_back({kv.first, kv.second, share_of > 0 ? 100 * kv.second / share_of : 0});
  std::stable_sort(out.begin(), out.end(), [](const KindShare& a, const KindShare& b) {
    return a.ms != b.ms ? a.ms > b.ms : a.kind > b.kind;
  });
  return out;
}
}  // namespace

void add_memory_json(nlohmann::json& j, const MemoryEstimate& m) {
  j["weights_gb"] = m.weights_gb;
  j["kv_cache_gb"] = m.kv_cache_gb;
  j["gradients_gb"] = m.gradients_gb;
  j["optimizer_gb"] = m.optimizer_gb;
  j["activations_gb"] = m.activations_gb;
  j["memory_gb"] = m.total_gb();          // per GPU
  j["gpu_memory_gb"] = m.capacity_gb;     // the spec's
  j["fits"] = m.fits();
  if (m.kv_capacity_tokens >= 0) {
    j["kv_capacity_tokens"] = m.kv_capacity_tokens;
    j["max_sequences"] = m.max_sequences;
    j["kv_ranks"] = m.kv_ranks;
  }
}

std::string forecast_json(const ModelForecast& f, const MemoryEstimate* memory) {
  nlohmann::json j = {{"model", f.model},       {"gpu", f.gpu},
                      {"batch", f.batch},       {"seq", f.seq},
                      {"mode", mode_name(f.mode)}, {"fusion", f.fused}, {"hf_eager", f.hf_eager},
                      {"forward_ms", f.forward_ms}, {"backward_ms", f.backward_ms},
                      {"optimizer_ms", f.optimizer_ms}, {"communication_ms", f.communication_ms},
                      {"total_ms", f.total_ms},
                      {"kernel_launches", f.kernel_launches}, {"host_gap_us", f.host_gap_us},
                      {"host_call_us", f.host_call_us}, {"host_floor_ms", f.host_floor_ms},
                      {"call_overhead_us", f.call_overhead_us},
                      {"dtype", dtype_name(f.dtype)},
                      {"parallel", {{"dp", f.par.dp}, {"tp", f.par.tp}, {"pp", f.par.pp}, {"cp", f.par.cp},
                                    {"microbatches", f.par.microbatches}, {"vpp", f.par.vpp}, {"ep", f.par.ep}, {"zero", f.par.zero},
                                    {"sequence_parallel", f.par.sequence_parallel},
                                    {"dp_attention", f.par.dp_attention},
                                    {"moe_a2a", f.par.moe_all_to_all ? "deepep" : "none"}}}};
  if (f.mixed_training()) {
    j["recompute"] = f.recompute ? "full" : "none";
    j["tokens_per_s"] = f.tokens_per_s;
    j["mfu_pct"] = f.mfu_pct;
    if (f.dtype == DType::kFp8) j["fp8_weight_cast_ms"] = f.fp8_weight_cast_ms;
    if (f.par.pp > 1) j["pipeline_bubble_ms"] = f.pipeline_bubble_ms;
    j["train_tokens"] = positive_or_null(f.train_tokens);
    j["train_days"] = positive_or_null(f.train_days());
  }
  if (is_serving(f.mode)) {
    j["kv_dtype"] = dtype_name(f.kv_dtype);
    j["expert_dtype"] = f.expert_dtype ? nlohmann::json(dtype_name(*f.expert_dtype)) : nlohmann::json(nullptr);
    j["context"] = f.context;
    j["routing"] = routing_name(f.routing_alpha);
    j["sliding_window"] = f.sliding_window;
    j["sliding_window_layers"] = f.window_layers;
    j["chunked_attention"] = f.chunked_window;
    if (f.mode == Mode::kPrefill) j["cached_prefix"] = f.cached_prefix;
    j[f.mode == Mode::kPrefill ? "ttft_ms" : "tpot_ms"] = f.total_ms;
  }
  if (memory) add_memory_json(j, *memory);
  j["basis"] = basis_json(f.basis);
  // The table's "by kind" rows: each kind's ms (every op of it, all stages and microbatches)
  // and its % of the step, or of that work where pipeline stages overlap (`by_kind_pct_of`).
  j["by_kind"] = nlohmann::json::object();
  for (const auto& k : kind_shares(f)) j["by_kind"][k.kind] = {{"ms", k.ms}, {"pct", k.pct}};
  j["by_kind_pct_of"] = f.par.pp > 1 ? "work" : "step";
  j["ops"] = nlohmann::json::array();
  for (const auto& o : f.ops)
    j["ops"].push_back({{"name", o.name}, {"kind", o.kind}, {"count", o.count},
                        {"forward_ms", o.fw_ms * o.count}, {"backward_ms", (o.bw_ms + o.acc_ms) * o.count}});
  return j.dump(2) + "\n";
}

std::string forecast_csv(const ModelForecast& f) {
  // Every row says which forecast it belongs to; the last row, name "(total)", is the step.
  std::ostringstream os;
  os.precision(10);
  const std::string id = csv_escape(f.model) + ',' + csv_escape(f.gpu) + ',' + mode_name(f.mode) + ',' +
                         dtype_name(f.dtype) + ',' + std::to_string(f.batch) + ',' +
                         std::to_string(is_serving(f.mode) ? f.context : f.seq) + ',' + std::to_string(f.par.dp) + ',' +
                         std::to_string(f.par.tp) + ',' + std::to_string(f.par.pp) + ',' +
                         std::to_string(f.par.microbatches) + ',' + std::to_string(f.par.ep) + ',' +
                         std::to_string(f.par.cp) + ',' + std::to_string(f.par.vpp) + ',';
  os << "model,gpu,mode,dtype,batch,seq,dp,tp,pp,microbatches,ep,cp,vpp,name,kind,count,forward_ms,backward_ms,total_ms\n";
  for (const auto& o : f.ops)
    os << id << csv_escape(o.name) << ',' << o.kind << ',' << o.count << ',' << o.fw_ms * o.count << ','
       << (o.bw_ms + o.acc_ms) * o.count << ',' << (o.fw_ms + o.bw_ms + o.acc_ms) * o.count << '\n';
  os << id << "(total),step,1," << f.forward_ms << ',' << f.backward_ms << ',' << f.total_ms << '\n';
  return os.str();
}

namespace {
// What ran the model where not an engine's or Megatron-LM's fused kernels.
std::string hf_eager_suffix(const ModelForecast& f) {
  return f.hf_eager ? ", Hugging Face eager (transformers' modules, SDPA; unfused kernels)" : "";
}

// ", experts D", ", DP attention", ", ep N" and ", routing power_law_a" where a serving
// forecast's layout differs from the default (experts in the GEMMs' dtype, attention split by
// tp, balanced routing), and
// ", sliding window N [in K of L layers]" (", chunked attention N ...": Llama 4's) for a
// windowed model.
std::string serving_layout_suffix(const ModelForecast& f) {
  std::string s;
  if (f.expert_dtype && *f.expert_dtype != f.dtype) s += std::string(", experts ") + dtype_name(*f.expert_dtype);
  if (f.par.pp > 1)
    s += ", pp " + std::to_string(f.par.pp) + " (" + std::to_string(f.par.microbatches) + " microbatch" +
         (f.par.microbatches > 1 ? "es" : "") + " of " + std::to_string(f.micro_batch) + ")";
  if (f.par.dp_attention) s += ", DP attention";
  if (f.par.ep > 1) s += ", ep " + std::to_string(f.par.ep);
  if (f.par.moe_all_to_all) s += " (DeepEP all-to-all)";
  if (f.expert_dtype && f.routing_alpha != kUniformRouting) s += ", routing " + routing_name(f.routing_alpha);
  if (f.sliding_window > 0) {
    s += (f.chunked_window ? ", chunked attention " : ", sliding window ") + std::to_string(f.sliding_window);
    if (f.window_layers < f.layers)
      s += " in " + std::to_string(f.window_layers) + " of " + std::to_string(f.layers) + " layers";
  }
  return s;
}
}  // namespace

namespace {
// ", P prompt tokens cached" where every prompt finds a prefix in the cache.
std::string cached_prefix_suffix(int64_t cached_prefix) {
  return cached_prefix > 0 ? ", " + std::to_string(cached_prefix) + " prompt tokens cached" : "";
}
}  // namespace

std::string forecast_table(const ModelForecast& f, int top_ops, const MemoryEstimate* memory) {
  std::ostringstream os;
  char buf[512];
  if (f.step.sequences() > 0) {
    std::string chunks;
    if (f.step.prefill.size() <= 6) {
      for (const auto& c : f.step.prefill)
        chunks += std::string(chunks.empty() ? "" : " + ") + std::to_string(c.seqs) + " x " + std::to_string(c.tokens) +
                  (c.prefix > 0 ? " after " + std::to_string(c.prefix) : "");
    } else {  // many chunks (requests of their own lengths, arrivals): their prompts and range
      int64_t n = 0, lo = std::numeric_limits<int64_t>::max(), hi = 0;
      for (const auto& c : f.step.prefill) n += c.seqs, lo = std::min(lo, c.tokens), hi = std::max(hi, c.tokens);
      chunks = std::to_string(n) + " of " + std::to_string(lo) + " to " + std::to_string(hi) + " tokens";
    }
    std::string decode = f.step.decode_seqs > 0 ? std::to_string(f.step.decode_seqs) + " decoding (" +
                                                      std::to_string(f.step.decode_context) + " cached, mean)"
                                                : "";
    std::snprintf(buf, sizeof buf, "%s on %s, a step of %lld tokens: %s%s%s, %s (KV cache %s), tp %lld%s\n",
                  f.model.c_str(), f.gpu.c_str(), static_cast<long long>(f.step.tokens()),
                  chunks.empty() ? "" : ("prompt chunks " + chunks).c_str(), !chunks.empty() && !decode.empty() ? ", " : "",
                  decode.c_str(), dtype_name(f.dtype), dtype_name(f.kv_dtype), static_cast<long long>(f.par.tp),
                  serving_layout_suffix(f).c_str());
  } else if (is_serving(f.mode))
    std::snprintf(buf, sizeof buf, "%s on %s, %s, batch %lld, %s %lld, %s (KV cache %s), tp %lld%s\n", f.model.c_str(),
                  f.gpu.c_str(), mode_name(f.mode), static_cast<long long>(f.batch),
                  f.mode == Mode::kPrefill ? "prompt" : "cached context", static_cast<long long>(f.context),
                  dtype_name(f.dtype), dtype_name(f.kv_dtype), static_cast<long long>(f.par.tp),
                  (serving_layout_suffix(f) + cached_prefix_suffix(f.cached_prefix) + hf_eager_suffix(f)).c_str());
  else
    std::snprintf(buf, sizeof buf, "%s on %s, batch %lld, seq %lld, %s%s, %s%s\n", f.model.c_str(), f.gpu.c_str(),
                  static_cast<long long>(f.batch), static_cast<long long>(f.seq), mode_name(f.mode),
                  f.fused ? " (fused)" : "", dtype_name(f.dtype), hf_eager_suffix(f).c_str());
  os << buf;
  if (f.hf_eager && memory && f.mode == Mode::kPrefill)
    os << "(memory: the pass's activations as an engine's layers hold them; Hugging Face's eager modules keep a few "
          "more, their FP32 norm copies and SiLU's output)\n";
  if (memory) os << memory_summary(*memory);
  if (f.step.sequences() > 0)
    std::snprintf(buf, sizeof buf, "step_ms       %10.3f\n", f.total_ms);
  else if (is_serving(f.mode))
    std::snprintf(buf, sizeof buf, "%s       %10.3f  (%s)\n", f.mode == Mode::kPrefill ? "ttft_ms" : "tpot_ms", f.total_ms,
                  f.mode == Mode::kPrefill ? "the prefill step: time to first token" : "one decode step");
  else
    std::snprintf(buf, sizeof buf, "forward_ms    %10.3f\nbackward_ms   %10.3f\ntotal_ms      %10.3f\n",
                  f.forward_ms, f.backward_ms, f.total_ms);
  os << buf;
  if (f.mode == Mode::kTraining) {
    std::snprintf(buf, sizeof buf, "optimizer_ms  %10.3f  (AdamW step, not in total_ms)\n", f.optimizer_ms);
    os << buf;
  }
  if (f.host_floor_ms > 0) {
    std::snprintf(buf, sizeof buf,
                  "host floor    %10.3f ms in forward_ms: its kernel calls at %g us of host time each (eager "
                  "PyTorch; the training GPUs' isolated timings) outlast its kernels\n",
                  f.host_floor_ms, f.host_call_us);
    os << buf;
  }
  if (f.pipeline_bubble_ms > 0 && f.mixed_training()) {
    std::snprintf(buf, sizeof buf, "bubble        %10.3f ms of forward + backward (the pipeline's fill and drain%s)\n",
                  f.pipeline_bubble_ms,
                  f.par.vpp > 1 ? (", interleaved over " + std::to_string(f.par.vpp) + " chunks").c_str() : "");
    os << buf;
  }
  if (f.fp8_weight_cast_ms > 0) {
    std::snprintf(buf, sizeof buf, "fp8 casts     %10.3f ms in the first microbatch's forward (weights to FP8 and transposed)\n",
                  f.fp8_weight_cast_ms);
    os << buf;
  }
  if (f.mixed_training()) {
    std::snprintf(buf, sizeof buf,
                  "tokens/s      %10.1f  (batch x seq / (total + optimizer)%s)\nMFU           %10.1f %%  (3x the "
                  "forward's matmul FLOPs at the %s dense tensor peak%s)\n",
                  f.tokens_per_s, f.recompute ? "; layers recomputed in the backward" : "", f.mfu_pct,
                  dtype_name(training_storage_dtype(f.dtype)), f.dtype == DType::kFp8 ? "; FP8 GEMMs" : "");
    os << buf;
    if (f.train_days() > 0) {
      std::snprintf(buf, sizeof buf, "train_days    %10.2f  (%g tokens on %lld GPUs)\n", f.train_days(), f.train_tokens,
                    static_cast<long long>(f.par.gpus()));
      os << buf;
    }
  }
  if (!f.call_overhead_us.empty()) {
    std::string fams;
    for (const auto& kv : f.call_overhead_us) {
      std::snprintf(buf, sizeof buf, "%s%s %g us", fams.empty() ? "" : ", ", kv.first.c_str(), kv.second);
      fams += buf;
    }
    os << "call overhead " << fams << " per kernel: the host time per call of isolated kernel timings, taken off\n";
  }
  os << basis_text(f.basis, f.gpu_vendor);
  if (f.par.gpus() > 1) {
    std::snprintf(buf, sizeof buf, "communication %10.3f ms on the critical path (dp %lld, tp %lld, pp %lld, %lld microbatches%s)\n",
                  f.communication_ms, static_cast<long long>(f.par.dp), static_cast<long long>(f.par.tp),
                  static_cast<long long>(f.par.pp), static_cast<long long>(f.par.microbatches),
                  (std::string(f.par.vpp > 1 ? ", interleaved: " + std::to_string(f.par.vpp) + " model chunks a rank" : "") +
                   (f.par.cp > 1 ? ", cp " + std::to_string(f.par.cp) : "") +
                   (f.par.ep > 1 ? ", ep " + std::to_string(f.par.ep) : ""))
                      .c_str());
    os << buf;
  }
  const double work_ms = ops_work_ms(f);
  const bool staged = f.par.pp > 1;
  const double share_of = staged ? work_ms : f.total_ms;
  if (staged) {
    std::snprintf(buf, sizeof buf,
                  "\noperators below: the work of all %lld stages and %lld microbatches (%.3f ms, overlapping in "
                  "the step); %% of that work\n",
                  static_cast<long long>(f.par.pp), static_cast<long long>(f.par.microbatches), work_ms);
    os << buf;
  }
  os << "\nby kind          ms        %\n";
  for (const auto& k : kind_shares(f)) {
    std::snprintf(buf, sizeof buf, "%-12s %10.3f %7.1f%%\n", k.kind.c_str(), k.ms, k.pct);
    os << buf;
  }
  std::vector<const OpForecast*> ops;
  for (const auto& o : f.ops) ops.push_back(&o);
  auto total = [](const OpForecast* o) { return (o->fw_ms + o->bw_ms + o->acc_ms) * o->count; };
  std::sort(ops.begin(), ops.end(), [&](auto a, auto b) { return total(a) > total(b); });
  const bool serving = is_serving(f.mode);  // forward only: one column of time
  os << (serving ? "\ntop operators                                 count      ms(all)      %\n"
                 : "\ntop operators                                 count   fw_ms(all)   bw_ms(all)      %\n");
  for (int i = 0; i < top_ops && i < static_cast<int>(ops.size()); ++i) {
    const OpForecast* o = ops[i];
    const double share = share_of > 0 ? 100 * total(o) / share_of : 0;
    if (serving)
      std::snprintf(buf, sizeof buf, "%-44s %6lld %12.3f %6.1f%%\n", o->name.c_str(), static_cast<long long>(o->count),
                    o->fw_ms * o->count, share);
    else
      std::snprintf(buf, sizeof buf, "%-44s %6lld %12.3f %12.3f %6.1f%%\n", o->name.c_str(),
                    static_cast<long long>(o->count), o->fw_ms * o->count, (o->bw_ms + o->acc_ms) * o->count, share);
    os << buf;
  }
  return os.str();
}

namespace {
// A serving pass's transient bytes on one GPU: per token, and per sequence (the logits, on the
// last stage).
struct PassCost {
  double per_token = 0, per_seq = 0;
};
PassCost serving_pass_cost(const ModelConfig& m, DType dtype, int64_t tp, bool last, bool dp_attention,
                           bool moe_all_to_all) {
  const double a = dtype_size(activation_dtype(dtype));  // FP8/NVFP4 GEMMs keep BF16 activations
  const int64_t atp = attention_tp(tp, dp_attention);
  const double t = double(tp), h = double(m.hidden), d = double(m.head_dim);
  const double q_heads = double(m.heads) / double(atp), kv_heads = double(serving_kv_heads_per_rank(m, atp));
  const double attention = (2 * q_heads + 2 * kv_heads) * d;
  const double ffn = m.num_experts > 0 ? double(m.experts_per_token) * (3 * double(m.moe_ffn) / t + h)
                                       : (m.gated_ffn ? 3.0 : 2.0) * double(m.ffn) / t;
  if (!dp_attention) return {a * (2 * h + std::max(attention, ffn)), last ? double(m.vocab) * (a / t + 4.0) : 0.0};
  // DP attention, per token of the rank's own: its attention block's tensors, or the FFN's over
  // the gathered tokens (tp of them a token of the rank, with their hidden states and residual);
  // per sequence of the rank the head's logits of the gathered ones. DeepEP gathers nothing for
  // its MoE layers: a token's top-k copies arrive at whole experts (their inputs and
  // intermediates).
  const double rank_ffn = moe_all_to_all ? 2 * h + double(m.experts_per_token) * (3 * double(m.moe_ffn) + h)
                                         : t * (2 * h + ffn);
  return {a * std::max(2 * h + attention, rank_ffn), last ? t * double(m.vocab) * (a / t + 4.0) : 0.0};
}

// A token's cache entry per layer on one GPU: its K and V heads on this rank, or MLA's latent and
// rotary key, which every rank of the tp group keeps whole (the heads are up-projected from it).
double kv_token_layer_bytes(const ModelConfig& m, DType kv_dtype, int64_t tp, bool dp_attention) {
  const int64_t kv_rank = serving_kv_heads_per_rank(m, attention_tp(tp, dp_attention));
  return (is_mla(m) ? double(mla_cache_width(m)) : 2.0 * double(kv_rank) * m.head_dim) * dtype_size(kv_dtype);
}

// The weights of a pipeline stage of `layers` layers on one GPU of the tp group, served in
// `dtype`: its layers' GEMM weights (split over tp, but the replicated ones below) and norms; the
// input embedding on the first stage; the final norm and the LM head on the last, where a tied
// head needs its own copy unless that stage is also the first.
// Replicated on every rank: K and V projections with their KV heads when tp exceeds them; MLA's
// down projections to the latents (and the rotary key); an MTP draft's eh_proj (unquantised);
// with DP attention every attention projection, and the input embedding (SGLang's, not split
// over tp). Routed experts in their own format where it differs (gpt-oss's MXFP4: 4 bits and a
// scale per 32), split over tp as the other weights. An MTP draft's embedding and head are the
// target's own (mtp_module).
double stage_weight_bytes(const ModelConfig& m, DType dtype, int64_t tp, bool dp_attention, int64_t layers, bool first,
                          bool last, bool moe_all_to_all = false) {
  const double act_bytes = dtype_size(activation_dtype(dtype));
  const double table = double(m.vocab) * m.hidden;  // one embedding table (or LM head)
  const double embed = table * (m.tie_embeddings ? 1 : 2);
  const double norms = double(m.hidden) * (double(norms_per_layer(m)) * m.layers + 1);
  const double eh_proj = m.mtp_module ? 2.0 * double(m.hidden) * double(m.hidden) : 0;
  const double linear = std::max(0.0, model_parameters(m) - embed - norms - eh_proj);
  const int64_t kv_rank = serving_kv_heads_per_rank(m, attention_tp(tp, dp_attention));
  const double kv_proj = dp_attention ? double(m.layers) * attention_weights(m)
                         : is_mla(m)  ? m.layers * double(m.hidden) * double(m.q_lora_rank + mla_cache_width(m))
                                      : 2.0 * m.layers * double(m.hidden) * double(m.kv_heads) * m.head_dim;
  const double kv_proj_rank =
      is_mla(m) || dp_attention ? kv_proj : 2.0 * m.layers * double(m.hidden) * double(kv_rank) * m.head_dim;
  const double experts = m.num_experts > 0 ? expert_parameters(m) : 0;
  const double expert_bytes = m.num_experts > 0 ? serving_expert_bytes_per_weight(m, dtype) : 0;
  // DeepEP: the shared experts (and their 1-wide gates) whole on every rank.
  const double shared = moe_all_to_all && m.shared_expert_ffn > 0
                            ? double(moe_layers(m)) * (3.0 * double(m.hidden) * double(m.shared_expert_ffn) +
                                                       (m.shared_expert_gate ? double(m.hidden) : 0.0))
                            : 0;
  // Bytes per layer on one rank: its GEMM weights and its norms.
  const double layer_bytes =
      ((linear - kv_proj - experts - shared) * weight_bytes_per_elem(dtype) / tp + experts * expert_bytes / tp +
       (kv_proj_rank + shared) * weight_bytes_per_elem(dtype) + eh_proj * act_bytes) / double(m.layers) +
      double(norms_per_layer(m)) * m.hidden * act_bytes;
  const double input_table = first && !m.mtp_module ? (dp_attention ? double(tp) : 1.0) : 0;
  const double head_table = last && !m.mtp_module && (!m.tie_embeddings || !first) ? 1 : 0;
  return double(layers) * layer_bytes + (input_table + head_table) * table * act_bytes / tp +
         (last ? double(m.hidden) * act_bytes : 0);
}
}  // namespace

double serving_kv_token_bytes(const ModelConfig& m, DType kv_dtype, int64_t tp, bool dp_attention) {
  return double(m.layers) * kv_token_layer_bytes(m, kv_dtype, tp, dp_attention);
}

double serving_weight_bytes(const ModelConfig& m, DType dtype, int64_t tp, bool dp_attention) {
  return stage_weight_bytes(m, dtype, tp, dp_attention, m.layers, true, true);
}

MemoryEstimate serving_memory(const ModelConfig& m, DType dtype, DType kv_dtype, int64_t tp, int64_t batch,
                             int64_t tokens, const GpuSpec& gpu, int64_t pp, int64_t shared_prefix,
                             const ServingPass& pass, bool dp_attention, const ServingDraft& draft,
                             bool moe_all_to_all) {
  const double layers = double(m.layers);
  // A sliding window keeps the last `sliding_window` tokens of each sequence (vLLM frees the
  // blocks behind it). A prefix shared by every sequence (prefix caching) is cached once, where
  // no window applies. With per-layer windows, the mean over the layers (each stage holds its
  // share of both kinds: exact where the kinds alternate and a stage's layers are even).
  const double windowed = double(windowed_layers(m)) / layers;
  const double prefix = double(std::clamp<int64_t>(shared_prefix, 0, tokens));
  const double shared = (1 - windowed) * prefix;
  const double cached = windowed * double(std::min(tokens, std::max<int64_t>(m.sliding_window, 1))) +
                        (1 - windowed) * (double(tokens) - prefix);
  const double token_layer_bytes = kv_token_layer_bytes(m, kv_dtype, tp, dp_attention);
  // DP attention: each rank caches its own share of the sequences (the busiest rank's).
  const double rank_batch = double(attention_share(batch, tp, dp_attention));
  const double kv_layer_bytes = token_layer_bytes * (cached * rank_batch + shared);
  // A draft beside the target: its cache of the same tokens (it has no window).
  const double draft_kv = draft.token_bytes * (cached * rank_batch + shared);
  const std::vector<int64_t> stages = pipeline_stage_layers(m.layers, pp);
  MemoryEstimate r;
  r.capacity_gb = gpu.mem_gb();
  // KV room: the usable memory left beside each stage's weights and its pass's transient
  // tensors, in tokens of its layers' cache. A stage holds one of min(pp, sequences)
  // microbatches of the pass; the KV room's sequences are counted with pp of them.
  const double micro = double(std::min<int64_t>(pp, std::max<int64_t>(batch, 1)));
  // DP attention: a rank's pass is its own sequences' and its share of the token budget (SGLang
  // splits its chunked-prefill size over the DP ranks).
  const double fixed_tokens = double(pass.fixed_tokens) / (dp_attention ? double(tp) : 1.0);
  double room_tokens = std::numeric_limits<double>::infinity(), room_seqs = room_tokens;
  for (size_t i = 0; i < stages.size(); ++i) {
    const bool first = i == 0, last = i + 1 == stages.size();
    const double weights =
        stage_weight_bytes(m, dtype, tp, dp_attention, stages[i], first, last, moe_all_to_all) + draft.weights_bytes;
    const double kv = double(stages[i]) * kv_layer_bytes + draft_kv;
    const PassCost c = pass.any() ? serving_pass_cost(m, dtype, tp, last, dp_attention, moe_all_to_all) : PassCost{};
    const double act = (fixed_tokens / micro + rank_batch / micro * double(pass.tokens_per_seq)) * c.per_token +
                       rank_batch / micro * c.per_seq;
    if (weights + kv + act > (r.weights_gb + r.kv_cache_gb + r.activations_gb) * 1e9)
      r.weights_gb = weights / 1e9, r.kv_cache_gb = kv / 1e9, r.activations_gb = act / 1e9;
    const double stage_token = double(stages[i]) * token_layer_bytes + draft.token_bytes;  // both caches
    const double free_bytes = kUsableMemoryFraction * gpu.mem_bytes() - weights;
    room_tokens = std::min(room_tokens, std::max(0.0, free_bytes - act) / stage_token);
    // Sequences of this length: each brings its cache and its share of the pass (pp
    // microbatches), beside the pass's fixed tokens and the shared prefix's cache.
    const double per_seq = cached * stage_token + (double(pass.tokens_per_seq) * c.per_token + c.per_seq) / double(pp);
    const double free_seqs = free_bytes - fixed_tokens / double(pp) * c.per_token - shared * stage_token;
    if (per_seq > 0) room_seqs = std::min(room_seqs, std::max(0.0, free_seqs) / per_seq);
  }
  // DP attention: every rank holds the room of its own sequences; the group tp times that.
  r.kv_ranks = dp_attention ? tp : 1;
  r.kv_capacity_tokens = static_cast<int64_t>(std::floor(room_tokens)) * r.kv_ranks;
  r.max_sequences = cached >= 1 ? static_cast<int64_t>(std::floor(room_seqs)) * r.kv_ranks : r.kv_capacity_tokens;
  return r;
}

namespace {
constexpr int64_t kMaxPrefillSteps = 20000;

// The sum of f(0) .. f(k - 1) for a smooth f (decode steps over a growing context): every term
// up to 64 of them, else 33 evenly spaced terms and the trapezoid rule.
double sum_steps(int64_t k, const std::function<double(int64_t)>& f) {
  double sum = 0;
  if (k <= 64) {
    for (int64_t j = 0; j < k; ++j) sum += f(j);
    return sum;
  }
  const int n = 33;
  std::vector<double> x(n), y(n);
  for (int j = 0; j < n; ++j) {
    x[j] = std::round(1.0 + double(k - 1) * j / (n - 1));  // 1-based steps
    y[j] = f(static_cast<int64_t>(x[j]) - 1);
  }
  // Trapezoid over steps 1..k (x spans them), plus half of each end step.
  for (int j = 1; j < n; ++j) sum += 0.5 * (y[j] + y[j - 1]) * (x[j] - x[j - 1]);
  return sum + 0.5 * (y.front() + y.back());
}
}  // namespace

std::vector<double> arrival_times_ms(int64_t batch, double request_rate, bool uniform) {
  std::vector<double> t(static_cast<size_t>(std::max<int64_t>(batch, 0)), 0.0);
  if (!(request_rate > 0)) return t;
  std::mt19937_64 rng(0);
  for (size_t i = 1; i < t.size(); ++i) {
    // U in (0, 1] from 53 random bits (the same draws on every platform), gap -ln(U) / rate.
    const double u = (double(rng() >> 11) + 1.0) * 0x1.0p-53;
    t[i] = t[i - 1] + 1e3 * (uniform ? 1.0 : -std::log(u)) / request_rate;
  }
  return t;
}

std::vector<RequestLength> request_lengths(int64_t batch, int64_t seq, int64_t gen, double range_ratio,
                                           int64_t min_seq) {
  std::vector<RequestLength> v(static_cast<size_t>(std::max<int64_t>(batch, 0)), RequestLength{seq, gen});
  if (!(range_ratio > 0)) return v;
  std::mt19937_64 rng(1);
  // An integer in [lo, hi] from 64 random bits (the same draws on every platform; the modulo's
  // bias is below 2^-40 for ranges under 2^24).
  auto draw = [&](double length, int64_t least) {
    const int64_t lo = std::max<int64_t>(least, static_cast<int64_t>(std::floor(length * (1 - range_ratio))));
    const int64_t hi = std::max<int64_t>(lo, static_cast<int64_t>(std::ceil(length * (1 + range_ratio))));
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  for (RequestLength& r : v) {
    r.seq = draw(double(seq), min_seq);
    r.gen = draw(double(gen), 2);
  }
  return v;
}

std::string SchedulerLimits::slo_text() const {
  std::string s;
  char part[64];
  if (slo_ttft_ms > 0) std::snprintf(part, sizeof part, "TTFT <= %g ms", slo_ttft_ms), s += part;
  if (slo_tpot_ms > 0) std::snprintf(part, sizeof part, "%sTPOT <= %g ms", s.empty() ? "" : ", ", slo_tpot_ms), s += part;
  return s;
}

const char* SchedulerArgs::first_given() const {
  if (max_batched_tokens) return "--max-batched-tokens";
  if (max_seqs) return "--max-seqs";
  if (schedule) return "--schedule";
  if (request_rate) return "--request-rate";
  if (arrivals) return "--arrivals";
  if (slo_ttft_ms) return "--slo-ttft-ms";
  if (slo_tpot_ms) return "--slo-tpot-ms";
  if (range_ratio) return "--range-ratio";
  return nullptr;
}

SchedulerLimits SchedulerArgs::limits(bool python) const {
  // "--max-seqs" -> "max_seqs" for the Python module's keyword arguments.
  auto name = [python](std::string flag) {
    if (!python) return flag;
    flag.erase(0, 2);
    std::replace(flag.begin(), flag.end(), '-', '_');
    return flag;
  };
  SchedulerLimits l;
  if (max_batched_tokens) {
    if (*max_batched_tokens < 1 || *max_batched_tokens > (int64_t(1) << 24))
      throw ConfigError(name("--max-batched-tokens") + ": " + std::to_string(*max_batched_tokens) +
                        " out of range [1, 2^24]");
    l.max_batched_tokens = *max_batched_tokens;
  }
  if (max_seqs && *max_seqs == "auto") {
    l.max_seqs_auto = true;
  } else if (max_seqs) {
    const std::string& v = *max_seqs;
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || n < 1 || n > 65536)
      throw ConfigError(name("--max-seqs") + ": expected auto or a count in [1, 65536], got '" + v + "'");
    l.max_seqs = n;
  }
  if (schedule) {
    if (*schedule != "mixed" && *schedule != "prefill-first")
      throw ConfigError(name("--schedule") + ": expected mixed (vLLM) or prefill-first (SGLang), got '" + *schedule +
                        "'");
    l.prefill_first = *schedule == "prefill-first";
  }
  if (request_rate) {
    // Below one request in ~17 minutes the arrival times (ms) of 65,536 requests outgrow the
    // step times' precision.
    if (!(*request_rate >= 1e-3 && *request_rate <= 1e6))
      throw ConfigError(name("--request-rate") + ": " + g_text(*request_rate) +
                        " out of range [0.001, 1e6] requests a second");
    const std::string a = arrivals.value_or("poisson");
    if (a != "poisson" && a != "uniform")
      throw ConfigError(name("--arrivals") + ": expected poisson or uniform, got '" + a + "'");
    l.request_rate = *request_rate;
    l.uniform_arrivals = a == "uniform";
  } else if (arrivals) {
    throw ConfigError(name("--arrivals") + " applies with " + name("--request-rate") + " only");
  }
  auto slo = [&](const std::optional<double>& v, const char* flag) {
    if (!v) return 0.0;
    if (!(*v > 0 && *v <= 1e9)) throw ConfigError(name(flag) + ": " + g_text(*v) + " out of range (0, 1e9] ms");
    return *v;
  };
  l.slo_ttft_ms = slo(slo_ttft_ms, "--slo-ttft-ms");
  l.slo_tpot_ms = slo(slo_tpot_ms, "--slo-tpot-ms");
  if (range_ratio) {
    if (!(*range_ratio >= 0 && *range_ratio < 1))
      throw ConfigError(name("--range-ratio") + ": " + g_text(*range_ratio) + " out of range [0, 1)");
    l.range_ratio = *range_ratio;
  }
  return l;
}

double request_percentile(const std::vector<RequestTimes>& requests, double RequestTimes::*field, double q) {
  std::vector<std::pair<double, int64_t>> v;
  int64_t n = 0;
  for (const RequestTimes& r : requests)
    if (r.n > 0) v.emplace_back(r.*field, r.n), n += r.n;
  if (n == 0) return 0;
  std::sort(v.begin(), v.end());
  // The value at rank i (0-based) of the expanded list.
  auto at = [&](int64_t i) {
    for (const auto& [value, count] : v) {
      if (i < count) return value;
      i -= count;
    }
    return v.back().first;
  };
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * double(n - 1);
  const auto lo = static_cast<int64_t>(std::floor(pos));
  const double a = at(lo), b = at(std::min(lo + 1, n - 1));
  return a + (b - a) * (pos - double(lo));
}

double request_mean(const std::vector<RequestTimes>& requests, double RequestTimes::*field) {
  double sum = 0;
  int64_t n = 0;
  for (const RequestTimes& r : requests) sum += double(r.n) * (r.*field), n += r.n;
  return n > 0 ? sum / double(n) : 0.0;
}

LatencyPercentiles request_percentiles(const std::vector<RequestTimes>& requests, double RequestTimes::*field) {
  return {request_percentile(requests, field, 50), request_percentile(requests, field, 90),
          request_percentile(requests, field, 99)};
}

ServingSchedule schedule_serving(int64_t batch, int64_t seq, int64_t gen, const SchedulerLimits& limits,
                                 const std::function<double(const ServingStep&)>& step_ms, int64_t cached_prefix,
                                 const std::vector<RequestLength>* drawn) {
  if (batch < 1 || batch > 65536) throw ConfigError("--batch: " + std::to_string(batch) + " out of range [1, 65536]");
  if (seq < 1) throw ConfigError("--seq: " + std::to_string(seq) + " out of range [1, 2^22]");
  if (gen < 1) throw ConfigError("--gen: " + std::to_string(gen) + " out of range [1, 2^20]");
  if (cached_prefix < 0 || cached_prefix >= seq)
    throw ConfigError("--cached-prefix: " + std::to_string(cached_prefix) + " out of range [0, " + std::to_string(seq - 1) +
                      "] (the prompt's tokens less one to run)");
  const int64_t max_tokens = limits.max_batched_tokens;
  if (limits.max_seqs < 0 || limits.max_seqs > 65536)
    throw ConfigError("--max-seqs: " + std::to_string(limits.max_seqs) + " out of range [1, 65536]");
  // Sequences running at once: every request, or the cap.
  const int64_t cap = limits.max_seqs > 0 ? std::min(limits.max_seqs, batch) : batch;
  if (max_tokens < 0 || max_tokens > (int64_t{1} << 24))
    throw ConfigError("--max-batched-tokens: " + std::to_string(max_tokens) + " out of range [1, 2^24]");
  // A prefill-first step holds prompt tokens only, so the budget need not cover the decodes.
  if (max_tokens > 0 && max_tokens < cap && !limits.prefill_first)
    throw ConfigError("--max-batched-tokens: " + std::to_string(max_tokens) + " is below the " + std::to_string(cap) +
                      " sequences that run at once (--batch" + (cap < batch ? ", --max-seqs" : "") +
                      "): each decodes one token a step");
  // Each request's prompt and output tokens (all seq and gen without a range ratio).
  std::vector<RequestLength> own;
  if (!drawn) own = request_lengths(batch, seq, gen, limits.range_ratio, cached_prefix + 1);
  const std::vector<RequestLength>& lengths = drawn ? *drawn : own;
  TC_CHECK(static_cast<int64_t>(lengths.size()) == batch, "schedule_serving: one length per request");
  int64_t prompt_tokens = 0;  // to run
  for (const RequestLength& l : lengths) prompt_tokens += l.seq - cached_prefix;
  const int64_t budget = max_tokens > 0 ? max_tokens : prompt_tokens + batch * (cached_prefix + 1);
  if ((prompt_tokens + budget - 1) / budget > kMaxPrefillSteps)  // at least that many steps
    throw ConfigError("--max-batched-tokens " + std::to_string(max_tokens) + ": " + std::to_string(batch) +
                      " prompts of " + std::to_string(seq) + " tokens need more than " +
                      std::to_string(kMaxPrefillSteps) + " steps; raise it");
  // Requests in first-come order, in groups of the same state and lengths. A request runs
  // (`started`) from its first prompt chunk until its last token; its prompt starts at the
  // cached prefix.
  struct Group {
    int64_t n = 0, prefilled = 0, generated = 0;  // generated: output tokens so far (the first comes with the prompt)
    double first_ms = 0;
    bool started = false;
    double arrival_ms = 0;
    int64_t seq = 0, gen = 0;  // each request's prompt and output tokens
  };
  if (!(limits.request_rate >= 0 && limits.request_rate <= 1e6))
    throw ConfigError("--request-rate: " + g_text(limits.request_rate) + " out of range [0, 1e6] requests a second");
  std::vector<Group> groups;
  if (limits.request_rate > 0 || limits.range_ratio > 0) {
    const std::vector<double> arrivals = arrival_times_ms(batch, limits.request_rate, limits.uniform_arrivals);
    for (size_t i = 0; i < lengths.size(); ++i)
      groups.push_back({1, cached_prefix, 0, 0, false, arrivals[i], lengths[i].seq, lengths[i].gen});
  } else {
    groups.push_back({batch, cached_prefix, 0, 0, false, 0, seq, gen});
  }
  ServingSchedule r;
  double t = 0;
  auto finish = [&](const Group& g) {
    r.e2e_ms = std::max(r.e2e_ms, t);
    r.output_tokens += g.n * g.gen;
    r.requests.push_back({g.n, g.first_ms - g.arrival_ms, g.gen > 1 ? (t - g.first_ms) / double(g.gen - 1) : 0.0,
                          t - g.arrival_ms});
  };
  auto timed = [&](const ServingStep& st) {
    ++r.steps_timed;
    if (st.prefill.empty()) ++r.decode_steps_timed;
    const double ms = step_ms(st);
    if (!(ms >= 0 && std::isfinite(ms))) throw std::logic_error("schedule_serving: a step time that is not finite");
    return ms;
  };
  auto running = [&] {
    int64_t n = 0;
    for (const Group& g : groups) n += g.started ? g.n : 0;
    return n;
  };
  auto arrived = [&](const Group& g) { return g.arrival_ms <= t; };
  // Decode-only steps while requests are still to arrive run one at a time; their times are
  // kept by sequences and context to the nearest 16 tokens (a decode step is smooth in it).
  std::map<std::pair<int64_t, int64_t>, double> decode_memo;
  while (!groups.empty()) {
    if (running() == 0) {  // nothing runs: the next request's arrival
      double next = std::numeric_limits<double>::infinity();
      for (const Group& g : groups) next = std::min(next, g.arrival_ms);
      t = std::max(t, next);
    }
    // Prompt tokens to run: a prompt under way, or one arrived, waiting, and a free sequence slot.
    const int64_t free_slots = cap - running();
    const bool prompts_left = std::any_of(groups.begin(), groups.end(), [&](const Group& g) {
      return (g.started && g.prefilled < g.seq) || (!g.started && arrived(g) && free_slots > 0);
    });
    if (prompts_left) {
      if (r.prefill_steps >= kMaxPrefillSteps)
        throw ConfigError("--max-batched-tokens " + std::to_string(max_tokens) + ": more than " +
                          std::to_string(kMaxPrefillSteps) + " steps with prompt tokens; raise it" +
                          (limits.range_ratio > 0 || limits.request_rate > 0
                               ? " or lower --batch (requests that finish one by one start prompts in most steps)"
                               : ""));
      ServingStep st;
      double context_sum = 0;
      for (const Group& g : groups)
        if (g.prefilled == g.seq && !limits.prefill_first) {  // prefill-first: the decodes wait
          st.decode_seqs += g.n;
          context_sum += double(g.n) * double(g.seq + g.generated - 1);
        }
      if (st.decode_seqs > 0) st.decode_context = std::llround(context_sum / double(st.decode_seqs));
      int64_t left = budget - st.decode_seqs, slots = free_slots;
      // Prompt tokens in order; a group splits where the budget or the free slots end inside it.
      std::vector<Group> next;
      std::vector<bool> completes;  // per group of `next`: its prompt ends in this step
      for (const Group& g : groups) {
        const bool waiting_group = !g.started;
        if (g.prefilled == g.seq || left <= 0 || (waiting_group && (slots <= 0 || !arrived(g)))) {
          next.push_back(g);
          completes.push_back(false);
          continue;
        }
        const int64_t rest = g.seq - g.prefilled;
        const int64_t startable = waiting_group ? std::min(g.n, slots) : g.n;
        const int64_t whole = std::min(startable, left / rest);
        if (whole > 0) {
          st.prefill.push_back({whole, rest, g.prefilled});
          left -= whole * rest;
          next.push_back({whole, g.seq, 0, 0, true, g.arrival_ms, g.seq, g.gen});
          completes.push_back(true);
        }
        int64_t waiting = g.n - whole;
        if (whole < startable && left > 0) {  // one prompt takes what is left of the budget
          st.prefill.push_back({1, left, g.prefilled});
          next.push_back({1, g.prefilled + left, 0, 0, true, g.arrival_ms, g.seq, g.gen});
          completes.push_back(false);
          left = 0;
          --waiting;
        }
        if (waiting_group) slots -= g.n - waiting;
        if (waiting > 0) {
          next.push_back({waiting, g.prefilled, 0, 0, g.started, g.arrival_ms, g.seq, g.gen});
          completes.push_back(false);
        }
      }
      t += timed(st);
      ++r.steps;
      ++r.prefill_steps;
      groups.clear();
      for (size_t i = 0; i < next.size(); ++i) {
        Group g = next[i];
        if (completes[i]) {  // its first token
          g.generated = 1;
          g.first_ms = t;
        } else if (g.prefilled == g.seq && !limits.prefill_first) {  // decoded one token
          ++g.generated;
        }
        if (g.generated == g.gen) {
          finish(g);
          continue;
        }
        groups.push_back(g);
      }
      continue;
    }
    // Decode only: every running sequence, until the next of them is done.
    int64_t seqs = 0, k = std::numeric_limits<int64_t>::max();
    double context_sum = 0;
    for (const Group& g : groups) {
      if (g.prefilled < g.seq) continue;  // waiting for a slot
      seqs += g.n;
      context_sum += double(g.n) * double(g.seq + g.generated - 1);
      k = std::min(k, g.gen - g.generated);
    }
    if (seqs == 0) throw std::logic_error("schedule_serving: nothing runs");
    const double context0 = context_sum / double(seqs);
    const bool to_arrive = std::any_of(groups.begin(), groups.end(), [&](const Group& g) { return !g.started && !arrived(g); });
    if (to_arrive) {  // one step: a request may arrive during it
      k = 1;
      if (r.steps >= kMaxArrivalSteps)
        throw ConfigError("--request-rate: more than 1,000,000 steps; raise the rate or lower --batch");
      const int64_t context = std::llround(context0);
      auto key = std::make_pair(seqs, (context + 8) / 16 * 16);
      auto it = decode_memo.find(key);
      if (it == decode_memo.end()) {
        ServingStep st;
        st.decode_seqs = seqs;
        st.decode_context = key.second;
        it = decode_memo.emplace(key, timed(st)).first;
      }
      t += it->second;
    } else {
      t += sum_steps(k, [&](int64_t j) {
        ServingStep st;
        st.decode_seqs = seqs;
        st.decode_context = std::llround(context0 + double(j));
        return timed(st);
      });
    }
    r.steps += k;
    std::vector<Group> left;
    for (Group g : groups) {
      if (g.prefilled == g.seq) g.generated += k;
      if (g.generated == g.gen) finish(g);
      else left.push_back(g);
    }
    groups.swap(left);
  }
  return r;
}

Goodput slo_goodput(const std::vector<RequestTimes>& requests, double e2e_ms, const SchedulerLimits& limits) {
  Goodput g;
  if (!limits.has_slo()) return g;
  for (const RequestTimes& r : requests)
    if ((limits.slo_ttft_ms <= 0 || r.ttft_ms <= limits.slo_ttft_ms) &&
        (limits.slo_tpot_ms <= 0 || r.tpot_ms <= limits.slo_tpot_ms))
      g.requests += r.n;
  g.rps = e2e_ms > 0 ? double(g.requests) / (e2e_ms * 1e-3) : 0.0;
  return g;
}

namespace {
// f's figures over its requests (f.e2e_ms and f.limits set): mean and last TTFT, mean TPOT,
// their percentiles, and the requests within the objectives.
void set_requests(GenerateForecast& f, std::vector<RequestTimes> requests) {
  f.requests = std::move(requests);
  f.ttft_ms = request_mean(f.requests, &RequestTimes::ttft_ms);
  f.ttft_max_ms = request_percentile(f.requests, &RequestTimes::ttft_ms, 100);
  f.tpot_ms = request_mean(f.requests, &RequestTimes::tpot_ms);
  f.ttft = request_percentiles(f.requests, &RequestTimes::ttft_ms);
  f.tpot = request_percentiles(f.requests, &RequestTimes::tpot_ms);
  const Goodput g = slo_goodput(f.requests, f.e2e_ms, f.limits);
  f.slo_requests = g.requests, f.goodput_rps = g.rps;
}
}  // namespace

double SpecDecoding::expected_tokens() const {
  return accept >= 1 ? double(tokens + 1) : (1 - std::pow(accept, double(tokens + 1))) / (1 - accept);
}

namespace {
// forecast_generate with speculative decoding: f holds the request (model, batch, seq, gen,
// dtypes, cached prefix, limits).
void forecast_speculative(GenerateForecast& f, const ModelConfig& m, const SpecDecoding& spec, const GpuSpec& gpu,
                          const KernelPredictor& kp, const Parallelism& par, double host_gap_us, double routing_alpha) {
  const ModelConfig& d = *spec.draft;
  if (par.moe_all_to_all)
    throw ConfigError("--moe-a2a deepep with --spec-draft: speculative decoding is modelled with the gathered MoE only");
  if (spec.tokens < 1 || spec.tokens > 16)
    throw ConfigError("--spec-tokens: " + std::to_string(spec.tokens) + " out of range [1, 16]");
  if (!(spec.accept >= 0 && spec.accept <= 1))
    throw ConfigError("--spec-accept: " + g_text(spec.accept) + " out of range [0, 1]");
  if (f.limits.any() || par.pp > 1)
    throw ConfigError("--spec-draft: speculative decoding is modelled without --max-batched-tokens, --max-seqs, "
                      "--request-rate, --range-ratio and --pp");
  if (windowed_layers(m) > 0 || windowed_layers(d) > 0)
    throw ConfigError("--spec-draft: speculative decoding is not modelled for sliding-window models (local attention "
                      "in any layer, chunked included)");
  if (d.vocab != m.vocab)
    throw ConfigError("--spec-draft " + d.name + ": its vocabulary (" + std::to_string(d.vocab) + ") is not " + m.name +
                      "'s (" + std::to_string(m.vocab) + "); a draft shares the target's tokenizer");
  const int64_t batch = f.batch, seq = f.seq, k = spec.tokens;
  if (m.max_positions > 0 && seq + f.gen + k > m.max_positions)
    throw ConfigError("--spec-tokens: " + std::to_string(seq + f.gen + k) + " positions exceed " + m.name + "'s " +
                      std::to_string(m.max_positions));
  auto step = [&](const OpGraph& g) { return forecast_model(g, gpu, kp, host_gap_us); };
  // Prefill: the target's and the draft's (the draft needs the prompt in its own cache).
  // With DP attention the draft runs it too (SGLang's draft worker takes the target's layout).
  const bool dpa = par.dp_attention;
  f.prefill = step(build_serving_graph(m, Mode::kPrefill, batch, seq, f.dtype, f.kv_dtype, par.tp, par.ep, routing_alpha,
                                       1, f.cached_prefix, dpa));
  const ModelForecast draft_prefill = step(build_serving_graph(d, Mode::kPrefill, batch, seq, f.dtype, f.kv_dtype, par.tp,
                                                               1, kUniformRouting, 1, f.cached_prefix, dpa));
  const double ttft_ms = f.prefill.total_ms + draft_prefill.total_ms;
  // Rounds: the draft's k decode steps (at the mean of their contexts) and the verify step, whose
  // k + 1 query tokens a sequence follow its cache.
  const double e = spec.expected_tokens();
  const int64_t needed = f.gen - 1, rounds = static_cast<int64_t>(std::ceil(double(needed) / e));
  auto round_ms = [&](int64_t j) {
    const int64_t context = seq + static_cast<int64_t>(std::llround(double(j) * e));
    f.spec_draft_step_ms = step(build_serving_graph(d, Mode::kDecode, batch, context + (k - 1) / 2, f.dtype,
                                                    f.kv_dtype, par.tp, 1, kUniformRouting, 1, 0, dpa)).total_ms;
    ServingStep verify;
    verify.prefill = {{batch, k + 1, context}};
    verify.chunk_logits_all = true;
    f.last_decode = step(build_serving_step_graph(m, verify, f.dtype, f.kv_dtype, par.tp, par.ep, routing_alpha, dpa));
    ++f.decode_steps_forecast;
    f.spec_round_ms = double(k) * f.spec_draft_step_ms + f.last_decode.total_ms;
    return f.spec_round_ms;
  };
  // The expected rounds for gen - 1 tokens: needed / e (the sum spans whole rounds).
  const double decode_ms = sum_steps(rounds, round_ms) * (double(needed) / e) / double(rounds);
  f.e2e_ms = ttft_ms + decode_ms;
  f.tokens_per_s = double(batch) * f.gen / (f.e2e_ms * 1e-3);
  set_requests(f, {{batch, ttft_ms, decode_ms / double(needed), f.e2e_ms}});  // every request alike
  f.steps = rounds;
  f.prefill_steps = 1;
  f.spec_draft = d.name;
  f.spec_tokens = k;
  f.spec_accept = spec.accept;
  f.spec_expected_tokens = e;
  // Both models on every GPU: the target's memory with the draft's weights beside it and the
  // draft's cache of the same tokens (with the k draft tokens), so that the KV room (in tokens of
  // both caches) and its sequences count the draft.
  const ServingDraft draft{serving_weight_bytes(d, f.dtype, par.tp, dpa), serving_kv_token_bytes(d, f.kv_dtype, par.tp, dpa)};
  f.memory = serving_memory(m, f.dtype, f.kv_dtype, par.tp, batch, seq + f.gen + k, gpu, 1, f.cached_prefix,
                            {0, std::max(seq - f.cached_prefix, k + 1)}, dpa, draft);
}
}  // namespace

namespace {
// A generate request's output tokens against the range and the model's positions.
void check_generate_lengths(const ModelConfig& m, int64_t seq, int64_t gen) {
  if (gen < 2 || gen > (1 << 20))
    throw ConfigError("--gen: " + std::to_string(gen) + " out of range [2, 2^20] (one output token is --mode prefill)");
  // The last output token is produced at position seq + gen - 2 (0-based), the prompt's first at 0.
  if (m.max_positions > 0 && seq >= 1 && seq + gen - 1 > m.max_positions)
    throw ConfigError("--gen: " + std::to_string(seq) + " prompt + " + std::to_string(gen) + " output tokens need " +
                      std::to_string(seq + gen - 1) + " positions; " + m.name + " has " +
                      std::to_string(m.max_positions));
}

// check_generate_lengths, and the longest of the requests' own lengths (a range ratio's draws)
// against the model's positions too.
void check_request_lengths(const ModelConfig& m, int64_t seq, int64_t gen, const std::vector<RequestLength>& lengths) {
  check_generate_lengths(m, seq, gen);
  int64_t longest = 0;
  for (const RequestLength& l : lengths) longest = std::max(longest, l.seq + l.gen - 1);
  if (m.max_positions > 0 && longest > m.max_positions)
    throw ConfigError("--range-ratio: a request of " + std::to_string(longest) + " positions is drawn; " + m.name +
                      " has " + std::to_string(m.max_positions));
}

// A generate forecast's request fields, before any step.
GenerateForecast generate_request(const ModelConfig& m, const GpuSpec& gpu, int64_t batch, int64_t seq, int64_t gen,
                                  DType dtype, DType kv_dtype, const SchedulerLimits& limits, int64_t cached_prefix) {
  GenerateForecast f;
  f.model = m.name;
  f.gpu = gpu.name;
  f.dtype = dtype;
  f.kv_dtype = kv_dtype;
  f.batch = batch, f.seq = seq, f.gen = gen;
  f.limits = limits;
  f.cached_prefix = cached_prefix;
  return f;
}
}  // namespace

GenerateForecast forecast_generate(const ModelConfig& m, const GpuSpec& gpu, const KernelPredictor& kp, int64_t batch,
                                   int64_t seq, int64_t gen, DType dtype, DType kv_dtype, const Parallelism& par,
                                   double host_gap_us, double routing_alpha, const SchedulerLimits& limits,
                                   int64_t cached_prefix, const SpecDecoding* spec) {
  if (par.dp != 1 || par.microbatches != 1)
    throw std::logic_error("forecast_generate: one replica (dp 1); its microbatches follow from pp");
  const std::vector<RequestLength> lengths = request_lengths(batch, seq, gen, limits.range_ratio, cached_prefix + 1);
  check_request_lengths(m, seq, gen, lengths);
  SchedulerLimits lim = limits;
  // The largest pass: one step at the token budget (as vLLM sizes its cache), else every
  // running prompt's uncached rest at once.
  const ServingPass pass = lim.max_batched_tokens > 0 ? ServingPass{lim.max_batched_tokens, 0}
                                                      : ServingPass{0, seq - cached_prefix};
  if (lim.max_seqs_auto) {
    // As many running sequences as the KV room holds at their full length (at least one).
    const MemoryEstimate all =
        serving_memory(m, dtype, kv_dtype, par.tp, batch, seq + gen, gpu, par.pp, cached_prefix, pass, par.dp_attention,
                       {}, par.moe_all_to_all);
    lim.max_seqs = all.max_sequences < batch ? std::max<int64_t>(1, all.max_sequences) : 0;
  }
  if (lim.binds() && par.pp > 1)
    throw ConfigError(std::string(lim.max_batched_tokens > 0 ? "--max-batched-tokens"
                                  : lim.max_seqs > 0         ? "--max-seqs"
                                                             : "--request-rate") +
                      " with --pp " + std::to_string(par.pp) +
                      ": the engine's scheduler is modelled on one pipeline stage only");
  GenerateForecast f = generate_request(m, gpu, batch, seq, gen, dtype, kv_dtype, lim, cached_prefix);
  if (spec) {
    forecast_speculative(f, m, *spec, gpu, kp, par, host_gap_us, routing_alpha);
    return f;
  }
  // Decode-only steps and, without a budget, the one prefill step are build_serving_graph's,
  // which also spreads them over pipeline stages; scheduled steps with prompt tokens are
  // build_serving_step_graph's (the same graph where a step is all whole prompts).
  auto graph = [&](const ServingStep& st) {
    if (st.prefill.empty())
      return build_serving_graph(m, Mode::kDecode, st.decode_seqs, st.decode_context, dtype, kv_dtype, par.tp, par.ep,
                                 routing_alpha, par.pp, 0, par.dp_attention, par.moe_all_to_all);
    const ServingChunk& c = st.prefill.front();
    if (!lim.binds() && st.prefill.size() == 1 && c.prefix == cached_prefix && c.prefix + c.tokens == seq &&
        st.decode_seqs == 0)
      return build_serving_graph(m, Mode::kPrefill, c.seqs, seq, dtype, kv_dtype, par.tp, par.ep, routing_alpha, par.pp,
                                 cached_prefix, par.dp_attention, par.moe_all_to_all);
    return build_serving_step_graph(m, st, dtype, kv_dtype, par.tp, par.ep, routing_alpha, par.dp_attention,
                                    par.moe_all_to_all);
  };
  bool first = true;
  // Steps of equal token counts launch the same GEMMs and memory ops: each is forecast once.
  const KernelPredictor::MemoScope memo(kp);
  const ServingSchedule s = schedule_serving(batch, seq, gen, lim, [&](const ServingStep& st) {
    ModelForecast step = forecast_model(graph(st), gpu, kp, host_gap_us);
    const double ms = step.total_ms;
    if (first) f.prefill = std::move(step), first = false;
    else if (st.prefill.empty()) f.last_decode = std::move(step);
    return ms;
  }, cached_prefix, &lengths);
  f.e2e_ms = s.e2e_ms;
  f.steps = s.steps;
  f.prefill_steps = s.prefill_steps;
  f.decode_steps_forecast = s.decode_steps_timed;
  f.tokens_per_s = double(s.output_tokens) / (f.e2e_ms * 1e-3);
  set_requests(f, s.requests);
  // The KV cache of the sequences that run at once.
  const int64_t running = lim.max_seqs > 0 ? std::min(batch, lim.max_seqs) : batch;
  f.memory = serving_memory(m, dtype, kv_dtype, par.tp, running, seq + gen, gpu, par.pp, cached_prefix, pass,
                            par.dp_attention, {}, par.moe_all_to_all);
  return f;
}

void check_disaggregation(const Disaggregation& d) {
  if (d.prefill_tp < 1 || d.prefill_tp > 4096)
    throw ConfigError("--prefill-tp: " + std::to_string(d.prefill_tp) + " out of range [1, 4096]");
  if (d.prefill_instances < 1 || d.prefill_instances > 1024)
    throw ConfigError("--prefill-instances: " + std::to_string(d.prefill_instances) + " out of range [1, 1024]");
  if (d.decode_instances < 1 || d.decode_instances > 1024)
    throw ConfigError("--decode-instances: " + std::to_string(d.decode_instances) + " out of range [1, 1024]");
}

std::string prefill_instances_text(const Disaggregation& d) {
  return (d.prefill_instances > 1 ? std::to_string(d.prefill_instances) + " prefill instances"
                                  : std::string("a prefill instance")) +
         " of tp " + std::to_string(d.prefill_tp) + (d.prefill_ep > 1 ? " (ep " + std::to_string(d.prefill_ep) + ")" : "") +
         (d.decode_instances > 1 ? " feeding " + std::to_string(d.decode_instances) + " decode instances" : "");
}

std::string instance_ratio_text(const Disaggregation& d) {
  return std::to_string(d.prefill_instances) +
         (d.decode_instances > 1 ? " per " + std::to_string(d.decode_instances) : std::string());
}

void check_disaggregation_options(const std::string& option, const SchedulerLimits& limits, int64_t cached_prefix,
                                  bool spec) {
  // max_seqs_auto is the decode instance's own cap (its KV room).
  // max_batched_tokens is the prefill instances' token budget.
  const char* flag = limits.max_seqs > 0         ? "--max-seqs"
                     : limits.prefill_first    ? "--schedule"
                     : cached_prefix > 0       ? "--cached-prefix"
                     : spec                    ? "--spec-draft"
                                               : nullptr;
  if (flag)
    throw ConfigError(option + " with " + flag +
                      ": not modelled (disaggregated serving has no sequence cap, cached prefix or draft; the decode "
                      "instance's KV room is its cap)");
}

GenerateForecast forecast_disaggregated(const ModelConfig& m, const GpuSpec& gpu, const KernelPredictor& kp,
                                        int64_t batch, int64_t seq, int64_t gen, DType dtype, DType kv_dtype,
                                        const Parallelism& par, const Disaggregation& d, double host_gap_us,
                                        double routing_alpha, const SchedulerLimits& limits) {
  check_disaggregation(d);
  const int64_t p = d.prefill_tp, pe = d.prefill_ep, instances = d.prefill_instances, decoders = d.decode_instances;
  if (pe != 1 && (m.num_experts == 0 || pe < 1 || p % pe != 0 || m.num_experts % pe != 0))
    throw ConfigError("--prefill-ep " + std::to_string(pe) + ": must divide --prefill-tp (" + std::to_string(p) +
                      ") and " + m.name + "'s experts" + (m.num_experts == 0 ? " (it has none)" : ""));
  if (par.pp != 1)
    throw ConfigError("--prefill-tp with --pp " + std::to_string(par.pp) +
                      ": disaggregated serving is modelled with one pipeline stage a decode instance");
  check_disaggregation_options("--prefill-tp", limits);
  // Each request's prompt and output tokens (all seq and gen without a range ratio).
  const std::vector<RequestLength> len = request_lengths(batch, seq, gen, limits.range_ratio);
  check_request_lengths(m, seq, gen, len);
  // A batch at once (no cap) takes the closed form below; arrivals, the decode instance's KV
  // room as a cap (--max-seqs auto) or requests of their own lengths, the schedule after it
  // (arrivals all at 0 without a rate).
  const bool scheduled = limits.request_rate > 0 || limits.max_seqs_auto || limits.range_ratio > 0;
  // Request i goes to decode instance i mod M, which in the closed form decodes a share of
  // ceil or floor(batch / M) sequences.
  auto decode_share = [&](int64_t j) { return batch / decoders + (j < batch % decoders ? 1 : 0); };
  // The closed form's decode instance (the largest share): its sequences prefilled at once,
  // then decoding (its steps after the first), forecast once per share.
  std::map<int64_t, GenerateForecast> shares;
  auto share_forecast = [&](int64_t k) -> const GenerateForecast& {
    auto it = shares.find(k);
    if (it == shares.end())
      it = shares.emplace(k, forecast_generate(m, gpu, kp, k, seq, gen, dtype, kv_dtype, par, host_gap_us, routing_alpha)).first;
    return it->second;
  };
  GenerateForecast f = scheduled ? generate_request(m, gpu, batch, seq, gen, dtype, kv_dtype, limits, 0)
                                 : share_forecast(decode_share(0));
  f.batch = batch;
  f.limits = limits;
  DisaggForecast x;
  x.layout = d;
  // A prefill instance's step, forecast from the graph `build` makes; its layout errors name
  // --tp and --ep: say which instance's.
  auto prefill_forecast = [&](const auto& build) {
    OpGraph g;
    try {
      g = build();
    } catch (const ConfigError& e) {
      throw ConfigError("the prefill instance (--prefill-tp " + std::to_string(p) + ", --prefill-ep " +
                        std::to_string(pe) + "): " + e.what());
    }
    return forecast_model(g, gpu, kp, host_gap_us);
  };
  // The prefill instance's step of k whole prompts (forecast once per k).
  std::map<int64_t, ModelForecast> prefills;
  auto prefill_step = [&](int64_t k) -> const ModelForecast& {
    auto it = prefills.find(k);
    if (it == prefills.end())
      it = prefills.emplace(k, prefill_forecast([&] {
                       return build_serving_graph(m, Mode::kPrefill, k, seq, dtype, kv_dtype, p, pe, routing_alpha);
                     })).first;
    return it->second;
  };
  // A request's whole cache after a prompt of s tokens: every KV head (or the MLA latent) of
  // every layer, tp 1's bytes.
  const double windowed = double(windowed_layers(m)), token_layer_bytes = kv_token_layer_bytes(m, kv_dtype, 1, false);
  auto request_kv_bytes = [&](int64_t s) {
    const double window = double(std::min<int64_t>(s, m.sliding_window));
    return token_layer_bytes * ((double(m.layers) - windowed) * double(s) + windowed * window);
  };
  x.kv_over_network = gpu.gpus_per_node > 0 && d.replica_gpus(par.tp) > gpu.gpus_per_node;
  const double pairs = double(std::min(p, par.tp));
  // The caches of one prefill step's prompts to one decode instance (their bytes), moved
  // together: a point-to-point send of each GPU pair's share.
  auto move_ms = [&](double bytes) {
    return send_recv_ms(bytes / pairs, gpu, x.kv_over_network,
                        "a KV cache sent between a prefill and a decode instance on two nodes");
  };
  // The prefill steps, each its end, its prompts and their first index in `members` (the
  // prefill instances' requests, each instance's in order of arrival).
  struct Step {
    double end_ms;
    int64_t prompts;
    size_t first;
    int64_t instance;  // the prefill instance that ran it
  };
  std::vector<size_t> members;
  // Each step's caches move in the order the steps end, one destination at a time: a move
  // starts once the step has ended and both the sending prefill instance's links and the
  // receiving decode instance's are free (each side's links are shared by its moves). Returns
  // when each request's cache is there; sums the moves' time into x.kv_transfer_ms.
  auto receive = [&](std::vector<Step> steps) {
    std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.end_ms < b.end_ms; });
    std::vector<double> link_free(static_cast<size_t>(decoders), 0.0), at(static_cast<size_t>(batch), 0.0);
    std::vector<double> send_free(static_cast<size_t>(instances), 0.0);
    std::vector<double> to(static_cast<size_t>(decoders));  // bytes to each decode instance
    for (const Step& s : steps) {
      std::fill(to.begin(), to.end(), 0.0);
      for (size_t q = s.first; q < s.first + static_cast<size_t>(s.prompts); ++q)
        to[members[q] % decoders] += request_kv_bytes(len[members[q]].seq);
      double& sender = send_free[static_cast<size_t>(s.instance)];
      for (size_t j = 0; j < to.size(); ++j)
        if (to[j] > 0) {
          const double moved = move_ms(to[j]);
          x.kv_transfer_ms += moved;
          link_free[j] = sender = std::max({link_free[j], sender, s.end_ms}) + moved;
        }
      for (size_t q = s.first; q < s.first + static_cast<size_t>(s.prompts); ++q)
        at[members[q]] = link_free[members[q] % decoders];
    }
    return at;
  };
  int64_t output_tokens = 0;
  for (const RequestLength& l : len) x.kv_transfer_gb += request_kv_bytes(l.seq) / 1e9, output_tokens += l.gen;
  // The prefill instances' steps. Request i goes to prefill instance i mod N; each instance,
  // whenever idle, runs the prompts sent to it that have arrived, in order of arrival: all of
  // them whole in one step, or with a token budget (--max-batched-tokens B, the prefill
  // instances' chunked prefill) at most B prompt tokens a step, the prompt that reaches the
  // budget split there and continued in its next step. A prompt's cache moves once its last
  // chunk's step ends. Fills `members` (each instance's requests in order) and returns the
  // steps that finish prompts, with the prompts each finishes.
  const int64_t budget = limits.max_batched_tokens > 0 ? limits.max_batched_tokens : 0;
  std::map<std::vector<std::array<int64_t, 3>>, ModelForecast> chunked;  // a step of prompt chunks
  const ModelForecast* first_step = nullptr;
  const ModelForecast* largest_step = nullptr;  // the step of the most prompt tokens
  int64_t largest_step_tokens = 0, largest_prefill = 0;  // prompts of one step, at most
  int64_t prefill_steps = 0;
  auto run_prefills = [&](const std::vector<double>& arrive) {
    std::vector<Step> steps;
    for (int64_t in = 0; in < std::min(instances, batch); ++in) {
      const size_t from = members.size();
      for (size_t i = static_cast<size_t>(in); i < arrive.size(); i += static_cast<size_t>(instances))
        members.push_back(i);
      double t = 0;
      int64_t done = 0;  // tokens of members[next]'s prompt that earlier steps ran
      for (size_t next = from; next < members.size();) {
        t = std::max(t, arrive[members[next]]);
        // The step: from the first unfinished prompt, every arrived one, within the budget.
        std::vector<std::array<int64_t, 3>> chunks;  // {prompts, tokens each, cached before}
        int64_t left = budget > 0 ? budget : std::numeric_limits<int64_t>::max(), tokens = 0, prompts = 0;
        size_t j = next;
        int64_t at = done;
        while (j < members.size() && arrive[members[j]] <= t && left > 0) {
          const int64_t prompt = len[members[j]].seq;
          const int64_t c = std::min(prompt - at, left);
          if (!chunks.empty() && chunks.back()[1] == c && chunks.back()[2] == at) ++chunks.back()[0];
          else chunks.push_back({1, c, at});
          left -= c, tokens += c, ++prompts;
          if (at + c < prompt) {
            at += c;
            break;
          }
          ++j, at = 0;
        }
        // Whole prompts of the stated length: the prefill graph (equal to the step graph's).
        const bool whole = chunks.size() == 1 && chunks[0][1] == seq && chunks[0][2] == 0;
        const ModelForecast* step = nullptr;
        if (whole) {
          step = &prefill_step(chunks[0][0]);
        } else {
          auto it = chunked.find(chunks);
          if (it == chunked.end()) {
            ServingStep st;
            for (const auto& c : chunks) st.prefill.push_back({c[0], c[1], c[2]});
            it = chunked.emplace(chunks, prefill_forecast([&] {
                            return build_serving_step_graph(m, st, dtype, kv_dtype, p, pe, routing_alpha);
                          })).first;
          }
          step = &it->second;
        }
        if (!first_step) first_step = step;
        if (tokens > largest_step_tokens) largest_step = step, largest_step_tokens = tokens;
        largest_prefill = std::max(largest_prefill, prompts);
        t += step->total_ms;
        x.prefill_ms += step->total_ms;
        ++prefill_steps;
        if (j > next) steps.push_back({t, static_cast<int64_t>(j - next), next, in});
        next = j, done = at;
      }
    }
    return steps;
  };
  if (!scheduled) {
    // A batch at once: each prefill instance's steps over its share of the prompts (one step
    // without a budget), the instances side by side; the moves; then each decode instance's
    // steps, once all of its caches are there.
    std::vector<Step> steps = run_prefills(std::vector<double>(static_cast<size_t>(batch), 0.0));
    f.prefill = *largest_step;
    const std::vector<double> ready = receive(std::move(steps));
    // Every request's first token once its decode instance's last cache is there (its share
    // decodes together); its others as that share's forecast has them.
    std::vector<RequestTimes> requests;
    f.e2e_ms = 0;
    for (int64_t j = 0; j < std::min(decoders, batch); ++j) {
      double ttft_ms = 0;
      for (int64_t r = j; r < batch; r += decoders) ttft_ms = std::max(ttft_ms, ready[static_cast<size_t>(r)]);
      const GenerateForecast& g = share_forecast(decode_share(j));
      const double decode_ms = g.e2e_ms - g.prefill.total_ms, shift = ttft_ms - g.ttft_ms;
      x.decode_ms += decode_ms;
      for (RequestTimes t : g.requests) {
        t.ttft_ms += shift, t.e2el_ms += shift;
        requests.push_back(t);
      }
      f.e2e_ms = std::max(f.e2e_ms, ttft_ms + decode_ms);
    }
    set_requests(f, std::move(requests));
    f.memory = serving_memory(m, dtype, kv_dtype, par.tp, decode_share(0), seq + gen, gpu, 1, 0, ServingPass{0, 1},
                              par.dp_attention, {}, par.moe_all_to_all);
  } else {
    // Requests arriving over time. The prefill instances run them as they arrive (run_prefills)
    // and send their caches on; each decode instance takes each of its requests once its cache
    // is there, at most as many as its KV room holds (first come, first served), and every step
    // decodes one token of each running request (continuous batching) at their mean context; a
    // request leaves after its gen - 1 decode tokens.
    const std::vector<double> arrive = arrival_times_ms(batch, limits.request_rate, limits.uniform_arrivals);
    std::vector<Step> steps = run_prefills(arrive);
    f.prefill = *first_step;
    const std::vector<double> ready = receive(std::move(steps));  // first token, at the decode instance
    const MemoryEstimate room = serving_memory(m, dtype, kv_dtype, par.tp, batch, seq + gen, gpu, 1, 0,
                                               ServingPass{0, 1}, par.dp_attention, {}, par.moe_all_to_all);
    const int64_t cap = std::clamp<int64_t>(room.max_sequences, 1, batch);
    // Decode steps, forecast once per (sequences, context to the nearest 16 tokens).
    std::map<std::pair<int64_t, int64_t>, double> decode_memo;
    const KernelPredictor::MemoScope memo(kp);
    struct Running {
      size_t id;
      int64_t decoded;
    };
    std::vector<RequestTimes> requests;
    int64_t decode_steps = 0;
    for (int64_t dj = 0; dj < decoders; ++dj) {
      // The decode instance's requests (request i to instance i mod M) in order of readiness
      // (another prefill instance's step can end first), first come first.
      std::vector<size_t> order;
      for (size_t i = static_cast<size_t>(dj); i < ready.size(); i += static_cast<size_t>(decoders)) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
      std::vector<Running> running;
      size_t next = 0;
      double t = 0;
      while (next < order.size() || !running.empty()) {
        if (running.empty()) t = std::max(t, ready[order[next]]);
        while (next < order.size() && ready[order[next]] <= t && static_cast<int64_t>(running.size()) < cap)
          running.push_back({order[next++], 0});
        if (++decode_steps > kMaxArrivalSteps)
          throw ConfigError("--request-rate: more than 1,000,000 decode steps; raise the rate or lower --batch");
        double context_sum = 0;
        for (const Running& r : running) context_sum += double(len[r.id].seq + r.decoded);
        const int64_t n = static_cast<int64_t>(running.size());
        const int64_t context = (std::llround(context_sum / double(n)) + 8) / 16 * 16;
        auto it = decode_memo.find({n, context});
        if (it == decode_memo.end()) {
          f.last_decode = forecast_model(build_serving_graph(m, Mode::kDecode, n, context, dtype, kv_dtype, par.tp,
                                                             par.ep, routing_alpha, 1, 0, par.dp_attention,
                                                             par.moe_all_to_all),
                                         gpu, kp, host_gap_us);
          it = decode_memo.emplace(std::make_pair(n, context), f.last_decode.total_ms).first;
        }
        t += it->second;
        x.decode_ms += it->second;
        std::vector<Running> still;
        for (Running r : running) {
          const int64_t outputs = len[r.id].gen;
          if (++r.decoded < outputs - 1) {
            still.push_back(r);
            continue;
          }
          const double first = ready[r.id];
          requests.push_back({1, first - arrive[r.id], (t - first) / double(outputs - 1), t - arrive[r.id]});
          f.e2e_ms = std::max(f.e2e_ms, t);
        }
        running.swap(still);
      }
    }
    f.steps = prefill_steps + decode_steps;
    f.prefill_steps = prefill_steps;
    f.decode_steps_forecast = static_cast<int64_t>(decode_memo.size());
    f.memory = serving_memory(m, dtype, kv_dtype, par.tp, cap, seq + gen, gpu, 1, 0, ServingPass{0, 1},
                              par.dp_attention, {}, par.moe_all_to_all);
    set_requests(f, std::move(requests));
  }
  // A prefill GPU at the largest step: its prompts' caches and pass (at the budget: its tokens).
  // (With a range ratio: at the longest prompt drawn.)
  int64_t longest_prompt = 0;
  for (const RequestLength& l : len) longest_prompt = std::max(longest_prompt, l.seq);
  x.prefill_memory = serving_memory(m, dtype, kv_dtype, p, largest_prefill, longest_prompt, gpu, 1, 0,
                                    budget > 0 ? ServingPass{largest_step_tokens, 0} : ServingPass{0, longest_prompt});
  x.prefill_per_decode = x.decode_ms > 0 ? x.prefill_ms / x.decode_ms : 0;
  f.tokens_per_s = double(output_tokens) / (f.e2e_ms * 1e-3);
  f.disagg = x;
  return f;
}

std::string generate_json(const GenerateForecast& f) {
  // The replica's layout: the decode instance's where disaggregated.
  const ModelForecast& lay = f.disagg ? f.last_decode : f.prefill;
  nlohmann::json j = {{"model", f.model},
                      {"gpu", f.gpu},
                      {"mode", "generate"},
                      {"dtype", dtype_name(f.dtype)},
                      {"kv_dtype", dtype_name(f.kv_dtype)},
                      {"expert_dtype", f.prefill.expert_dtype ? nlohmann::json(dtype_name(*f.prefill.expert_dtype))
                                                              : nlohmann::json(nullptr)},
                      {"batch", f.batch},
                      {"seq", f.seq},
                      {"gen", f.gen},
                      {"parallel",
                       {{"tp", lay.par.tp},
                        {"pp", lay.par.pp},
                        {"microbatches", lay.par.microbatches},
                        {"ep", lay.par.ep},
                        {"dp_attention", lay.par.dp_attention},
                        {"moe_a2a", lay.par.moe_all_to_all ? "deepep" : "none"}}},
                      {"routing", routing_name(f.prefill.routing_alpha)},
                      {"sliding_window", f.prefill.sliding_window},
                      {"sliding_window_layers", f.prefill.window_layers},
                      {"chunked_attention", f.prefill.chunked_window},
                      {"max_batched_tokens", f.limits.max_batched_tokens},
                      {"max_seqs", f.limits.max_seqs},
                      {"max_seqs_auto", f.limits.max_seqs_auto},
                      {"schedule", f.limits.schedule_name()},
                      {"request_rate", f.limits.request_rate},
                      {"arrivals", f.limits.arrivals_name()},
                      {"range_ratio", f.limits.range_ratio},
                      {"cached_prefix", f.cached_prefix},
                      {"ttft_ms", f.ttft_ms},
                      {"ttft_max_ms", f.ttft_max_ms},
                      {"ttft_p50_ms", f.ttft.p50_ms},
                      {"ttft_p90_ms", f.ttft.p90_ms},
                      {"ttft_p99_ms", f.ttft.p99_ms},
                      {"tpot_ms", f.tpot_ms},
                      {"tpot_p50_ms", f.tpot.p50_ms},
                      {"tpot_p90_ms", f.tpot.p90_ms},
                      {"tpot_p99_ms", f.tpot.p99_ms},
                      {"e2e_ms", f.e2e_ms},
                      {"tokens_per_s", f.tokens_per_s},
                      {"steps", f.steps},
                      {"prefill_steps", f.prefill_steps},
                      {"decode_steps_forecast", f.decode_steps_forecast}};
  j["slo"] = nullptr;
  if (f.limits.has_slo()) {
    j["slo"] = {{"ttft_ms", positive_or_null(f.limits.slo_ttft_ms)},
                {"tpot_ms", positive_or_null(f.limits.slo_tpot_ms)},
                {"requests_meeting", f.slo_requests},
                {"attained_pct", f.slo_attained_pct()},
                {"goodput_rps", f.goodput_rps}};
  }
  j["speculative"] = nullptr;
  if (!f.spec_draft.empty())
    j["speculative"] = {{"draft", f.spec_draft},
                        {"tokens", f.spec_tokens},
                        {"accept", f.spec_accept},
                        {"expected_tokens_per_round", f.spec_expected_tokens},
                        {"last_round_ms", f.spec_round_ms},
                        {"last_draft_step_ms", f.spec_draft_step_ms}};
  add_memory_json(j, f.memory);
  j["disaggregation"] = nullptr;
  if (f.disagg) {
    const DisaggForecast& x = *f.disagg;
    nlohmann::json prefill_memory;
    add_memory_json(prefill_memory, x.prefill_memory);
    j["disaggregation"] = {{"prefill_tp", x.layout.prefill_tp},
                           {"prefill_ep", x.layout.prefill_ep},
                           {"prefill_instances", x.layout.prefill_instances},
                           {"decode_instances", x.layout.decode_instances},
                           {"gpus", x.layout.replica_gpus(lay.par.tp)},
                           {"prefill_ms", x.prefill_ms},
                           {"kv_transfer_gb", x.kv_transfer_gb},
                           {"kv_transfer_ms", x.kv_transfer_ms},
                           {"kv_transfer_link", x.kv_over_network ? "network" : "node"},
                           {"decode_ms", x.decode_ms},
                           {"prefill_per_decode", x.prefill_per_decode},
                           {"prefill_memory", prefill_memory}};
  }
  auto ops = [](const ModelForecast& m) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& o : m.ops)
      a.push_back({{"name", o.name}, {"kind", o.kind}, {"count", o.count}, {"ms", o.fw_ms * o.count}});
    return a;
  };
  j["basis"] = basis_json(f.basis());
  j["prefill_ops"] = ops(f.prefill);  // the first step's
  j["last_decode_step_ops"] = ops(f.last_decode);  // empty when every step ran prompt tokens
  return j.dump(2) + "\n";
}

namespace {
// What tokens/s counts: every request alike, or each with its own output tokens.
const char* output_tokens_text(const GenerateForecast& f) {
  return f.limits.range_ratio > 0 ? "the requests' output tokens" : "batch x output tokens";
}
}  // namespace

std::string generate_table(const GenerateForecast& f, int top_ops) {
  std::ostringstream os;
  char buf[640];
  // Over the requests (schedules with limits): the percentiles, and goodput under objectives.
  auto percentiles = [&] {
    std::snprintf(buf, sizeof buf,
                  "ttft p50/p90/p99  %.3f / %.3f / %.3f ms\ntpot p50/p90/p99  %.3f / %.3f / %.3f ms  (over the requests)\n",
                  f.ttft.p50_ms, f.ttft.p90_ms, f.ttft.p99_ms, f.tpot.p50_ms, f.tpot.p90_ms, f.tpot.p99_ms);
    return std::string(buf);
  };
  auto goodput = [&] {
    if (!f.limits.has_slo()) return std::string();
    std::snprintf(buf, sizeof buf, "goodput       %10.3f  requests/s (%lld of %lld requests meet %s)\n", f.goodput_rps,
                  static_cast<long long>(f.slo_requests), static_cast<long long>(f.batch), f.limits.slo_text().c_str());
    return std::string(buf);
  };
  std::string budget;
  if (f.limits.max_batched_tokens > 0)
    budget += ", chunked prefill: " + std::to_string(f.limits.max_batched_tokens) + " tokens a step";
  budget += cached_prefix_suffix(f.cached_prefix);
  if (f.limits.prefill_first) budget += ", prefill first";
  if (f.limits.request_rate > 0) {
    char rate[96];
    std::snprintf(rate, sizeof rate, ", %g requests/s (%s arrivals)", f.limits.request_rate, f.limits.arrivals_name());
    budget += rate;
  }
  if (f.limits.range_ratio > 0) {
    char range[96];
    std::snprintf(range, sizeof range, ", lengths drawn within %g %% of them", 100 * f.limits.range_ratio);
    budget += range;
  }
  if (!f.spec_draft.empty()) {
    char spec[200];
    std::snprintf(spec, sizeof spec, ", speculative: %s drafts %lld tokens, %.2f accepted (%.2f tokens a round)",
                  f.spec_draft.c_str(), static_cast<long long>(f.spec_tokens), f.spec_accept, f.spec_expected_tokens);
    budget += spec;
  }
  if (f.limits.max_seqs > 0)
    budget += ", at most " + std::to_string(f.limits.max_seqs) + " sequences at once" +
              (f.limits.max_seqs_auto ? " (the KV room's)" : "");
  else if (f.limits.max_seqs_auto)
    budget += ", every sequence at once (the KV room holds them)";
  // The replica's layout: the decode instance's where disaggregated.
  const ModelForecast& lay = f.disagg ? f.last_decode : f.prefill;
  if (f.disagg)
    budget += ", disaggregated: " + prefill_instances_text(f.disagg->layout);
  std::snprintf(buf, sizeof buf,
                "%s on %s, generate: batch %lld, prompt %lld, %lld output tokens, %s (KV cache %s), tp %lld%s%s\n",
                f.model.c_str(), f.gpu.c_str(), static_cast<long long>(f.batch), static_cast<long long>(f.seq),
                static_cast<long long>(f.gen), dtype_name(f.dtype), dtype_name(f.kv_dtype), static_cast<long long>(lay.par.tp),
                serving_layout_suffix(lay).c_str(), budget.c_str());
  os << buf;
  if (f.disagg) {
    const DisaggForecast& x = *f.disagg;
    const char* link = x.kv_over_network ? "through the network ports (two nodes)" : "over the node's links";
    if (f.limits.any()) {
      std::snprintf(buf, sizeof buf,
                    "ttft_ms       %10.3f  (mean over the requests, from arrival; the last %.3f)\n"
                    "tpot_ms       %10.3f  (mean over the requests)\ne2e_ms        %10.3f  (the last request's last "
                    "token)\ntokens/s      %10.1f  (%s / e2e)\n",
                    f.ttft_ms, f.ttft_max_ms, f.tpot_ms, f.e2e_ms, f.tokens_per_s, output_tokens_text(f));
      os << buf << percentiles();
      std::snprintf(buf, sizeof buf, "steps         %10lld  (%lld prefill steps; %.2f GB of caches moved %s in %.3f ms)\n",
                    static_cast<long long>(f.steps), static_cast<long long>(f.prefill_steps), x.kv_transfer_gb, link,
                    x.kv_transfer_ms);
    } else {
      // What the time to first token is made of: one instance's step and move, or the steps of
      // N instances (or one under a token budget) and the moves as they end (with M decode
      // instances: each one's last cache, the mean over the requests).
      const Disaggregation& l = x.layout;
      char why[400];
      if (l.prefill_instances == 1 && l.decode_instances == 1 && f.limits.max_batched_tokens == 0)
        std::snprintf(why, sizeof why, "the prefill instance's step %.3f + the KV cache's move %.3f: %.2f GB %s",
                      f.prefill.total_ms, x.kv_transfer_ms, x.kv_transfer_gb, link);
      else
        std::snprintf(why, sizeof why,
                      "%s: %s, the largest %.3f; the KV caches' moves %sone after another as the steps end, %.3f in "
                      "all: %.2f GB %s",
                      l.decode_instances == 1 ? "the last cache's arrival"
                                              : "mean over the requests of their decode instance's last cache's arrival",
                      l.prefill_instances > 1 ? "the prefill instances' steps side by side" : "the prefill instance's steps",
                      f.prefill.total_ms, l.decode_instances == 1 ? "" : "into each decode instance ", x.kv_transfer_ms,
                      x.kv_transfer_gb, link);
      std::snprintf(buf, sizeof buf,
                    "ttft_ms       %10.3f  (%s)\n"
                    "tpot_ms       %10.3f  (%s)\ne2e_ms        %10.3f\n"
                    "tokens/s      %10.1f  (batch x output tokens / e2e)\n",
                    f.ttft_ms, why, f.tpot_ms,
                    x.layout.decode_instances == 1 ? "mean decode step of the decode instance"
                                                   : "mean over the requests, each decode instance decoding its share",
                    f.e2e_ms, f.tokens_per_s);
    }
    os << buf << goodput();
    std::snprintf(buf, sizeof buf,
                  "balance       %10.3f  prefill instances per decode instance keep both busy (prefill %.3f ms, "
                  "decode %.3f ms busy%s)\n",
                  x.prefill_per_decode, x.prefill_ms, x.decode_ms,
                  x.layout.prefill_instances > 1 ? "; prefill: the instances' summed" : "");
    os << buf << (x.layout.decode_instances > 1 ? "a decode instance (its largest share):\n" : "decode instance:\n")
       << memory_summary(f.memory) << "prefill instance:\n"
       << memory_summary(x.prefill_memory);
    os << (x.layout.prefill_instances > 1 ? "\n-- prefill (a prefill instance's largest step)\n"
                                   : "\n-- prefill (the prefill instance)\n")
       << forecast_table(f.prefill, top_ops);
    os << (x.layout.decode_instances > 1 ? "\n-- last decode step (a decode instance's)\n"
                                         : "\n-- last decode step (the decode instance)\n")
       << forecast_table(f.last_decode, top_ops);
    return os.str();
  }
  if (f.limits.any())
    std::snprintf(buf, sizeof buf,
                  "ttft_ms       %10.3f  (mean over the requests; the last %.3f)\ntpot_ms       %10.3f  (mean over the "
                  "requests)\ne2e_ms        %10.3f  (the last request's last token)\n"
                  "tokens/s      %10.1f  (%s / e2e)\nsteps         %10lld  (%lld with prompt tokens)\n",
                  f.ttft_ms, f.ttft_max_ms, f.tpot_ms, f.e2e_ms, f.tokens_per_s,
                  output_tokens_text(f),
                  static_cast<long long>(f.steps), static_cast<long long>(f.prefill_steps));
  else if (!f.spec_draft.empty())
    std::snprintf(buf, sizeof buf,
                  "ttft_ms       %10.3f  (the target's and the draft's prefill)\ntpot_ms       %10.3f  (rounds of %.3f "
                  "ms at the last: %lld draft steps of %.3f ms + the verify step; %.2f tokens a round)\n"
                  "e2e_ms        %10.3f\ntokens/s      %10.1f  (batch x output tokens / e2e)\n",
                  f.ttft_ms, f.tpot_ms, f.spec_round_ms, static_cast<long long>(f.spec_tokens), f.spec_draft_step_ms,
                  f.spec_expected_tokens, f.e2e_ms, f.tokens_per_s);
  else
    std::snprintf(buf, sizeof buf,
                  "ttft_ms       %10.3f  (prefill)\ntpot_ms       %10.3f  (mean decode step)\ne2e_ms        %10.3f\n"
                  "tokens/s      %10.1f  (batch x output tokens / e2e)\n",
                  f.ttft_ms, f.tpot_ms, f.e2e_ms, f.tokens_per_s);
  os << buf;
  if (f.limits.any()) os << percentiles();  // requests fare differently
  os << goodput();
  os << memory_summary(f.memory);
  os << (f.limits.any() ? "\n-- first step\n" : "\n-- prefill\n") << forecast_table(f.prefill, top_ops);
  if (f.decode_steps_forecast > 0)
    os << (f.spec_draft.empty() ? "\n-- last decode step\n" : "\n-- last verify step (the draft's steps apart)\n")
       << forecast_table(f.last_decode, top_ops);
  return os.str();
}

}  // namespace tilecast::predictor
