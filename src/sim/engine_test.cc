#include "sim/engine.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "policy/policy.h"
#include "sim/report.h"

namespace tessel {
namespace {

// A 2-node cluster of 4 A100s each (8 GPUs) and a 1-node pool of 4 V100s.
const char* kTinyCluster = R"(name: tiny
pools:
  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch, network_gbps: 200}
  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 4, intra: nvlink-mesh, network_gbps: 100}
)";

Cluster Tiny() { return Cluster::Build(ParseClusterYaml(kTinyCluster, "tiny.yaml").value()).value(); }

JobSpec Job(std::string id, SimTime submit, int gpus, double iterations, std::string type = "a100-80g",
            std::string model = "gpt3-350m") {
  JobSpec j;
  j.id = std::move(id);
  j.submit = submit;
  j.model = std::move(model);
  j.global_batch = 32;
  j.iterations = iterations;
  j.requested_gpus = gpus;
  j.min_gpus = j.max_gpus = gpus;
  j.requested_gpu_type = std::move(type);
  return j;
}

// "j<i>" (built with +=: "j" + std::to_string(i) trips GCC 12's
// -Wrestrict false positive, PR 105329).
std::string JobId(int i) {
  std::string id = "j";
  id += std::to_string(i);
  return id;
}

struct SimRun {
  SimResult result;
  std::string log;
};

SimRun Simulate(const Cluster& cluster, const Workload& w, const std::string& policy_spec, SimConfig config = {}) {
  auto policy = PolicyRegistry::Builtin().Create(policy_spec, PolicyContext{}).value();
  EstimatorThroughput belief(cluster, policy->traits().plan_mode);
  Simulator sim(cluster, w, *policy, belief, belief, config);
  std::ostringstream log;
  sim.set_event_log(&log);
  auto r = sim.Run();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return {r.ok() ? std::move(*r) : SimResult{}, log.str()};
}

const JobRecord& Find(const SimResult& r, const std::string& id) {
  for (const JobRecord& j : r.jobs) {
    if (j.id == id) return j;
  }
  ADD_FAILURE() << "no job " << id;
  return r.jobs.front();
}

TEST(SimEngineTest, FcfsRunsJobsInOrderAndFinishesThem) {
  Cluster c = Tiny();
  Workload w;
  w.name = "three";
  w.jobs = {Job("a", 0, 8, 2000), Job("b", Seconds(10), 4, 1000), Job("c", Seconds(20), 4, 1000)};
  SimRun run = Simulate(c, w, "fcfs");
  const SimResult& r = run.result;
  EXPECT_EQ(r.summary.jobs_finished, 3);
  // a takes both A100 nodes; b and c wait for it, then run side by side.
  const JobRecord& a = Find(r, "a");
  const JobRecord& b = Find(r, "b");
  const JobRecord& c_ = Find(r, "c");
  EXPECT_EQ(a.first_start, 0);
  EXPECT_EQ(b.first_start, a.finish);
  EXPECT_EQ(c_.first_start, a.finish);
  EXPECT_NEAR(a.jct_s(), a.isolated_s, 1e-5);  // alone, no queueing
  EXPECT_NEAR(b.queueing_s, ToSeconds(a.finish) - 10, 1e-6);
  EXPECT_NE(run.log.find("start job=b"), std::string::npos);
}

TEST(SimEngineTest, SameInputsGiveByteIdenticalOutputs) {
  Cluster c = Tiny();
  Workload w;
  w.name = "mix";
  for (int i = 0; i < 30; ++i) {
    w.jobs.push_back(Job(JobId(i), Seconds(37 * i), 1 + i % 4, 300 + 50 * (i % 7),
                         i % 3 == 0 ? "v100-32g" : "a100-80g"));
  }
  SimConfig cfg;
  cfg.failures.node_mtbf_s = 4 * 3600;
  cfg.seed = 7;
  SimRun one = Simulate(c, w, "fcfs:backfill=easy", cfg);
  SimRun two = Simulate(c, w, "fcfs:backfill=easy", cfg);
  EXPECT_EQ(one.log, two.log);
  std::string dir = ::tessel::testing::ProcessTempDir();
  ASSERT_TRUE(WriteJobsCsv(one.result, c, dir + "/one.csv").ok());
  ASSERT_TRUE(WriteJobsCsv(two.result, c, dir + "/two.csv").ok());
  std::ostringstream a, b;
  a << std::ifstream(dir + "/one.csv").rdbuf();
  b << std::ifstream(dir + "/two.csv").rdbuf();
  EXPECT_EQ(a.str(), b.str());
  EXPECT_FALSE(a.str().empty());
}

