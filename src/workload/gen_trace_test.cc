#include "workload/gen_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "model/profiled_model.h"
#include "testing/test_data.h"
#include "workload/trace.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

Workload Generate(const GenTraceOptions& o) {
  auto w = GenerateTrace(o);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? std::move(*w) : Workload();
}

// Jobs compared without `origin`, which names where each copy came from.
void ExpectSameJobs(const std::vector<JobSpec>& a, const std::vector<JobSpec>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    JobSpec x = a[i], y = b[i];
    x.origin.clear();
    y.origin.clear();
    ASSERT_TRUE(x == y) << "job " << i << " (" << a[i].id << ") differs";
  }
}

// Writes `w` in tessel's format to a temp file and loads it back.
Result<Workload> RoundTrip(const Workload& w, const std::string& name) {
  fs::path p = fs::path(::tessel::testing::ProcessTempDir()) / ("tessel_wl_rt_" + name + ".csv");
  {
    std::ofstream out(p);
    TESSEL_RETURN_IF_ERROR(WriteTraceCsv(w, out));
  }
  auto back = LoadTrace(p.string(), TraceFormat::kAuto, {});
  fs::remove(p);
  return back;
}

TEST(GenTrace, SameSeedSameWorkload) {
  GenTraceOptions o;
  o.jobs = 500;
  o.gpu_types = {"a100", "v100"};
  Workload a = Generate(o), b = Generate(o);
  ExpectSameJobs(a.jobs, b.jobs);
  EXPECT_EQ(a.notes, b.notes);
}

TEST(GenTrace, DifferentSeedDifferentWorkload) {
  GenTraceOptions o;
  o.jobs = 200;
  Workload a = Generate(o);
  o.seed = 2;
  Workload b = Generate(o);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  size_t same_submit = 0, same_model = 0;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    same_submit += a.jobs[i].submit == b.jobs[i].submit;
    same_model += a.jobs[i].model == b.jobs[i].model;
  }
  EXPECT_EQ(same_submit, 1u);  // only the first job, at 0
  EXPECT_LT(same_model, a.jobs.size() * 3 / 4);
}

constexpr char kGoldenFirstJobs[] =
    "gen-00000 0 1 26 moe__690M 256\n"
    "gen-00001 442 1 485 moe__690M 256\n"
    "gen-00002 739 1 5467 bert__760M 128\n";

TEST(GenTrace, GoldenFirstJobs) {
  // Pins the generator: changing a distribution or the draw order shows
  // here. Values are whole seconds.
  GenTraceOptions o;
  o.jobs = 3;
  Workload w = Generate(o);
  ASSERT_EQ(w.jobs.size(), 3u);
  std::ostringstream got;
  for (const JobSpec& j : w.jobs) {
    got << j.id << " " << ToSeconds(j.submit) << " " << j.requested_gpus << " " << *j.duration_s
        << " " << j.model << " " << j.global_batch << "\n";
  }
  EXPECT_EQ(got.str(), kGoldenFirstJobs);
}

TEST(GenTrace, FollowsTheProfile) {
  GenTraceOptions o;
  o.jobs = 20000;
  o.profile = "philly";
  Workload w = Generate(o);
  ASSERT_EQ(w.jobs.size(), 20000u);
  EXPECT_EQ(w.jobs.front().submit, 0);
  size_t single = 0;
  std::vector<double> single_durations;
  for (const JobSpec& j : w.jobs) {
    ASSERT_EQ(j.min_gpus, j.requested_gpus);
    ASSERT_EQ(j.max_gpus, j.requested_gpus);
    ASSERT_TRUE(j.requested_gpu_type.empty());
    if (j.requested_gpus == 1) {
      ++single;
      single_durations.push_back(*j.duration_s);
    }
  }
  EXPECT_NEAR(single / 20000.0, 0.9317, 0.01);
  std::nth_element(single_durations.begin(),
                   single_durations.begin() + single_durations.size() / 2,
                   single_durations.end());
  EXPECT_NEAR(single_durations[single_durations.size() / 2], 1117, 100);
  // Mean inter-arrival 3600 / 31.47 s.
  double mean_gap = ToSeconds(w.jobs.back().submit) / (w.jobs.size() - 1);
  EXPECT_NEAR(mean_gap, 3600 / 31.47, 3600 / 31.47 * 0.03);
}

TEST(GenTrace, OptionsShapeTheJobs) {
  GenTraceOptions o;
  o.jobs = 2000;
  o.profile = "itp";
  o.arrival_rate_per_hour = 3600;  // one a second
  o.max_job_gpus = 8;
  o.elastic = true;
  o.gpu_types = {"A100"};
  Workload w = Generate(o);
  double mean_gap = ToSeconds(w.jobs.back().submit) / (w.jobs.size() - 1);
  EXPECT_NEAR(mean_gap, 1.0, 0.1);
  for (const JobSpec& j : w.jobs) {
    ASSERT_LE(j.requested_gpus, 8);
    ASSERT_EQ(j.min_gpus, 1);
    ASSERT_EQ(j.max_gpus, j.requested_gpus == 1 ? 4 : 8);
    ASSERT_EQ(j.requested_gpu_type, "a100-40g");
  }
}

