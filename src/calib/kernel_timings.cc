#include "calib/kernel_timings.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "core/csv.h"
#include "core/stats.h"
#include "core/strings.h"
#include "perf/compute.h"

namespace tessel {

namespace {

constexpr const char* kRequired[] = {"kernel", "dtype", "m", "n", "k", "batch", "heads", "seq", "head_dim",
                                     "causal", "pass", "bytes", "flops", "seconds", "note"};

// Streaming elementwise kernels (copy, add, GeLU) of at least this many
// bytes run past the L2 cache: the ones that tell the memory bandwidth.
constexpr double kPastL2Bytes = 64.0 * (1 << 20);
bool Streaming(const KernelMeasurement& r) { return r.pass == "copy" || r.pass == "add" || r.pass == "gelu"; }

// The attention backend from the note ("sdpa flash iters=12").
std::string Backend(const std::string& note) {
  auto words = Split(note, ' ');
  return words.size() >= 2 && words[0] == "sdpa" ? words[1] : std::string();
}

}  // namespace

Result<std::vector<KernelMeasurement>> LoadKernelCsv(std::string_view text, const std::string& file) {
  auto table = CsvTable::Parse(text, file);
  if (!table.ok()) return table.status();
  const CsvTable& t = *table;
  for (const char* col : kRequired)
    if (!t.HasColumn(col))
      return InvalidArgument(file + ": missing column '" + col + "' (expected the header scripts/measure-kernels.py writes)");
  const std::string name = std::filesystem::path(file).filename().string();
  std::vector<KernelMeasurement> out;
  for (const CsvRow& row : t.rows()) {
    KernelMeasurement r;
    r.kernel = t.Get(row, "kernel");
    r.dtype = t.Get(row, "dtype");
    r.pass = t.Get(row, "pass");
    r.note = t.Get(row, "note");
    r.backend = Backend(r.note);
    std::string line = t.Where(row, "kernel").substr(file.size() + 1);  // "<line>: kernel"
    r.id = name + ":" + line.substr(0, line.find(':'));
    auto num = [&](const char* col, double* v) -> Status {
      auto x = t.GetOptionalDouble(row, col);
      if (!x.ok()) return x.status();
      *v = x->value_or(0);
      if (!std::isfinite(*v) || *v < 0) return InvalidArgument(t.Where(row, col) + ": expected a number >= 0");
      return Status::Ok();
    };
    for (auto [col, v] : {std::pair{"m", &r.m}, {"n", &r.n}, {"k", &r.k}, {"batch", &r.batch}, {"heads", &r.heads},
                          {"seq", &r.seq}, {"head_dim", &r.head_dim}, {"bytes", &r.bytes}, {"flops", &r.flops},
                          {"seconds", &r.seconds}})
      TESSEL_RETURN_IF_ERROR(num(col, v));
    std::string causal = t.Get(row, "causal");
    if (causal != "" && causal != "0" && causal != "1")
      return InvalidArgument(t.Where(row, "causal") + ": expected 0, 1 or empty, got '" + causal + "'");
    r.causal = causal == "1";
    if (!(r.seconds > 0)) return InvalidArgument(t.Where(row, "seconds") + ": expected a time > 0");
    if (r.kernel != "gemm" && r.kernel != "bmm" && r.kernel != "attention" && r.kernel != "elementwise")
      return InvalidArgument(t.Where(row, "kernel") + ": expected gemm, bmm, attention or elementwise, got '" +
                             r.kernel + "'");
    if (r.kernel != "elementwise" && !ParsePrecision(r.dtype).ok())
      return InvalidArgument(t.Where(row, "dtype") + ": expected fp32, tf32, fp16, bf16 or fp8, got '" + r.dtype + "'");
    if ((r.kernel == "gemm" || r.kernel == "bmm") && !(r.m > 0 && r.n > 0 && r.k > 0))
      return InvalidArgument(t.Where(row, "m") + ": a GEMM needs m, n and k > 0");
    if (r.kernel == "attention" && !(r.batch > 0 && r.heads > 0 && r.seq > 0 && r.head_dim > 0))
      return InvalidArgument(t.Where(row, "seq") + ": attention needs batch, heads, seq and head_dim > 0");
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<KernelComparison> CompareKernels(const std::vector<KernelMeasurement>& rows, const GpuSpec& gpu,
                                             const PerfParams& params) {
  // Vendor-library kernels: the megatron profile (kernel efficiency 1,
  // native kernels), its attention kernel chosen per row.
  FrameworkProfile fw = params.frameworks.front();
  fw.kernel_efficiency = 1.0;
  fw.native_kernels = true;
  fw.fp8 = true;
  // The timings are loops of eager PyTorch calls: a kernel shorter than
  // its launch waits for the host (the pytorch profile's launch cost).
  auto eager = params.FindFramework("pytorch");
  const double host_s = (eager.ok() ? *eager : &fw)->launch_us * 1e-6;
  std::vector<KernelComparison> out;
  for (const KernelMeasurement& r : rows) {
    KernelComparison c;
    c.row = &r;
    if (r.kernel == "gemm" || r.kernel == "bmm") {
      Precision p = *ParsePrecision(r.dtype);
      ComputeModel cm(gpu, p, params, fw);
      bool aligned = !GemmOffGrid(r.m, r.n, r.k, ActivationBytes(p));
      double count = r.kernel == "bmm" ? std::max(1.0, r.batch) : 1.0;
      c.predicted_s = p == Precision::kFp8 ? cm.LinearGemm(r.m, r.n, r.k) : cm.Gemm(r.m, r.n, r.k, count);
      std::string size = std::min({r.m, r.n, r.k}) >= 1024 ? "" : " small";
      c.group = r.kernel + " " + r.dtype + (aligned ? size : " unaligned");
    } else if (r.kernel == "attention") {
      if (r.backend == "flash" || r.backend == "cudnn") {
        FrameworkProfile a = fw;
        a.attention = r.backend == "flash" ? AttentionKernel::kFlash2 : AttentionKernel::kBest;
        ComputeModel cm(gpu, *ParsePrecision(r.dtype), params, a);
        double fwd = cm.FusedAttentionForward(r.batch * r.heads, r.seq, r.head_dim, r.causal);
        c.predicted_s = r.pass == "fwd_bwd" ? fwd * (1 + ComputeModel::kFusedAttentionBackwardRatio) : fwd;
        c.group = std::string("attention ") + (r.backend == "flash" ? "fa2" : "cudnn") + " " + r.pass +
                  (r.causal ? " causal" : "");
      }
    } else if (r.kernel == "elementwise") {
      ComputeModel cm(gpu, Precision::kBf16, params, fw);
      c.predicted_s = cm.Elementwise(r.bytes, 1);
      c.group = std::string("elementwise ") + (Streaming(r) ? "copy/add/gelu" : r.pass) +
                (r.bytes >= kPastL2Bytes ? "" : " small");
    }
    c.predicted_s = std::max(c.predicted_s, c.group.empty() ? 0.0 : host_s);
    out.push_back(c);
  }
  return out;
}

std::vector<KernelGroupSummary> SummarizeKernels(const std::vector<KernelComparison>& cmp) {
  std::map<std::string, std::vector<double>> ratios;
  std::vector<std::string> order;
  for (const auto& c : cmp) {
    if (c.group.empty() || !(c.predicted_s > 0)) continue;
    if (!ratios.count(c.group)) order.push_back(c.group);
    ratios[c.group].push_back(c.row->seconds / c.predicted_s);
  }
  std::vector<KernelGroupSummary> out;
  for (const auto& g : order) {
    const auto& r = ratios[g];
    KernelGroupSummary s;
    s.group = g;
    s.rows = static_cast<int>(r.size());
    s.median_ratio = Median(r);
    std::vector<double> abs, shape;
    for (double x : r) {
      abs.push_back(std::abs(x - 1));
      shape.push_back(std::abs(x / s.median_ratio - 1));
    }
    s.median_abs_error = Median(abs);
    s.p90_abs_error = Quantile(abs, 0.9);
    s.median_shape_error = Median(shape);
    s.p90_shape_error = Quantile(shape, 0.9);
    out.push_back(s);
  }
  return out;
}

namespace {

// Least squares of 1/y on 1/s: 1/y = (1 + half/s) / top.
void FitSaturating(const std::vector<std::pair<double, double>>& pts, double* top, double* half) {
  *top = *half = 0;
  if (pts.size() < 2) return;
  double n = static_cast<double>(pts.size()), mx = 0, my = 0;
  for (auto [s, y] : pts) mx += 1 / s, my += 1 / y;
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0;
  for (auto [s, y] : pts) sxy += (1 / s - mx) * (1 / y - my), sxx += (1 / s - mx) * (1 / s - mx);
  if (!(sxx > 0)) return;
  double b = sxy / sxx, a = my - b * mx;
  if (!(a > 0)) return;
  *top = 1 / a;
  *half = b / a;
}

}  // namespace

KernelFit FitKernels(const std::vector<KernelMeasurement>& rows, const GpuSpec& gpu) {
  KernelFit f;
  const double bw = gpu.memory_bw_gbs * 1e9;
  std::vector<double> mem;
  for (const auto& r : rows)
    if (r.kernel == "elementwise" && Streaming(r) && r.bytes >= kPastL2Bytes)
      mem.push_back(r.bytes / r.seconds / bw);
  f.memory = Median(mem);

  // Unaligned vocabularies against their aligned neighbours.
  std::map<std::string, double> vocab_tflops;  // "v=50257 h=768 fwd" -> TFLOP/s
  for (const auto& r : rows)
    if (r.kernel == "gemm" && StartsWith(r.note, "vocab "))
      vocab_tflops[r.note.substr(0, r.note.find(" iters")) + " " + r.pass] = r.flops / r.seconds;
  std::vector<double> unaligned;
  for (const auto& [key, tf] : vocab_tflops) {
    for (auto [odd, even] : {std::pair{"v=50257", "v=50304"}, {"v=32001", "v=32000"}}) {
      if (key.find(odd) == std::string::npos) continue;
      std::string other = key;
      other.replace(other.find(odd), std::string(odd).size(), even);
      if (auto it = vocab_tflops.find(other); it != vocab_tflops.end()) unaligned.push_back(tf / it->second);
    }
  }
  f.unaligned_gemm = Median(unaligned);

  const double peak = DensePeakTflops(gpu, Precision::kBf16) * 1e12;
  double halves[2][2] = {{0, 0}, {0, 0}};  // [kernel][causal]
  for (int kernel = 0; kernel < 2; ++kernel) {
    double tops[2] = {0, 0};
    for (int causal = 0; causal < 2; ++causal) {
      std::vector<std::pair<double, double>> pts;
      for (const auto& r : rows)
        if (r.kernel == "attention" && r.pass == "fwd_bwd" && r.head_dim == 128 && r.causal == (causal == 1) &&
            r.backend == (kernel == 0 ? "flash" : "cudnn"))
          pts.push_back({r.seq, r.flops / r.seconds / peak});
      FitSaturating(pts, &tops[causal], &halves[kernel][causal]);
    }
    (kernel == 0 ? f.attention_fa2 : f.attention_best) = (tops[0] + tops[1]) / 2;
  }
  if (halves[0][0] > 0 && halves[1][0] > 0) f.seq_half = std::sqrt(halves[0][0] * halves[1][0]);
  if (halves[0][1] > 0 && halves[1][1] > 0) f.seq_half_causal = std::sqrt(halves[0][1] * halves[1][1]);

  std::vector<double> large;
  for (const auto& r : rows)
    if (r.kernel == "gemm" && r.dtype == "bf16" && std::min({r.m, r.n, r.k}) >= 4096 &&
        !GemmOffGrid(r.m, r.n, r.k, 2))
      large.push_back(r.flops / r.seconds / peak);
  f.gemm_large_median = Median(large);
  f.gemm_large_best = large.empty() ? 0 : *std::max_element(large.begin(), large.end());
  return f;
}

}  // namespace tessel
