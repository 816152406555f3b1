#include "goodput/app_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/csv.h"
#include "testing/test_data.h"

namespace tessel::goodput {
namespace {

namespace fs = std::filesystem;
using ::tessel::testing::DataDir;
using ::tessel::testing::ProcessTempDir;

std::string PolluxApp(const std::string& app) { return DataDir() + "/pollux/apps/" + app; }
std::string SiaApps() { return DataDir() + "/sia/apps"; }

std::vector<int> Digits(const std::string& s) {
  std::vector<int> out;
  for (char c : s) out.push_back(c - '0');
  return out;
}

StepTime Tp(const AppProfile& app, const std::string& gpu, std::vector<int> placement, double bsz) {
  auto r = app.Throughput(gpu, placement, bsz);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : StepTime{};
}

// A fresh directory under the process's temp dir.
std::string NewDir(const std::string& name) {
  static int counter = 0;
  std::string d = ProcessTempDir() + "/app_profile_" + std::to_string(++counter) + "/" + name;
  fs::create_directories(d);
  return d;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

const char kValidation10[] =
    "progress,iteration,metric,grad_sqr,grad_var\n"
    "100,100,0.1,4.0,1.0\n"
    "250,250,0.2,2.0,3.0\n"
    "400,400,0.3,1.0,5.0\n";
const char kValidation30[] =
    "progress,iteration,metric,grad_sqr,grad_var\n"
    "120,40,0.1,8.0,2.0\n"
    "240,80,0.2,6.0,7.0\n";
const char kPlacements[] =
    "placement,local_bsz,step_time,sync_time\n"
    "1,10,1.0,0.0\n"
    "1,20,2.0,0.0\n"
    "4,10,2.0,0.5\n"
    "4,20,3.0,0.5\n"
    "21,10,5.0,1.0\n"
    "21,20,7.0,1.0\n";
const char kScalability[] =
    "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
    "3,6,10,4.0,1.0\n"
    "3,6,20,6.0,1.0\n"
    "3,12,10,8.0,2.0\n";

// A small synthetic application: validated at 10 and 30, T4 tables.
std::string SyntheticApp(const std::string& name = "toy") {
  std::string d = NewDir(name);
  WriteFile(d + "/validation-10.csv", kValidation10);
  WriteFile(d + "/validation-30.csv", kValidation30);
  WriteFile(d + "/placements.csv", kPlacements);
  WriteFile(d + "/scalability.csv", kScalability);
  return d;
}

// ---------------------------------------------------------------------------
// Synthetic profiles: exact values of the interpolation.

TEST(AppProfileSynthetic, BatchesEpochsAndLimits) {
  auto app = AppProfile::Load(SyntheticApp());
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->name(), "toy");
  EXPECT_EQ(app->init_batch(), 10);
  EXPECT_EQ(app->max_batch(), 30);
  EXPECT_EQ(app->max_epochs(), 2);  // the shorter validation file
  EXPECT_EQ(app->min_local_bsz(), 10);
  EXPECT_EQ(app->max_local_bsz(), 20);
  BatchLimits l = app->limits();
  EXPECT_EQ(l.init_batch, 10);
  EXPECT_EQ(l.max_batch, 30);
  EXPECT_EQ(l.min_atomic, 10);
  EXPECT_EQ(l.max_atomic, 20);
  EXPECT_EQ(app->gpu_types(), std::vector<std::string>{"t4"});
  EXPECT_TRUE(app->HasGpu("t4"));
  EXPECT_FALSE(app->HasGpu("v100-32g"));
  EXPECT_EQ(app->gpus_per_node("t4"), 4);
  EXPECT_EQ(app->gpus_per_node("v100-32g"), 0);
}

TEST(AppProfileSynthetic, ProgressAndEpochs) {
  auto app = AppProfile::Load(SyntheticApp());
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_DOUBLE_EQ(app->ProgressAt(0), 0);
  EXPECT_DOUBLE_EQ(app->ProgressAt(1), 100);  // min(100, 120)
  EXPECT_DOUBLE_EQ(app->ProgressAt(2), 240);  // min(250, 240)
  EXPECT_DOUBLE_EQ(app->ProgressAt(7), 240);  // clamped
  EXPECT_DOUBLE_EQ(app->ProgressAt(-3), 0);
  EXPECT_DOUBLE_EQ(app->TargetProgress(), 240);
  EXPECT_EQ(app->EpochAt(-1), 0);
  EXPECT_EQ(app->EpochAt(0), 0);
  EXPECT_EQ(app->EpochAt(99.9), 0);
  EXPECT_EQ(app->EpochAt(100), 1);  // a boundary belongs to the next epoch
  EXPECT_EQ(app->EpochAt(239), 1);
  EXPECT_EQ(app->EpochAt(240), 2);
  EXPECT_EQ(app->EpochAt(1e9), 2);
}

TEST(AppProfileSynthetic, GradStatsInterpolateInBatch) {
  auto app = AppProfile::Load(SyntheticApp());
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  GradStats g = app->GradStatsAt(10, 0);
  EXPECT_DOUBLE_EQ(g.sqr, 4.0);
  EXPECT_DOUBLE_EQ(g.var, 1.0);
  g = app->GradStatsAt(20, 0);  // halfway
  EXPECT_DOUBLE_EQ(g.sqr, 6.0);
  EXPECT_DOUBLE_EQ(g.var, 1.5);
  g = app->GradStatsAt(25, 1);
  EXPECT_DOUBLE_EQ(g.sqr, 2.0 + 0.75 * 4.0);
  EXPECT_DOUBLE_EQ(g.var, 3.0 + 0.75 * 4.0);
  g = app->GradStatsAt(1000, 5);  // batch and epoch clamped
  EXPECT_DOUBLE_EQ(g.sqr, 6.0);
  EXPECT_DOUBLE_EQ(g.var, 7.0);
  g = app->GradStatsAt(1, -1);
  EXPECT_DOUBLE_EQ(g.sqr, 4.0);
  EXPECT_DOUBLE_EQ(g.var, 1.0);
}

TEST(AppProfileSynthetic, ProfiledPlacementInterpolatesInLocalBatch) {
  auto app = AppProfile::Load(SyntheticApp());
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  StepTime t = Tp(*app, "t4", {1}, 15);
  EXPECT_DOUBLE_EQ(t.step_s, 1.5);
  EXPECT_DOUBLE_EQ(t.sync_s, 0.0);
  t = Tp(*app, "t4", {4}, 12.5);
  EXPECT_DOUBLE_EQ(t.step_s, 2.25);
  EXPECT_DOUBLE_EQ(t.sync_s, 0.5);
  // Clamped to the profiled local batch range.
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {1}, 1).step_s, 1.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {1}, 500).step_s, 2.0);
  // The file says "21"; the lookup is by smallest rotation, zeros dropped.
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {1, 2}, 15).step_s, 6.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {2, 1}, 15).step_s, 6.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {0, 2, 0, 1, 0}, 15).step_s, 6.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {0, 1, 0}, 10).step_s, 1.0);
}

