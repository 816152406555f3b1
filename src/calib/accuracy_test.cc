#include "calib/accuracy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "calib/arena_database.h"
#include "core/stats.h"
#include "core/strings.h"
#include "hardware/gpu.h"
#include "model/catalog.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

TEST(Reference, LoadsEverySource) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok()) << refs.status().ToString();
  int megatron = 0, alpa = 0, dle = 0, published = 0;
  for (const auto& c : refs->cases) {
    megatron += StartsWith(c.framework, "megatron") && StartsWith(c.id, "calibration.csv");
    alpa += c.framework == "alpa";
    dle += StartsWith(c.source, "dle-");
    published += StartsWith(c.id, "published.csv");
    EXPECT_GT(c.measured_iteration_s, 0) << c.id;
    EXPECT_FALSE(c.source.empty()) << c.id;
    EXPECT_FALSE(c.arch.empty()) << c.id;
  }
  EXPECT_GE(megatron, 35);
  EXPECT_GE(alpa, 500);
  EXPECT_GE(dle, 20);
  EXPECT_GE(published, 30);  // the built-in data/measured/published.csv
  // H100/L20 database entries are [iterations, total e2e, avg e2e, total
  // local, avg local, memory]: per iteration is total local / iterations
  // (the older database's local_avg_lat), not the second element (e2e:
  // 19.389 s over 5 iterations).
  for (const auto& c : refs->cases) {
    if (c.id == "prof_database_h100_l20.json:bert_760M_256@1_l20_1_n_8_d") {
      EXPECT_NEAR(c.measured_iteration_s, 18.063434600830078 / 5, 1e-9);
    }
    // The Arena profiler's fixed settings: 16 micro-batches, per-layer
    // remat, transformers applied with deterministic=True (no dropout).
    if (c.framework == "alpa") {
      EXPECT_EQ(c.num_micro_batches, std::min(16, c.global_batch)) << c.id;
      EXPECT_EQ(c.recompute, Recompute::kFull) << c.id;
      if (c.model.kind == ModelKind::kTransformer) {
        EXPECT_FALSE(c.model.tf.dropout) << c.id;
      }
    }
  }
}

// The flash-attention training README's rows: one 8-GPU A100 node, plain
// data parallelism with the micro-batch and ZeRO stage of each size's
// default config, and throughput from the stated tokens/s (1.3B: 169k
// tokens/s over 512 x 2,048 tokens = 6.205 s per step).
TEST(Reference, FlashAttentionReadmeRowsCarryTheirConfigs) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok()) << refs.status().ToString();
  int rows = 0;
  for (const auto& c : refs->cases) {
    if (c.source != "flash-attn-training-readme") continue;
    ++rows;
    EXPECT_EQ(c.gpus, 8) << c.id;
    EXPECT_EQ(c.tp, 1) << c.id;
    EXPECT_EQ(c.pp, 1) << c.id;
    EXPECT_EQ(c.recompute, Recompute::kNone) << c.id;
    EXPECT_EQ(c.precision, Precision::kBf16) << c.id;
    EXPECT_EQ(c.topology.gpu->name, "a100-80g") << c.id;
    if (c.model.name == "GPT3-1.3B") {
      EXPECT_EQ(c.micro_batch, 8);
      EXPECT_EQ(c.zero, 1);
      EXPECT_EQ(c.global_batch, 512);
      EXPECT_NEAR(c.measured_iteration_s, 512.0 * 2048 / 169000, 1e-3);
    }
    if (c.model.name == "GPT3-125M") {
      EXPECT_EQ(c.micro_batch, 32);
      EXPECT_EQ(c.zero, 0);
    }
  }
  EXPECT_EQ(rows, 5);
}