struct BadOption {
  std::string name;
  GenTraceOptions opts;
  std::string want;
};

class GenTraceBadOptions : public ::testing::TestWithParam<BadOption> {};

TEST_P(GenTraceBadOptions, SaysWhatIsAccepted) {
  auto w = GenerateTrace(GetParam().opts);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), GetParam().want);
}

GenTraceOptions With(auto&& edit) {
  GenTraceOptions o;
  edit(o);
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    GenTrace, GenTraceBadOptions,
    ::testing::Values(
        BadOption{"profile", With([](auto& o) { o.profile = "helios"; }),
                  "unknown trace profile 'helios'; known: philly, itp, ddl"},
        BadOption{"jobs", With([](auto& o) { o.jobs = -1; }),
                  "jobs: expected an integer from 0 to 10000000, got -1"},
        BadOption{"rate", With([](auto& o) { o.arrival_rate_per_hour = -2; }),
                  "arrival rate: expected jobs per hour > 0 (or 0 for the profile's), got -2"},
        BadOption{"duration_scale", With([](auto& o) { o.duration_scale = 0; }),
                  "duration scale: expected a number > 0, got 0"},
        BadOption{"max_job_gpus", With([](auto& o) { o.max_job_gpus = 0; }),
                  "max job GPUs: expected an integer >= 1, got 0"}),
    [](const auto& info) { return testing::TestName(info.param.name); });

TEST(GenTrace, RoundTripsThroughTheTesselFormat) {
  GenTraceOptions o;
  o.jobs = 300;
  o.profile = "itp";
  o.duration_scale = 0.37;  // non-integer products stay exact
  o.elastic = true;
  o.gpu_types = {"a100", "v100-16g", "t4"};
  Workload w = Generate(o);
  auto back = RoundTrip(w, "gen");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameJobs(w.jobs, back->jobs);
}

TEST(GenTrace, RoundTripsAnArenaTrace) {
  TESSEL_REQUIRE_DATA();
  auto arena = LoadTrace(testing::DataDir() + "/arena/traces/simulate_trace_philly.csv",
                         TraceFormat::kArena, {});
  ASSERT_TRUE(arena.ok()) << arena.status().message();
  // Users, priorities and odd ids survive too.
  arena->jobs[0].user = "team, \"a\"";
  arena->jobs[1].priority = -3;
  auto back = RoundTrip(*arena, "arena");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameJobs(arena->jobs, back->jobs);
}

GenTraceOptions Ddl(int jobs, uint64_t seed = 1) {
  GenTraceOptions o;
  o.profile = "ddl";
  o.jobs = jobs;
  o.seed = seed;
  return o;
}

std::string Csv(const Workload& w) {
  std::ostringstream out;
  EXPECT_TRUE(WriteTraceCsv(w, out).ok());
  return out.str();
}

TEST(GenTraceDdl, ThePapersJobSet) {
  // HKBU-HPML/dl-scheduling online/job_master.py: 160 jobs, GPU counts
  // 80/14/26/30/8/2, 10-60 iterations, arrivals over 12 s in whole ms.
  EXPECT_EQ(GenTraceDefaultJobs("ddl"), 160);
  EXPECT_EQ(GenTraceDefaultJobs("philly"), 200);
  Workload w = Generate(Ddl(160));
  ASSERT_EQ(w.jobs.size(), 160u);
  std::map<int, int> by_gpus;
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    const JobSpec& j = w.jobs[i];
    ++by_gpus[j.requested_gpus];
    const ProfiledModel* m = FindProfiledModel(j.model);
    ASSERT_NE(m, nullptr) << j.model;
    EXPECT_EQ(j.global_batch, m->per_gpu_batch * j.requested_gpus);
    ASSERT_TRUE(j.iterations.has_value());
    EXPECT_FALSE(j.duration_s.has_value());
    EXPECT_GE(*j.iterations, 10);
    EXPECT_LE(*j.iterations, 60);
    EXPECT_EQ(*j.iterations, std::floor(*j.iterations));
    EXPECT_EQ(j.min_gpus, j.requested_gpus);
    EXPECT_EQ(j.max_gpus, j.requested_gpus);
    EXPECT_EQ(j.submit % 1000, 0) << "whole milliseconds";
    EXPECT_LT(j.submit, Seconds(12));
    if (i > 0) EXPECT_GE(j.submit, w.jobs[i - 1].submit);
    std::string n = std::to_string(i);
    EXPECT_EQ(j.id, "gen-" + std::string(5 - n.size(), '0') + n) << "ids in submit order";
  }
  EXPECT_EQ(w.jobs.front().submit, 0);
  EXPECT_GT(w.jobs.back().submit, Seconds(11)) << "the window is 12 s";
  EXPECT_EQ(by_gpus, (std::map<int, int>{{1, 80}, {2, 14}, {4, 26}, {8, 30}, {16, 8}, {32, 2}}));
}