TEST(AppProfileSynthetic, UnprofiledPlacementInterpolatesOverTheGrid) {
  auto app = AppProfile::Load(SyntheticApp());
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  // One node, 2 replicas: linear between replicas 1 and 4 (weight 1/3).
  StepTime t = Tp(*app, "t4", {2}, 15);
  EXPECT_NEAR(t.step_s, 1.5 + (2.5 - 1.5) / 3, 1e-12);
  EXPECT_NEAR(t.sync_s, 0.5 / 3, 1e-12);
  // Three nodes, 9 replicas: between (3,6) at bsz 20 = 6 and (3,12) = 8
  // (one local batch, so clamped).
  t = Tp(*app, "t4", {3, 3, 3}, 20);
  EXPECT_NEAR(t.step_s, 7.0, 1e-12);
  EXPECT_NEAR(t.sync_s, 1.5, 1e-12);
  // Scalability row exactly.
  t = Tp(*app, "t4", {2, 2, 2}, 10);
  EXPECT_NEAR(t.step_s, 4.0, 1e-12);
  EXPECT_NEAR(t.sync_s, 1.0, 1e-12);
  // Two nodes, 2 replicas: the grid has nodes 1 (the one-node placement
  // means), 2 (only "21": replicas 3) and 3. Nodes 2 exists, replicas 2 is
  // clamped to 3 there: the "21" rows.
  t = Tp(*app, "t4", {1, 1}, 15);
  EXPECT_NEAR(t.step_s, 6.0, 1e-12);
  EXPECT_NEAR(t.sync_s, 1.0, 1e-12);
  // Past every edge: nodes -> 3, replicas -> 12, bsz -> 10.
  t = Tp(*app, "t4", {5, 5, 5, 5}, 1);
  EXPECT_NEAR(t.step_s, 8.0, 1e-12);
  EXPECT_NEAR(t.sync_s, 2.0, 1e-12);
  // Counts above 9 cannot be placement digits; they use the grid.
  t = Tp(*app, "t4", {12}, 10);
  EXPECT_NEAR(t.step_s, 2.0, 1e-12);  // nodes 1, replicas clamped to 4
}