// TinyLlama's README row: FSDP with fused kernels on 16 A100-40G, the plan
// of its released script (micro-batch 8, 8 accumulated, 1,024 sequences);
// OLMo-core's four H100 rows, FSDP2 under torch.compile on one node.
TEST(Reference, FusedFsdpRowsLoadAsFsdpFused) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok()) << refs.status().ToString();
  int rows = 0, olmo = 0;
  for (const auto& c : refs->cases) {
    // OLMo-core's FSDP2 runs under torch.compile: the fused profile too.
    if (c.source == "olmo-core-readme") {
      ++olmo;
      EXPECT_EQ(c.framework, "fsdp-fused") << c.id;
      EXPECT_EQ(c.gpus, 8) << c.id;
      EXPECT_EQ(c.recompute, Recompute::kNone) << c.id;
    }
    if (c.source != "tinyllama-readme") continue;
    ++rows;
    EXPECT_EQ(c.framework, "fsdp-fused");
    EXPECT_EQ(c.zero, 3);
    EXPECT_EQ(c.gpus, 16);
    EXPECT_EQ(c.micro_batch, 8);
    EXPECT_EQ(c.global_batch, 1024);
    EXPECT_EQ(c.topology.gpu->name, "a100-40g");
    EXPECT_TRUE(c.model.tf.gated_ffn);
    EXPECT_EQ(c.model.tf.kv_heads, 4);
    EXPECT_FALSE(c.model.tf.dropout);  // a Llama
  }
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(olmo, 4);
}

TEST(ArenaDatabase, ReadsLocalIterationTimeFromLists) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/arena_db_lists.json";
  {
    std::ofstream o(path);
    o << R"({"optimal": {"bert_760M_256": {"1_l20_1_n_8_d": [5, 20.0, 4.0, 18.0, 3.6, 6.0],)"
      << R"( "1_h100_1_n_1_d": [4, 10.0], "1_h100_1_n_2_d": 2.5, "1_h100_1_n_4_d": -1}}})";
  }
  auto db = ReadArenaDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_EQ(db->size(), 4u);
  std::map<std::string, double> s;
  for (const auto& e : *db) s[e.mesh_name] = e.seconds;
  EXPECT_DOUBLE_EQ(s["1_l20_1_n_8_d"], 18.0 / 5);  // local, as the older file stores
  EXPECT_DOUBLE_EQ(s["1_h100_1_n_1_d"], 10.0 / 4);  // only an e2e total given
  EXPECT_DOUBLE_EQ(s["1_h100_1_n_2_d"], 2.5);
  EXPECT_LT(s["1_h100_1_n_4_d"], 0);
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

// Rows whose stated shape is not what ran (data/measured/unusable-rows.csv)
// are skipped with their evidence, never compared; every listed row exists.
// DeepLearningExamples' BERT phase 2 (LDDL sequence binning) reports more
// tokens/s per GPU than phase 1 on the same GPUs, which full 512-token
// sequences cannot do: the check that put its rows on the list.
TEST(Reference, UnusableRowsAreSkippedWithTheirEvidence) {
  TESSEL_REQUIRE_DATA();
  auto listed = ParseUnusableRows(EmbeddedUnusableRowsCsv(), "unusable-rows.csv");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_FALSE(listed->empty());
  ReferenceSet set;
  ASSERT_TRUE(LoadCalibrationCsv(testing::DataDir() + "/measured/calibration.csv", &set).ok());
  ASSERT_TRUE(LoadThroughputCsvText(EmbeddedPublishedCsv(), "published.csv", &set).ok());
  std::map<std::string, std::string> skipped;
  for (const auto& s : set.skipped) skipped[s.id] = s.reason;
  for (const auto& [id, reason] : *listed) {
    EXPECT_EQ(skipped[id], reason) << id << " is listed but was not skipped with its reason";
    for (const auto& c : set.cases) EXPECT_NE(c.id, id);
  }
  std::map<int, double> tokens_per_gpu_s;  // BERT-large, 8 A100s, FP16, by sequence length
  for (const auto& c : set.cases)
    if (c.source == "dle-bert" && c.gpus == 8 && c.precision == Precision::kFp16)
      tokens_per_gpu_s[c.model.tf.seq_len] = c.global_batch * c.model.tf.seq_len / c.measured_iteration_s / c.gpus;
  EXPECT_EQ(tokens_per_gpu_s.count(512), 0u);  // every phase-2 row is listed
  ASSERT_EQ(tokens_per_gpu_s.count(128), 1u);
  // The listed phase-2 row on the same 8 GPUs: 1,657 sequences/s of 512.
  EXPECT_GT(1657.0 * 512 / 8, 1.4 * tokens_per_gpu_s[128]);
}

