#include "workload/model_mapping.h"

#include <gtest/gtest.h>

#include "model/catalog.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

TEST(WorkloadModelMapping, EveryTableModelIsACanonicalCatalogName) {
  int last_min = 0;
  for (const ModelMappingRow& row : ModelMappingTable()) {
    EXPECT_GT(row.min_gpus, last_min);
    last_min = row.min_gpus;
    for (int f = 0; f < kMappedFamilies; ++f) {
      for (std::string_view name : {row.base[f], row.large[f]}) {
        auto m = FindModel(name);
        ASSERT_TRUE(m.ok()) << name;
        EXPECT_EQ((*m)->name, name);
        EXPECT_EQ((*m)->family, MappedFamilyName(static_cast<MappedFamily>(f))) << name;
      }
    }
  }
  EXPECT_EQ(ModelMappingTable().front().min_gpus, 1);
}

TEST(WorkloadModelMapping, StableHashIsFixed) {
  // Golden values: FNV-1a 64 of the text, mixed with splitmix64(seed).
  EXPECT_EQ(StableHash(1, "abc"), 0x49f1eda9a6ced115ULL);
  EXPECT_EQ(StableHash(0, ""), 0x5b21f68ffa77f14cULL);
  EXPECT_EQ(StableHash(42, "cluster01/x"), 0x2f7235f0cb46f43dULL);
}

TEST(WorkloadModelMapping, SameInputsSameOutput) {
  for (int i = 0; i < 100; ++i) {
    std::string id = "job-";
    id += std::to_string(i);
    MappedModel a = MapModel(7, id, 8, 3600), b = MapModel(7, id, 8, 3600);
    EXPECT_EQ(a.model, b.model);
    EXPECT_EQ(a.global_batch, b.global_batch);
  }
}

TEST(WorkloadModelMapping, FamiliesFollowArenaWeightsAndSeedMatters) {
  constexpr int kN = 20000;
  int counts[kMappedFamilies] = {};
  int moved = 0;
  for (int i = 0; i < kN; ++i) {
    std::string id = "j";
    id += std::to_string(i);
    MappedFamily f = MapFamily(1, id);
    ++counts[static_cast<int>(f)];
    moved += MapFamily(2, id) != f;
  }
  // Weights 450 : 1231 : 257 of 1938.
  EXPECT_NEAR(counts[0] / double(kN), 450 / 1938.0, 0.015);
  EXPECT_NEAR(counts[1] / double(kN), 1231 / 1938.0, 0.015);
  EXPECT_NEAR(counts[2] / double(kN), 257 / 1938.0, 0.015);
  // Another seed redraws independently: P(same) = sum of squared weights ~ 0.47.
  EXPECT_NEAR(moved / double(kN), 0.53, 0.03);
}

struct SizeCase {
  std::string name;
  int gpus;
  double duration_s;
  int row;     // index into ModelMappingTable()
  bool large;  // expect the row's large size
  int bert_batch, other_batch;
};

class WorkloadModelMappingSize : public ::testing::TestWithParam<SizeCase> {};

TEST_P(WorkloadModelMappingSize, FollowsGpusAndGpuTime) {
  const SizeCase& c = GetParam();
  const ModelMappingRow& row = ModelMappingTable().at(c.row);
  for (int i = 0; i < 30; ++i) {
    std::string id = "id";
    id += std::to_string(i);
    int f = static_cast<int>(MapFamily(3, id));
    MappedModel m = MapModel(3, id, c.gpus, c.duration_s);
    EXPECT_EQ(m.model, c.large ? row.large[f] : row.base[f]) << id;
    EXPECT_EQ(m.global_batch, f == 0 ? c.bert_batch : c.other_batch) << id;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Workload, WorkloadModelMappingSize,
    ::testing::Values(
        SizeCase{"zero_gpus_as_one", 0, 60, 0, false, 128, 256},
        SizeCase{"one_gpu", 1, 600, 0, false, 128, 256},
        SizeCase{"one_gpu_unknown_duration", 1, 0, 0, false, 128, 256},
        SizeCase{"three_gpus", 3, 600, 1, false, 128, 256},
        SizeCase{"two_gpus_50h_is_large", 2, 50 * 3600.0, 1, true, 128, 256},
        SizeCase{"two_gpus_49h_is_base", 2, 49 * 3600.0, 1, false, 128, 256},
        SizeCase{"four_gpus", 4, 600, 2, false, 128, 256},
        SizeCase{"eight_gpus", 8, 600, 3, false, 256, 256},
        SizeCase{"sixteen_gpus_large", 16, 7 * 3600.0, 4, true, 512, 512},
        SizeCase{"sixty_four_gpus", 64, 600, 5, false, 512, 1024},
        SizeCase{"huge_request", 100000, 600, 5, false, 512, 1024}),
    [](const auto& info) { return testing::TestName(info.param.name); });

}  // namespace
}  // namespace tessel