TEST(AppProfileSynthetic, TensorProductAcrossNodeCounts) {
  std::string d = NewDir("grid");
  WriteFile(d + "/validation-10.csv", kValidation10);
  WriteFile(d + "/placements.csv",
            "placement,local_bsz,step_time,sync_time\n"
            "1,10,1.0,0.0\n"
            "1,20,2.0,0.0\n"
            "4,10,2.0,0.5\n"
            "4,20,3.0,0.5\n");
  WriteFile(d + "/scalability.csv", kScalability);
  auto app = AppProfile::Load(d);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  // Nodes 2: halfway between nodes 1 (replicas 2 between 1 and 4) and
  // nodes 3 (replicas clamped to 6: 5.0 at bsz 15).
  StepTime t = Tp(*app, "t4", {1, 1}, 15);
  double n1_step = 1.5 + 1.0 / 3, n1_sync = 0.5 / 3;
  EXPECT_NEAR(t.step_s, 0.5 * (n1_step + 5.0), 1e-12);
  EXPECT_NEAR(t.sync_s, 0.5 * (n1_sync + 1.0), 1e-12);
}

TEST(AppProfileSynthetic, DuplicateRowsAreAveraged) {
  std::string d = NewDir("dups");
  WriteFile(d + "/validation-10.csv", kValidation10);
  WriteFile(d + "/placements.csv",
            "placement,local_bsz,step_time,sync_time\n"
            "1,10,1.0,0.1\n"
            "1,20,2.0,0.1\n"
            "1,20,4.0,0.3\n"
            "2,10,3.0,0.4\n");
  auto app = AppProfile::Load(d);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {1}, 20).step_s, 3.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {1}, 20).sync_s, 0.2);
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {1}, 15).step_s, 2.0);
  // No scalability file: fine; an unprofiled placement uses the means.
  StepTime t = Tp(*app, "t4", {1, 1}, 10);  // nodes 2 -> clamped to 1, replicas 2
  EXPECT_DOUBLE_EQ(t.step_s, 3.0);
}

TEST(AppProfileSynthetic, NodeKindsMapToCatalogGpus) {
  std::string d = NewDir("kinds");
  WriteFile(d + "/validation-10.csv", kValidation10);
  auto placements = [](double step, int bsz_lo, int bsz_hi, char gpus) {
    std::string s = "local_bsz,step_time,sync_time,placement\n";  // Sia's column order
    s += std::to_string(bsz_lo) + "," + std::to_string(step) + ",0.01," + gpus + "\n";
    s += std::to_string(bsz_hi) + "," + std::to_string(step) + ",0.01," + gpus + "\n";
    return s;
  };
  WriteFile(d + "/placements.csv", placements(9.0, 1, 100, '4'));
  WriteFile(d + "/placements-aws.csv", placements(1.0, 8, 16, '4'));
  WriteFile(d + "/placements-dgx.csv", placements(9.0, 2, 200, '8'));
  WriteFile(d + "/placements-dgx-ext.csv", placements(2.0, 4, 64, '8'));
  WriteFile(d + "/placements-azure.csv", placements(3.0, 4, 32, '8'));
  WriteFile(d + "/placements-quad.csv", placements(4.0, 4, 32, '4'));
  WriteFile(d + "/placements-rtx.csv", placements(5.0, 4, 32, '8'));
  WriteFile(d + "/placements-tpu.csv", placements(6.0, 4, 32, '8'));  // unknown: ignored
  auto app = AppProfile::Load(d);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->gpu_types(),
            (std::vector<std::string>{"a100-40g", "rtx2080ti", "rtx6000", "t4", "v100-32g"}));
  EXPECT_DOUBLE_EQ(Tp(*app, "t4", {4}, 8).step_s, 1.0);        // aws over unsuffixed
  EXPECT_DOUBLE_EQ(Tp(*app, "a100-40g", {8}, 8).step_s, 2.0);  // dgx-ext over dgx
  EXPECT_DOUBLE_EQ(Tp(*app, "v100-32g", {8}, 8).step_s, 3.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "rtx6000", {4}, 8).step_s, 4.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "rtx2080ti", {8}, 8).step_s, 5.0);
  EXPECT_EQ(app->gpus_per_node("a100-40g"), 8);
  EXPECT_EQ(app->gpus_per_node("t4"), 4);
  // Local batch limits come from the T4 table.
  EXPECT_EQ(app->min_local_bsz(), 8);
  EXPECT_EQ(app->max_local_bsz(), 16);
}