// DeepLearningExamples' ResNet-50 rows carry the recipe's settings
// (PyTorch/Classification/ConvNets/configs.yml): per-GPU batch 256 but 112
// for FP32 on DGX-1V, NHWC only under AMP, no activation checkpointing.
TEST(Reference, ConvNetsRowsCarryTheRecipe) {
  TESSEL_REQUIRE_DATA();
  ReferenceSet set;
  ASSERT_TRUE(LoadCalibrationCsv(testing::DataDir() + "/measured/calibration.csv", &set).ok());
  int seen = 0;
  for (const auto& c : set.cases) {
    if (c.source != "dle-resnet50") continue;
    ++seen;
    const bool fp32_v100 = c.precision == Precision::kFp32 && c.arch == "volta";
    EXPECT_EQ(c.micro_batch, fp32_v100 ? 112 : 256) << c.id;
    EXPECT_EQ(c.model.cnn.channels_first, c.precision != Precision::kFp16) << c.id;
    EXPECT_EQ(c.recompute, Recompute::kNone) << c.id;
  }
  EXPECT_EQ(seen, 12);
}

TEST(Reference, UnusableRowsBadInputNamesLineAndColumn) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& k : std::vector<Case>{
           {"file,row_id\ncalibration.csv,3\n", "u.csv: missing column 'reason' (expected file,row_id,reason)"},
           {"file,row_id,reason\ncalibration.csv,three,x\n", "u.csv:2: row_id: expected an integer, got 'three'"},
           {"file,row_id,reason\ncalibration.csv,3,\n", "u.csv:2: reason: expected the evidence"},
           {"file,row_id,reason\n,3,x\n", "u.csv:2: file: expected a reference file name"},
           {"file,row_id,reason\nc.csv,3,x\nc.csv,3,y\n", "u.csv:3: row_id: c.csv:3 listed twice"},
       }) {
    auto r = ParseUnusableRows(k.text, "u.csv");
    ASSERT_FALSE(r.ok()) << k.text;
    EXPECT_EQ(r.status().message(), k.error);
  }
}

// The columns the reference-row tests below write (a superset of what
// LoadThroughputCsvText requires).
constexpr const char* kReferenceColumns =
    "row_id,source,model,layers,hidden,heads,seq_len,global_batch_seqs,micro_batch,"
    "grad_accum_or_num_microbatches,gpu_type,num_gpus,t,p,d,vp_interleave,recompute,precision,tflops_per_gpu,"
    "tflops_basis,samples_per_s,iter_time_s,notes,framework";

// A row's stated inter-node bandwidth is the network it ran on (per node:
// NICs x rate, or one figure "inter-node" / "per node"); a row that states
// none runs on its node type's default (a DGX A100's 8 x 200 Gb/s).
TEST(Reference, InterconnectStatesTheNetwork) {
  const std::string head = std::string(kReferenceColumns) + ",interconnect\n";
  const std::string run = "test,GPT,24,2048,16,2048,256,2,1,A100 80GB SXM,128,1,1,128,,none,bf16,,,,2.0,,fsdp,";
  std::string text = head + "1," + run + "\"A100 cluster, 400 Gbps inter-node, GPUDirect RDMA\"\n" +
                     "2," + run + "\"DGX A100: 8x HDR InfiniBand 200 Gb/s per node\"\n" +
                     "3," + run + "800 Gb/s per node\n" + "4," + run + "not stated\n";
  ReferenceSet set;
  Status st = LoadThroughputCsvText(text, "t.csv", &set);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(set.cases.size(), 4u);
  EXPECT_EQ(set.cases[0].topology.network_gbps, 400);
  EXPECT_EQ(set.cases[1].topology.network_gbps, 1600);
  EXPECT_EQ(set.cases[2].topology.network_gbps, 800);
  EXPECT_EQ(set.cases[3].topology.network_gbps, 1600);
}