TEST(SimEngineTest, ConservationJobsEndSomewhereAndGpuSecondsAddUp) {
  Cluster c = Tiny();
  Workload w;
  w.name = "conservation";
  for (int i = 0; i < 40; ++i) w.jobs.push_back(Job(JobId(i), Seconds(20 * i), 1 + i % 8, 400));
  w.jobs.push_back(Job("huge", Seconds(5), 64, 10));  // can never fit: 8 A100s
  SimConfig cfg;
  cfg.horizon = Seconds(3 * 3600);
  cfg.failures.node_mtbf_s = 6 * 3600;
  SimRun run = Simulate(c, w, "fcfs:backfill=first-fit", cfg);
  const SimResult& r = run.result;
  EXPECT_EQ(r.summary.jobs_finished + r.summary.jobs_unfinished + r.summary.jobs_rejected, r.summary.jobs_total);
  EXPECT_EQ(r.summary.jobs_total, 41);
  // GPU-seconds held by jobs equal the integral of allocated GPUs.
  double held = 0;
  for (const JobRecord& j : r.jobs) {
    held += j.gpu_s;
    double by_type = 0;
    for (double g : j.gpu_s_by_type) by_type += g;
    EXPECT_NEAR(by_type, j.gpu_s, 1e-6 * (1 + j.gpu_s));
    EXPECT_LE(j.done_iterations, j.total_iterations + 1e-9);
  }
  double integral = r.summary.gpu_utilization * r.summary.total_gpus * r.summary.makespan_s;
  EXPECT_NEAR(held, integral, 1e-6 * held + 1e-3);
}

TEST(SimEngineTest, JobThatCanNeverFitIsRejectedWithReasonAndTheRunGoesOn) {
  Cluster c = Tiny();
  Workload w;
  w.name = "reject";
  w.jobs = {Job("ok", 0, 2, 100), Job("too-big", 0, 16, 100), Job("no-type", 0, 1, 100, "h100-sxm"),
            Job("oom", 0, 1, 100, "v100-32g", "gpt3-175b")};
  SimRun run = Simulate(c, w, "fcfs");
  EXPECT_EQ(run.result.summary.jobs_finished, 1);
  EXPECT_EQ(run.result.summary.jobs_rejected, 3);
  EXPECT_NE(Find(run.result, "too-big").reason.find("needs 16 GPUs; the cluster has 8 a100-80g"), std::string::npos);
  EXPECT_NE(Find(run.result, "no-type").reason.find("requests GPU type h100-sxm; the cluster has a100-80g, v100-32g"),
            std::string::npos);
  EXPECT_NE(Find(run.result, "oom").reason.find("does not fit on 1 v100-32g"), std::string::npos);
  EXPECT_EQ(Find(run.result, "too-big").outcome, JobOutcome::kRejected);
}

TEST(SimEngineTest, HorizonLeavesUnfinishedJobsOutOfTheAverages) {
  Cluster c = Tiny();
  Workload w;
  w.name = "horizon";
  w.jobs = {Job("short", 0, 4, 10), Job("long", 0, 4, 1e9)};
  SimConfig cfg;
  cfg.horizon = Seconds(3600);
  SimRun run = Simulate(c, w, "fcfs", cfg);
  const Summary& s = run.result.summary;
  EXPECT_EQ(s.jobs_finished, 1);
  EXPECT_EQ(s.jobs_unfinished, 1);
  EXPECT_NEAR(s.avg_jct_s, Find(run.result, "short").jct_s(), 1e-9);
  EXPECT_EQ(Find(run.result, "long").outcome, JobOutcome::kRunning);
  EXPECT_NEAR(s.makespan_s, 3600, 1e-9);
}

