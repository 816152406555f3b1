#include "perf/memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "core/csv.h"
#include "model/catalog.h"

namespace tessel {
namespace {

// Korthikanti et al. 2022, Table 2: activation bytes per transformer layer,
// s = sequence, b = micro-batch, h = hidden, a = heads, t = tensor-parallel.
struct ActCase {
  const char* name;
  int b, t;
  Recompute rc;
  bool fused;
};

double Korthikanti(const TransformerShape& s, const ActCase& c) {
  double sbh = static_cast<double>(s.seq_len) * c.b * s.hidden;
  double as_h = 5.0 * s.heads * s.seq_len / s.hidden;
  switch (c.rc) {
    case Recompute::kNone: return sbh * (34 + (c.fused ? 0 : as_h)) / c.t;  // with sequence parallelism
    case Recompute::kSelective: return sbh * 34 / c.t;
    case Recompute::kFull: return 2 * sbh / c.t;
  }
  return 0;
}

void PrintTo(const ActCase& c, std::ostream* os) { *os << c.name; }

class Activations : public ::testing::TestWithParam<ActCase> {};

ActivationOptions Opts(Recompute rc, bool fused, bool dropout = true) {
  ActivationOptions o;
  o.precision = Precision::kFp16;
  o.recompute = rc;
  o.fused_attention = fused;
  o.dropout = dropout;
  return o;
}

TEST_P(Activations, MatchPublishedFormula) {
  const ActCase& c = GetParam();
  const TransformerShape& s = (*FindModel("gpt3-175b"))->tf;
  double ours = TransformerLayerActivationBytes(s, c.b, c.t, Opts(c.rc, c.fused));
  // Beyond the paper's count: LayerNorms' fp32 mean and rstd (16 B per
  // token) and FlashAttention's fp32 log-sum-exp (4 B per head and token).
  double tokens = static_cast<double>(s.seq_len) * c.b;
  double extra = c.rc == Recompute::kFull ? 0 : tokens * (16 + (c.fused ? 4.0 * s.heads : 0)) / c.t;
  EXPECT_NEAR(ours / (Korthikanti(s, c) + extra), 1.0, 1e-9) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Korthikanti2022, Activations,
                         ::testing::Values(ActCase{"none_t1", 1, 1, Recompute::kNone, false},
                                           ActCase{"none_t8", 4, 8, Recompute::kNone, false},
                                           ActCase{"selective_t8", 1, 8, Recompute::kSelective, false},
                                           ActCase{"full_t8", 2, 8, Recompute::kFull, false},
                                           ActCase{"flash_t4", 2, 4, Recompute::kNone, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Memory, PaperExampleGpt3PerLayer) {
  // GPT-3 175B, s=2048, b=1, t=8, no recompute, fp16: 34 + 5*96*2048/12288 = 114
  // bytes per s*b*h/t -> 2048*12288*114/8 = 358.6 MB per layer.
  const TransformerShape& s = (*FindModel("gpt3-175b"))->tf;
  double bytes = TransformerLayerActivationBytes(s, 1, 8, Opts(Recompute::kNone, false));
  EXPECT_NEAR(bytes / 1e6, 358.6, 0.5);
}

TEST(Memory, NoDropoutKeepsNoMasks) {
  // 34 - 2 (two hidden dropout masks) with FlashAttention and no dropout:
  // 32 s*b*h (+ LayerNorm stats and the log-sum-exp).
  const TransformerShape& s = (*FindModel("gpt3-175b"))->tf;
  double tokens = s.seq_len;
  double bytes = TransformerLayerActivationBytes(s, 1, 1, Opts(Recompute::kNone, true, false));
  EXPECT_NEAR(bytes, tokens * (32.0 * s.hidden + 16 + 4.0 * s.heads), 1e-6);
}

TEST(Memory, OpLevelSelectiveKeepsLessThanNoneMoreThanFull) {
  const TransformerShape& s = (*FindModel("llama3-8b"))->tf;
  ActivationOptions o = Opts(Recompute::kNone, true, false);
  o.precision = Precision::kBf16;
  double none = TransformerLayerActivationBytes(s, 2, 1, o);
  o.recompute = Recompute::kSelective;
  o.op_level_selective = true;
  double sel = TransformerLayerActivationBytes(s, 2, 1, o);
  o.recompute = Recompute::kFull;
  double full = TransformerLayerActivationBytes(s, 2, 1, o);
  EXPECT_LT(sel, 0.5 * none);
  EXPECT_GT(sel, 2 * full);
}

// Bytes a transformer layer saves for backward, measured exactly with
// PyTorch on CPU (scripts/measure-activations.py: saved-tensor hooks, each
// storage counted once; data/measured/activation-bytes-cpu.csv), against
// the model, for every recompute mode, attention kernel, dropout setting,
// FFN kind and micro-batch measured. Megatron's layer with grouped-query
// attention and a fused kernel copies q out of the QKV output and keeps
// both (one e*h more than a layout with q as a view, which the model
// assumes); those rows are compared with that copy added.
TEST(Memory, MatchesBytesMeasuredWithPyTorch) {
  auto table = CsvTable::ReadFile(std::string(TESSEL_SOURCE_DIR) + "/data/measured/activation-bytes-cpu.csv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  int compared = 0;
  double worst = 0;
  std::map<std::string, int> per_mode;
  for (const auto& row : table->rows()) {
    auto num = [&](const char* col) { return *table->GetDouble(row, col); };
    std::string mode = table->Get(row, "recompute");
    double measured = num("saved_bytes");
    TransformerShape s;
    s.hidden = static_cast<int>(num("hidden"));
    s.heads = static_cast<int>(num("heads"));
    s.kv_heads = static_cast<int>(num("kv_heads"));
    s.ffn_hidden = static_cast<int>(num("ffn_hidden"));
    s.vocab = static_cast<int>(num("vocab"));
    s.seq_len = static_cast<int>(num("seq_len"));
    s.gated_ffn = table->Get(row, "ffn_kind") == "swiglu";
    int b = static_cast<int>(num("micro_batch"));
    double e = num("dtype_bytes");
    double tokens = static_cast<double>(s.seq_len) * b;
    Precision prec = e == 2 ? Precision::kBf16 : Precision::kFp32;
    double model = 0;
    if (table->Get(row, "part") == "head") {
      // Final LayerNorm input and output; the fp32 softmax unless chunked.
      bool chunked = table->Get(row, "loss") == "chunked";
      model = tokens * (2 * e * s.hidden + (chunked ? 0 : 4.0 * s.vocab));
      mode = "head-" + table->Get(row, "loss");
    } else {
      ActivationOptions o;
      o.precision = prec;
      o.fused_attention = table->Get(row, "attention") == "fused";
      o.dropout = num("dropout") > 0;
      auto rc = ParseRecompute(table->Get(row, "recompute"));
      ASSERT_TRUE(rc.ok());
      o.recompute = *rc;
      model = TransformerLayerActivationBytes(s, b, 1, o);
      bool q_copied = s.kv_heads < s.heads && o.recompute != Recompute::kFull &&
                      (o.fused_attention || o.recompute == Recompute::kSelective);
      if (q_copied) model += tokens * e * s.hidden;
    }
    worst = std::max(worst, std::fabs(model / measured - 1));
    EXPECT_NEAR(model / measured, 1.0, 0.05) << "row " << row.line << ": " << mode << " measured " << measured
                                            << " model " << model;
    ++compared;
    per_mode[mode]++;
  }
  EXPECT_GE(compared, 600);
  RecordProperty("worst_relative_difference", std::to_string(worst));
  std::printf("activation bytes: %d rows, worst |model/measured - 1| = %.4f\n", compared, worst);
  for (const char* m : {"none", "selective", "full", "head-plain", "head-chunked"}) EXPECT_GT(per_mode[m], 0) << m;
}

TEST(Memory, StateBytesFollowZeroPaper) {
  auto mixed = StateBytes(Precision::kBf16);
  EXPECT_EQ(mixed.weights + mixed.gradients + mixed.optimizer, 16);  // 2 + 2 + 12
  auto fp32 = StateBytes(Precision::kFp32);
  EXPECT_EQ(fp32.weights + fp32.gradients + fp32.optimizer, 16);  // 4 + 4 + 8
  // Adafactor keeps factored moments (negligible) beside the master copy;
  // SGD one momentum buffer.
  auto ada = StateBytes(Precision::kFp16, Optimizer::kAdafactor);
  EXPECT_EQ(ada.weights + ada.gradients + ada.optimizer, 8);  // 2 + 2 + 4
  auto sgd = StateBytes(Precision::kFp32, Optimizer::kSgdMomentum);
  EXPECT_EQ(sgd.weights + sgd.gradients + sgd.optimizer, 12);  // 4 + 4 + 4
}

TEST(Memory, InFlightMicroBatches) {
  EXPECT_EQ(InFlightMicroBatches(8, 64, 1), 8);
  EXPECT_EQ(InFlightMicroBatches(8, 4, 1), 4);
  EXPECT_NEAR(InFlightMicroBatches(8, 64, 2), 8 * (1 + 7.0 / 16), 1e-12);
}

}  // namespace
}  // namespace tessel
