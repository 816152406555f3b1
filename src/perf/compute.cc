#include "perf/compute.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tessel {

double DensePeakTflops(const GpuSpec& gpu, Precision precision) {
  double peak = gpu.PeakTflops(precision);
  if (precision == Precision::kFp32 && (gpu.sm_version == 86 || gpu.sm_version == 89)) peak /= 2;
  return peak;
}

bool GemmOffGrid(double m, double n, double k, double element_bytes) {
  const double grid = 16.0 / element_bytes;
  // Integers below 2^53 and a whole grid (1-, 2- and 4-byte elements) take
  // the integer remainder, which equals fmod's there.
  const bool whole_grid = grid == std::floor(grid) && grid >= 1;
  auto off = [grid, whole_grid](double x) {
    if (x != std::floor(x)) return false;
    if (whole_grid && std::abs(x) < 9.0e15)
      return static_cast<int64_t>(x) % static_cast<int64_t>(grid) != 0;
    return std::fmod(x, grid) != 0;
  };
  return off(m) || off(n) || off(k);
}

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision, const PerfParams& params,
                           const FrameworkProfile& framework) {
  const ArchEfficiency& a = params.ForArch(gpu.arch);
  // FP8 training quantizes the linear layers only; the rest runs in 16 bits.
  const bool fp8 = precision == Precision::kFp8;
  peak_ = DensePeakTflops(gpu, fp8 ? Precision::kBf16 : precision) * 1e12;
  // sm_80-style kernels on an architecture with a newer native path. Only
  // tensor-core math has one (Hopper's wgmma): FP32 GEMMs and convolutions
  // run FFMA on the CUDA cores whatever architecture the code was built for.
  const double legacy = framework.native_kernels || precision == Precision::kFp32 ? 1.0 : a.legacy_gemm;
  gemm_eff_ = std::clamp(a.gemm * framework.kernel_efficiency * legacy, 0.01, 1.0);
  // A framework without FP8 runs it in 16 bits (ValidatePlan refuses it).
  fp8_linear_ = fp8 && framework.fp8;
  linear_peak_ = fp8_linear_ ? DensePeakTflops(gpu, Precision::kFp8) * 1e12 : peak_;
  linear_eff_ = fp8_linear_ ? std::clamp(gemm_eff_ * a.fp8_gemm_ratio, 0.01, 1.0) : gemm_eff_;
  double attn = framework.attention == AttentionKernel::kBest ? a.attention_best : a.attention_fa2;
  attn_eff_ = std::max(0.01, attn > 0 ? attn : a.gemm * 0.6);
  mem_bw_ = gpu.memory_bw_gbs * 1e9 * a.memory;
  elem_bytes_ = ActivationBytes(precision);
  unaligned_ = a.unaligned_gemm;
  seq_half_ = a.attention_seq_half;
  seq_half_causal_ = a.attention_seq_half_causal;
  overhead_s_ = params.kernel_overhead_s;
  dim_half_ = params.gemm_dim_half;
  conv_eff_ = gemm_eff_;
  conv_half_ = dim_half_;
  if (precision == Precision::kFp32 && framework.cudnn_fp32_convs && a.fp32_conv > 0) {
    conv_eff_ = std::clamp(a.fp32_conv * framework.kernel_efficiency, 0.01, 1.0);
    if (a.fp32_conv_dim_half > 0) conv_half_ = a.fp32_conv_dim_half;
    winograd_ = std::max(1.0, a.fp32_winograd);
  }
  tile_ = params.gemm_tile;
  sms_ = gpu.sms;
}

double ComputeModel::GemmAt(double m, double n, double k, double count, double peak, double eff, bool layout,
                            double half, double fewer) const {
  if (m <= 0 || n <= 0 || k <= 0 || count <= 0) return 0.0;
  double flops = 2.0 * m * n * k / fewer;
  auto U = [half](double x) { return x / (x + half); };
  // The batch of `count` GEMMs fills the SMs in waves of output tiles.
  double wave = 1.0;
  if (sms_ > 0) {
    double tiles = count * std::ceil(m / tile_) * std::ceil(n / tile_);
    // Too few output tiles for the SMs: cuBLAS splits the reduction over k
    // (split-K / stream-K) into as many slices as fill them, each at least
    // two tiles deep.
    if (tiles < sms_) tiles *= std::max(1.0, std::min(std::floor(sms_ / tiles), std::floor(k / (2 * tile_))));
    wave = tiles / (std::ceil(tiles / sms_) * sms_);
  }
  // Off the 16-byte grid: the unaligned path (convolutions' channels are
  // padded by cuDNN and XLA, so they are not judged). FP8 runs' 16-bit
  // GEMMs and their FP8 linear layers alike are judged on 16-bit operands.
  if (layout && GemmOffGrid(m, n, k, elem_bytes_)) eff *= unaligned_;
  double t_compute = flops / (peak * eff * U(m) * U(n) * U(k) * wave);
  double t_memory = (m * k + k * n + m * n) * elem_bytes_ / mem_bw_;
  return count * std::max(t_compute, t_memory) + overhead_s_;
}

double ComputeModel::Gemm(double m, double n, double k, double count) const {
  return GemmAt(m, n, k, count, peak_, gemm_eff_, true);
}

double ComputeModel::ConvGemm(double m, double n, double k, bool winograd) const {
  return GemmAt(m, n, k, 1, peak_, conv_eff_, false, conv_half_, winograd ? winograd_ : 1.0);
}

double ComputeModel::LinearGemm(double m, double n, double k, double count) const {
  return GemmAt(m, n, k, count, linear_peak_, linear_eff_, true);
}

double ComputeModel::Fp8Cast(double elements, double kernels) const {
  if (!fp8_linear_ || elements <= 0) return 0.0;
  return Elementwise(elements * 3.0, kernels);
}

double ComputeModel::FusedAttentionForward(double batch_heads, double seq, double head_dim,
                                           bool causal) const {
  if (batch_heads <= 0) return 0.0;
  double flops = 4.0 * batch_heads * seq * seq * head_dim * (causal ? 0.5 : 1.0);
  // Published figures are at head dim 128 and long sequences; shorter
  // sequences reach seq / (seq + half) of them (ArchEfficiency).
  const double half = causal ? seq_half_causal_ : seq_half_;
  double eff = attn_eff_ * U(head_dim) / U(128) * seq / (seq + half);
  return flops / (peak_ * eff) + overhead_s_;
}

double ComputeModel::Elementwise(double bytes, double kernels) const {
  if (bytes <= 0) return 0.0;
  return bytes / mem_bw_ + kernels * overhead_s_;
}

}  // namespace tessel