// A row naming a catalog CNN takes the catalog's shape and the memory
// format its notes state; a format that is neither is refused, naming the
// file, line and field.
TEST(Reference, CatalogCnnRowsTakeTheMemoryFormatTheyState) {
  const std::string head = std::string(kReferenceColumns) + "\n";
  const std::string run = ",,,,,16,16,1,H100 80GB SXM,1,1,1,1,,full,fp32,,,,0.33,";
  std::string text = head + "1,m,wide_resnet__500M" + run + "\"memory format: nchw (as run)\",pytorch\n" +
                     "2,m,resnet-50" + run + "memory format: nhwc,pytorch\n" + "3,m,resnet-50" + run + ",pytorch\n";
  ReferenceSet set;
  Status st = LoadThroughputCsvText(text, "t.csv", &set);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(set.cases.size(), 3u);
  EXPECT_EQ(set.cases[0].model.name, "wide_resnet__500M");
  EXPECT_TRUE(set.cases[0].model.cnn.channels_first);
  EXPECT_FALSE(set.cases[1].model.cnn.channels_first);
  EXPECT_EQ(set.cases[2].model.name, "resnet-50");
  st = LoadThroughputCsvText(head + "1,m,resnet-50" + run + "memory format: planar,pytorch\n", "t.csv", &set);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t.csv:2: notes: memory format 'planar': expected nhwc or nchw"), std::string::npos)
      << st.message();
}

// FP8 rows are read as FP8 runs (NeMo's "FP8", Megatron-Bridge's "FP8-CS"),
// and a FLOP basis that names recompute only to exclude it ("no recompute
// FLOPs") does not make the run a full-recompute one.
TEST(Reference, Fp8RowsAndRecomputeFreeBases) {
  const std::string head = std::string(kReferenceColumns) + "\n";
  std::string text = head +
                     "1,nemo,GPT,24,4096,32,2048,2048,4,,H100 80GB SXM,64,1,1,64,,,FP8-CS,765,"
                     "\"model FLOPs; no recompute FLOPs\",,,,megatron\n" +
                     "2,paper,GPT,24,4096,32,2048,2048,4,,H100 80GB SXM,64,1,1,64,,,bf16,400,"
                     "\"Megatron formula incl. recompute\",,,,megatron\n";
  ReferenceSet set;
  Status st = LoadThroughputCsvText(text, "t.csv", &set);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(set.cases.size(), 2u);
  EXPECT_EQ(set.cases[0].precision, Precision::kFp8);
  EXPECT_FALSE(set.cases[0].recompute.has_value());
  EXPECT_EQ(set.cases[1].precision, Precision::kBf16);
  EXPECT_EQ(set.cases[1].recompute, Recompute::kFull);
}

// The report itself: computed, grouped, every run predicted (none called
// "does not fit"), and the tuned stacks close.
TEST(Accuracy, ReportOnSharedData) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok());
  AccuracyReport rep = EvaluateAccuracy(*refs, Estimator());
  EXPECT_EQ(rep.not_predicted, 0);
  ASSERT_FALSE(rep.by_arch.empty());
  for (const auto& s : rep.by_framework) {
    if (s.group == "megatron-legacy") {
      EXPECT_LT(s.median_abs, 0.10) << "Megatron-LM rows drifted";
    }
  }
  EXPECT_LT(rep.overall.median_abs, 0.25);
  // The GPU-count bands partition the rows, smallest runs first.
  std::vector<std::string> bands;
  int rows = 0;
  for (const auto& s : rep.by_gpus) {
    bands.push_back(s.group);
    rows += s.rows;
  }
  EXPECT_EQ(bands, (std::vector<std::string>{"1", "2-8", "9-64", "65-512", "513+"}));
  EXPECT_EQ(rows, rep.overall.rows);
}

