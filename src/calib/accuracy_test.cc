#include "calib/accuracy.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/test_data.h"

namespace tessel {
namespace {

TEST(Reference, LoadsEverySource) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok()) << refs.status().ToString();
  int megatron = 0, alpa = 0, dle = 0;
  for (const auto& c : refs->cases) {
    megatron += c.source == "megatron";
    alpa += c.source == "alpa";
    dle += c.source == "nvidia-dle";
    EXPECT_GT(c.measured_iteration_s, 0) << c.id;
  }
  EXPECT_GE(megatron, 35);
  EXPECT_GE(alpa, 500);
  EXPECT_GE(dle, 20);
  // H100/L20 database entries are [iterations, total seconds, ...]: per
  // iteration is the ratio, not the second element.
  for (const auto& c : refs->cases) {
    if (c.id == "prof_database_h100_l20.json:bert_760M_256@1_l20_1_n_8_d") {
      EXPECT_NEAR(c.measured_iteration_s, 19.389 / 5, 1e-9);
    }
  }
}

TEST(Reference, MalformedCalibrationRowNamesLineAndColumn) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/calib_bad.csv";
  {
    std::ofstream o(path);
    o << "row_id,model,layers,hidden,heads,seq_len,global_batch_seqs,micro_batch,grad_accum_or_num_microbatches,"
         "gpu_type,num_gpus,t,p,d,vp_interleave,recompute,precision,tflops_per_gpu,tflops_basis,samples_per_s,"
         "iter_time_s,notes,framework\n";
    o << "1,GPT,24,2048,16,2048,8,1,,A100 80GB,eight,1,1,8,,,,,,,1.0,,Megatron\n";
  }
  ReferenceSet set;
  Status s = LoadCalibrationCsv(path, &set);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), path + ":2: num_gpus: expected a number, got 'eight'");
}

// The report itself: computed, grouped, and (for the tuned stacks, whose
// plans are stated) within the aim.
TEST(Accuracy, ReportOnSharedData) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok());
  AccuracyReport rep = EvaluateAccuracy(*refs, Estimator());
  EXPECT_LT(rep.not_predicted, 10);
  ASSERT_FALSE(rep.by_generation.empty());
  for (const auto& s : rep.by_source) {
    if (s.group == "megatron") {
      EXPECT_LT(s.median_abs, 0.15) << "Megatron rows drifted";
    }
  }
  EXPECT_LT(rep.overall.median_abs, 0.40);
}

}  // namespace
}  // namespace tessel
