#include "calib/kernel_timings.h"

#include <gtest/gtest.h>

#include <map>

#include "core/strings.h"

namespace tessel {
namespace {

const GpuSpec& H100() { return **FindGpu("h100-sxm"); }

const std::vector<KernelMeasurement>& Rows() {
  static const auto rows = LoadKernelCsv(EmbeddedH100KernelsCsv(), "data/measured/h100-kernels.csv");
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return *rows;
}

std::map<std::string, KernelGroupSummary> Groups(const PerfParams& params) {
  static std::vector<KernelComparison> cmp;
  cmp = CompareKernels(Rows(), H100(), params);
  std::map<std::string, KernelGroupSummary> out;
  for (const auto& g : SummarizeKernels(cmp)) out[g.group] = g;
  return out;
}

const char* kHeader = "kernel,dtype,m,n,k,batch,heads,seq,head_dim,causal,pass,bytes,flops,seconds,tflops,gbs,note\n";

TEST(KernelTimings, LoadsTheMeasuredH100Sweep) {
  ASSERT_EQ(Rows().size(), 748u);
  int gemm = 0, attention = 0, elementwise = 0;
  for (const auto& r : Rows()) {
    gemm += r.kernel == "gemm";
    attention += r.kernel == "attention";
    elementwise += r.kernel == "elementwise";
    EXPECT_GT(r.seconds, 0) << r.id;
  }
  EXPECT_EQ(gemm, 492);
  EXPECT_EQ(attention, 192);
  EXPECT_EQ(elementwise, 48);
  EXPECT_EQ(Rows().front().id, "h100-kernels.csv:2");
}

TEST(KernelTimings, BadInputNamesFileLineAndColumn) {
  auto missing = LoadKernelCsv("kernel,dtype\ngemm,bf16\n", "k.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("k.csv: missing column 'm'"), std::string::npos);

  // One bad row each, and what its error must name (every one: k.csv:2).
  const std::pair<const char*, const char*> cases[] = {
      {"gemm,bf16,8,8,x,1,,,,,fwd,1,1,1e-5,1,1,", "k"},
      {"gemm,bf16,8,8,8,1,,,,,fwd,1,1,0,1,1,", "seconds"},
      {"conv,bf16,8,8,8,1,,,,,fwd,1,1,1e-5,1,1,", "expected gemm, bmm, attention or elementwise"},
      {"gemm,int4,8,8,8,1,,,,,fwd,1,1,1e-5,1,1,", "dtype"},
      {"attention,bf16,,,,1,8,512,64,yes,fwd,1,1,1e-5,1,1,", "causal"},
  };
  for (const auto& [row, named] : cases) {
    auto r = LoadKernelCsv(std::string(kHeader) + row + "\n", "k.csv");
    ASSERT_FALSE(r.ok()) << row;
    EXPECT_NE(r.status().message().find("k.csv:2"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(named), std::string::npos) << r.status().message();
  }
}

// The Hopper figures params.cc holds are what the measured sweep says.
TEST(KernelTimings, HopperFiguresAreTheMeasuredOnes) {
  KernelFit fit = FitKernels(Rows(), H100());
  const ArchEfficiency& h = DefaultPerfParams().ForArch("hopper");
  EXPECT_NEAR(h.memory, fit.memory, 0.01);
  EXPECT_NEAR(h.unaligned_gemm, fit.unaligned_gemm, 0.02);
  EXPECT_NEAR(h.attention_fa2, fit.attention_fa2, 0.01);
  EXPECT_NEAR(h.attention_best, fit.attention_best, 0.01);
  EXPECT_NEAR(h.attention_seq_half, fit.seq_half, 0.05 * fit.seq_half);
  EXPECT_NEAR(h.attention_seq_half_causal, fit.seq_half_causal, 0.05 * fit.seq_half_causal);
  // Causal attention saturates later than full attention (half-used
  // diagonal tiles, uneven rows).
  EXPECT_GT(fit.seq_half_causal, 1.5 * fit.seq_half);
  // The published ceiling bounds every isolated GEMM measured here, and the
  // in-step efficiency the fit finds lies below an isolated GEMM's.
  EXPECT_GE(h.gemm_ceiling, fit.gemm_large_best);
  EXPECT_LT(h.gemm, fit.gemm_large_median);
  EXPECT_GT(fit.gemm_large_median, 0.6);
}

// What the kernel model gets wrong beyond a constant factor, per group.
TEST(KernelTimings, KernelModelFollowsTheMeasuredShapes) {
  auto g = Groups(DefaultPerfParams());
  ASSERT_TRUE(g.count("gemm bf16"));
  EXPECT_GE(g["gemm bf16"].rows, 300);
  EXPECT_LE(g["gemm bf16"].median_shape_error, 0.08);
  EXPECT_LE(g["gemm bf16"].p90_shape_error, 0.20);
  // Unaligned GEMMs run at the aligned ones' ratio once unaligned_gemm applies.
  EXPECT_NEAR(g["gemm bf16 unaligned"].median_ratio / g["gemm bf16"].median_ratio, 1.0, 0.15);
  for (const char* a : {"attention fa2 fwd_bwd", "attention fa2 fwd_bwd causal", "attention cudnn fwd_bwd",
                        "attention cudnn fwd_bwd causal"}) {
    ASSERT_TRUE(g.count(a)) << a;
    EXPECT_LE(g[a].median_abs_error, 0.15) << a;
    EXPECT_LE(g[a].p90_shape_error, 0.25) << a;
  }
  EXPECT_LE(g["elementwise copy/add/gelu"].median_abs_error, 0.05);
}

// Without the measured mechanisms the same groups are far off: the tests
// above can fail.
TEST(KernelTimings, WithoutTheMeasuredFiguresTheGroupsMiss) {
  PerfParams p = DefaultPerfParams();
  ArchEfficiency* h = p.MutableArch("hopper");
  h->unaligned_gemm = 1;
  h->attention_seq_half = h->attention_seq_half_causal = 48;
  auto g = Groups(p);
  EXPECT_GT(g["gemm bf16 unaligned"].median_ratio / g["gemm bf16"].median_ratio, 3);
  EXPECT_GT(g["attention fa2 fwd_bwd causal"].p90_shape_error, 0.4);
}

}  // namespace
}  // namespace tessel
