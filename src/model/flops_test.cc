#include "model/flops.h"

#include <gtest/gtest.h>

#include "model/catalog.h"

namespace tessel {
namespace {

// The general counter must agree with Narayanan et al.'s closed form for
// GPT models (FFN 4h, multi-head attention), without recomputation:
// F = 72 B s L h^2 (1 + s/6h + V/12Lh).
TEST(Flops, MatchesMegatronFormula) {
  for (const char* name : {"gpt-1.7b", "gpt-18.4b", "gpt-145.6b", "gpt-1t", "gpt3-175b"}) {
    const ModelSpec& m = **FindModel(name);
    const auto& s = m.tf;
    double batch = 512;
    double ours = ModelFlopsPerSample(m) * batch;
    double megatron = MegatronFlopsPerIteration(batch, s.seq_len, s.layers, s.hidden, s.vocab, false);
    // The closed form drops the QKV/LN bias terms: equal to 1e-3.
    EXPECT_NEAR(ours / megatron, 1.0, 1e-3) << name;
  }
}

TEST(Flops, RecomputeFormulaIsFourThirds) {
  double a = MegatronFlopsPerIteration(1, 2048, 96, 12288, 51200, true);
  double b = MegatronFlopsPerIteration(1, 2048, 96, 12288, 51200, false);
  // Layers are 4/3 (96 vs 72); the logits term is not recomputed.
  EXPECT_GT(a / b, 1.3);
  EXPECT_LT(a / b, 4.0 / 3.0);
}

TEST(Flops, PublishedPaperFigure) {
  // SC'21: GPT-3 175B, B=1536, s=2048 -> 96*B*s*l*h^2*(...) = 4.5e18 per
  // iteration with recomputation (their Table 1 arithmetic).
  double f = MegatronFlopsPerIteration(1536, 2048, 96, 12288, 51200, true);
  EXPECT_NEAR(f / 4.5e18, 1.0, 0.03);
}

TEST(Flops, MoeCountsOnlyRoutedExperts) {
  const ModelSpec& moe = **FindModel("moe__690M");
  ModelSpec dense = moe;
  dense.tf.experts = 0;
  dense.tf.top_k = 0;
  // top-2 routing: the MoE layers' FFN work doubles, plus the router.
  EXPECT_GT(ForwardFlopsPerSample(moe), ForwardFlopsPerSample(dense));
  EXPECT_LT(ForwardFlopsPerSample(moe), 2 * ForwardFlopsPerSample(dense));
}

TEST(Flops, Resnet50ForwardIsAboutFourGflops) {
  // ResNet-50 at 224x224: ~4.1 GMACs = ~8.2 GFLOPs forward (He et al.).
  double f = ForwardFlopsPerSample(**FindModel("resnet-50"));
  EXPECT_NEAR(f / 8.2e9, 1.0, 0.05);
}

}  // namespace
}  // namespace tessel