// Strong scaling pairs each run's consecutive GPU counts; a count measured
// on two host layouts stands as its faster one, with that row's prediction;
// another batch or GPU type is another run; a run on one count gives none.
TEST(Accuracy, ScalingStepsPairConsecutiveGpuCountsOfOneRun) {
  const ModelSpec& cnn = **FindModel("wide_resnet__1B");
  const ModelSpec& gpt = **FindModel("bert__1.3B");
  const GpuSpec& h100 = **FindGpu("h100-sxm");
  const GpuSpec& l20 = **FindGpu("l20");
  std::vector<ReferenceCase> cases;
  auto add = [&](const ModelSpec& m, const GpuSpec& g, int gpus, int batch) {
    ReferenceCase c;
    c.id = "row" + std::to_string(cases.size());
    c.source = "src";
    c.model = m;
    c.topology.gpu = &g;
    c.gpus = gpus;
    c.global_batch = batch;
    c.precision = Precision::kFp32;
    cases.push_back(c);
  };
  add(cnn, h100, 1, 256);  // 0
  add(cnn, h100, 2, 256);  // 1: the slower 2-GPU layout
  add(cnn, h100, 2, 256);  // 2: the faster
  add(cnn, h100, 4, 256);  // 3
  add(cnn, h100, 2, 512);  // 4: another batch, alone
  add(cnn, l20, 1, 256);   // 5: another GPU type
  add(gpt, h100, 1, 256);  // 6
  add(gpt, h100, 8, 256);  // 7
  const double measured[] = {10, 6, 5, 4, 3, 9, 8, 1};
  const double predicted[] = {10, 6, 5.5, 3, 3, 9, 8, 1};
  AccuracyReport rep;
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseResult r;
    r.ref = &cases[i];
    r.predicted = true;
    r.measured_s = measured[i];
    r.predicted_s = predicted[i];
    rep.results.push_back(r);
  }
  rep.results[5].predicted = false;  // not predicted: no step either way
  std::vector<ScalingStep> steps = ScalingSteps(rep);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].kind, "cnn");
  EXPECT_EQ(steps[0].run, "src wide_resnet__1B batch 256 on h100-sxm fp32");
  EXPECT_EQ(steps[0].from_gpus, 1);
  EXPECT_EQ(steps[0].to_gpus, 2);
  EXPECT_DOUBLE_EQ(steps[0].measured_speedup, 10.0 / 5);  // the faster layout
  EXPECT_DOUBLE_EQ(steps[0].predicted_speedup, 10.0 / 5.5);  // with its own prediction
  EXPECT_EQ(steps[1].from_gpus, 2);
  EXPECT_EQ(steps[1].to_gpus, 4);
  EXPECT_DOUBLE_EQ(steps[1].measured_speedup, 5.0 / 4);
  EXPECT_DOUBLE_EQ(steps[1].predicted_speedup, 5.5 / 3);
  EXPECT_EQ(steps[2].kind, "transformer");
  EXPECT_EQ(steps[2].from_gpus, 1);
  EXPECT_EQ(steps[2].to_gpus, 8);
  std::vector<ScalingStats> stats = SummarizeScaling(steps);
  std::map<std::string, ScalingStats> by;
  for (const auto& s : stats) by[s.group] = s;
  ASSERT_EQ(by.count("cnn 2->4"), 1u);
  EXPECT_EQ(by["cnn 2->4"].steps, 1);
  EXPECT_DOUBLE_EQ(by["cnn 2->4"].median_ratio, (5.5 / 3) / (5.0 / 4));
  EXPECT_EQ(by["cnn, all steps"].steps, 2);
  EXPECT_EQ(by["transformer 1->8"].steps, 1);
  // The kind's every-step line follows its steps.
  EXPECT_EQ(stats[0].group, "cnn 1->2");
  EXPECT_EQ(stats[2].group, "cnn, all steps");
}

