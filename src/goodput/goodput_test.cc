#include "goodput/goodput.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/csv.h"
#include "testing/test_data.h"

namespace tessel::goodput {
namespace {

// ---------------------------------------------------------------------------
// Statistical efficiency.

TEST(GoodputEfficiency, OneAtInitBatchAndDecreasingWithNoise) {
  const GradStats g{.sqr = 1.0, .var = 50.0};
  for (ScalingRule rule : {ScalingRule::kAdaScale, ScalingRule::kLinear, ScalingRule::kSqrt}) {
    EXPECT_DOUBLE_EQ(Efficiency(g, 128, 128, rule), 1.0) << ScalingRuleName(rule);
    EXPECT_DOUBLE_EQ(Gain(g, 128, 128, rule), 1.0) << ScalingRuleName(rule);
    double prev = 1.0;
    for (double batch : {160.0, 256.0, 512.0, 1000.0, 4096.0, 65536.0}) {
      const double e = Efficiency(g, 128, batch, rule);
      EXPECT_LT(e, prev) << ScalingRuleName(rule) << " batch " << batch;
      EXPECT_GT(e, 0.0);
      prev = e;
    }
  }
}

TEST(GoodputEfficiency, GainNeverExceedsScale) {
  for (double var : {0.0, 0.1, 1.0, 10.0, 1e4}) {
    for (double sqr : {0.0, 0.01, 1.0, 100.0}) {
      const GradStats g{.sqr = sqr, .var = var};
      for (double s : {1.0, 1.5, 2.0, 7.0, 64.0, 1000.0}) {
        for (ScalingRule rule :
             {ScalingRule::kAdaScale, ScalingRule::kLinear, ScalingRule::kSqrt}) {
          const double gain = Gain(g, 32, 32 * s, rule);
          EXPECT_LE(gain, s * (1 + 1e-12)) << "var " << var << " sqr " << sqr << " s " << s;
          EXPECT_GE(gain, 1.0 - 1e-12);
        }
        // The sqrt rule is never credited more than AdaScale.
        EXPECT_LE(Gain(g, 32, 32 * s, ScalingRule::kSqrt),
                  Gain(g, 32, 32 * s, ScalingRule::kAdaScale) * (1 + 1e-12));
        EXPECT_DOUBLE_EQ(Gain(g, 32, 32 * s, ScalingRule::kLinear),
                         Gain(g, 32, 32 * s, ScalingRule::kAdaScale));
      }
    }
  }
}

TEST(GoodputEfficiency, KnownValues) {
  const GradStats g{.sqr = 1.0, .var = 3.0};
  // s = 2: (3 + 1) / (1.5 + 1) = 1.6.
  EXPECT_DOUBLE_EQ(Gain(g, 100, 200), 1.6);
  EXPECT_DOUBLE_EQ(Efficiency(g, 100, 200), 0.8);
  // s = 4: ada = 4 / 1.75 = 2.2857 > sqrt(4) = 2.
  EXPECT_DOUBLE_EQ(Gain(g, 100, 400, ScalingRule::kSqrt), 2.0);
  // Unknown statistics scale perfectly (sqrt still caps at sqrt(s)).
  EXPECT_DOUBLE_EQ(Gain(GradStats{}, 100, 800), 8.0);
  EXPECT_DOUBLE_EQ(Efficiency(GradStats{}, 100, 800), 1.0);
  EXPECT_DOUBLE_EQ(Gain(GradStats{}, 100, 400, ScalingRule::kSqrt), 2.0);
  // No noise: a larger batch makes no more progress than the initial one.
  EXPECT_DOUBLE_EQ(Gain(GradStats{.sqr = 2.0, .var = 0.0}, 100, 800), 1.0);
}

TEST(GoodputEfficiency, LrScale) {
  const GradStats g{.sqr = 1.0, .var = 3.0};
  EXPECT_DOUBLE_EQ(LrScale(g, 100, 200, ScalingRule::kAdaScale), 1.6);
  EXPECT_DOUBLE_EQ(LrScale(g, 100, 200, ScalingRule::kLinear), 2.0);
  EXPECT_DOUBLE_EQ(LrScale(g, 100, 400, ScalingRule::kSqrt), 2.0);
}

TEST(GoodputScalingRule, ParseAndName) {
  for (ScalingRule rule : {ScalingRule::kAdaScale, ScalingRule::kLinear, ScalingRule::kSqrt}) {
    auto parsed = ParseScalingRule(ScalingRuleName(rule));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, rule);
  }
  auto bad = ParseScalingRule("cubic");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  for (const char* name : {"cubic", "adascale", "linear", "sqrt"})
    EXPECT_NE(bad.status().message().find(name), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseScalingRule("").ok());
}

// ---------------------------------------------------------------------------
// Throughput model.

TEST(GoodputModel, Predictions) {
  ThroughputParams p;
  p.alpha_c = 0.01;
  p.beta_c = 0.001;
  p.alpha_n = 0.2;
  p.beta_n = 0.02;
  p.alpha_r = 0.05;
  p.beta_r = 0.005;
  p.gamma = 1.0;
  EXPECT_DOUBLE_EQ(PredictAccumTime(p, 100), 0.11);
  EXPECT_DOUBLE_EQ(PredictSyncTime(p, 1, 1), 0.0);
  EXPECT_DOUBLE_EQ(PredictSyncTime(p, 1, 2), 0.05);
  EXPECT_DOUBLE_EQ(PredictSyncTime(p, 1, 4), 0.06);
  EXPECT_DOUBLE_EQ(PredictSyncTime(p, 2, 2), 0.2);
  EXPECT_DOUBLE_EQ(PredictSyncTime(p, 2, 8), 0.32);
  // Single GPU: the step is the compute.
  EXPECT_DOUBLE_EQ(PredictStepTime(p, 1, 1, 100), 0.11);
  // gamma = 1: no overlap.
  EXPECT_NEAR(PredictStepTime(p, 1, 2, 100), 0.16, 1e-12);
  // Large gamma: full overlap, the step is the larger part.
  p.gamma = 10.0;
  const double t = PredictStepTime(p, 2, 2, 100);
  EXPECT_GT(t, 0.2);
  EXPECT_LT(t, 0.2 * 1.001);
  // Accumulation: (replicas * atomic * 2) / (T_accum + T_step).
  p.gamma = 1.0;
  EXPECT_NEAR(PredictThroughput(p, 1, 2, 100, 1), 400 / (0.11 + 0.16), 1e-9);
  EXPECT_NEAR(PredictThroughput(p, 1, 1, 100, 0), 100 / 0.11, 1e-9);
}

TEST(GoodputModel, ToString) {
  const std::string s = ThroughputParams{}.ToString();
  for (const char* key :
       {"alpha_c=", "beta_c=", "alpha_n=", "beta_n=", "alpha_r=", "beta_r=", "gamma="})
    EXPECT_NE(s.find(key), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos);
}

// ---------------------------------------------------------------------------
// Fitting.

ThroughputParams TruthParams() {
  ThroughputParams p;
  p.alpha_c = 0.03;
  p.beta_c = 0.0015;
  p.alpha_n = 0.12;
  p.beta_n = 0.015;
  p.alpha_r = 0.02;
  p.beta_r = 0.004;
  p.gamma = 1.8;
  return p;
}

StepObservation Observe(const ThroughputParams& p, int nodes, int replicas, double bsz) {
  return StepObservation{.nodes = nodes,
                         .replicas = replicas,
                         .atomic_bsz = bsz,
                         .accum_time = PredictAccumTime(p, bsz),
                         .step_time = PredictStepTime(p, nodes, replicas, bsz)};
}

TEST(GoodputFit, RecoversKnownParameters) {
  const ThroughputParams truth = TruthParams();
  // ~30 observed configurations.
  std::vector<StepObservation> obs;
  const std::vector<std::pair<int, int>> placements = {{1, 1}, {1, 2}, {1, 4}, {2, 2},
                                                       {2, 4}, {2, 8}, {4, 16}};
  for (auto [n, r] : placements)
    for (double bsz : {16.0, 48.0, 128.0, 256.0}) obs.push_back(Observe(truth, n, r, bsz));
  auto fit = FitThroughputParams(obs);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_LT(fit->rmsle_accum, 0.01);
  EXPECT_LT(fit->rmsle_step, 0.01);
  EXPECT_GT(fit->iterations, 0);
  // Held-out configurations: other batch sizes and placements.
  const std::vector<std::pair<int, int>> held_out = {{1, 3}, {1, 8}, {2, 6}, {3, 12},
                                                     {4, 8}, {8, 32}, {1, 1}};
  for (auto [n, r] : held_out) {
    for (double bsz : {24.0, 64.0, 96.0, 200.0}) {
      const double want = PredictStepTime(truth, n, r, bsz);
      const double got = PredictStepTime(fit->params, n, r, bsz);
      EXPECT_NEAR(got / want, 1.0, 0.02)
          << "n=" << n << " r=" << r << " bsz=" << bsz << " fit " << fit->params.ToString();
      EXPECT_NEAR(PredictAccumTime(fit->params, bsz) / PredictAccumTime(truth, bsz), 1.0, 0.02);
    }
  }
}

TEST(GoodputFit, DeterministicAndRepeatable) {
  const ThroughputParams truth = TruthParams();
  std::vector<StepObservation> obs;
  for (int r : {1, 2, 4})
    for (double bsz : {32.0, 64.0, 128.0}) obs.push_back(Observe(truth, 1, r, bsz));
  auto a = FitThroughputParams(obs);
  auto b = FitThroughputParams(obs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->params.ToString(), b->params.ToString());
  EXPECT_EQ(a->params.alpha_c, b->params.alpha_c);
  EXPECT_EQ(a->params.gamma, b->params.gamma);
  EXPECT_EQ(a->iterations, b->iterations);
}

TEST(GoodputFit, SingleNodeDataPinsInterNodeTerms) {
  const ThroughputParams truth = TruthParams();
  std::vector<StepObservation> obs;
  for (int r : {1, 2, 3, 4})
    for (double bsz : {32.0, 64.0, 128.0}) obs.push_back(Observe(truth, 1, r, bsz));
  auto fit = FitThroughputParams(obs);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  const ThroughputParams& p = fit->params;
  // Pessimistic prior: inter-node at least 1.1x intra-node.
  EXPECT_GE(p.alpha_n, 1.1 * p.alpha_r * (1 - 1e-12));
  EXPECT_GE(p.beta_n, 1.1 * p.beta_r * (1 - 1e-12));
  for (int r = 2; r <= 16; ++r) {
    EXPECT_GE(PredictSyncTime(p, 2, r), PredictSyncTime(p, 1, r)) << r;
    EXPECT_GE(PredictStepTime(p, 2, r, 64), PredictStepTime(p, 1, r, 64)) << r;
  }
  // The intra-node terms are fitted from the data.
  EXPECT_NEAR(PredictStepTime(p, 1, 3, 64) / PredictStepTime(truth, 1, 3, 64), 1.0, 0.02);
}

TEST(GoodputFit, PinsWhatTheDataCannotIdentify) {
  const ThroughputParams truth = TruthParams();
  {
    // One GPU, one batch size: only compute, alpha_c = mean / 2.
    std::vector<StepObservation> obs = {Observe(truth, 1, 1, 64), Observe(truth, 1, 1, 64)};
    obs[1].accum_time *= 1.1;
    obs[1].step_time *= 1.1;
    auto fit = FitThroughputParams(obs);
    ASSERT_TRUE(fit.ok()) << fit.status().ToString();
    const double mean = (obs[0].accum_time + obs[1].accum_time) / 2;
    EXPECT_NEAR(fit->params.alpha_c, mean / 2, 1e-12 * mean);
    EXPECT_NEAR(PredictAccumTime(fit->params, 64) / mean, 1.0, 0.01);
    // No sync observed at all: every sync term at the lower bound, the
    // inter-node ones raised to 1.1x the intra-node ones.
    EXPECT_DOUBLE_EQ(fit->params.alpha_r, 1e-8);
    EXPECT_DOUBLE_EQ(fit->params.beta_r, 1e-8);
    EXPECT_DOUBLE_EQ(fit->params.alpha_n, 1.1e-8);
    EXPECT_DOUBLE_EQ(fit->params.beta_n, 1.1e-8);
  }
  {
    // At most two replicas: both beta_x pinned at the lower bound.
    std::vector<StepObservation> obs;
    for (auto [n, r] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 2}})
      for (double bsz : {32.0, 128.0}) obs.push_back(Observe(truth, n, r, bsz));
    auto fit = FitThroughputParams(obs);
    ASSERT_TRUE(fit.ok()) << fit.status().ToString();
    EXPECT_DOUBLE_EQ(fit->params.beta_n, 1e-8);
    EXPECT_DOUBLE_EQ(fit->params.beta_r, 1e-8);
    EXPECT_NEAR(PredictSyncTime(fit->params, 2, 2) / truth.alpha_n, 1.0, 0.1);
  }
  {
    // Only multi-node data: the intra-node terms stay at the lower bound.
    std::vector<StepObservation> obs;
    for (int r : {2, 4, 8})
      for (double bsz : {32.0, 128.0}) obs.push_back(Observe(truth, 2, r, bsz));
    auto fit = FitThroughputParams(obs);
    ASSERT_TRUE(fit.ok()) << fit.status().ToString();
    EXPECT_DOUBLE_EQ(fit->params.alpha_r, 1e-8);
    EXPECT_DOUBLE_EQ(fit->params.beta_r, 1e-8);
  }
}

