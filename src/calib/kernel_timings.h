// Kernel timings measured on one GPU (scripts/measure-kernels.py; the
// committed data/measured/h100-kernels.csv) against the estimator's kernel
// model (perf/compute.h), and the architecture figures they determine.
//
// Each measured kernel is predicted with the ComputeModel of the GPU: GEMMs
// and batched GEMMs through Gemm (in the row's precision; FP8 through
// LinearGemm), fused attention through FusedAttentionForward (forward, or
// forward + backward at kFusedAttentionBackwardRatio), elementwise kernels
// through Elementwise over the bytes they move; none faster than the eager
// profile's launch cost (the rows are loops of eager calls). GEMM predictions use the
// architecture's fitted in-step efficiency, so an isolated cuBLAS call runs
// faster than predicted by a constant factor: the report gives each group's
// median ratio and the spread around it (what the shape model gets wrong).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/gpu.h"
#include "perf/params.h"

namespace tessel {

struct KernelMeasurement {
  std::string id;        // "h100-kernels.csv:12"
  std::string kernel;    // gemm, bmm, attention, elementwise
  std::string dtype;     // bf16, fp16, tf32, fp32, fp8
  std::string pass;      // fwd, dgrad, wgrad, scores, context, fwd_bwd, copy, add, ...
  std::string backend;   // attention: flash, efficient, cudnn, default
  std::string note;
  double m = 0, n = 0, k = 0, batch = 0, heads = 0, seq = 0, head_dim = 0;
  bool causal = false;
  double bytes = 0, flops = 0, seconds = 0;
};

// Reads the CSV that scripts/measure-kernels.py writes (kernels.csv); `file`
// names it in ids and errors ("<file>:<line>: <column>: expected ...").
Result<std::vector<KernelMeasurement>> LoadKernelCsv(std::string_view text, const std::string& file);

// One measurement, predicted.
struct KernelComparison {
  const KernelMeasurement* row = nullptr;
  std::string group;      // e.g. "gemm bf16 aligned", "attention fa2 causal"; "" = not modelled
  double predicted_s = 0;
};

// Predicts every row with the estimator's kernel model for `gpu`.
std::vector<KernelComparison> CompareKernels(const std::vector<KernelMeasurement>& rows, const GpuSpec& gpu,
                                             const PerfParams& params);

struct KernelGroupSummary {
  std::string group;
  int rows = 0;
  double median_ratio = 0;       // measured / predicted
  double median_abs_error = 0;   // |measured / predicted - 1|
  double p90_abs_error = 0;
  // After dividing by the group's median ratio: the shape error alone.
  double median_shape_error = 0;
  double p90_shape_error = 0;
};
std::vector<KernelGroupSummary> SummarizeKernels(const std::vector<KernelComparison>& cmp);

// What the measurements say about the architecture (the values
// ArchEfficiency carries for it); 0 where the file has no such rows.
struct KernelFit {
  // Median achieved fraction of the datasheet bandwidth of copy, add and
  // GeLU over at least 64 MiB (past the L2 cache).
  double memory = 0;
  // Median ratio of an unaligned output-layer GEMM's throughput to the
  // aligned one beside it (vocabulary 50257 vs 50304, 32001 vs 32000).
  double unaligned_gemm = 0;
  // Fused attention forward + backward at head dim 128, fitted as
  // TFLOP/s = peak * asymptote * s / (s + half) (least squares on 1/TFLOP/s
  // against 1/s): FlashAttention-2 (SDPA's flash backend) and the best
  // fused kernel (cuDNN, what Transformer Engine calls); the half-points
  // are the geometric mean of the two kernels'.
  double attention_fa2 = 0, attention_best = 0;
  double seq_half = 0, seq_half_causal = 0;
  // The best large bf16 GEMM (all dimensions >= 4096, aligned), fraction of
  // dense peak: an isolated cuBLAS call.
  double gemm_large_best = 0, gemm_large_median = 0;
};
KernelFit FitKernels(const std::vector<KernelMeasurement>& rows, const GpuSpec& gpu);

// data/measured/h100-kernels.csv, embedded at build time.
std::string_view EmbeddedH100KernelsCsv();

}  // namespace tessel
