// Published FP32 convolution timings (DeepBench's V100 training results,
// the committed data/measured/deepbench-v100-fp32-convs.csv) against the
// estimator's convolution model (ComputeModel::ConvGemm), and the figures
// of ArchEfficiency's fp32_conv fields they determine.
//
// A measured convolution is forward, data gradient (absent for a network's
// input layer) and filter gradient; the estimator prices each as one
// implicit GEMM of the forward's shape (m = N x P x Q output pixels,
// n = K filters, k = C x R x S), 3x3 stride-1 ones with Winograd's saving.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/gpu.h"
#include "perf/params.h"

namespace tessel {

struct ConvMeasurement {
  std::string id;        // "deepbench-v100-fp32-convs.csv:12"
  std::string app;       // DeepBench's application column (Vision, Resnet, ...)
  std::string fwd_algo;  // the cuDNN forward algorithm DeepBench reports
  int w = 0, h = 0, c = 0, n = 0, k = 0, s = 0, r = 0;  // input W x H x C, batch N, K filters of R x S
  int stride_w = 1, stride_h = 1, p = 0, q = 0;         // output P x Q
  double fwd_s = 0, bwd_data_s = 0, bwd_filter_s = 0;   // bwd_data_s 0: not measured (input layer)
  double measured_s() const { return fwd_s + bwd_data_s + bwd_filter_s; }
  bool winograd_shape() const;  // ComputeModel::WinogradShape
  // The forward pass's direct-convolution work (2 N P Q K C R S) per second,
  // in TFLOP/s: what DeepBench's "FWD TERAFLOPS" column gives.
  double forward_tflops() const;
};

// Reads the CSV; `file` names it in ids and errors ("<file>:<line>: <column>: expected ...").
Result<std::vector<ConvMeasurement>> LoadConvCsv(std::string_view text, const std::string& file);

// The built-in data/measured/deepbench-v100-fp32-convs.csv.
std::string_view EmbeddedDeepBenchV100ConvsCsv();

// `arch` without its FP32 convolution figures: convolutions priced as its GEMMs.
ArchEfficiency GemmPricedConvs(ArchEfficiency arch);

// Each row's training time as the estimator prices it on `gpu` in FP32
// with `arch`'s convolution figures (a vendor library: kernel efficiency 1).
std::vector<double> PredictConvs(const std::vector<ConvMeasurement>& rows, const GpuSpec& gpu,
                                 const PerfParams& params, const ArchEfficiency& arch);

struct ConvFitSummary {
  int rows = 0;
  double median_ratio = 0;      // measured / predicted
  double median_abs_error = 0;  // |predicted / measured - 1|
  double p90_abs_error = 0;
};
ConvFitSummary SummarizeConvs(const std::vector<ConvMeasurement>& rows, const std::vector<double>& predicted,
                              bool winograd_shapes_only = false);

// The fp32_conv, fp32_conv_dim_half and fp32_winograd (on a grid: 0.40 to
// 1.00 by 0.02; 4 to 64; 1 to 4) that minimise the squared log error of the
// rows' predicted times: what params.cc holds for the architecture.
struct ConvFit {
  double fp32_conv = 0, fp32_conv_dim_half = 0, fp32_winograd = 1;
};
ConvFit FitFp32Convs(const std::vector<ConvMeasurement>& rows, const GpuSpec& gpu, const PerfParams& params);

}  // namespace tessel