// No parameter the calibration fits may sit on a bound: a value pinned at
// the published ceiling means the model is missing a mechanism, not that
// the GPU is that fast.
TEST(Calibration, EmbeddedDefaultsOffTheirBounds) {
  EXPECT_TRUE(ParamsOnBounds(DefaultPerfParams()).empty());
  for (const auto& a : DefaultPerfParams().archs) {
    EXPECT_GT(a.gemm, a.gemm_floor) << a.arch;
    EXPECT_LT(a.gemm, a.gemm_ceiling) << a.arch;
    EXPECT_FALSE(a.source.empty()) << a.arch << ": a bound needs its source";
  }
}

TEST(Calibration, RefitOffTheBoundsAndMatchesTheEmbedded) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok());
  PerfParams fitted = FitParams(*refs, DefaultPerfParams());
  auto on = ParamsOnBounds(fitted);
  EXPECT_TRUE(on.empty()) << on.front();
  // `tessel calibrate --cpp` wrote the embedded values from this fit.
  for (const auto& a : fitted.archs)
    EXPECT_NEAR(a.gemm, DefaultPerfParams().ForArch(a.arch).gemm, 0.01) << a.arch;
  const FrameworkProfile& alpa = **fitted.FindFramework("alpa");
  const FrameworkProfile& embedded = **DefaultPerfParams().FindFramework("alpa");
  EXPECT_NEAR(alpa.kernel_efficiency, embedded.kernel_efficiency, 0.01);
  EXPECT_NEAR(alpa.moe_gemm_efficiency, embedded.moe_gemm_efficiency, 0.01);
}

// Alpa's MoE routed-GEMM efficiency comes from the one-GPU runs: the MoE and
// the dense transformers' rows then agree on Alpa's kernels, where one
// kernel efficiency alone left the dense rows about 11% slower than the MoE
// rows (both Arena databases alike).
TEST(Calibration, AlpaOneGpuMoeAndDenseRowsAgree) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok());
  AccuracyReport rep = EvaluateAccuracy(*refs, Estimator());
  std::vector<double> moe, dense;
  for (const auto& r : rep.results) {
    const ReferenceCase& c = *r.ref;
    if (c.framework != "alpa" || c.gpus != 1 || c.model.kind != ModelKind::kTransformer || c.arch == "ada") continue;
    (c.model.tf.IsMoe() ? moe : dense).push_back(r.predicted_s / r.measured_s);
  }
  ASSERT_GE(moe.size(), 10u);
  ASSERT_GE(dense.size(), 8u);
  EXPECT_NEAR(Median(moe) / Median(dense), 1.0, 0.03);
}

// Alpa's kernel efficiency (its GEMMs against cuBLAS) is fitted on the
// transformers: the Wide-ResNet rows' times (cuDNN's fp32 convolutions) do
// not move it, whatever they are.
TEST(Calibration, AlpaKernelEfficiencyIsFittedOnItsTransformerRows) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok());
  ReferenceSet changed = *refs;
  int cnn = 0;
  for (auto& c : changed.cases)
    if (c.framework == "alpa" && c.model.kind == ModelKind::kCnn) {
      c.measured_iteration_s *= 3;
      ++cnn;
    }
  ASSERT_GE(cnn, 100);
  auto fitted = [](const ReferenceSet& s) {
    return (*FitParams(s, DefaultPerfParams(), 3).FindFramework("alpa"))->kernel_efficiency;
  };
  const double k = fitted(*refs);
  EXPECT_EQ(fitted(changed), k);
  // ... while its transformer rows do.
  for (auto& c : changed.cases)
    if (c.framework == "alpa" && c.model.kind == ModelKind::kTransformer) c.measured_iteration_s *= 1.2;
  EXPECT_LT(fitted(changed), k);
}

