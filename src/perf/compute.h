// Roofline-with-efficiency model of GPU kernels. A GEMM runs at
//   peak * eff_gpu * u(m) * u(n) * u(k),  u(x) = x / (x + gemm_dim_half)
// or at the memory roofline, whichever is slower, plus a launch overhead;
// elementwise kernels are memory-bound. eff_gpu is calibrated per GPU type
// (params.h); u() makes small hidden sizes and micro-batches slower, as
// tensor-core tiles go unfilled.
#pragma once

#include "hardware/gpu.h"
#include "perf/params.h"

namespace tessel {

class ComputeModel {
 public:
  ComputeModel(const GpuSpec& gpu, Precision precision, const PerfParams& params,
               const FrameworkProfile& framework);

  // Seconds for `count` GEMMs of (m x k) @ (k x n), launched as one
  // batched/grouped kernel.
  double Gemm(double m, double n, double k, double count = 1) const;
  // Seconds for fused attention (FlashAttention-style) forward over
  // `batch_heads` heads of s x s scores with head dim d; `causal` halves work.
  double FusedAttentionForward(double batch_heads, double seq, double head_dim, bool causal) const;
  // Seconds for memory-bound kernels moving `bytes` in `kernels` launches.
  double Elementwise(double bytes, double kernels = 1) const;

  double PeakFlops() const { return peak_; }
  double elem_bytes() const { return elem_bytes_; }
  double MemoryBandwidth() const { return mem_bw_; }

 private:
  double U(double x) const { return x / (x + dim_half_); }
  double peak_;        // FLOP/s
  double gemm_eff_;
  double mem_bw_;      // achieved bytes/s
  double elem_bytes_;
  double overhead_s_;
  double dim_half_;
  double attn_factor_;
};

}  // namespace tessel