TEST(AppProfileSynthetic, WithoutT4LimitsSpanAllTables) {
  std::string d = NewDir("not4");
  WriteFile(d + "/validation-10.csv", kValidation10);
  WriteFile(d + "/placements-rtx.csv",
            "placement,local_bsz,step_time,sync_time\n8,4,1,0.1\n8,12,2,0.1\n");
  WriteFile(d + "/placements-dgx.csv",
            "placement,local_bsz,step_time,sync_time\n8,2,1,0.1\n8,6,2,0.1\n");
  auto app = AppProfile::Load(d);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->min_local_bsz(), 2);
  EXPECT_EQ(app->max_local_bsz(), 12);
  EXPECT_EQ(app->gpu_types(), (std::vector<std::string>{"a100-40g", "rtx2080ti"}));
  // Each table clamps to its own range.
  EXPECT_DOUBLE_EQ(Tp(*app, "a100-40g", {8}, 12).step_s, 2.0);
  EXPECT_DOUBLE_EQ(Tp(*app, "rtx2080ti", {8}, 2).step_s, 1.0);
}

TEST(AppProfileSynthetic, SettingsOverrideAndAreClamped) {
  std::string d = SyntheticApp();
  AppSettings s;
  s.max_epochs = 1;
  s.max_local_bsz = 16;
  auto app = AppProfile::Load(d, s);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->max_epochs(), 1);
  EXPECT_DOUBLE_EQ(app->TargetProgress(), 100);
  EXPECT_EQ(app->max_local_bsz(), 16);
  s.max_epochs = 50;  // more than the profiles have: clamped, no error
  app = AppProfile::Load(d, s);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->max_epochs(), 2);
  s.max_epochs = 0;
  EXPECT_EQ(AppProfile::Load(d, s).status().code(), StatusCode::kInvalidArgument);
}

TEST(AppProfileSettings, Defaults) {
  EXPECT_EQ(DefaultAppSettings("bert").max_epochs, 2);
  EXPECT_EQ(DefaultAppSettings("cifar10").max_epochs, 100);
  EXPECT_EQ(DefaultAppSettings("ncf").max_epochs, 10);
  EXPECT_EQ(DefaultAppSettings("imagenet").max_epochs, 90);
  EXPECT_EQ(DefaultAppSettings("deepspeech2").max_epochs, 80);
  EXPECT_EQ(DefaultAppSettings("yolov3").max_epochs, 50);
  EXPECT_EQ(DefaultAppSettings("yolov3").max_local_bsz, 8);
  EXPECT_EQ(DefaultAppSettings("gpt_pmp").max_epochs, 10);
  EXPECT_FALSE(DefaultAppSettings("cifar10").max_local_bsz.has_value());
  EXPECT_FALSE(DefaultAppSettings("other").max_epochs.has_value());
  EXPECT_FALSE(DefaultAppSettings("other").max_local_bsz.has_value());
}

