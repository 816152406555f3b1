#include <gtest/gtest.h>

#include <fstream>

#include "model/catalog.h"
#include "model/model.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

struct ParamCase {
  const char* name;
  double expected_params;
  double tolerance;  // relative
};

void PrintTo(const ParamCase& c, std::ostream* os) { *os << c.name; }

class CatalogParams : public ::testing::TestWithParam<ParamCase> {};

// The four flags a custom shape needs.
ShapeFlags CustomShape(int layers, int hidden, int heads, int seq_len) {
  ShapeFlags f;
  f.layers = layers;
  f.hidden = hidden;
  f.heads = heads;
  f.seq_len = seq_len;
  return f;
}

// Published parameter counts (model cards and papers).
TEST_P(CatalogParams, MatchPublishedCount) {
  const ParamCase& c = GetParam();
  auto m = FindModel(c.name);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  double p = (*m)->Params();
  EXPECT_NEAR(p / c.expected_params, 1.0, c.tolerance) << c.name << " has " << p;
}

INSTANTIATE_TEST_SUITE_P(
    Published, CatalogParams,
    ::testing::Values(ParamCase{"gpt-1.7b", 1.7e9, 0.08}, ParamCase{"gpt-18.4b", 18.4e9, 0.03},
                      ParamCase{"gpt-1t", 1008e9, 0.02}, ParamCase{"gpt3-175b", 175e9, 0.02},
                      ParamCase{"gpt3-6.7b", 6.7e9, 0.04}, ParamCase{"llama2-7b", 6.74e9, 0.02},
                      ParamCase{"llama2-70b", 69.0e9, 0.02}, ParamCase{"llama3-8b", 8.03e9, 0.02},
                      ParamCase{"llama3-70b", 70.6e9, 0.02}, ParamCase{"llama3-405b", 405.9e9, 0.02},
                      ParamCase{"bloom-176b", 176.2e9, 0.02}, ParamCase{"bert-large", 335e6, 0.03},
                      ParamCase{"bert-base", 110e6, 0.03}, ParamCase{"bert__1.3B", 1.3e9, 0.10},
                      ParamCase{"bert__39B", 39e9, 0.05}, ParamCase{"moe__690M", 690e6, 0.06},
                      ParamCase{"moe__10B", 10e9, 0.10}, ParamCase{"resnet-50", 25.6e6, 0.03}),
    [](const auto& info) { return testing::TestName(info.param.name); });

TEST(Catalog, ArenaNamesInBothSpellings) {
  EXPECT_EQ((*FindModel("bert__760M"))->name, "bert__760M");
  EXPECT_EQ((*FindModel("bert_760M"))->name, "bert__760M");
  EXPECT_EQ((*FindModel("WIDE_RESNET__1B"))->name, "wide_resnet__1B");
  // Alpa's MoE: an MoE layer every other layer, FFN 8h, 16 experts, top-2.
  const ModelSpec& moe = **FindModel("moe__690M");
  EXPECT_EQ(moe.tf.MoeLayers(), 4);
  EXPECT_EQ(moe.tf.ffn_hidden, 8 * 768);
}

TEST(Catalog, WideResnetGrowsWithItsName) {
  double prev = 0;
  for (const char* n : {"wide_resnet__500M", "wide_resnet__1B", "wide_resnet__2B", "wide_resnet__4B",
                        "wide_resnet__6.8B", "wide_resnet__13B"}) {
    double p = (*FindModel(n))->Params();
    EXPECT_GT(p, prev) << n;
    prev = p;
  }
}

TEST(Catalog, UnknownModelListsKnownOnes) {
  auto m = FindModel("gpt-5");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("unknown model 'gpt-5'"), std::string::npos);
  EXPECT_NE(m.status().message().find("llama3-70b"), std::string::npos);
}

TEST(ResolveModel, CustomNeedsShape) {
  ShapeFlags f;
  f.layers = 24;
  auto m = ResolveModel("custom", f);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "--model custom: needs --layers, --hidden, --heads and --seq-len (optional: --kv-heads "
            "--ffn-hidden --ffn-kind --vocab --experts --top-k)");
  f.hidden = 1024;
  f.heads = 16;
  f.seq_len = 2048;
  f.experts = 8;
  auto ok = ResolveModel("custom", f);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->tf.ffn_hidden, 4096);
  EXPECT_EQ(ok->tf.top_k, 2);
}