// Eager PyTorch's fp32 Wide-ResNet steps measured on an H100
// (published.csv, source tessel-h100-wrn): the CNN model, built from the
// convolutions' implicit GEMMs at the architecture's fitted efficiency and
// BatchNorm's passes over memory, predicts each within 8%.
TEST(Calibration, PredictsTheMeasuredWideResNetSteps) {
  ReferenceSet set;
  ASSERT_TRUE(LoadThroughputCsvText(EmbeddedPublishedCsv(), "published.csv", &set).ok());
  AccuracyReport rep = EvaluateAccuracy(set, Estimator());
  int rows = 0;
  for (const auto& r : rep.results) {
    if (r.ref->source != "tessel-h100-wrn") continue;
    ++rows;
    EXPECT_EQ(r.ref->model.kind, ModelKind::kCnn);
    EXPECT_EQ(r.ref->model.name, "wide_resnet__500M");
    EXPECT_EQ(r.ref->precision, Precision::kFp32);
    ASSERT_TRUE(r.predicted) << r.ref->id;
    EXPECT_NEAR(r.predicted_s / r.measured_s, 1.0, 0.08) << r.ref->id;
  }
  EXPECT_EQ(rows, 5);
}

TEST(Calibration, FitIgnoresRowsItIsNotGiven) {
  TESSEL_REQUIRE_DATA();
  auto refs = LoadReferences(ReferenceFiles::Under(testing::DataDir()), 28.5);
  ASSERT_TRUE(refs.ok());
  // Leaving out a source: doubling its measured times changes nothing.
  std::vector<const ReferenceCase*> train;
  ReferenceSet changed = *refs;
  for (auto& c : changed.cases)
    if (c.source == "arena-prof-db-h100-l20") c.measured_iteration_s *= 2;
  std::vector<const ReferenceCase*> a, b;
  for (const auto& c : refs->cases)
    if (c.source != "arena-prof-db-h100-l20") a.push_back(&c);
  for (const auto& c : changed.cases)
    if (c.source != "arena-prof-db-h100-l20") b.push_back(&c);
  PerfParams pa = FitParams(a, DefaultPerfParams(), 3), pb = FitParams(b, DefaultPerfParams(), 3);
  EXPECT_EQ(PerfParamsToJson(pa), PerfParamsToJson(pb));
  // Hopper then has only the other sources' H100 rows; Ada none: it takes
  // the fitted architectures' median fraction of ceiling.
  EXPECT_FALSE(pa.ForArch("ada").fitted);
}

}  // namespace
}  // namespace tessel

