#include "hardware/gpu.h"

#include <gtest/gtest.h>

#include "hardware/node.h"

namespace tessel {
namespace {

TEST(GpuCatalog, HasEveryRequiredName) {
  for (const char* n : {"k80", "p100", "v100-16g", "v100-32g", "t4", "a10", "a40", "l4", "l20", "rtx2080ti",
                        "rtx3090", "rtx6000", "a100-40g", "a100-80g", "h100-pcie", "h100-sxm", "h200"}) {
    auto g = FindGpu(n);
    ASSERT_TRUE(g.ok()) << n;
    EXPECT_GT((*g)->memory_gib, 0) << n;
    EXPECT_GT((*g)->memory_bw_gbs, 0) << n;
    EXPECT_GT((*g)->fp32_tflops, 0) << n;
    EXPECT_GT((*g)->fp16_tflops, 0) << n;
    EXPECT_FALSE((*g)->source.empty()) << n;
  }
  // Every catalog GPU states its SM count (the GEMM model's waves).
  for (const GpuSpec& g : GpuCatalog()) EXPECT_GT(g.sms, 0) << g.name;
}

TEST(GpuCatalog, DatasheetFigures) {
  EXPECT_DOUBLE_EQ((*FindGpu("h100-sxm"))->bf16_tflops, 989.5);
  EXPECT_DOUBLE_EQ((*FindGpu("a100-80g"))->fp16_tflops, 312);
  EXPECT_DOUBLE_EQ((*FindGpu("v100-32g"))->fp16_tflops, 125);
  EXPECT_DOUBLE_EQ((*FindGpu("a100-80g"))->memory_bw_gbs, 2039);
  EXPECT_EQ((*FindGpu("a100-80g"))->sms, 108);
  EXPECT_EQ((*FindGpu("h100-sxm"))->sms, 132);
}

TEST(GpuCatalog, PrecisionSupport) {
  const GpuSpec* v100 = *FindGpu("v100");
  EXPECT_EQ(v100->PeakTflops(Precision::kBf16), 0);
  EXPECT_EQ(v100->PeakTflops(Precision::kTf32), v100->fp32_tflops);  // falls back
  EXPECT_GT((*FindGpu("h100"))->PeakTflops(Precision::kFp8), 0);
  EXPECT_EQ((*FindGpu("a100-80g"))->PeakTflops(Precision::kFp8), 0);
}

TEST(GpuCatalog, AliasesAndCase) {
  EXPECT_EQ((*FindGpu("A100"))->name, "a100-40g");
  EXPECT_EQ((*FindGpu("h100"))->name, "h100-sxm");
}

TEST(GpuCatalog, UnknownListsKnown) {
  auto g = FindGpu("b300");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("unknown gpu 'b300'"), std::string::npos);
  EXPECT_NE(g.status().message().find("h200"), std::string::npos);
}

TEST(Topology, DefaultsAndOverrides) {
  const GpuSpec& a100 = **FindGpu("a100-80g");
  auto t = MakeTopology(a100, 0, 0);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->gpus_per_node, 8);
  EXPECT_EQ(t->intra, LinkKind::kNvswitch);
  EXPECT_DOUBLE_EQ(t->network_gbps, 1600);  // DGX A100: 8 x 200 Gb/s
  auto o = MakeTopology(a100, 4, 400);
  EXPECT_EQ(o->gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(o->network_gbps, 400);
  EXPECT_FALSE(MakeTopology(a100, 32, 0).ok());
}

TEST(Topology, NvlinkBridgeJoinsPairsOnly) {
  auto t = *MakeTopology(**FindGpu("a40"), 0, 0);
  EXPECT_DOUBLE_EQ(t.IntraNodeGbs(2), 56.25);
  EXPECT_DOUBLE_EQ(t.IntraNodeGbs(4), 31.5);
}

}  // namespace
}  // namespace tessel
