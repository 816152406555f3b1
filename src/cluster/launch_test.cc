#include "cluster/launch.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cluster/metrics_file.h"

namespace tessel {
namespace {

LaunchSpec Spec() {
  LaunchSpec s;
  s.job_id = 7;
  s.job_name = "tiny-a";
  s.launch = 2;
  s.gpu_type = "a100-80g";
  s.nodes = {{"n1", 2}, {"n2", 1}};
  s.plan.dp = 3;
  s.plan.micro_batch = 4;
  s.plan.num_micro_batches = 2;
  s.plan.recompute = Recompute::kFull;
  s.plan.precision = Precision::kFp32;
  s.global_batch = 24;
  s.total_iterations = 200;
  s.checkpoint_dir = "/state/ckpt/7";
  s.metrics_file = "/state/jobs/7/metrics.jsonl";
  s.rendezvous_port = 31000;
  s.argv = {"/usr/bin/python3", "train.py", "--lr", "0.1; rm -rf /"};
  s.workdir = "/work dir";
  s.user_env = {{"MY_VAR", "a,b c"}, {"TESSEL_DP", "99"}};
  return s;
}

TEST(Launch, EnvironmentCarriesThePlanAndTheContractWinsOverUserVariables) {
  auto env = LaunchEnvironment(Spec());
  EXPECT_EQ(env["TESSEL_JOB_ID"], "7");
  EXPECT_EQ(env["TESSEL_LAUNCH"], "2");
  EXPECT_EQ(env["TESSEL_WORLD_SIZE"], "3");
  EXPECT_EQ(env["TESSEL_DP"], "3") << "a user's TESSEL_ variable never overrides the plan";
  EXPECT_EQ(env["TESSEL_MICRO_BATCH"], "4");
  EXPECT_EQ(env["TESSEL_NUM_MICRO_BATCHES"], "2");
  EXPECT_EQ(env["TESSEL_GLOBAL_BATCH"], "24");
  EXPECT_EQ(env["TESSEL_RECOMPUTE"], "full");
  EXPECT_EQ(env["TESSEL_PRECISION"], "fp32");
  EXPECT_EQ(env["MASTER_PORT"], "31000");
  EXPECT_EQ(env["MY_VAR"], "a,b c");
  EXPECT_EQ(env.count("TESSEL_PROFILE"), 0u);
  auto plan = nlohmann::json::parse(env["TESSEL_PLAN_JSON"]);
  EXPECT_EQ(plan["gpus"], 3);
  EXPECT_EQ(plan["nodes"], 2);
  EXPECT_EQ(plan["placement"][1]["node"], "n2");
  EXPECT_EQ(plan["global_batch"], 24);
}

TEST(Launch, ProfilingRunsOneTask) {
  LaunchSpec s = Spec();
  s.profile = true;
  s.profile_layers = 3;
  auto env = LaunchEnvironment(s);
  EXPECT_EQ(env["TESSEL_PROFILE"], "1");
  EXPECT_EQ(env["TESSEL_PROFILE_LAYERS"], "3");
  EXPECT_EQ(env["TESSEL_WORLD_SIZE"], "1");
}

TEST(Launch, LaunchFileRoundTripsArgvLiterally) {
  LaunchSpec s = Spec();
  auto r = ParseLaunchFile(LaunchFileJson(s), "l.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->argv, s.argv);
  EXPECT_EQ(r->workdir, "/work dir");
  EXPECT_EQ(r->env.at("TESSEL_JOB_NAME"), "tiny-a");
}

TEST(Launch, AFrameworkGetsItsArgumentsAfterTheJobsAndItsConfigBesideTheLaunchFile) {
  LaunchSpec s = Spec();
  s.framework = JobFramework::kDeepspeed;
  s.model_layers = 24;
  s.plan.zero = 2;
  s.plan.recompute = Recompute::kNone;
  auto files = RenderLaunch(s, "/state/jobs/7/launch.2.json");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->config_path, "/state/jobs/7/launch.2.deepspeed.json");
  EXPECT_NE(files->config_text.find("\"train_batch_size\": 24"), std::string::npos) << files->config_text;
  auto r = ParseLaunchFile(files->launch_text, "l.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::string> argv = s.argv;
  argv.insert(argv.end(), {"--deepspeed", "--deepspeed_config", "/state/jobs/7/launch.2.deepspeed.json"});
  EXPECT_EQ(r->argv, argv);
  EXPECT_EQ(r->env.at("TESSEL_ZERO_STAGE"), "2") << "the environment contract still holds";
  EXPECT_EQ(r->env.at("TESSEL_DP"), "3");

  s.framework = JobFramework::kMegatron;
  files = RenderLaunch(s, "/state/jobs/7/launch.2.json");
  ASSERT_FALSE(files.ok()) << "megatron has no ZeRO-2";
  EXPECT_EQ(files.status().code(), StatusCode::kInvalidArgument);
  const std::string why = "megatron cannot express plan d3 t1 p1 mb4x2 rc=none z2 fp32: ZeRO stage 2";
  EXPECT_EQ(files.status().message().rfind(why, 0), 0u) << files.status().message();

  s.framework = JobFramework::kTessel;
  files = RenderLaunch(s, "/state/jobs/7/launch.2.json");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->launch_text, LaunchFileJson(s));
  EXPECT_TRUE(files->config_path.empty());
}

TEST(Launch, PythonDirGoesFirstOnPythonPath) {
  LaunchSpec s = Spec();
  auto r = ParseLaunchFile(LaunchFileJson(s), "l.json");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->prepend.empty()) << "none without a python_dir";
  s.python_dir = "/opt/tessel/python";
  r = ParseLaunchFile(LaunchFileJson(s), "l.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prepend, (std::map<std::string, std::string>{{"PYTHONPATH", "/opt/tessel/python"}}));
  EXPECT_EQ(r->env.count("PYTHONPATH"), 0u) << "a user's PYTHONPATH is kept, after it";
  EXPECT_EQ(PrependToPathList("/opt/tessel/python", nullptr), "/opt/tessel/python");
  EXPECT_EQ(PrependToPathList("/opt/tessel/python", ""), "/opt/tessel/python");
  EXPECT_EQ(PrependToPathList("/opt/tessel/python", "/a:/b"), "/opt/tessel/python:/a:/b");
}

TEST(Launch, JobPythonDirIsTheSourceTreesUnlessTheDaemonSaysOtherwise) {
  const char* saved = std::getenv("TESSEL_PYTHON_DIR");
  std::string keep = saved != nullptr ? saved : "";
  unsetenv("TESSEL_PYTHON_DIR");
  EXPECT_EQ(JobPythonDir(), std::string(TESSEL_SOURCE_DIR) + "/python");
  setenv("TESSEL_PYTHON_DIR", "", 1);
  EXPECT_EQ(JobPythonDir(), std::string(TESSEL_SOURCE_DIR) + "/python") << "empty means unset";
  setenv("TESSEL_PYTHON_DIR", "/site/tessel-python", 1);
  EXPECT_EQ(JobPythonDir(), "/site/tessel-python");
  if (saved != nullptr) {
    setenv("TESSEL_PYTHON_DIR", keep.c_str(), 1);
  } else {
    unsetenv("TESSEL_PYTHON_DIR");
  }
}

TEST(Launch, BadLaunchFilesAreRefusedNamingTheFile) {
  for (const char* text : {"", "[]", "{\"argv\": [], \"workdir\": \"/\", \"env\": {}}",
                           "{\"argv\": [1], \"workdir\": \"/\", \"env\": {}}",
                           "{\"argv\": [\"/bin/true\"], \"env\": {}}",
                           "{\"argv\": [\"/bin/true\"], \"workdir\": \"/\", \"env\": {\"A\": 1}}",
                           // What the fuzzer found: an empty program.
                           "{\"argv\": [\"\"], \"workdir\": \"/\", \"env\": {}}",
                           "{\"argv\": [\"true\"], \"workdir\": \"/\", \"env\": {}}",
                           "{\"argv\": [\"/bin/true\\u0000x\"], \"workdir\": \"/\", \"env\": {}}",
                           "{\"argv\": [\"/bin/true\"], \"workdir\": \"rel\", \"env\": {}}",
                           "{\"argv\": [\"/bin/true\"], \"workdir\": \"/\", \"env\": {\"A\": \"a\\u0000\"}}",
                           "{\"argv\": [\"/bin/true\"], \"workdir\": \"/\", \"env\": {}, \"prepend\": [\"/p\"]}",
                           "{\"argv\": [\"/bin/true\"], \"workdir\": \"/\", \"env\": {}, \"prepend\": {\"P=\": \"/p\"}}"}) {
    auto r = ParseLaunchFile(text, "x/launch.json");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message().rfind("x/launch.json: not a tessel launch file", 0), 0u) << r.status().message();
  }
}

TEST(Launch, BatchScriptQuotesEveryPath) {
  std::string script = BatchScript("/opt/te'ssel", {"--ntasks=3", "--kill-on-bad-exit=1"}, "/s/l $x.json",
                                   "/s/exit.2");
  EXPECT_NE(script.find("srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))} '--ntasks=3' '--kill-on-bad-exit=1' '/opt/te'\\''ssel' job-exec '/s/l $x.json'"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("mv '/s/exit.2.tmp' '/s/exit.2'"), std::string::npos) << script;
  EXPECT_EQ(script.rfind("#!/bin/sh\n", 0), 0u);
}

TEST(MetricsTail, ReadsWholeLinesOnlyAndSkipsGarbage) {
  std::string path = ::testing::TempDir() + "/metrics_tail_test.jsonl";
  std::remove(path.c_str());
  MetricsTail tail(path);
  auto u = tail.Read();
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->steps.empty()) << "a missing file is not an error";
  {
    std::ofstream f(path, std::ios::binary);
    f << "{\"step\": 1, \"step_time_s\": 0.5, \"samples\": 32, \"time\": 100.5}\n"
      << "not json\n"
      << "{\"step\": \"two\", \"step_time_s\": 0.5}\n"
      << "{\"event\": \"checkpoint\", \"step\": 1}\n"
      << "{\"step\": 2, \"step_time_s\": 0.4";  // torn: no newline yet
  }
  u = tail.Read();
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u->steps.size(), 1u);
  EXPECT_EQ(u->steps[0].samples, 32);
  EXPECT_EQ(u->malformed, 2);
  EXPECT_EQ(u->checkpoint_step, 1);
  EXPECT_FALSE(u->done);
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f << ", \"samples\": 32}\n{\"profile\": true, \"step\": 0, \"step_time_s\": 0.1, \"micro_batch\": 4, "
         "\"layers\": 2}\n{\"event\": \"done\", \"step\": 2}\n";
  }
  u = tail.Read();
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u->steps.size(), 2u);
  EXPECT_EQ(u->steps[0].step, 2);
  EXPECT_DOUBLE_EQ(u->steps[0].step_time_s, 0.4);
  EXPECT_TRUE(u->steps[1].profile);
  EXPECT_EQ(u->steps[1].layers, 2);
  EXPECT_TRUE(u->done);
  u = tail.Read();
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->steps.empty()) << "nothing is read twice";
}

