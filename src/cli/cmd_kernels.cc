// `tessel kernels`: measured GPU kernel times against the estimator's kernel
// model, and the architecture figures the measurements determine.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

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

}  // namespace

CommandAction SetupKernels(CLI::App& app, CommandIo io) {
  struct Flags {
    std::string csv, gpu = "h100-sxm";
    ParamsFlag params;
    bool rows = false, json = false;
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
      "--csv DIR/kernels.csv --gpu TYPE.");
  app.add_option("--csv", f->csv, "kernels.csv written by scripts/measure-kernels.py (default: built-in H100 SXM)");
  app.add_option("--gpu", f->gpu, "GPU type the file was measured on (see `tessel gpus`)")->default_str("h100-sxm");
  f->params.Add(app);
  app.add_flag("--rows", f->rows, "Print every row");
  app.add_flag("--json", f->json, "Print JSON");
  return [io, f]() -> int {
    auto params = f->params.Resolve();
    if (!params.ok()) {
      io.err << "error: " << params.status().message() << "\n";
      return 2;
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
