// The estimator's calibrated parameters: per-GPU-type compute efficiency,
// per-link collective efficiency and latency, and the few global constants
// of the performance model. Every number has a name and a comment; the
// defaults are embedded (params.cc) and were produced by `tessel calibrate`
// from ../shared/data (see comm_fit.h and accuracy.h); a JSON file of the
// same shape can replace them at run time (--params).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/gpu.h"

namespace tessel {

// How well a GPU type runs the two kinds of kernels a training step is made
// of. Both are fractions of the datasheet peak.
struct GpuEfficiency {
  std::string gpu;          // catalog name
  double gemm = 0.6;        // large-GEMM fraction of dense peak FLOP/s
  double memory = 0.75;     // fraction of memory bandwidth elementwise kernels reach
};

// A training framework's kernels relative to the best-tuned stack
// (Megatron-LM/Megatron-Core, NVIDIA's reference implementations), which
// the per-GPU efficiencies describe. One factor per framework for all GPU
// types and models.
struct FrameworkProfile {
  std::string name;
  double kernel_efficiency = 1.0;  // multiplies GEMM and attention efficiency
  bool fused_attention = true;     // FlashAttention-style kernels where the GPU has them
  std::string note;
  // Where this framework was measured on a GPU type, its own fitted GEMM
  // efficiency there (replaces gpu efficiency x kernel_efficiency).
  std::vector<GpuEfficiency> measured;
  const GpuEfficiency* MeasuredOn(const std::string& gpu) const {
    for (const auto& g : measured)
      if (g.gpu == gpu) return &g;
    return nullptr;
  }
};

// One class of link as collectives see it.
struct LinkFit {
  double efficiency = 0.8;  // achieved bus bandwidth / nominal per-direction bandwidth
  double step_latency_us = 10;  // per ring step (alpha), microseconds
};

struct PerfParams {
  // --- compute ---
  // A GEMM dimension x contributes x / (x + gemm_dim_half) to efficiency:
  // small hidden sizes, head dims and micro-batches leave tensor cores idle.
  double gemm_dim_half = 48;
  // Launch + tail cost per kernel, seconds.
  double kernel_overhead_s = 4e-6;
  // Efficiency of fused (flash) attention relative to a GEMM of the same
  // shape (softmax and masking interleaved with the matmuls).
  double fused_attention_factor = 0.75;
  std::vector<GpuEfficiency> gpus;
  GpuEfficiency fallback;  // for GPU types without calibration data
  // frameworks[0] is the default (Megatron-class kernels).
  std::vector<FrameworkProfile> frameworks = {
      {"megatron", 1.0, true, "Megatron-LM / Megatron-Core, NVIDIA reference stacks", {}},
      {"alpa", 0.6, false, "Alpa on JAX/XLA: compiler-generated kernels, no fused attention", {}}};

  // --- communication ---
  LinkFit pcie{0.47, 8};
  LinkFit nvlink_bridge{0.7, 8};
  LinkFit nvlink_mesh{0.8, 8};
  LinkFit nvswitch{0.75, 8};
  LinkFit network{0.85, 15};
  // Fraction of one micro-batch's backward pass during which gradient
  // all-reduce/reduce-scatter can run hidden (bucketed overlap).
  double dp_overlap_fraction = 0.85;

  // --- memory ---
  // CUDA context, NCCL buffers, cuBLAS workspaces, allocator fragmentation.
  double memory_overhead_gib = 2.0;

  // --- per-iteration ---
  double iteration_overhead_s = 0.005;  // data loading, logging, launch gaps

  const GpuEfficiency& ForGpu(const std::string& gpu) const;
  const LinkFit& ForLink(LinkKind k) const;
  // NotFound lists the known frameworks.
  Result<const FrameworkProfile*> FindFramework(std::string_view name) const;
};

// The embedded defaults.
const PerfParams& DefaultPerfParams();

// JSON round trip (nlohmann-json lives in params.cc only).
std::string PerfParamsToJson(const PerfParams& p);
Result<PerfParams> PerfParamsFromJson(const std::string& text, const std::string& source);

}  // namespace tessel