TEST(GenTraceDdl, MixOverManyJobs) {
  Workload w = Generate(Ddl(16000, 7));
  std::map<int, int> by_gpus;
  std::map<std::string, int> by_model;
  std::map<int, int> by_iterations;
  for (const JobSpec& j : w.jobs) {
    ++by_gpus[j.requested_gpus];
    ++by_model[j.model];
    ++by_iterations[static_cast<int>(*j.iterations)];
  }
  EXPECT_EQ(by_gpus, (std::map<int, int>{{1, 8000}, {2, 1400}, {4, 2600}, {8, 3000}, {16, 800}, {32, 200}}));
  ASSERT_EQ(by_model.size(), 4u);
  for (const auto& [model, n] : by_model) EXPECT_NEAR(n / 16000.0, 0.25, 0.015) << model;
  ASSERT_EQ(by_iterations.size(), 51u);
  EXPECT_EQ(by_iterations.begin()->first, 10);
  EXPECT_EQ(by_iterations.rbegin()->first, 60);
  // The paper's rate, 160 jobs per 12 s: 16,000 jobs over 1,200 s.
  EXPECT_NEAR(ToSeconds(w.jobs.back().submit), 1200, 1);
  // Other counts keep the shares by largest remainder.
  std::map<int, int> small;
  for (const JobSpec& j : Generate(Ddl(100)).jobs) ++small[j.requested_gpus];
  EXPECT_EQ(small, (std::map<int, int>{{1, 50}, {2, 9}, {4, 16}, {8, 19}, {16, 5}, {32, 1}}));
}

TEST(GenTraceDdl, SameSeedSameBytes) {
  std::string a = Csv(Generate(Ddl(160, 3))), b = Csv(Generate(Ddl(160, 3)));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, Csv(Generate(Ddl(160, 4))));
}

TEST(GenTraceDdl, OptionsAndRoundTrip) {
  GenTraceOptions o = Ddl(160);
  o.arrival_rate_per_hour = 3600;  // one a second: 160 s
  o.duration_scale = 2;
  o.max_job_gpus = 16;
  Workload w = Generate(o);
  EXPECT_GT(w.jobs.back().submit, Seconds(150));
  for (const JobSpec& j : w.jobs) {
    ASSERT_LE(j.requested_gpus, 16);
    ASSERT_GE(*j.iterations, 20);
    ASSERT_LE(*j.iterations, 120);
  }
  auto back = RoundTrip(w, "ddl");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameJobs(w.jobs, back->jobs);
}

TEST(GenTrace, WriteRejectsAJobWithoutWork) {
  Workload w;
  w.jobs.push_back(JobSpec{});
  w.jobs[0].id = "x";
  std::ostringstream out;
  Status s = WriteTraceCsv(w, out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "job 'x': expected exactly one of iterations and duration_s");
}


// --deadlines: a share of the jobs get submit + U(lo, hi) x their duration;
// drawn from a stream of their own, so every other field is unchanged.
TEST(GenTraceTest, DeadlinesForAShareOfTheJobsLeaveTheRestUnchanged) {
  GenTraceOptions plain;
  plain.jobs = 400;
  GenTraceOptions with = plain;
  with.deadline_fraction = 0.5;
  with.deadline_min = 0.5;
  with.deadline_max = 1.5;
  Workload a = GenerateTrace(plain).value();
  Workload b = GenerateTrace(with).value();
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  int given = 0;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_FALSE(a.jobs[i].deadline);
    EXPECT_EQ(a.jobs[i].submit, b.jobs[i].submit);
    EXPECT_EQ(a.jobs[i].model, b.jobs[i].model);
    EXPECT_EQ(a.jobs[i].duration_s, b.jobs[i].duration_s);
    if (!b.jobs[i].deadline) continue;
    ++given;
    double slack = ToSeconds(*b.jobs[i].deadline - b.jobs[i].submit) / *b.jobs[i].duration_s;
    EXPECT_GE(slack, 0.5 - 1e-3);
    EXPECT_LE(slack, 1.5 + 1e-3);
  }
  EXPECT_GT(given, 150);
  EXPECT_LT(given, 250);
  // Seeded: the same deadlines again.
  Workload c = GenerateTrace(with).value();
  for (size_t i = 0; i < b.jobs.size(); ++i) EXPECT_EQ(b.jobs[i].deadline, c.jobs[i].deadline);
  with.deadline_fraction = 1.5;
  EXPECT_EQ(GenerateTrace(with).status().code(), StatusCode::kInvalidArgument);
  with.deadline_fraction = 1;
  with.deadline_min = 2;
  EXPECT_EQ(GenerateTrace(with).status().code(), StatusCode::kInvalidArgument);
}
}  // namespace
}  // namespace tessel