TEST(SimEngineTest, NodeFailureRestartsJobsFromTheirLastCheckpoint) {
  Cluster c = Tiny();
  Workload w;
  w.name = "failures";
  for (int i = 0; i < 6; ++i) w.jobs.push_back(Job(JobId(i), 0, 4, 20000, i < 4 ? "a100-80g" : "v100-32g"));
  SimConfig cfg;
  cfg.failures.node_mtbf_s = 2 * 3600;
  cfg.failures.repair_s = 600;
  cfg.failures.checkpoint_interval_s = 600;
  cfg.seed = 3;
  SimRun run = Simulate(c, w, "fcfs", cfg);
  const Summary& s = run.result.summary;
  EXPECT_EQ(s.jobs_finished, 6);
  EXPECT_GT(s.failures, 0);
  double lost = 0;
  for (const JobRecord& j : run.result.jobs) {
    lost += j.lost_iterations;
    if (j.failures > 0) {
      EXPECT_GT(j.restarts, 0) << j.id;
      EXPECT_GT(j.jct_s(), j.isolated_s) << j.id;
    }
  }
  EXPECT_GT(lost, 0);
  EXPECT_NE(run.log.find("fail node="), std::string::npos);
  EXPECT_NE(run.log.find("repair node="), std::string::npos);
}

// A policy that gives every pending job the same fixed allocation.
class FixedAllocationPolicy : public Policy {
 public:
  FixedAllocationPolicy(std::string name, Allocation alloc) : name_(std::move(name)), alloc_(std::move(alloc)) {}
  std::string_view name() const override { return name_; }
  PolicyTraits traits() const override { return {}; }
  Decision Decide(const Snapshot& s) override {
    Decision d;
    for (const JobView* j : s.jobs) {
      if (j->phase == JobPhase::kPending) d.assign.push_back({j->index, alloc_});
    }
    return d;
  }

 private:
  std::string name_;
  Allocation alloc_;
};

// A policy that places each job on its own fixed allocation, by index.
class PlacedPolicy : public Policy {
 public:
  explicit PlacedPolicy(std::vector<Allocation> allocs) : allocs_(std::move(allocs)) {}
  std::string_view name() const override { return "placed"; }
  PolicyTraits traits() const override { return {}; }
  Decision Decide(const Snapshot& s) override {
    Decision d;
    for (const JobView* j : s.jobs) {
      if (j->phase == JobPhase::kPending) d.assign.push_back({j->index, allocs_[j->index]});
    }
    return d;
  }

 private:
  std::vector<Allocation> allocs_;
};

// Interference (the Pollux artifact's model): two jobs spread over nodes
// that share node 1 both run at half speed under --interference 0.5; a job
// on one node beside them does not, nor does a spread job alone on its
// nodes. When the shorter sharer finishes, the other runs at full speed:
// it does N/2 iterations slowed by half (time t N), then N/2 at full speed
// (t N / 2), 1.5 times its time alone.
TEST(SimEngineTest, InterferenceSlowsSpreadJobsSharingANode) {
  Cluster c = Cluster::Build(ParseClusterYaml(
                                 "name: three\npools:\n  - {name: a100, gpu: a100-80g, nodes: 5, gpus_per_node: 4, "
                                 "intra: nvswitch, network_gbps: 200}\n",
                                 "three.yaml")
                                 .value())
                  .value();
  auto run = [&](double interference, double b_iterations) {
    Workload w;
    w.name = "interference";
    w.jobs = {Job("a", 0, 4, 1000), Job("b", 0, 4, b_iterations), Job("c", 0, 2, 1000),
              Job("d", 0, 4, 1000)};
    PlacedPolicy policy({Allocation{0, {{0, 2}, {1, 2}}}, Allocation{0, {{1, 2}, {2, 2}}}, Allocation{0, {{0, 2}}},
                         Allocation{0, {{3, 2}, {4, 2}}}});
    EstimatorThroughput belief(c, PlanMode::kDataParallel);
    SimConfig config;
    config.network.enabled = false;  // the jobs' own rates alone
    config.interference = interference;
    Simulator sim(c, w, policy, belief, belief, config);
    auto r = sim.Run();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<double> run_s;
    for (const char* id : {"a", "b", "c", "d"}) {
      const JobRecord& j = Find(*r, id);
      run_s.push_back(ToSeconds(j.finish - j.first_start));
    }
    return run_s;
  };
  std::vector<double> alone = run(0, 1000), slowed = run(0.5, 1000), shorter = run(0.5, 500);
  EXPECT_NEAR(slowed[0] / alone[0], 2.0, 1e-5);  // a
  EXPECT_NEAR(slowed[1] / alone[1], 2.0, 1e-5);  // b
  EXPECT_NEAR(slowed[2] / alone[2], 1.0, 1e-9);  // c: on one node
  EXPECT_NEAR(slowed[3] / alone[3], 1.0, 1e-9);  // d: spread, alone on its nodes
  EXPECT_NEAR(shorter[0] / alone[0], 1.5, 1e-5);
}

