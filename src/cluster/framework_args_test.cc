// Frameworks' own arguments for a plan: golden files per framework
// (testdata/frameworks/<case>.args, one argument per line, and the config
// file <case>.toml or <case>.json), compared byte for byte, and every
// refusal with its whole message.
//
// After an intended change, regenerate with
//   TESSEL_UPDATE_GOLDEN=1 ./build/tessel_tests --gtest_filter='FrameworkGolden*'
// and review the diff of src/cluster/testdata/frameworks/ before committing it.
#include "cluster/framework_args.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessel {
namespace {

// A plan: d t p v mb M recompute zero precision, ep 1.
ParallelPlan Plan(int dp, int tp, int pp, int v, int mb, int m, Recompute rc, int zero, Precision prec) {
  ParallelPlan p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.virtual_stages = v;
  p.micro_batch = mb;
  p.num_micro_batches = m;
  p.recompute = rc;
  p.zero = zero;
  p.precision = prec;
  return p;
}

ParallelPlan WithEp(ParallelPlan p, int ep) {
  p.ep = ep;
  return p;
}

constexpr Recompute kNone = Recompute::kNone, kSel = Recompute::kSelective, kFull = Recompute::kFull;
constexpr Precision kBf16 = Precision::kBf16, kFp16 = Precision::kFp16, kFp32 = Precision::kFp32,
                    kFp8 = Precision::kFp8;

struct GoldenCase {
  std::string name;  // file stem under testdata/frameworks/
  JobFramework framework;
  ParallelPlan plan;
  int layers;
};

// Test names show the case, not its bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

std::vector<GoldenCase> GoldenCases() {
  return {
      {"megatron_d4_t2_p2_v2_sel_z1_bf16", JobFramework::kMegatron, Plan(4, 2, 2, 2, 1, 8, kSel, 1, kBf16), 32},
      {"megatron_d8_full_z0_fp16", JobFramework::kMegatron, Plan(8, 1, 1, 1, 4, 2, kFull, 0, kFp16), 24},
      {"megatron_d4_t2_e4_z1_fp8", JobFramework::kMegatron, WithEp(Plan(4, 2, 1, 1, 2, 4, kNone, 1, kFp8), 4), 16},
      {"torchtitan_d8_fsdp_t2_full_bf16", JobFramework::kTorchtitan, Plan(8, 2, 1, 1, 2, 2, kFull, 3, kBf16), 32},
      {"torchtitan_d2_fsdp_p4_v2_sel_bf16", JobFramework::kTorchtitan, Plan(2, 1, 4, 2, 1, 8, kSel, 3, kBf16), 32},
      {"torchtitan_d8_z2_none_fp32", JobFramework::kTorchtitan, Plan(8, 1, 1, 1, 4, 1, kNone, 2, kFp32), 12},
      {"torchtitan_d8_ddp_fp8", JobFramework::kTorchtitan, Plan(8, 1, 1, 1, 4, 1, kNone, 0, kFp8), 12},
      {"deepspeed_d8_z2_full_bf16", JobFramework::kDeepspeed, Plan(8, 1, 1, 1, 2, 4, kFull, 2, kBf16), 24},
      {"deepspeed_d8_z3_full_bf16", JobFramework::kDeepspeed, Plan(8, 1, 1, 1, 2, 4, kFull, 3, kBf16), 24},
      {"deepspeed_d2_p4_z1_fp16", JobFramework::kDeepspeed, Plan(2, 1, 4, 1, 1, 8, kNone, 1, kFp16), 24},
  };
}

std::string GoldenDir() { return std::string(TESSEL_SOURCE_DIR) + "/src/cluster/testdata/frameworks"; }

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

FrameworkInputs Inputs(const GoldenCase& c) {
  FrameworkInputs in;
  in.plan = c.plan;
  in.model_layers = c.layers;
  in.total_iterations = 5000;
  in.checkpoint_dir = "/state/checkpoints/7";
  return in;
}

class FrameworkGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(FrameworkGolden, MatchesCheckedInArgumentsAndConfig) {
  const GoldenCase& c = GetParam();
  const std::string launch = "/state/jobs/7/launch.0.json";
  const std::string config_path = FrameworkConfigPath(c.framework, launch);
  auto r = RenderFrameworkArgs(c.framework, Inputs(c), config_path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto again = RenderFrameworkArgs(c.framework, Inputs(c), config_path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->argv, r->argv) << "not deterministic";
  EXPECT_EQ(again->config_text, r->config_text) << "not deterministic";
  std::string args;
  for (const std::string& a : r->argv) args += a + "\n";
  const std::string base = GoldenDir() + "/" + c.name;
  const std::string ext = config_path.empty() ? "" : config_path.substr(config_path.rfind('.'));
  EXPECT_EQ(config_path.empty(), r->config_text.empty()) << "a config file exactly when the framework reads one";
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(GoldenDir());
    std::ofstream(base + ".args", std::ios::binary) << args;
    if (!ext.empty()) std::ofstream(base + ext, std::ios::binary) << r->config_text;
    GTEST_SKIP() << "wrote " << base << ".*";
  }
  ASSERT_TRUE(std::filesystem::exists(base + ".args")) << base << ".args missing; run with TESSEL_UPDATE_GOLDEN=1";
  EXPECT_EQ(args, Slurp(base + ".args")) << "arguments differ from " << base << ".args";
  if (!ext.empty()) {
    EXPECT_EQ(r->config_text, Slurp(base + ext)) << "config differs from " << base << ext;
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, FrameworkGolden, ::testing::ValuesIn(GoldenCases()),
                         [](const auto& info) { return info.param.name; });

struct RefusalCase {
  std::string name;
  JobFramework framework;
  ParallelPlan plan;
  int layers;
  std::string expected;  // the whole message
};

std::vector<RefusalCase> RefusalCases() {
  const JobFramework mg = JobFramework::kMegatron, tt = JobFramework::kTorchtitan, ds = JobFramework::kDeepspeed;
  return {
      {"MegatronZero3", mg, Plan(8, 1, 1, 1, 1, 4, kFull, 3, kBf16), 24,
       "megatron cannot express plan d8 t1 p1 mb1x4 rc=full z3 bf16: ZeRO stage 3: Megatron's distributed "
       "optimizer (--use-distributed-optimizer) shards optimizer state only (ZeRO-1), and tessel does not "
       "render Megatron FSDP; use deepspeed or torchtitan, or a plan with ZeRO 0 or 1"},
      {"MegatronZero2", mg, Plan(4, 2, 1, 1, 2, 2, kNone, 2, kBf16), 24,
       "megatron cannot express plan d4 t2 p1 mb2x2 rc=none z2 bf16: ZeRO stage 2: Megatron's distributed "
       "optimizer (--use-distributed-optimizer) shards optimizer state only (ZeRO-1), and tessel does not "
       "render Megatron FSDP; use deepspeed or torchtitan, or a plan with ZeRO 0 or 1"},
      {"MegatronUnevenVirtualStages", mg, Plan(2, 1, 2, 4, 1, 8, kNone, 1, kBf16), 30,
       "megatron cannot express plan d2 t1 p2 v4 mb1x8 rc=none z1 bf16: interleaving v4 over p2 needs the "
       "model's 30 layers in 8 equal virtual stages (--num-layers-per-virtual-pipeline-stage); uneven splits "
       "are not rendered"},
      {"MegatronVirtualStagesWithoutLayers", mg, Plan(2, 1, 2, 2, 1, 8, kNone, 1, kBf16), 0,
       "megatron cannot express plan d2 t1 p2 v2 mb1x8 rc=none z1 bf16: interleaving (v2) needs the model's "
       "layer count for --num-layers-per-virtual-pipeline-stage, and it is unknown"},
      {"MegatronUnevenPipeline", mg, Plan(2, 1, 4, 1, 1, 8, kNone, 0, kBf16), 30,
       "megatron cannot express plan d2 t1 p4 mb1x8 rc=none z0 bf16: p4 needs the model's 30 layers split "
       "evenly over the pipeline (Megatron requires num_layers to be a multiple of "
       "--pipeline-model-parallel-size); uneven splits are not rendered"},
      {"TorchtitanZero1", tt, Plan(8, 1, 1, 1, 4, 1, kNone, 1, kBf16), 24,
       "torchtitan cannot express plan d8 t1 p1 mb4x1 rc=none z1 bf16: ZeRO stage 1: FSDP2 (fully_shard) "
       "shards parameters together with gradients and optimizer state, never optimizer state alone; use "
       "ZeRO 2 or 3 (data_parallel_shard_degree), or megatron or deepspeed"},
      {"TorchtitanDdpWithTensorParallelism", tt, Plan(4, 2, 1, 1, 4, 1, kNone, 0, kBf16), 24,
       "torchtitan cannot express plan d4 t2 p1 mb4x1 rc=none z0 bf16: ZeRO stage 0 beside tensor or pipeline "
       "parallelism: torchtitan's unsharded data parallelism (DDP, data_parallel_replicate_degree) runs only "
       "as the sole parallelism; use ZeRO 2 or 3 (FSDP)"},
      {"TorchtitanExpertsWithoutSharding", tt, WithEp(Plan(8, 1, 1, 1, 4, 1, kNone, 0, kBf16), 2), 24,
       "torchtitan cannot express plan d8 t1 p1 e2 mb4x1 rc=none z0 bf16: expert parallelism with ZeRO stage 0: "
       "torchtitan's expert_parallel_degree borrows ranks from the sharded data-parallel degree "
       "(data_parallel_shard_degree), which needs ZeRO 2 or 3"},
      {"TorchtitanFp16", tt, Plan(8, 1, 1, 1, 4, 1, kNone, 3, kFp16), 24,
       "torchtitan cannot express plan d8 t1 p1 mb4x1 rc=none z3 fp16: fp16: training.mixed_precision_param "
       "accepts bfloat16 or float32 only"},
      {"TorchtitanVirtualStagesWithoutLayers", tt, Plan(2, 1, 2, 2, 1, 8, kNone, 3, kBf16), 0,
       "torchtitan cannot express plan d2 t1 p2 v2 mb1x8 rc=none z3 bf16: interleaving (v2) needs the model's "
       "layer count for pipeline_parallel_layers_per_stage, and it is unknown"},
      {"TorchtitanNoLayersPerStageFits", tt, Plan(2, 1, 2, 4, 1, 8, kNone, 3, kBf16), 10,
       "torchtitan cannot express plan d2 t1 p2 v4 mb1x8 rc=none z3 bf16: interleaving v4 over p2: no "
       "pipeline_parallel_layers_per_stage cuts the model's 10 layers into 8 stages"},
      {"DeepspeedTensorParallelism", ds, Plan(4, 2, 1, 1, 2, 2, kNone, 1, kBf16), 24,
       "deepspeed cannot express plan d4 t2 p1 mb2x2 rc=none z1 bf16: tensor parallelism (t2) is not "
       "DeepSpeed's own: it comes from model code such as Megatron-DeepSpeed's; use megatron, or a plan with t1"},
      {"DeepspeedPipelineZero2", ds, Plan(2, 1, 4, 1, 1, 8, kNone, 2, kBf16), 24,
       "deepspeed cannot express plan d2 t1 p4 mb1x8 rc=none z2 bf16: ZeRO stage 2 with pipeline parallelism: "
       "DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (\"ZeRO-2 and ZeRO-3 are incompatible with "
       "pipeline parallelism\"); use ZeRO 0 or 1, or torchtitan"},
      {"DeepspeedPipelineZero3", ds, Plan(2, 1, 4, 1, 1, 8, kNone, 3, kBf16), 24,
       "deepspeed cannot express plan d2 t1 p4 mb1x8 rc=none z3 bf16: ZeRO stage 3 with pipeline parallelism: "
       "DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (\"ZeRO-2 and ZeRO-3 are incompatible with "
       "pipeline parallelism\"); use ZeRO 0 or 1, or torchtitan"},
      {"DeepspeedInterleaving", ds, Plan(2, 1, 2, 2, 1, 8, kNone, 1, kBf16), 24,
       "deepspeed cannot express plan d2 t1 p2 v2 mb1x8 rc=none z1 bf16: interleaving (v2): DeepSpeed's "
       "pipeline engine runs plain 1F1B, without virtual stages; use megatron"},
      {"DeepspeedExperts", ds, WithEp(Plan(8, 1, 1, 1, 4, 1, kNone, 1, kBf16), 4), 24,
       "deepspeed cannot express plan d8 t1 p1 e4 mb4x1 rc=none z1 bf16: expert parallelism (e4): DeepSpeed "
       "sets it in model code (deepspeed.moe.layer.MoE ep_size), not in its config, and tessel's environment "
       "does not carry it"},
      {"DeepspeedSelective", ds, Plan(8, 1, 1, 1, 4, 1, kSel, 2, kBf16), 24,
       "deepspeed cannot express plan d8 t1 p1 mb4x1 rc=selective z2 bf16: selective recompute: DeepSpeed "
       "recomputes whatever the model code wraps in deepspeed.checkpointing.checkpoint, and has no setting "
       "for recomputing attention only; use recompute none or full, or megatron"},
      {"DeepspeedFp8", ds, Plan(8, 1, 1, 1, 4, 1, kNone, 2, kFp8), 24,
       "deepspeed cannot express plan d8 t1 p1 mb4x1 rc=none z2 fp8: fp8: DeepSpeed's config has no FP8 "
       "training setting (FP8 comes from Transformer Engine in model code); use megatron or torchtitan"},
  };
}

TEST(FrameworkArgs, RefusesWhatAFrameworkCannotExpressSayingWhy) {
  for (const RefusalCase& c : RefusalCases()) {
    SCOPED_TRACE(c.name);
    Status s = CheckFrameworkPlan(c.framework, c.plan, c.layers);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.expected);
    FrameworkInputs in;
    in.plan = c.plan;
    in.model_layers = c.layers;
    auto r = RenderFrameworkArgs(c.framework, in, "/x/launch.0.cfg");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), c.expected) << "rendering refuses exactly what the check refuses";
    // tessel's own contract expresses every plan.
    EXPECT_TRUE(CheckFrameworkPlan(JobFramework::kTessel, c.plan, c.layers).ok());
  }
}