TEST(GoodputFit, RespectsBounds) {
  // Sync that does not grow with replicas, overlap-free data.
  std::vector<StepObservation> obs;
  for (int r : {2, 4, 8})
    for (double bsz : {16.0, 64.0})
      obs.push_back({.nodes = 2, .replicas = r, .atomic_bsz = bsz,
                     .accum_time = 0.01 + 0.001 * bsz, .step_time = 0.11 + 0.001 * bsz});
  auto fit = FitThroughputParams(obs);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  const ThroughputParams& p = fit->params;
  for (double v : {p.alpha_c, p.beta_c, p.alpha_n, p.beta_n, p.alpha_r, p.beta_r})
    EXPECT_GE(v, 1e-8);
  EXPECT_GE(p.gamma, 1.0);
  EXPECT_LE(p.gamma, 10.0);
}

TEST(GoodputFit, BadInput) {
  auto empty = FitThroughputParams({});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);

  const StepObservation good{.nodes = 1, .replicas = 2, .atomic_bsz = 32,
                             .accum_time = 0.1, .step_time = 0.12};
  struct Case {
    const char* field;
    void (*spoil)(StepObservation&);
  };
  const Case cases[] = {
      {"nodes", [](StepObservation& o) { o.nodes = 0; }},
      {"replicas", [](StepObservation& o) { o.replicas = -1; }},
      {"replicas", [](StepObservation& o) { o.nodes = 3; }},
      {"atomic_bsz", [](StepObservation& o) { o.atomic_bsz = 0; }},
      {"accum_time", [](StepObservation& o) { o.accum_time = -0.5; }},
      {"step_time", [](StepObservation& o) { o.step_time = 0; }},
      {"step_time", [](StepObservation& o) { o.step_time = std::nan(""); }},
  };
  for (const Case& c : cases) {
    std::vector<StepObservation> obs(4, good);
    c.spoil(obs[2]);
    auto fit = FitThroughputParams(obs);
    ASSERT_FALSE(fit.ok()) << c.field;
    EXPECT_EQ(fit.status().code(), StatusCode::kInvalidArgument);
    const std::string& msg = fit.status().message();
    EXPECT_NE(msg.find("observation 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
  }
}

// Reads a Pollux application's placements.csv into observations.
std::vector<StepObservation> ReadPlacements(const std::string& app) {
  const std::string path = testing::DataDir() + "/pollux/apps/" + app + "/placements.csv";
  auto table = CsvTable::ReadFile(path);
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  std::vector<StepObservation> obs;
  if (!table.ok()) return obs;
  for (const CsvRow& row : table->rows()) {
    const std::string placement = table->Get(row, "placement");
    auto bsz = table->GetDouble(row, "local_bsz");
    auto step = table->GetDouble(row, "step_time");
    auto sync = table->GetDouble(row, "sync_time");
    EXPECT_TRUE(bsz.ok() && step.ok() && sync.ok()) << table->Where(row, "placement");
    if (!bsz.ok() || !step.ok() || !sync.ok()) continue;
    StepObservation o;
    o.nodes = 0;
    o.replicas = 0;
    for (char ch : placement) {
      const int count = ch - '0';
      EXPECT_TRUE(count >= 0 && count <= 9) << table->Where(row, "placement");
      if (count > 0) {
        ++o.nodes;
        o.replicas += count;
      }
    }
    o.atomic_bsz = *bsz;
    o.step_time = *step;
    o.accum_time = *step - *sync;
    obs.push_back(o);
  }
  return obs;
}

double RmsRelativeStepError(const ThroughputParams& p, const std::vector<StepObservation>& obs) {
  double sum = 0;
  for (const StepObservation& o : obs) {
    const double rel = PredictStepTime(p, o.nodes, o.replicas, o.atomic_bsz) / o.step_time - 1;
    sum += rel * rel;
  }
  return std::sqrt(sum / static_cast<double>(obs.size()));
}

// Fits all rows of an application's placements.csv and checks the RMS
// relative error of the predicted step time over those rows.
void CheckProfileFit(const std::string& app, double max_rms_rel_error) {
  const std::vector<StepObservation> obs = ReadPlacements(app);
  ASSERT_GT(obs.size(), 100u) << app;
  auto fit = FitThroughputParams(obs);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  const double err = RmsRelativeStepError(fit->params, obs);
  EXPECT_LT(err, max_rms_rel_error) << app << ": " << fit->params.ToString()
                                    << " rmsle_step=" << fit->rmsle_step;
  // Crossing nodes is slower than staying inside one on this testbed.
  EXPECT_GT(PredictSyncTime(fit->params, 2, 4), PredictSyncTime(fit->params, 1, 4)) << app;
}

// Bounds: measured with this fit on all rows of each application's
// placements.csv (Pollux testbed), plus ~25% headroom:
//   cifar10  (1183 rows): RMS relative step-time error 0.100 -> bound 0.13
//   imagenet ( 864 rows): RMS relative step-time error 0.094 -> bound 0.12
// The model has one sync curve per link type and (nodes, replicas), so the
// residual is mostly the spread between placements with the same counts.
TEST(GoodputFitProfile, Cifar10) {
  TESSEL_REQUIRE_DATA();
  CheckProfileFit("cifar10", 0.13);
}

TEST(GoodputFitProfile, Imagenet) {
  TESSEL_REQUIRE_DATA();
  CheckProfileFit("imagenet", 0.12);
}

// ---------------------------------------------------------------------------
// The batch-size agent.

ThroughputParams AgentParams() {
  ThroughputParams p;
  p.alpha_c = 0.02;
  p.beta_c = 0.0008;
  p.alpha_n = 0.15;
  p.beta_n = 0.01;
  p.alpha_r = 0.03;
  p.beta_r = 0.004;
  p.gamma = 1.5;
  return p;
}

TEST(GoodputAgent, OptimizeStaysWithinLimits) {
  const std::vector<BatchLimits> limits = {
      {.init_batch = 128, .max_batch = 4096, .min_atomic = 8, .max_atomic = 256},
      {.init_batch = 32, .max_batch = 32, .min_atomic = 1, .max_atomic = 32},
      {.init_batch = 100, .max_batch = 100, .min_atomic = 1, .max_atomic = 64},
      {.init_batch = 64, .max_batch = 65536, .min_atomic = 16, .max_atomic = 96},
      {.init_batch = 12, .max_batch = 384, .min_atomic = 2, .max_atomic = 8},
      {.init_batch = 512, .max_batch = 2000, .min_atomic = 4, .max_atomic = 1000},
  };
  for (const GradStats& grad : {GradStats{.sqr = 1, .var = 0}, GradStats{.sqr = 1, .var = 30},
                                GradStats{.sqr = 1, .var = 1e5}, GradStats{}}) {
    for (const BatchLimits& l : limits) {
      const GoodputFunction f(AgentParams(), grad, l);
      for (int replicas = 1; replicas <= 64; ++replicas) {
        const int nodes = (replicas + 3) / 4;
        for (bool accumulation : {true, false}) {
          const BatchChoice c = f.Optimize(nodes, replicas, accumulation);
          const std::string where = "init " + std::to_string(l.init_batch) + " max " +
                                    std::to_string(l.max_batch) + " replicas " +
                                    std::to_string(replicas) + " accum " +
                                    std::to_string(accumulation) + " var " +
                                    std::to_string(grad.var);
          if (l.min_atomic * replicas > l.max_batch) {
            EXPECT_FALSE(c.valid) << where;
            continue;
          }
          if (accumulation && replicas == 1) {
            EXPECT_TRUE(c.valid) << where;
          }
          if (!c.valid) continue;
          EXPECT_GE(c.atomic_bsz, l.min_atomic) << where;
          EXPECT_LE(c.atomic_bsz, l.max_atomic) << where;
          EXPECT_LE(c.batch, l.max_batch) << where;
          EXPECT_GE(c.batch, l.init_batch) << where;
          EXPECT_GE(c.accum_steps, 0) << where;
          if (!accumulation) {
            EXPECT_EQ(c.accum_steps, 0) << where;
          }
          EXPECT_EQ(c.batch, replicas * c.atomic_bsz * (c.accum_steps + 1)) << where;
          EXPECT_NEAR(c.goodput, c.throughput * c.efficiency, 1e-9 * c.goodput) << where;
          EXPECT_NEAR(c.goodput, f.Evaluate(nodes, replicas, c.atomic_bsz, c.accum_steps),
                      1e-9 * c.goodput)
              << where;
          EXPECT_GT(c.throughput, 0) << where;
        }
      }
    }
  }
}

TEST(GoodputAgent, OptimizeBeatsEveryFixedBatchOnTheGrid) {
  const BatchLimits l{.init_batch = 64, .max_batch = 8192, .min_atomic = 4, .max_atomic = 128};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 200}, l);
  for (int replicas : {1, 2, 4, 8}) {
    const BatchChoice best = f.Optimize((replicas + 3) / 4, replicas);
    ASSERT_TRUE(best.valid);
    for (int batch : {64, 128, 256, 512, 1024, 2048}) {
      const BatchChoice fixed = f.Fixed((replicas + 3) / 4, replicas, batch);
      if (fixed.valid && fixed.atomic_bsz >= l.min_atomic && fixed.batch <= l.max_batch) {
        EXPECT_GE(best.goodput, fixed.goodput * 0.98) << replicas << " " << batch;
      }
    }
  }
}