TEST(SimEngineTest, PolicyAssigningBusyGpusIsReportedAsABug) {
  Cluster c = Tiny();
  Workload w;
  w.name = "broken";
  w.jobs = {Job("a", 0, 4, 100), Job("b", 0, 4, 100)};
  FixedAllocationPolicy policy("broken", Allocation{0, {{0, 4}}});  // breaks its contract: node 0 for every job
  EstimatorThroughput belief(c, PlanMode::kDataParallel);
  Simulator sim(c, w, policy, belief, belief, SimConfig{});
  auto r = sim.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("policy broken gave job b a100-80g x4 on n0:4, but node 0 has 0 free GPUs"),
            std::string::npos)
      << r.status().message();
}

// The estimator, except that nothing fits on more than one node (as a
// measured table that ran a split out of memory).
class OneNodeOnly : public ThroughputModel {
 public:
  explicit OneNodeOnly(EstimatorThroughput& base) : base_(base) { refused_.reason = "measured out of memory"; }
  std::string_view name() const override { return "one-node-only"; }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override {
    return nodes > 1 ? refused_ : base_.Rate(job, type, gpus, nodes);
  }

 private:
  EstimatorThroughput& base_;
  JobRate refused_;
};

// A placement neither truth nor belief can run as placed is an
// out-of-memory event: the job does not start, waits, and is counted.
TEST(SimEngineTest, PlacementOutOfMemoryAsPlacedLeavesTheJobWaiting) {
  Cluster c = Tiny();
  Workload w;
  w.name = "oom";
  w.jobs = {Job("a", 0, 4, 100)};
  FixedAllocationPolicy policy("spread", Allocation{0, {{0, 2}, {1, 2}}});  // 2 + 2 GPUs on two nodes
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  OneNodeOnly model(est);
  Simulator sim(c, w, policy, model, model, SimConfig{});
  std::ostringstream log;
  sim.set_event_log(&log);
  auto r = sim.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(r->summary.oom_placements, 1);
  EXPECT_EQ(r->summary.jobs_finished, 0);
  EXPECT_EQ(r->jobs[0].outcome, JobOutcome::kPending);
  EXPECT_NE(log.str().find("oom job=a on=a100-80g x4 on n0:2,n1:2 reason=measured out of memory"), std::string::npos)
      << log.str();
}

// The estimator with nothing answered ahead: Anticipate is ignored.
class NothingAhead : public ThroughputModel {
 public:
  explicit NothingAhead(EstimatorThroughput& base) : base_(base) {}
  std::string_view name() const override { return base_.name(); }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override {
    return base_.Rate(job, type, gpus, nodes);
  }
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double share) override {
    return base_.RateShared(job, type, gpus, nodes, share);
  }
  void Prefetch(std::span<const RateQuery> queries) override { base_.Prefetch(queries); }

 private:
  EstimatorThroughput& base_;
};