TEST(FrameworkArgs, OneReplicaHasNothingToShard) {
  // ZeRO 3 on one data-parallel replica: no sharding, so nothing to refuse.
  ParallelPlan p = Plan(1, 2, 1, 1, 1, 4, kNone, 3, kBf16);
  EXPECT_TRUE(CheckFrameworkPlan(JobFramework::kMegatron, p, 24).ok());
  auto r = RenderFrameworkArgs(JobFramework::kMegatron, FrameworkInputs{p, 24, 10, ""}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::count(r->argv.begin(), r->argv.end(), "--use-distributed-optimizer"), 0);
  EXPECT_EQ(std::count(r->argv.begin(), r->argv.end(), "--save"), 0) << "no checkpoint folder, no --save";
  p = Plan(1, 1, 2, 1, 1, 4, kNone, 2, kBf16);
  EXPECT_TRUE(CheckFrameworkPlan(JobFramework::kDeepspeed, p, 24).ok());
  r = RenderFrameworkArgs(JobFramework::kDeepspeed, FrameworkInputs{p, 24, 10, ""}, "/x/ds.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->config_text.find("\"stage\": 0"), std::string::npos) << r->config_text;
}

TEST(FrameworkArgs, TesselRendersNothingAndConfigFilesSitBesideTheLaunchFile) {
  auto r = RenderFrameworkArgs(JobFramework::kTessel, FrameworkInputs{}, "");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->argv.empty());
  EXPECT_TRUE(r->config_text.empty());
  EXPECT_EQ(FrameworkConfigPath(JobFramework::kTorchtitan, "/s/jobs/3/launch.2.json"),
            "/s/jobs/3/launch.2.torchtitan.toml");
  EXPECT_EQ(FrameworkConfigPath(JobFramework::kDeepspeed, "/s/jobs/3/profile.1.json"),
            "/s/jobs/3/profile.1.deepspeed.json");
  EXPECT_EQ(FrameworkConfigPath(JobFramework::kMegatron, "/s/jobs/3/launch.2.json"), "");
  EXPECT_EQ(FrameworkConfigPath(JobFramework::kTessel, "/s/jobs/3/launch.2.json"), "");
}

TEST(FrameworkArgs, TomlStringsAreEscaped) {
  FrameworkInputs in{Plan(8, 1, 1, 1, 1, 1, kNone, 3, kBf16), 12, 10, "/ck\"pt\\dir\n"};
  auto r = RenderFrameworkArgs(JobFramework::kTorchtitan, in, "/x.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->config_text.find("folder = \"/ck\\\"pt\\\\dir\\u000a\"\n"), std::string::npos) << r->config_text;
}

}  // namespace
}  // namespace tessel
