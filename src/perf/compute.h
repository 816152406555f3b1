// Roofline-with-efficiency model of GPU kernels. A GEMM runs at
//   peak * eff_arch * k_fw * u(m) * u(n) * u(k),  u(x) = x / (x + gemm_dim_half)
// times the share of the SMs its output tiles keep busy over its waves
// (wave quantization: tiles / (ceil(tiles / SMs) x SMs)),
// or at the memory roofline, whichever is slower, plus a launch overhead;
// elementwise kernels are memory-bound on the part's own bandwidth. eff_arch
// is the GPU architecture's fitted GEMM efficiency (params.h), k_fw the
// framework's kernel efficiency (1 for cuBLAS-calling frameworks); u()
// makes small hidden sizes and micro-batches slower, as tensor-core tiles go
// unfilled. Fused attention runs at the architecture's published
// FlashAttention fraction of peak times seq / (seq + half) (causal and full
// attention have their own half-points).
#pragma once

#include <cstdint>

#include "hardware/gpu.h"
#include "perf/params.h"

namespace tessel {

// The dense peak the estimator plans with: the datasheet's, except that
// fp32 on GA10x/Ada parts (sm_86, sm_89) counts one FP32 FMA pipe per SM
// partition: their datasheet figure assumes the second pipe, which is
// shared with INT32 and so unavailable to the address arithmetic of a GEMM
// (NVIDIA Ampere GA102 whitepaper, "2x FP32").
double DensePeakTflops(const GpuSpec& gpu, Precision precision);

// Whether a GEMM (m x k) @ (k x n) of `element_bytes`-byte operands has a
// dimension off the 16-byte grid, which keeps it off the aligned
// tensor-core path (ArchEfficiency::unaligned_gemm). A fractional dimension
// is an average (tokens routed to an expert), not a layout: not judged.
bool GemmOffGrid(double m, double n, double k, double element_bytes);

class ComputeModel {
 public:
  ComputeModel(const GpuSpec& gpu, Precision precision, const PerfParams& params,
               const FrameworkProfile& framework);

  // Seconds for `count` GEMMs of (m x k) @ (k x n), launched as one
  // batched/grouped kernel, in 16 bits when the precision is FP8 (attention,
  // the output layer: Transformer Engine keeps them out of FP8).
  double Gemm(double m, double n, double k, double count = 1) const;
  // The same for a linear layer's GEMM: in FP8 when the precision is FP8
  // and the framework trains linear layers in FP8 (at the architecture's
  // fp8_gemm_ratio of the 16-bit efficiency, against the FP8 peak), else as
  // Gemm. Quantizing its operands is not included (see Fp8Cast).
  double LinearGemm(double m, double n, double k, double count = 1) const;
  // A convolution as an implicit GEMM (m = batch x output pixels, n = output
  // channels, k = input channels x kernel area): as Gemm, except that its
  // dimensions are not judged for alignment (cuDNN and XLA pad channels).
  // In FP32, for a framework whose convolutions are cuDNN's as PyTorch calls
  // them (FrameworkProfile::cudnn_fp32_convs), on an architecture whose
  // CUDA-core convolutions differ from its GEMMs (ArchEfficiency::fp32_conv):
  // at their efficiency and half-point, and a Winograd one (`winograd`,
  // WinogradShape) with fp32_winograd times fewer multiplies.
  double ConvGemm(double m, double n, double k, bool winograd = false) const;
  // Whether cuDNN runs a convolution by Winograd in FP32 (where the
  // architecture's fp32_winograd says it does): 3x3, stride 1, at least 32
  // input channels. DeepBench's V100 results: all 28 such shapes ran
  // WINOGRAD or WINOGRAD_NONFUSED forward; the 4 with 1 to 16 channels
  // ran implicit GEMMs (data/measured/deepbench-v100-fp32-convs.csv).
  static bool WinogradShape(int kernel_h, int kernel_w, int stride, int64_t in_channels) {
    return kernel_h == 3 && kernel_w == 3 && stride == 1 && in_channels >= 32;
  }
  // Whether linear layers run in FP8.
  bool fp8_linear() const { return fp8_linear_; }
  // Seconds to quantize `elements` 16-bit values to FP8 with their amax
  // (read 2 bytes, write 1) in `kernels` launches; 0 unless fp8_linear().
  double Fp8Cast(double elements, double kernels) const;
  // Seconds for fused attention (FlashAttention-style) forward over
  // `batch_heads` heads of s x s scores with head dim d; `causal` halves work.
  // The backward pass takes kFusedAttentionBackwardRatio times as long.
  double FusedAttentionForward(double batch_heads, double seq, double head_dim, bool causal) const;
  static constexpr double kFusedAttentionBackwardRatio = 2.5;  // 5 matmuls vs 2, incl. recompute
  // Seconds for memory-bound kernels moving `bytes` in `kernels` launches.
  double Elementwise(double bytes, double kernels = 1) const;

  // MFU's base: the requested precision's dense peak (FP8's where the
  // linear layers run in FP8).
  double PeakFlops() const { return linear_peak_; }
  double elem_bytes() const { return elem_bytes_; }
  double MemoryBandwidth() const { return mem_bw_; }
  double gemm_efficiency() const { return gemm_eff_; }

 private:
  double U(double x) const { return x / (x + dim_half_); }
  double GemmAt(double m, double n, double k, double count, double peak, double eff, bool layout) const {
    return GemmAt(m, n, k, count, peak, eff, layout, dim_half_, 1.0);
  }
  // `half` for U; the GEMM's multiplies divided by `fewer`.
  double GemmAt(double m, double n, double k, double count, double peak, double eff, bool layout, double half,
                double fewer) const;
  double peak_;        // FLOP/s of 16-bit GEMMs for FP8 runs, else of the precision
  double linear_peak_; // FP8 peak when fp8_linear_, else peak_
  double linear_eff_;
  bool fp8_linear_ = false;
  double gemm_eff_;
  double attn_eff_;    // fraction of peak of the framework's fused attention kernel
  double mem_bw_;      // achieved bytes/s
  double elem_bytes_;
  double unaligned_ = 1.0;  // ArchEfficiency::unaligned_gemm
  double seq_half_ = 48, seq_half_causal_ = 48;  // ArchEfficiency::attention_seq_half*
  double overhead_s_;
  double dim_half_;
  // ConvGemm's efficiency and half-point, and Winograd's saving (FP32 on
  // the CUDA cores: ArchEfficiency::fp32_conv; else the GEMMs', and 1).
  double conv_eff_, conv_half_, winograd_ = 1.0;
  double tile_;  // output tile side of one thread block (PerfParams::gemm_tile)
  int sms_;      // 0: the GPU's SM count is unknown, no wave quantization
};

}  // namespace tessel