// A custom shape is a GPT (GeLU FFN) unless told it is gated: Llama's
// SwiGLU has three FFN matrices, so its parameters and FLOPs differ.
TEST(ResolveModel, GatedFfnFromFlags) {
  ShapeFlags f = CustomShape(32, 4096, 32, 4096);
  f.ffn_hidden = 11008;
  f.vocab = 32000;
  auto gelu = ResolveModel("custom", f);
  f.gated_ffn = true;
  auto swiglu = ResolveModel("custom", f);
  ASSERT_TRUE(gelu.ok() && swiglu.ok());
  EXPECT_FALSE(gelu->tf.gated_ffn);
  EXPECT_TRUE(swiglu->tf.gated_ffn);
  EXPECT_NEAR(swiglu->Params(), (**FindModel("llama2-7b")).Params(), 1e-6 * swiglu->Params());
}

TEST(ResolveModel, HeadsMustDivideHidden) {
  auto m = ResolveModel("custom", CustomShape(2, 1000, 16, 128));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "model 'custom': heads: hidden (1000) must be divisible by heads (16)");
}

TEST(ResolveModel, SeqLenOverride) {
  ShapeFlags f;
  f.seq_len = 4096;
  auto m = ResolveModel("llama2-7b", f);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->tf.seq_len, 4096);
}

TEST(ModelYaml, LoadsATransformer) {
  auto m = LoadModelYaml("name: mine\nlayers: 4\nhidden: 256\nheads: 4\nseq_len: 128\nkv_heads: 2\n", "m.yaml");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->tf.kv_heads, 2);
  EXPECT_EQ(m->tf.ffn_hidden, 1024);
}

TEST(ModelYaml, ErrorsNameFileLineField) {
  auto bad = LoadModelYaml("name: x\nlayers: four\nhidden: 256\nheads: 4\nseq_len: 128\n", "m.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "m.yaml:2: layers: expected a positive integer, got 'four'");
  auto missing = LoadModelYaml("name: x\nlayers: 4\nheads: 4\nseq_len: 128\n", "m.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "m.yaml: missing required field 'hidden' (a positive integer)");
  auto unknown = LoadModelYaml("name: x\nlayerz: 4\n", "m.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("m.yaml:2: layerz: unknown field; known:"), std::string::npos)
      << unknown.status().message();
  auto syntax = LoadModelYaml("name: [x\n", "m.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("YAML syntax error"), std::string::npos);
}

TEST(ModelYaml, LoadsAResnet) {
  auto m = LoadModelYaml("name: r\nkind: resnet\ndepth: 50\nchannels: 64\n", "r.yaml");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NEAR(m->Params() / 25.6e6, 1.0, 0.03);
  EXPECT_FALSE(m->cnn.channels_first);
  auto nchw = LoadModelYaml("name: r\nkind: resnet\nmemory_format: nchw\n", "r.yaml");
  ASSERT_TRUE(nchw.ok()) << nchw.status().ToString();
  EXPECT_TRUE(nchw->cnn.channels_first);
  auto bad = LoadModelYaml("name: r\nkind: resnet\nmemory_format: nwhc\n", "r.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "r.yaml:3: memory_format: expected nhwc or nchw, got 'nwhc'");
  auto transformer =
      LoadModelYaml("name: t\nlayers: 2\nhidden: 64\nheads: 4\nseq_len: 32\nmemory_format: nchw\n", "t.yaml");
  ASSERT_FALSE(transformer.ok());
  EXPECT_EQ(transformer.status().message(), "t.yaml:6: memory_format: applies to kind: resnet only");
}


// A key that is not a scalar (issue 14) used to escape as
// YAML::TypedBadConversion; it is an error about the file now.
TEST(ModelYaml, NonScalarKeyIsAnErrorNotACrash) {
  auto r = LoadModelYaml("name: x\n[a, b]: 1\nlayers: 4\n", "m.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("m.yaml:"), std::string::npos) << r.status().message();
  auto nested = LoadModelYaml("{a: {b: 1}}: 2\n", "n.yaml");
  EXPECT_FALSE(nested.ok());
}

}  // namespace
}  // namespace tessel
