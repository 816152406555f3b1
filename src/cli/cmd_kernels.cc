// `tessel kernels`: measured GPU kernel times against the estimator's kernel
// model, and the architecture figures the measurements determine.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "calib/conv_timings.h"
#include "calib/kernel_timings.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/csv.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"

namespace tessel {

namespace {

std::string Pct(double v) { return FormatDouble(100 * v, 3) + "%"; }

// --fp32-convs: DeepBench's V100 FP32 convolutions against the estimator,
// and the architecture's fp32_conv figures they give.
int Fp32Convs(const CommandIo& io, const PerfParams& params, bool rows, bool json) {
  const GpuSpec& gpu = **FindGpu("v100-32g");
  auto convs = LoadConvCsv(EmbeddedDeepBenchV100ConvsCsv(), "deepbench-v100-fp32-convs.csv");
  if (!convs.ok()) {
    io.err << "error: " << convs.status().message() << "\n";
    return 2;
  }
  const ArchEfficiency& arch = params.ForArch(gpu.arch);
  std::vector<double> now = PredictConvs(*convs, gpu, params, arch);
  std::vector<double> gemm = PredictConvs(*convs, gpu, params, GemmPricedConvs(arch));
  ConvFit fit = FitFp32Convs(*convs, gpu, params);
  struct Line {
    const char* name;
    ConvFitSummary all, winograd;
  };
  Line lines[] = {{"as the GEMMs (fp32_conv 0)", SummarizeConvs(*convs, gemm), SummarizeConvs(*convs, gemm, true)},
                  {"with the figures", SummarizeConvs(*convs, now), SummarizeConvs(*convs, now, true)}};
  if (json) {
    nlohmann::json j;
    j["gpu"] = gpu.name;
    j["fit"] = {{"fp32_conv", fit.fp32_conv}, {"fp32_conv_dim_half", fit.fp32_conv_dim_half},
                {"fp32_winograd", fit.fp32_winograd}};
    j["estimator"] = {{"fp32_conv", arch.fp32_conv}, {"fp32_conv_dim_half", arch.fp32_conv_dim_half},
                      {"fp32_winograd", arch.fp32_winograd}};
    for (const Line& l : lines) {
      auto sum = [](const ConvFitSummary& s) {
        return nlohmann::json{{"rows", s.rows}, {"median_ratio", s.median_ratio},
                              {"median_abs_error", s.median_abs_error}, {"p90_abs_error", s.p90_abs_error}};
      };
      j["summaries"].push_back({{"priced", l.name}, {"all", sum(l.all)}, {"winograd_shapes", sum(l.winograd)}});
    }
    if (rows) {
      for (size_t i = 0; i < convs->size(); ++i)
        j["rows"].push_back({{"id", (*convs)[i].id}, {"measured_s", (*convs)[i].measured_s()},
                             {"predicted_s", now[i]}, {"fwd_algo", (*convs)[i].fwd_algo},
                             {"forward_tflops", (*convs)[i].forward_tflops()}});
    }
    io.out << JsonText(j, 2) << "\n";
    return 0;
  }
  if (rows) {
    TextTable t({"id", "app", "input WxHxC", "N", "K", "RxS/stride", "cuDNN forward", "fwd TFLOP/s", "measured s",
                 "predicted s", "ratio"});
    for (size_t i = 0; i < convs->size(); ++i) {
      const ConvMeasurement& r = (*convs)[i];
      t.AddRow({r.id, r.app, std::to_string(r.w) + "x" + std::to_string(r.h) + "x" + std::to_string(r.c),
                std::to_string(r.n), std::to_string(r.k),
                std::to_string(r.r) + "x" + std::to_string(r.s) + "/" + std::to_string(r.stride_h), r.fwd_algo,
                FormatDouble(r.forward_tflops(), 3), FormatDouble(r.measured_s(), 4), FormatDouble(now[i], 4),
                FormatDouble(r.measured_s() / now[i], 3)});
    }
    io.out << t.Render() << "\n";
  }
  TextTable t({"priced", "rows", "measured/predicted", "median |err|", "p90 |err|", "3x3 s1: rows",
               "measured/predicted", "median |err|"});
  for (const Line& l : lines)
    t.AddRow({l.name, std::to_string(l.all.rows), FormatDouble(l.all.median_ratio, 3), Pct(l.all.median_abs_error),
              Pct(l.all.p90_abs_error), std::to_string(l.winograd.rows), FormatDouble(l.winograd.median_ratio, 3),
              Pct(l.winograd.median_abs_error)});
  io.out << "DeepBench's FP32 convolutions on a V100 (" << convs->size()
         << " rows, deepbench-v100-fp32-convs.csv; forward + both gradients) against the estimator:\n"
         << t.Render() << "\n";
  TextTable a({"figure", "fit to the file", "estimator (" + arch.arch + ")"});
  a.AddRow({"fp32_conv (implicit GEMM, of the FP32 peak)", FormatDouble(fit.fp32_conv, 3),
            FormatDouble(arch.fp32_conv, 3)});
  a.AddRow({"fp32_conv_dim_half", FormatDouble(fit.fp32_conv_dim_half, 3), FormatDouble(arch.fp32_conv_dim_half, 3)});
  a.AddRow({"fp32_winograd (3x3 stride 1)", FormatDouble(fit.fp32_winograd, 3), FormatDouble(arch.fp32_winograd, 3)});
  io.out << "The least-squares fit (log time) on its grid, beside the values params.cc holds:\n" << a.Render();
  return 0;
}

}  // namespace

CommandAction SetupKernels(CLI::App& app, CommandIo io) {
  struct Flags {
    std::string csv, gpu = "h100-sxm";
    ParamsFlag params;
    bool rows = false, json = false, fp32_convs = false;
  };
  auto f = std::make_shared<Flags>();
  app.footer(
      "Compare kernel times measured on a GPU with the estimator's kernel model: GEMMs (by\n"
      "precision; unaligned = a dimension off the 16-byte grid; small = a dimension under\n"
      "1024), batched GEMMs, fused attention (FlashAttention-2 = SDPA's flash backend,\n"
      "cuDNN = the best fused kernel) and elementwise kernels. Ratio = measured / predicted;\n"
      "GEMMs are predicted at the architecture's in-step efficiency, so an isolated call\n"
      "runs faster by a constant factor, and the shape columns divide it out.\n"
      "Also prints what the file says about the architecture: bandwidth fraction, unaligned\n"
      "GEMM ratio, attention asymptotes and half-points (the values params.cc holds).\n"
      "Default input: the built-in data/measured/h100-kernels.csv (one H100 SXM, PyTorch\n"
      "2.11); measure another GPU with scripts/measure-kernels.py --out DIR and pass\n"
      "--csv DIR/kernels.csv --gpu TYPE.\n"
      "--fp32-convs: DeepBench's published V100 FP32 convolution timings (built-in\n"
      "data/measured/deepbench-v100-fp32-convs.csv, cuDNN 7.6) against the estimator's\n"
      "convolutions, and the Volta fp32_conv figures they fit (Winograd for 3x3 stride 1).");
  app.add_option("--csv", f->csv, "kernels.csv written by scripts/measure-kernels.py (default: built-in H100 SXM)");
  app.add_option("--gpu", f->gpu, "GPU type the file was measured on (see `tessel gpus`)")->default_str("h100-sxm");
  f->params.Add(app);
  app.add_flag("--rows", f->rows, "Print every row");
  app.add_flag("--json", f->json, "Print JSON");
  app.add_flag("--fp32-convs", f->fp32_convs,
               "Compare DeepBench's V100 FP32 convolutions instead (built in; --csv and --gpu do not apply)");
  return [io, f]() -> int {
    auto params = f->params.Resolve();
    if (!params.ok()) {
      io.err << "error: " << params.status().message() << "\n";
      return 2;
    }
    if (f->fp32_convs) {
      if (!f->csv.empty()) {
        io.err << "error: --fp32-convs compares the built-in DeepBench file; leave out --csv\n";
        return 2;
      }
      return Fp32Convs(io, **params, f->rows, f->json);
    }
    auto gpu = FindGpu(f->gpu);
    if (!gpu.ok()) {
      io.err << "error: --gpu: " << gpu.status().message() << "\n";
      return 2;
    }
    std::string text(EmbeddedH100KernelsCsv()), file = "h100-kernels.csv";
    if (!f->csv.empty()) {
      auto t = ReadTextFile(f->csv);
      if (!t.ok()) {
        io.err << "error: --csv: " << t.status().message() << "\n";
        return 2;
      }
      text = *t;
      file = f->csv;
    }
    auto rows = LoadKernelCsv(text, file);
    if (!rows.ok()) {
      io.err << "error: " << rows.status().message() << "\n";
      return 2;
    }
    auto cmp = CompareKernels(*rows, **gpu, **params);
    auto groups = SummarizeKernels(cmp);
    KernelFit fit = FitKernels(*rows, **gpu);
    const ArchEfficiency& arch = (*params)->ForArch((*gpu)->arch);
    if (f->json) {
      nlohmann::json j;
      j["gpu"] = (*gpu)->name;
      j["groups"] = nlohmann::json::array();
      for (const auto& g : groups)
        j["groups"].push_back({{"group", g.group}, {"rows", g.rows}, {"median_ratio", g.median_ratio},
                               {"median_abs_error", g.median_abs_error}, {"p90_abs_error", g.p90_abs_error},
                               {"median_shape_error", g.median_shape_error},
                               {"p90_shape_error", g.p90_shape_error}});
      j["fit"] = {{"memory", fit.memory}, {"unaligned_gemm", fit.unaligned_gemm},
                  {"attention_fa2", fit.attention_fa2}, {"attention_best", fit.attention_best},
                  {"attention_seq_half", fit.seq_half}, {"attention_seq_half_causal", fit.seq_half_causal},
                  {"gemm_large_best", fit.gemm_large_best}, {"gemm_large_median", fit.gemm_large_median}};
      if (f->rows) {
        j["rows"] = nlohmann::json::array();
        for (const auto& c : cmp)
          j["rows"].push_back({{"id", c.row->id}, {"group", c.group}, {"measured_s", c.row->seconds},
                               {"predicted_s", c.predicted_s}});
      }
      io.out << JsonText(j, 2) << "\n";
      return 0;
    }
    if (f->rows) {
      TextTable t({"id", "kernel", "dtype", "pass", "shape", "group", "measured s", "predicted s", "ratio"});
      for (const auto& c : cmp) {
        const auto& r = *c.row;
        std::string shape = r.kernel == "attention"
                                ? "b" + FormatDouble(r.batch) + " h" + FormatDouble(r.heads) + " s" +
                                      FormatDouble(r.seq) + " d" + FormatDouble(r.head_dim) + " " + r.backend
                                : r.kernel == "elementwise" ? FormatDouble(r.bytes) + " B"
                                                            : FormatDouble(r.m) + "x" + FormatDouble(r.n) + "x" +
                                                                  FormatDouble(r.k);
        t.AddRow({r.id, r.kernel, r.dtype, r.pass, shape, c.group.empty() ? "(not modelled)" : c.group,
                  FormatDouble(r.seconds, 4), c.group.empty() ? "-" : FormatDouble(c.predicted_s, 4),
                  c.group.empty() ? "-" : FormatDouble(r.seconds / c.predicted_s, 3)});
      }
      io.out << t.Render() << "\n";
    }
    TextTable t({"group", "rows", "measured/predicted", "median |err|", "p90 |err|", "shape median", "shape p90"});
    for (const auto& g : groups)
      t.AddRow({g.group, std::to_string(g.rows), FormatDouble(g.median_ratio, 3), Pct(g.median_abs_error),
                Pct(g.p90_abs_error), Pct(g.median_shape_error), Pct(g.p90_shape_error)});
    io.out << "Kernels measured on " << (*gpu)->name << " (" << rows->size() << " rows, " << file
           << ") against the estimator (err = measured/predicted - 1; shape = after dividing by the "
              "group's median ratio):\n"
           << t.Render() << "\n";
    TextTable a({"figure", "measured", "estimator (" + arch.arch + ")"});
    auto add = [&](const char* name, double measured, double used) {
      a.AddRow({name, measured > 0 ? FormatDouble(measured, 3) : "-", FormatDouble(used, 3)});
    };
    add("memory bandwidth fraction", fit.memory, arch.memory);
    add("unaligned GEMM / aligned", fit.unaligned_gemm, arch.unaligned_gemm);
    add("FlashAttention-2 fwd+bwd asymptote", fit.attention_fa2, arch.attention_fa2);
    add("best fused attention asymptote", fit.attention_best, arch.attention_best);
    add("attention half-point, full (tokens)", fit.seq_half, arch.attention_seq_half);
    add("attention half-point, causal (tokens)", fit.seq_half_causal, arch.attention_seq_half_causal);
    add("large bf16 GEMM, best (isolated)", fit.gemm_large_best, arch.gemm_ceiling);
    add("large bf16 GEMM, median (isolated)", fit.gemm_large_median, arch.gemm);
    io.out << "What the measurements say about the architecture (estimator column: its value; the last "
              "two rows\ncompare with the GEMM ceiling and the fitted in-step efficiency):\n"
           << a.Render();
    return 0;
  };
}

}  // namespace tessel