namespace tessel {
namespace {

// Whole training steps measured on an H100 (published.csv, source
// tessel-h100-eager; scripts/measure-kernels.py): the memory model against
// torch.cuda.max_memory_allocated, and the two configurations that ran out
// of memory.
// The rows of the built-in published.csv that `pick` selects, run and
// out-of-memory alike.
template <typename Pick>
ReferenceSet PublishedRows(Pick pick) {
  ReferenceSet all, picked;
  EXPECT_TRUE(LoadThroughputCsvText(EmbeddedPublishedCsv(), "published.csv", &all).ok());
  for (const auto& c : all.cases)
    if (pick(c)) picked.cases.push_back(c);
  for (const auto& c : all.out_of_memory)
    if (pick(c)) picked.out_of_memory.push_back(c);
  return picked;
}

AccuracyReport MeasuredH100(const PerfParams& params) {
  ReferenceSet mine = PublishedRows([](const ReferenceCase& c) { return c.source == "tessel-h100-eager"; });
  return EvaluateAccuracy(mine, Estimator(params));
}

TEST(Reference, MeasuredH100MemoryMatchesTheModel) {
  AccuracyReport rep = MeasuredH100(DefaultPerfParams());
  ASSERT_EQ(rep.results.size(), 48u);  // 29 without recompute, 19 with full recompute
  int full = 0;
  for (const CaseResult& r : rep.results) {
    ASSERT_TRUE(r.predicted) << r.ref->id;
    EXPECT_EQ(r.estimate.framework, "pytorch") << r.ref->id;
    EXPECT_TRUE(r.ref->model.tf.tied_embeddings) << r.ref->id;
    full += r.estimate.plan.recompute == Recompute::kFull;
    ASSERT_GT(r.ref->measured_memory_gib, 0) << r.ref->id;
    // What PyTorch's allocator counts: no CUDA context, no fragmentation.
    double allocated = r.estimate.memory.total_gib - r.estimate.memory.overhead_gib;
    EXPECT_LE(std::fabs(allocated / r.ref->measured_memory_gib - 1), 0.06)
        << r.ref->id << ": " << allocated << " vs " << r.ref->measured_memory_gib;
    // One GPU, one micro-batch: gradients and activations never coexist.
    EXPECT_FALSE(r.estimate.memory.gradients_beside_activations) << r.ref->id;
  }
  EXPECT_EQ(full, 19);
  EXPECT_EQ(rep.out_of_memory, 3);
  EXPECT_TRUE(rep.out_of_memory_called_fitting.empty()) << Join(rep.out_of_memory_called_fitting, ", ");
  // The time of the same steps, in-sample.
  EXPECT_LE(rep.overall.median_abs, 0.08);
}

// Each eager mechanism of the memory model is needed: without eager
// cross-entropy's fp32 gradients (8 bytes per logit held) the large
// micro-batches are under-counted; counting gradients beside activations
// over-counts the small ones; without autocast's fp32 residual stream,
// full recompute is under-counted.
TEST(Reference, MeasuredH100MemoryNeedsEachEagerMechanism) {
  auto worst = [](const PerfParams& p, bool over) {
    AccuracyReport rep = MeasuredH100(p);
    double w = 0;
    for (const auto& r : rep.results) {
      double err = (r.estimate.memory.total_gib - r.estimate.memory.overhead_gib) / r.ref->measured_memory_gib - 1;
      w = over ? std::max(w, err) : std::min(w, err);
    }
    return w;
  };
  PerfParams loss = DefaultPerfParams();
  loss.MutableFramework("pytorch")->loss_backward_bytes = 2;
  EXPECT_LT(worst(loss, false), -0.15);
  PerfParams grads = DefaultPerfParams();
  grads.MutableFramework("pytorch")->gradients_freed_each_step = false;
  EXPECT_GT(worst(grads, true), 0.08);
  PerfParams residual = DefaultPerfParams();
  residual.MutableFramework("pytorch")->autocast_fp32_residual = false;
  EXPECT_LT(worst(residual, false), -0.06);
}


// Our one-rank FSDP2 steps of eager (Hugging Face-style) Llama layers at
// micro-batches 1 and 2 (tessel-h100/h200-fsdp2): there the host sets the
// pace, about 4 ms per layer and step, which FSDP's per-unit hooks
// (layer_overhead_us) and the layer's 116 counted launches give; with the
// 150 us that FSDP1-era hooks were taken to cost, the small steps were
// predicted up to 83% fast.
TEST(Reference, FsdpStepsAtMicroBatchOneAreHostBound) {
  auto errors = [](const PerfParams& p) {
    ReferenceSet small = PublishedRows([](const ReferenceCase& c) {
      return (c.source == "tessel-h100-fsdp2" || c.source == "tessel-h200-fsdp2") && c.micro_batch <= 2;
    });
    small.out_of_memory.clear();  // the run steps only
    AccuracyReport rep = EvaluateAccuracy(small, Estimator(p));
    std::vector<double> e;
    for (const auto& r : rep.results) {
      EXPECT_TRUE(r.predicted) << r.ref->id;
      EXPECT_EQ(r.estimate.framework, "fsdp") << r.ref->id;
      e.push_back(r.throughput_error);
    }
    return e;
  };
  std::vector<double> now = errors(DefaultPerfParams());
  ASSERT_EQ(now.size(), 23u);
  std::vector<double> abs_now;
  for (double e : now) abs_now.push_back(std::fabs(e));
  EXPECT_LE(*std::max_element(abs_now.begin(), abs_now.end()), 0.25);
  EXPECT_LE(Quantile(abs_now, 0.5), 0.07);
  PerfParams light = DefaultPerfParams();
  light.MutableFramework("fsdp")->layer_overhead_us = 150;
  std::vector<double> before = errors(light);
  EXPECT_GT(*std::max_element(before.begin(), before.end()), 0.5) << "predicted far too fast without the hooks' host time";
}

}  // namespace
}  // namespace tessel
