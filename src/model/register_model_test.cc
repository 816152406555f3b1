// RegisterModel: run-time models (job spec shapes) found by FindModel.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "model/catalog.h"

namespace tessel {
namespace {

ModelSpec Tiny(const std::string& name, int layers) {
  ModelSpec m;
  m.name = name;
  m.family = "custom";
  m.source = "spec.yaml";
  m.tf.layers = layers;
  m.tf.hidden = 64;
  m.tf.heads = 4;
  m.tf.kv_heads = 4;
  m.tf.ffn_hidden = 256;
  m.tf.vocab = 256;
  m.tf.seq_len = 32;
  return m;
}

TEST(RegisterModelTest, FindModelFindsRegisteredModelCaseInsensitively) {
  EXPECT_FALSE(FindModel("reg-tiny-a").ok());
  ASSERT_TRUE(RegisterModel(Tiny("reg-tiny-a", 2)).ok());
  auto m = FindModel("REG-TINY-A");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->name, "reg-tiny-a");
  EXPECT_EQ((*m)->tf.layers, 2);
  // Not part of the published catalog.
  for (const auto& n : ModelNames()) EXPECT_NE(n, "reg-tiny-a");
}

TEST(RegisterModelTest, SameShapeAgainIsNoOpDifferentShapeIsRefused) {
  ASSERT_TRUE(RegisterModel(Tiny("reg-tiny-b", 2)).ok());
  const ModelSpec* first = *FindModel("reg-tiny-b");
  ModelSpec again = Tiny("reg-tiny-b", 2);
  again.source = "other.yaml";  // provenance is not shape
  EXPECT_TRUE(RegisterModel(again).ok());
  EXPECT_EQ(*FindModel("reg-tiny-b"), first);  // pointers stay valid

  Status st = RegisterModel(Tiny("reg-tiny-b", 3));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "model 'reg-tiny-b': the name is taken by a model registered earlier (from spec.yaml) "
            "with a different shape; choose another name");
  EXPECT_EQ((*FindModel("reg-tiny-b"))->tf.layers, 2);
}

TEST(RegisterModelTest, CatalogNamesAndAliasesCannotBeRedefined) {
  Status st = RegisterModel(Tiny("gpt3-125m", 2));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "model 'gpt3-125m': the name is taken by catalog model 'gpt3-125m' with a different "
            "shape; choose another name");
  EXPECT_EQ(RegisterModel(Tiny("bloom", 2)).code(), StatusCode::kFailedPrecondition);  // an alias
  // The catalog's own shape under its name is accepted (a no-op).
  ModelSpec same = **FindModel("gpt3-125m");
  same.source = "a job spec";
  EXPECT_TRUE(RegisterModel(same).ok());
  EXPECT_EQ((*FindModel("gpt3-125m"))->source, "Brown et al. 2020 Table 2.1");
}

TEST(RegisterModelTest, RejectsUnnamedAndInvalidShapes) {
  EXPECT_EQ(RegisterModel(Tiny("", 2)).code(), StatusCode::kInvalidArgument);
  ModelSpec bad = Tiny("reg-bad", 2);
  bad.tf.heads = 0;
  EXPECT_EQ(RegisterModel(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(FindModel("reg-bad").ok());
}

TEST(RegisterModelTest, ConcurrentRegistrationAndLookup) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        std::string name = "reg-conc-" + std::to_string(i);
        EXPECT_TRUE(RegisterModel(Tiny(name, 1 + i % 3)).ok());
        auto m = FindModel(name);
        ASSERT_TRUE(m.ok());
        EXPECT_EQ((*m)->tf.layers, 1 + i % 3);
        EXPECT_TRUE(FindModel("gpt3-125m").ok()) << t;
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
}  // namespace tessel
