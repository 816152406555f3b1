#include "perf/compute.h"

#include <algorithm>

namespace tessel {

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision, const PerfParams& params,
                           const FrameworkProfile& framework) {
  const GpuEfficiency& e = params.ForGpu(gpu.name);
  peak_ = gpu.PeakTflops(precision) * 1e12;
  const GpuEfficiency* own = framework.MeasuredOn(gpu.name);
  gemm_eff_ = own ? own->gemm : std::min(0.98, e.gemm * framework.kernel_efficiency);
  mem_bw_ = gpu.memory_bw_gbs * 1e9 * e.memory;
  elem_bytes_ = ActivationBytes(precision);
  overhead_s_ = params.kernel_overhead_s;
  dim_half_ = params.gemm_dim_half;
  attn_factor_ = params.fused_attention_factor;
}

double ComputeModel::Gemm(double m, double n, double k, double count) const {
  if (m <= 0 || n <= 0 || k <= 0 || count <= 0) return 0.0;
  double flops = 2.0 * m * n * k;
  double t_compute = flops / (peak_ * gemm_eff_ * U(m) * U(n) * U(k));
  double t_memory = (m * k + k * n + m * n) * elem_bytes_ / mem_bw_;
  return count * std::max(t_compute, t_memory) + overhead_s_;
}

double ComputeModel::FusedAttentionForward(double batch_heads, double seq, double head_dim,
                                           bool causal) const {
  if (batch_heads <= 0) return 0.0;
  double flops = 4.0 * batch_heads * seq * seq * head_dim * (causal ? 0.5 : 1.0);
  double eff = gemm_eff_ * attn_factor_ * U(seq) * U(head_dim);
  return flops / (peak_ * eff) + overhead_s_;
}

double ComputeModel::Elementwise(double bytes, double kernels) const {
  if (bytes <= 0) return 0.0;
  return bytes / mem_bw_ + kernels * overhead_s_;
}

}  // namespace tessel