TEST(MetricsTail, AStepsLossIsKeptWhenItIsAFiniteNumber) {
  MetricsUpdate u;
  ParseMetricsLine(R"({"step": 1, "step_time_s": 0.5, "loss": 5.5451})", &u);
  ParseMetricsLine(R"({"step": 2, "step_time_s": 0.5, "loss": null})", &u);  // not finite at the job
  ParseMetricsLine(R"({"step": 3, "step_time_s": 0.5, "loss": "5.5"})", &u);
  ParseMetricsLine(R"({"step": 4, "step_time_s": 0.5})", &u);
  ASSERT_EQ(u.steps.size(), 4u) << "a missing or odd loss does not make the step malformed";
  EXPECT_EQ(u.malformed, 0);
  EXPECT_EQ(u.steps[0].loss, std::optional<double>(5.5451));
  EXPECT_EQ(u.steps[1].loss, std::nullopt);
  EXPECT_EQ(u.steps[2].loss, std::nullopt);
  EXPECT_EQ(u.steps[3].loss, std::nullopt);
}

// A metrics file of garbage, and one that grows without bound: whatever is
// in it, each read holds at most a chunk and a line (the daemon's memory
// does not grow with the file), reads at most its budget (the rest comes at
// the next reads), skips lines too long to be metrics and garbage nested
// deep, and still finds the real lines among them.
TEST(MetricsTail, GarbageAndUnboundedFilesAreReadWithinABound) {
  std::string path = ::testing::TempDir() + "/metrics_tail_garbage.jsonl";
  std::remove(path.c_str());
  const std::string step = "{\"step\": 1, \"step_time_s\": 0.5}\n";
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string(3 * kMetricsMaxLineBytes, 'x') << "\n"  // one line far too long
      << step
      << std::string(100000, '[') << std::string(100000, ']') << "\n"  // nested deep
      << "[1, 2, 3]\n\"text\"\n{}\n\x01\x02\xff\xfe\n"
      << "{\"step\": 1e300, \"step_time_s\": 1}\n{\"step\": -1, \"step_time_s\": 1}\n"
      << "{\"step\": 2, \"step_time_s\": NaN}\n";
    // More than one read's budget of noise lines, then the job's last lines.
    std::string noise = "noise " + std::string(1000, 'n') + "\n";
    for (int64_t written = 0; written < kMetricsReadBudget + 3 * kMetricsChunkBytes; written += noise.size()) f << noise;
    f << "{\"step\": 2, \"step_time_s\": 0.5}\n{\"event\": \"done\", \"step\": 2}\n"
      << std::string(2 * kMetricsMaxLineBytes, 'y');  // a long line, not finished
  }
  MetricsTail tail(path);
  auto u = tail.Read();
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->more) << "more than a read's budget is left";
  EXPECT_LE(tail.offset(), kMetricsReadBudget);
  ASSERT_EQ(u->steps.size(), 1u);
  EXPECT_EQ(u->steps[0].step, 1);
  EXPECT_GE(u->malformed, 9);
  EXPECT_FALSE(u->done);
  std::vector<MetricsStep> later;
  bool done = false;
  for (int reads = 0; reads < 10; ++reads) {
    u = tail.Read();
    ASSERT_TRUE(u.ok());
    later.insert(later.end(), u->steps.begin(), u->steps.end());
    done |= u->done;
    if (!u->more) break;
  }
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].step, 2);
  EXPECT_TRUE(done);
  // The unfinished long line is skipped as it grows, never held whole.
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path));
  EXPECT_EQ(tail.offset(), size);
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f << "yyy\n" << step;
  }
  u = tail.Read();
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u->steps.size(), 1u);
  EXPECT_FALSE(u->more);
}

}  // namespace
}  // namespace tessel