// A simulator hands the belief what the policy will ask of the trace's
// jobs (elasticflow's LikelyQuestions), answered in the background: the
// run is the same, event for event, as one whose belief answers only when
// asked.
TEST(SimEngineTest, AnsweringAheadChangesNothing) {
  Cluster c = Tiny();
  Workload w;
  w.name = "elastic";
  const char* models[] = {"gpt3-350m", "gpt3-1.3b", "bert-large"};
  for (int i = 0; i < 24; ++i) {
    JobSpec j = Job(JobId(i), Seconds(120 * i), 1 << (i % 3), 400 + 90 * (i % 5), "", models[i % 3]);
    j.min_gpus = 1;
    j.max_gpus = 8;
    j.global_batch = 16 << (i % 3);
    w.jobs.push_back(j);
  }
  std::string logs[2];
  std::string csv[2];
  for (int ahead = 0; ahead < 2; ++ahead) {
    auto policy = PolicyRegistry::Builtin().Create("elasticflow:admission=false", PolicyContext{}).value();
    EstimatorThroughput est(c, policy->traits().plan_mode);
    NothingAhead alone(est);
    ThroughputModel& belief = ahead ? static_cast<ThroughputModel&>(est) : alone;
    EXPECT_FALSE(policy->LikelyQuestions(w.jobs[0], c).empty());
    Simulator sim(c, w, *policy, belief, belief, SimConfig{});
    std::ostringstream log;
    sim.set_event_log(&log);
    auto r = sim.Run();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->summary.jobs_finished, 24);
    logs[ahead] = log.str();
    std::string path = ::tessel::testing::ProcessTempDir() + "/ahead" + std::to_string(ahead) + ".csv";
    ASSERT_TRUE(WriteJobsCsv(*r, c, path).ok());
    std::ostringstream text;
    text << std::ifstream(path).rdbuf();
    csv[ahead] = text.str();
  }
  EXPECT_EQ(logs[0], logs[1]);
  EXPECT_EQ(csv[0], csv[1]);
}

TEST(SimEngineTest, DurationTracesBecomeIterationsAtTheReferenceGpu) {
  Cluster c = Tiny();
  Workload w;
  w.name = "durations";
  JobSpec j = Job("d", 0, 4, 0, "");
  j.iterations.reset();
  j.duration_s = 3600;
  w.jobs = {j};
  SimConfig cfg;
  cfg.reference_gpu = "a100-80g";
  SimRun run = Simulate(c, w, "fcfs", cfg);
  // Alone on the reference GPU it takes exactly its trace duration.
  EXPECT_NEAR(run.result.jobs[0].jct_s(), 3600, 1e-5);
}


// End to end under ElasticFlow's admission control: of two jobs arriving
// together on 8 A100s, each needing all 8 GPUs for its whole slack, the
// one with the earlier deadline is admitted and meets it; the other is
// refused at arrival, recorded as rejected and as a missed deadline.
TEST(SimEngineTest, ElasticFlowAdmitsWhatItCanFinishAndRefusesTheRest) {
  Cluster c = Tiny();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  Workload w;
  w.name = "deadlines";
  JobSpec a = Job("a", 0, 8, 4000);
  a.min_gpus = 1;
  a.max_gpus = 8;
  const double alone = 4000 * est.Rate(a, c.FindType("a100-80g"), 8, 2).iteration_time_s;
  a.deadline = Seconds(1.3 * alone);
  JobSpec b = a;
  b.id = "b";
  b.deadline = Seconds(1.6 * alone);  // would need a's GPUs before a is done
  JobSpec best = Job("best-effort", 0, 4, 100, "v100-32g");
  w.jobs = {a, b, best};
  SimRun run = Simulate(c, w, "elasticflow");
  const SimResult& r = run.result;
  EXPECT_EQ(Find(r, "a").outcome, JobOutcome::kFinished);
  EXPECT_TRUE(Find(r, "a").DeadlineMet());
  EXPECT_EQ(Find(r, "b").outcome, JobOutcome::kRejected);
  EXPECT_FALSE(Find(r, "b").DeadlineMet());
  EXPECT_EQ(Find(r, "best-effort").outcome, JobOutcome::kFinished);
  EXPECT_EQ(r.summary.deadline_jobs, 2);
  EXPECT_EQ(r.summary.deadline_met, 1);
  EXPECT_EQ(r.summary.jobs_rejected, 1);
  EXPECT_DOUBLE_EQ(r.summary.deadline_met_fraction, 0.5);
}