TEST(GoodputAgent, NoNoiseKeepsTheSmallestBatch) {
  const BatchLimits l{.init_batch = 128, .max_batch = 8192, .min_atomic = 16, .max_atomic = 256};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 0}, l);
  for (int replicas : {1, 2, 3, 4, 8, 16, 32}) {
    const BatchChoice c = f.Optimize((replicas + 3) / 4, replicas);
    ASSERT_TRUE(c.valid) << replicas;
    // The smallest batch the allocation can run: at least init_batch and at
    // least min_atomic per GPU, rounded up to whole samples per GPU.
    const int smallest = std::max(l.init_batch, l.min_atomic * replicas);
    EXPECT_LE(c.batch, smallest + replicas - 1) << replicas;
    EXPECT_EQ(c.accum_steps, 0) << replicas;
  }
  // Unknown statistics (perfect scaling) prefer the largest batch instead.
  const GoodputFunction perfect(AgentParams(), GradStats{}, l);
  EXPECT_EQ(perfect.Optimize(1, 4).batch, l.max_batch);
}

TEST(GoodputAgent, HighNoiseBatchGrowsWithReplicas) {
  const BatchLimits l{.init_batch = 64, .max_batch = 16384, .min_atomic = 4, .max_atomic = 256};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 2000}, l);
  int prev = 0, first = 0;
  for (int replicas : {1, 2, 4, 8, 16, 32}) {
    const BatchChoice c = f.Optimize((replicas + 3) / 4, replicas);
    ASSERT_TRUE(c.valid) << replicas;
    EXPECT_GE(c.batch, prev) << replicas;
    if (replicas == 1) first = c.batch;
    prev = c.batch;
  }
  EXPECT_GT(prev, 4 * first);
  // And more noise means a larger batch at the same allocation.
  const GoodputFunction quiet(AgentParams(), GradStats{.sqr = 1, .var = 50}, l);
  EXPECT_GT(f.Optimize(2, 8).batch, quiet.Optimize(2, 8).batch);
}

