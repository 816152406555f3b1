#include "calib/conv_timings.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/csv.h"
#include "core/stats.h"
#include "perf/compute.h"

namespace tessel {

namespace {

constexpr const char* kInts[] = {"W", "H", "C", "N", "K", "S", "R", "stride_w", "stride_h", "P", "Q"};

}  // namespace

bool ConvMeasurement::winograd_shape() const {
  return stride_w == stride_h && ComputeModel::WinogradShape(r, s, stride_h, c);
}

Result<std::vector<ConvMeasurement>> LoadConvCsv(std::string_view text, const std::string& file) {
  auto table = CsvTable::Parse(text, file);
  if (!table.ok()) return table.status();
  const CsvTable& t = *table;
  for (const char* col : kInts)
    if (!t.HasColumn(col)) return InvalidArgument(file + ": missing column '" + col + "'");
  for (const char* col : {"fwd_ms", "bwd_data_ms", "bwd_filter_ms"})
    if (!t.HasColumn(col)) return InvalidArgument(file + ": missing column '" + col + "'");
  const std::string name = std::filesystem::path(file).filename().string();
  std::vector<ConvMeasurement> out;
  for (const CsvRow& row : t.rows()) {
    ConvMeasurement m;
    m.app = t.HasColumn("app") ? t.Get(row, "app") : "";
    m.fwd_algo = t.HasColumn("fwd_algo") ? t.Get(row, "fwd_algo") : "";
    std::string line = t.Where(row, "W").substr(file.size() + 1);  // "<line>: W"
    m.id = name + ":" + line.substr(0, line.find(':'));
    int* ints[] = {&m.w, &m.h, &m.c, &m.n, &m.k, &m.s, &m.r, &m.stride_w, &m.stride_h, &m.p, &m.q};
    for (size_t i = 0; i < std::size(kInts); ++i) {
      auto v = t.GetDouble(row, kInts[i]);
      if (!v.ok()) return v.status();
      if (!(*v >= 1 && *v <= 1e7 && *v == std::floor(*v)))
        return InvalidArgument(t.Where(row, kInts[i]) + ": expected a whole number >= 1");
      *ints[i] = static_cast<int>(*v);
    }
    auto ms = [&](const char* col, bool required, double* s) -> Status {
      auto v = t.GetOptionalDouble(row, col);
      if (!v.ok()) return v.status();
      if (!v->has_value()) {
        if (required) return InvalidArgument(t.Where(row, col) + ": expected a time in milliseconds > 0");
        return Status::Ok();
      }
      if (!(**v > 0) || !std::isfinite(**v))
        return InvalidArgument(t.Where(row, col) + ": expected a time in milliseconds > 0 (or empty: not measured)");
      *s = **v * 1e-3;
      return Status::Ok();
    };
    TESSEL_RETURN_IF_ERROR(ms("fwd_ms", true, &m.fwd_s));
    TESSEL_RETURN_IF_ERROR(ms("bwd_data_ms", false, &m.bwd_data_s));
    TESSEL_RETURN_IF_ERROR(ms("bwd_filter_ms", true, &m.bwd_filter_s));
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

// `params` with `arch` as the figures of `gpu`'s architecture.
PerfParams WithArch(const PerfParams& params, const GpuSpec& gpu, const ArchEfficiency& arch) {
  PerfParams p = params;
  if (ArchEfficiency* a = p.MutableArch(gpu.arch); a != nullptr) {
    *a = arch;
  } else {
    p.fallback = arch;
  }
  return p;
}

// PredictConvs with the architecture's figures already in `params`.
std::vector<double> Predict(const std::vector<ConvMeasurement>& rows, const GpuSpec& gpu, const PerfParams& params) {
  // cuDNN called directly: kernel efficiency 1.
  FrameworkProfile fw = params.frameworks.front();
  fw.kernel_efficiency = 1.0;
  fw.native_kernels = true;
  fw.cudnn_fp32_convs = true;
  ComputeModel cm(gpu, Precision::kFp32, params, fw);
  std::vector<double> out;
  out.reserve(rows.size());
  for (const ConvMeasurement& r : rows) {
    double m = static_cast<double>(r.n) * r.p * r.q, n = r.k, k = static_cast<double>(r.c) * r.r * r.s;
    double g = cm.ConvGemm(m, n, k, r.winograd_shape());
    out.push_back(g * (r.bwd_data_s > 0 ? 3 : 2));
  }
  return out;
}

}  // namespace

double ConvMeasurement::forward_tflops() const {
  return 2.0 * n * p * q * static_cast<double>(k) * c * r * s / fwd_s / 1e12;
}

ArchEfficiency GemmPricedConvs(ArchEfficiency arch) {
  arch.fp32_conv = 0;
  arch.fp32_conv_dim_half = 0;
  arch.fp32_winograd = 1;
  return arch;
}

std::vector<double> PredictConvs(const std::vector<ConvMeasurement>& rows, const GpuSpec& gpu,
                                 const PerfParams& params, const ArchEfficiency& arch) {
  return Predict(rows, gpu, WithArch(params, gpu, arch));
}

ConvFitSummary SummarizeConvs(const std::vector<ConvMeasurement>& rows, const std::vector<double>& predicted,
                              bool winograd_shapes_only) {
  std::vector<double> ratio, err;
  for (size_t i = 0; i < rows.size() && i < predicted.size(); ++i) {
    if (winograd_shapes_only && !rows[i].winograd_shape()) continue;
    ratio.push_back(rows[i].measured_s() / predicted[i]);
    err.push_back(std::abs(predicted[i] / rows[i].measured_s() - 1));
  }
  ConvFitSummary s;
  s.rows = static_cast<int>(ratio.size());
  if (ratio.empty()) return s;
  s.median_ratio = Quantile(ratio, 0.5);
  s.median_abs_error = Quantile(err, 0.5);
  s.p90_abs_error = Quantile(err, 0.9);
  return s;
}

ConvFit FitFp32Convs(const std::vector<ConvMeasurement>& rows, const GpuSpec& gpu, const PerfParams& params) {
  // One copy of the parameters, its architecture entry set for each candidate.
  PerfParams p = WithArch(params, gpu, params.ForArch(gpu.arch));
  ArchEfficiency& arch = p.MutableArch(gpu.arch) != nullptr ? *p.MutableArch(gpu.arch) : p.fallback;
  ConvFit best;
  double best_cost = INFINITY;
  for (int e = 20; e <= 50; ++e) {
    for (double half : {4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0}) {
      for (double wino : {1.0, 1.5, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0}) {
        arch.fp32_conv = e / 50.0;
        arch.fp32_conv_dim_half = half;
        arch.fp32_winograd = wino;
        std::vector<double> pred = Predict(rows, gpu, p);
        double cost = 0;
        for (size_t i = 0; i < rows.size(); ++i) cost += std::pow(std::log(pred[i] / rows[i].measured_s()), 2);
        if (cost < best_cost) {
          best_cost = cost;
          best = {arch.fp32_conv, half, wino};
        }
      }
    }
  }
  return best;
}

}  // namespace tessel