// The Arena artifact's accounting (--setting arena-artifact): a baseline
// pays the full plan search (150 s per GPU, at most 600 s) on its first
// allocation too; by default a baseline's first start is free.
TEST(SimEngineTest, ArtifactAccountingChargesBaselinesTheFullSearch) {
  Cluster c = Tiny();
  Workload w;
  w.name = "one";
  w.jobs = {Job("a", 0, 2, 1000)};
  SimConfig plain;
  SimConfig artifact;
  artifact.reconfig.baselines_pay_full_search = true;
  artifact.reconfig.checkpoints = false;
  const JobRecord a = Find(Simulate(c, w, "fcfs", plain).result, "a");
  const JobRecord b = Find(Simulate(c, w, "fcfs", artifact).result, "a");
  EXPECT_NEAR(b.jct_s() - a.jct_s(), 300, 1e-6);  // 150 s x 2 GPUs
  EXPECT_NEAR(b.reconfig_s, 300, 1e-6);
}

// The artifact's rounds (--setting arena-artifact): a job ends at the end
// of the round its work is done in (JCT in whole rounds), holding its GPUs
// until then, and a restart delay of at most a round costs no progress
// while a longer one costs the rounds past the first (its time debt).
TEST(SimEngineTest, ArtifactRoundsEndJobsAtRoundEndsAndChargeTimeDebtInRounds) {
  Cluster c = Tiny();
  Workload w;
  w.name = "rounds";
  // a and b each want all 8 A100s: b waits for a.
  w.jobs = {Job("a", 0, 8, 1000, "a100-80g"), Job("b", 0, 8, 1000, "a100-80g")};
  SimConfig plain;
  const JobRecord a0 = Find(Simulate(c, w, "fcfs", plain).result, "a");
  ASSERT_GT(std::fmod(a0.jct_s(), 300), 1.0) << "the test needs a job that ends mid-round";
  SimConfig rounds;
  rounds.complete_at_rounds = true;
  const SimResult r = Simulate(c, w, "fcfs", rounds).result;
  const JobRecord a = Find(r, "a"), b = Find(r, "b");
  EXPECT_DOUBLE_EQ(a.jct_s(), std::ceil(a0.jct_s() / 300) * 300);
  EXPECT_DOUBLE_EQ(std::fmod(b.jct_s(), 300), 0.0);
  EXPECT_GE(ToSeconds(b.first_start), a.jct_s()) << "b starts when a's GPUs are freed, at the round's end";
  // A horizon mid-round after a's work is done: the run ends there, and a
  // with it (not left holding GPUs with its work done).
  SimConfig cut = rounds;
  const double half = (a0.jct_s() + a.jct_s()) / 2;
  cut.horizon = Seconds(half);
  const SimResult rc = Simulate(c, w, "fcfs", cut).result;
  EXPECT_EQ(Find(rc, "a").outcome, JobOutcome::kFinished);
  EXPECT_NEAR(Find(rc, "a").jct_s(), half, 1e-6);

  // Time debt: 150 s x 2 GPUs = 300 s, one round: nothing lost; 150 s x 4
  // = 600 s: one round lost.
  Workload one;
  one.name = "one";
  for (int gpus : {2, 4}) {
    one.jobs = {Job("j", 0, gpus, 1000, "a100-80g")};
    SimConfig free_start = rounds;
    const JobRecord base = Find(Simulate(c, one, "fcfs", free_start).result, "j");
    SimConfig debt = rounds;
    debt.reconfig.baselines_pay_full_search = true;
    debt.reconfig.checkpoints = false;
    debt.reconfig.debt_round_s = 300;
    const JobRecord charged = Find(Simulate(c, one, "fcfs", debt).result, "j");
    EXPECT_DOUBLE_EQ(charged.jct_s() - base.jct_s(), gpus == 2 ? 0.0 : 300.0) << gpus << " GPUs";
  }
}
}  // namespace
}  // namespace tessel