TEST(GoodputAgent, SingleGpuAccumulatesAboveInitBatch) {
  const BatchLimits l{.init_batch = 64, .max_batch = 4096, .min_atomic = 4, .max_atomic = 512};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 5000}, l);
  const BatchChoice c = f.Optimize(1, 1);
  ASSERT_TRUE(c.valid);
  ASSERT_GT(c.batch, l.init_batch);
  EXPECT_GE(c.accum_steps, 1);
  // Without accumulation a single GPU runs the initial batch.
  const BatchChoice plain = f.Optimize(1, 1, /*accumulation=*/false);
  ASSERT_TRUE(plain.valid);
  EXPECT_EQ(plain.batch, l.init_batch);
  EXPECT_EQ(plain.atomic_bsz, l.init_batch);
  EXPECT_EQ(plain.accum_steps, 0);
}

TEST(GoodputAgent, FixedSplitsWithAccumulation) {
  const BatchLimits l{.init_batch = 128, .max_batch = 4096, .min_atomic = 8, .max_atomic = 64};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 100}, l);
  // 1024 over 4 GPUs: local 256 > 64 -> 4 micro-steps of 64.
  BatchChoice c = f.Fixed(1, 4, 1024);
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.atomic_bsz, 64);
  EXPECT_EQ(c.accum_steps, 3);
  EXPECT_EQ(c.batch, 1024);
  EXPECT_NEAR(c.goodput, c.throughput * c.efficiency, 1e-12 * c.goodput);
  EXPECT_NEAR(c.efficiency, Efficiency(f.grad(), 128, 1024), 1e-12);
  // 1000 over 3 GPUs: local ceil(333.3) = 334 -> 6 steps of 56.
  c = f.Fixed(1, 3, 1000);
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.accum_steps, 5);
  EXPECT_EQ(c.atomic_bsz, 56);
  EXPECT_EQ(c.batch, 3 * 56 * 6);
  // Fits in memory: no accumulation.
  c = f.Fixed(2, 8, 256);
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.atomic_bsz, 32);
  EXPECT_EQ(c.accum_steps, 0);
  // One GPU at the initial batch, which does not fit: 2 x 64.
  c = f.Fixed(1, 1, 128);
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.accum_steps, 1);
  EXPECT_EQ(c.atomic_bsz, 64);
}