TEST(AppProfileSynthetic, ThroughputArgumentErrors) {
  auto app = AppProfile::Load(SyntheticApp());
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  auto r = app->Throughput("h100", std::vector<int>{1}, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("toy"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("h100"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("t4"), std::string::npos) << r.status().message();
  r = app->Throughput("t4", std::vector<int>{}, 10);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = app->Throughput("t4", std::vector<int>{0, 0}, 10);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = app->Throughput("t4", std::vector<int>{1, -1}, 10);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Bad input.

std::string LoadError(const std::string& dir) {
  auto app = AppProfile::Load(dir);
  EXPECT_FALSE(app.ok()) << dir << " loaded";
  return app.ok() ? std::string() : app.status().message();
}

TEST(AppProfileErrors, MissingDirectory) {
  std::string d = ProcessTempDir() + "/app_profile_no_such_dir/cifar10";
  auto app = AppProfile::Load(d);
  ASSERT_FALSE(app.ok());
  EXPECT_EQ(app.status().code(), StatusCode::kNotFound);
  EXPECT_NE(app.status().message().find(d), std::string::npos) << app.status().message();
}

TEST(AppProfileErrors, NoValidationFiles) {
  std::string d = NewDir("noval");
  WriteFile(d + "/placements.csv", kPlacements);
  auto app = AppProfile::Load(d);
  ASSERT_FALSE(app.ok());
  EXPECT_EQ(app.status().code(), StatusCode::kNotFound);
  EXPECT_NE(app.status().message().find(d), std::string::npos) << app.status().message();
  EXPECT_NE(app.status().message().find("validation-"), std::string::npos)
      << app.status().message();
}

TEST(AppProfileErrors, NoPlacements) {
  std::string d = NewDir("noplace");
  WriteFile(d + "/validation-10.csv", kValidation10);
  WriteFile(d + "/scalability.csv", kScalability);
  auto app = AppProfile::Load(d);
  ASSERT_FALSE(app.ok());
  EXPECT_EQ(app.status().code(), StatusCode::kNotFound);
  EXPECT_NE(app.status().message().find("placements"), std::string::npos) << app.status().message();
  EXPECT_NE(app.status().message().find(d), std::string::npos) << app.status().message();
}

TEST(AppProfileErrors, MalformedNumberNamesFileLineColumn) {
  std::string d = SyntheticApp();
  WriteFile(d + "/placements.csv",
            "placement,local_bsz,step_time,sync_time\n"
            "1,10,1.0,0.0\n"
            "1,20,fast,0.0\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("placements.csv:3: step_time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fast"), std::string::npos) << msg;
}

TEST(AppProfileErrors, NegativeStepTime) {
  std::string d = SyntheticApp();
  WriteFile(d + "/placements.csv",
            "placement,local_bsz,step_time,sync_time\n"
            "1,10,-1.0,0.0\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("placements.csv:2: step_time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("positive"), std::string::npos) << msg;
}

TEST(AppProfileErrors, BadScalabilityRow) {
  std::string d = SyntheticApp();
  WriteFile(d + "/scalability.csv",
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
            "2,4,10,1.0,0.1\n"
            "2,4,0,1.0,0.1\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("scalability.csv:3: local_bsz"), std::string::npos) << msg;
}

TEST(AppProfileErrors, BadPlacementString) {
  std::string d = SyntheticApp();
  WriteFile(d + "/placements.csv",
            "placement,local_bsz,step_time,sync_time\n"
            "1x,10,1.0,0.0\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("placements.csv:2: placement"), std::string::npos) << msg;
}

TEST(AppProfileErrors, MissingColumn) {
  std::string d = SyntheticApp();
  WriteFile(d + "/placements.csv", "placement,local_bsz,step_time\n1,10,1.0\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("sync_time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("placements.csv"), std::string::npos) << msg;
}

TEST(AppProfileErrors, EmptyValidationFile) {
  std::string d = SyntheticApp();
  WriteFile(d + "/validation-20.csv", "progress,iteration,metric,grad_sqr,grad_var\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("validation-20.csv"), std::string::npos) << msg;
}

TEST(AppProfileErrors, MalformedValidation) {
  std::string d = SyntheticApp();
  WriteFile(d + "/validation-20.csv",
            "progress,iteration,metric,grad_sqr,grad_var\n"
            "100,100,0.1,4.0,1.0\n"
            "200,200,0.1,abc,1.0\n");
  std::string msg = LoadError(d);
  EXPECT_NE(msg.find("validation-20.csv:3: grad_sqr"), std::string::npos) << msg;

  d = SyntheticApp();
  WriteFile(d + "/validation-big.csv", kValidation10);
  msg = LoadError(d);
  EXPECT_NE(msg.find("validation-big.csv"), std::string::npos) << msg;
}

TEST(AppProfileErrors, CatalogNamesTheFailingApp) {
  std::string root = NewDir("apps");
  fs::copy(SyntheticApp("good"), root + "/good");
  fs::create_directories(root + "/broken");
  WriteFile(root + "/broken/placements.csv", kPlacements);
  WriteFile(root + "/README.md", "not an app\n");
  auto cat = AppCatalog::Load(root);
  ASSERT_FALSE(cat.ok());
  EXPECT_NE(cat.status().message().find("broken"), std::string::npos) << cat.status().message();

  fs::remove_all(root + "/broken");
  cat = AppCatalog::Load(root);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  EXPECT_EQ(cat->names(), std::vector<std::string>{"good"});
  EXPECT_NE(cat->Find("good"), nullptr);
  EXPECT_EQ(cat->Find("bad"), nullptr);
  EXPECT_EQ(cat->dir(), root);

  EXPECT_EQ(AppCatalog::Load(root + "/missing").status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------
// The real profiles.

class AppProfileCifar10 : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSEL_REQUIRE_DATA();
    auto app = AppProfile::Load(PolluxApp("cifar10"));
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    app_ = std::make_unique<AppProfile>(std::move(*app));
  }
  std::unique_ptr<AppProfile> app_;
};

TEST_F(AppProfileCifar10, Batches) {
  EXPECT_EQ(app_->name(), "cifar10");
  EXPECT_EQ(app_->init_batch(), 128);
  EXPECT_EQ(app_->max_batch(), 4096);
  EXPECT_EQ(app_->max_epochs(), 100);
  EXPECT_EQ(app_->min_local_bsz(), 32);
  EXPECT_EQ(app_->max_local_bsz(), 1024);
  EXPECT_EQ(app_->gpu_types(), std::vector<std::string>{"t4"});
  EXPECT_EQ(app_->gpus_per_node("t4"), 4);
}

TEST_F(AppProfileCifar10, SingleGpuInterpolatesBetweenRows) {
  // placements.csv has placement 1 at local_bsz 91 and 129 (not 128):
  //   1,91,0.07591350078582763,0.0005244320034980774
  //   1,129,0.10385050773620605,0.0005253599941730499
  StepTime t = Tp(*app_, "t4", {1}, 128);
  double w = (128.0 - 91) / (129 - 91);
  EXPECT_NEAR(t.step_s, 0.07591350078582763 + w * (0.10385050773620605 - 0.07591350078582763),
              1e-12);
  EXPECT_NEAR(t.sync_s, 0.0005244320034980774 + w * (0.0005253599941730499 - 0.0005244320034980774),
              1e-15);
  t = Tp(*app_, "t4", {1}, 129);
  EXPECT_DOUBLE_EQ(t.step_s, 0.10385050773620605);
  EXPECT_DOUBLE_EQ(t.sync_s, 0.0005253599941730499);
}

TEST_F(AppProfileCifar10, EveryProfiledRowIsReproduced) {
  auto table = CsvTable::ReadFile(PolluxApp("cifar10") + "/placements.csv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  int checked = 0, multi_node = 0;
  for (const CsvRow& row : table->rows()) {
    std::string p = table->Get(row, "placement");
    double bsz = *table->GetDouble(row, "local_bsz");
    double step = *table->GetDouble(row, "step_time");
    double sync = *table->GetDouble(row, "sync_time");
    std::vector<int> placement = Digits(p);
    StepTime t = Tp(*app_, "t4", placement, bsz);
    EXPECT_DOUBLE_EQ(t.step_s, step) << p << " @ " << bsz;
    EXPECT_DOUBLE_EQ(t.sync_s, sync) << p << " @ " << bsz;
    // Every rotation, with zeros mixed in, is the same placement.
    for (size_t k = 1; k < placement.size(); ++k) {
      std::vector<int> rot(placement.begin() + static_cast<long>(k), placement.end());
      rot.insert(rot.end(), placement.begin(), placement.begin() + static_cast<long>(k));
      rot.insert(rot.begin() + 1, 0);
      StepTime r = Tp(*app_, "t4", rot, bsz);
      EXPECT_EQ(r.step_s, t.step_s) << p << " rotated by " << k;
      EXPECT_EQ(r.sync_s, t.sync_s) << p << " rotated by " << k;
    }
    ++checked;
    if (p.size() > 1) ++multi_node;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(multi_node, 500);
}

TEST_F(AppProfileCifar10, TwoByTwoMatchesItsRows) {
  // 22,32,0.147501540184021,0.10572534713745116
  // 22,129,0.19032814502716064,0.08500737342834472
  StepTime t = Tp(*app_, "t4", {2, 2}, 32);
  EXPECT_DOUBLE_EQ(t.step_s, 0.147501540184021);
  EXPECT_DOUBLE_EQ(t.sync_s, 0.10572534713745116);
  t = Tp(*app_, "t4", {2, 0, 2}, 129);
  EXPECT_DOUBLE_EQ(t.step_s, 0.19032814502716064);
  EXPECT_DOUBLE_EQ(t.sync_s, 0.08500737342834472);
}

TEST_F(AppProfileCifar10, UnprofiledPlacementUsesScalabilityRows) {
  // scalability.csv, 6 nodes at local_bsz 129:
  //   6,20,129,0.17838051319122314,0.07131444549560546
  //   6,24,129,0.21288609504699707,0.10608852081298828
  const double s20 = 0.17838051319122314, s24 = 0.21288609504699707;
  const double y20 = 0.07131444549560546, y24 = 0.10608852081298828;
  StepTime exact = Tp(*app_, "t4", {4, 4, 4, 4, 4, 4}, 129);  // 6 nodes x 4 = 24
  EXPECT_NEAR(exact.step_s, s24, 1e-12);
  EXPECT_NEAR(exact.sync_s, y24, 1e-12);
  StepTime mid = Tp(*app_, "t4", {4, 4, 4, 3, 3, 3}, 129);  // 21 replicas
  EXPECT_GT(mid.step_s, s20);
  EXPECT_LT(mid.step_s, s24);
  EXPECT_NEAR(mid.step_s, s20 + 0.25 * (s24 - s20), 1e-12);
  EXPECT_NEAR(mid.sync_s, y20 + 0.25 * (y24 - y20), 1e-12);
}

TEST_F(AppProfileCifar10, AnyPlacementGivesPositiveFiniteTimes) {
  for (int nodes = 1; nodes <= 20; ++nodes) {
    for (int per = 1; per <= 4; ++per) {
      for (double bsz : {1.0, 32.0, 100.0, 128.0, 700.0, 1024.0, 5000.0}) {
        std::vector<int> placement(static_cast<size_t>(nodes), per);
        StepTime t = Tp(*app_, "t4", placement, bsz);
        EXPECT_TRUE(std::isfinite(t.step_s) && t.step_s > 0) << nodes << "x" << per << " @ " << bsz;
        EXPECT_TRUE(std::isfinite(t.sync_s) && t.sync_s >= 0)
            << nodes << "x" << per << " @ " << bsz;
      }
    }
  }
  // Uneven placements too.
  StepTime t = Tp(*app_, "t4", {4, 1, 3, 2, 4, 4, 1}, 200);
  EXPECT_GT(t.step_s, 0);
}

TEST_F(AppProfileCifar10, ProgressAndEpochs) {
  EXPECT_EQ(app_->ProgressAt(0), 0);
  for (int e = 1; e <= app_->max_epochs(); ++e)
    EXPECT_GE(app_->ProgressAt(e), app_->ProgressAt(e - 1)) << e;
  EXPECT_EQ(app_->TargetProgress(), app_->ProgressAt(app_->max_epochs()));
  EXPECT_EQ(app_->TargetProgress(), app_->ProgressAt(app_->max_epochs() + 10));
  for (int e = 0; e <= app_->max_epochs(); ++e)
    EXPECT_EQ(app_->EpochAt(app_->ProgressAt(e)), e) << e;
  // Just before a boundary is the previous epoch.
  EXPECT_EQ(app_->EpochAt(std::nextafter(app_->ProgressAt(5), 0.0)), 4);
  // validation-128.csv's first row is progress 391.0, validation-256.csv's
  // 390.71438596642224: the smaller wins.
  EXPECT_DOUBLE_EQ(app_->ProgressAt(1), 390.71438596642224);
}

TEST_F(AppProfileCifar10, GradStatsMatchValidationRows) {
  auto v128 = CsvTable::ReadFile(PolluxApp("cifar10") + "/validation-128.csv");
  auto v256 = CsvTable::ReadFile(PolluxApp("cifar10") + "/validation-256.csv");
  ASSERT_TRUE(v128.ok() && v256.ok());
  for (int e : {0, 1, 10, 99}) {
    const CsvRow& a = v128->rows()[static_cast<size_t>(e)];
    const CsvRow& b = v256->rows()[static_cast<size_t>(e)];
    double sqr_a = *v128->GetDouble(a, "grad_sqr"), var_a = *v128->GetDouble(a, "grad_var");
    double sqr_b = *v256->GetDouble(b, "grad_sqr"), var_b = *v256->GetDouble(b, "grad_var");
    GradStats g = app_->GradStatsAt(128, e);
    EXPECT_DOUBLE_EQ(g.sqr, sqr_a);
    EXPECT_DOUBLE_EQ(g.var, var_a);
    g = app_->GradStatsAt(256, e);
    EXPECT_DOUBLE_EQ(g.sqr, sqr_b);
    EXPECT_DOUBLE_EQ(g.var, var_b);
    g = app_->GradStatsAt(192, e);  // halfway
    EXPECT_NEAR(g.sqr, 0.5 * (sqr_a + sqr_b), 1e-12 * std::abs(sqr_a + sqr_b));
    EXPECT_NEAR(g.var, 0.5 * (var_a + var_b), 1e-12 * std::abs(var_a + var_b));
  }
}

TEST(AppProfileSia, Cifar10GpuTypes) {
  TESSEL_REQUIRE_DATA();
  auto app = AppProfile::Load(SiaApps() + "/cifar10");
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->gpu_types(),
            (std::vector<std::string>{"a100-40g", "rtx2080ti", "rtx6000", "t4", "v100-32g"}));
  EXPECT_EQ(app->gpus_per_node("t4"), 4);
  EXPECT_EQ(app->gpus_per_node("a100-40g"), 8);
  EXPECT_EQ(app->gpus_per_node("v100-32g"), 8);
  EXPECT_EQ(app->gpus_per_node("rtx6000"), 4);
  EXPECT_EQ(app->gpus_per_node("rtx2080ti"), 8);
  EXPECT_EQ(app->min_local_bsz(), 32);
  EXPECT_EQ(app->max_local_bsz(), 1024);  // from the T4 (aws) table
  // A100 (dgx-ext) is faster than T4 for one GPU at the same batch.
  EXPECT_LT(Tp(*app, "a100-40g", {1}, 128).step_s, Tp(*app, "t4", {1}, 128).step_s);
}

TEST(AppProfileSia, Yolov3MaxLocalBatch) {
  TESSEL_REQUIRE_DATA();
  auto app = AppProfile::Load(SiaApps() + "/yolov3");
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->max_local_bsz(), 8);
  EXPECT_EQ(app->max_epochs(), 50);
  EXPECT_EQ(app->limits().max_atomic, 8);
}

TEST(AppProfileSia, CatalogLoadsAllApps) {
  TESSEL_REQUIRE_DATA();
  auto start = std::chrono::steady_clock::now();
  auto cat = AppCatalog::Load(SiaApps());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  std::cout << "loaded " << cat->names().size() << " sia apps in " << ms << " ms\n";
  EXPECT_EQ(cat->names(), (std::vector<std::string>{"bert", "cifar10", "deepspeech2", "gpt_pmp",
                                                    "imagenet", "ncf", "yolov3"}));
  const AppProfile* gpt = cat->Find("gpt_pmp");
  ASSERT_NE(gpt, nullptr);
  EXPECT_EQ(gpt->gpu_types(), (std::vector<std::string>{"a100-40g", "rtx2080ti"}));
  EXPECT_EQ(gpt->max_epochs(), 2);  // the setting (10) clamped to the profiles
  EXPECT_EQ(cat->Find("bert")->max_epochs(), 2);
  EXPECT_EQ(cat->Find("imagenet")->max_epochs(), 90);
  // Every application answers on every profiled GPU, for all placements up
  // to 16 nodes full and over its local batch range.
  for (const auto& name : cat->names()) {
    const AppProfile* app = cat->Find(name);
    ASSERT_NE(app, nullptr);
    EXPECT_GE(app->TargetProgress(), app->ProgressAt(1)) << name;
    for (const auto& gpu : app->gpu_types()) {
      int per_node = app->gpus_per_node(gpu);
      ASSERT_GT(per_node, 0) << name << " " << gpu;
      for (int nodes = 1; nodes <= 16; nodes *= 2) {
        for (int per = 1; per <= per_node; ++per) {
          std::vector<int> placement(static_cast<size_t>(nodes), per);
          for (double bsz : {double(app->min_local_bsz()), double(app->max_local_bsz())}) {
            StepTime t = Tp(*app, gpu, placement, bsz);
            EXPECT_TRUE(std::isfinite(t.step_s) && t.step_s > 0) << name << " " << gpu;
            EXPECT_TRUE(std::isfinite(t.sync_s) && t.sync_s >= 0) << name << " " << gpu;
          }
        }
      }
    }
  }
}

TEST(AppProfilePollux, CatalogLoadsSixApps) {
  TESSEL_REQUIRE_DATA();
  auto cat = AppCatalog::Load(DataDir() + "/pollux/apps");
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  EXPECT_EQ(cat->names(), (std::vector<std::string>{"bert", "cifar10", "deepspeech2", "imagenet",
                                                    "ncf", "yolov3"}));
  for (const auto& name : cat->names()) {
    EXPECT_EQ(cat->Find(name)->max_epochs(), DefaultAppSettings(name).max_epochs.value()) << name;
  }
}

}  // namespace
}  // namespace tessel::goodput