TEST(GoodputAgent, FixedSingleGpu) {
  const BatchLimits l{.init_batch = 32, .max_batch = 4096, .min_atomic = 1, .max_atomic = 256};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 100}, l);
  BatchChoice c = f.Fixed(1, 1, 32);
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.atomic_bsz, 32);
  EXPECT_EQ(c.accum_steps, 0);
  c = f.Fixed(1, 1, 100);  // above init_batch on one GPU: 2 x 50
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.accum_steps, 1);
  EXPECT_EQ(c.atomic_bsz, 50);
  EXPECT_EQ(c.batch, 100);
  EXPECT_FALSE(f.Fixed(1, 1, 0).valid);
}

TEST(GoodputAgent, InvalidWhenMinAtomicExceedsMaxBatch) {
  const BatchLimits l{.init_batch = 64, .max_batch = 256, .min_atomic = 16, .max_atomic = 64};
  const GoodputFunction f(AgentParams(), GradStats{.sqr = 1, .var = 100}, l);
  EXPECT_TRUE(f.Optimize(4, 16).valid);   // 16 * 16 = 256
  const BatchChoice c = f.Optimize(5, 17);  // 17 * 16 > 256
  EXPECT_FALSE(c.valid);
  EXPECT_EQ(c.batch, 0);
  EXPECT_FALSE(f.Optimize(8, 32, false).valid);
}

}  // namespace
}  // namespace tessel::goodput
