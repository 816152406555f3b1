#include "workload/trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/strings.h"
#include "model/catalog.h"
#include "testing/test_data.h"
#include "workload/importers.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;
using ::tessel::testing::DataDir;
using ::tessel::testing::TestName;

// A fresh directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::path(::tessel::testing::ProcessTempDir()) / ("tessel_wl_" + name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  // Writes `text` to <dir>/<name> and returns the path.
  std::string Write(const std::string& name, const std::string& text) const {
    fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

bool HasNoteContaining(const Workload& w, std::string_view needle) {
  for (const std::string& n : w.notes)
    if (Contains(n, needle)) return true;
  return false;
}

// ---------------------------------------------------------------- formats

TEST(TraceFormat, ParsesEveryNameBackToItsFormat) {
  for (const std::string& name : TraceFormatNames()) {
    auto f = ParseTraceFormat(name);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ(TraceFormatName(*f), name);
  }
  auto upper = ParseTraceFormat("ITP");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper, TraceFormat::kItp);
}

TEST(TraceFormat, UnknownNameListsKnownNames) {
  auto f = ParseTraceFormat("phily");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(),
            "unknown trace format 'phily' (did you mean philly?); known: auto, arena, pollux, "
            "itp, philly, alibaba, tessel");
}

struct DetectCase {
  std::string name;
  std::string header;
  TraceFormat want;
};

class TraceDetect : public ::testing::TestWithParam<DetectCase> {};

TEST_P(TraceDetect, RecognisesHeader) {
  auto f = DetectTraceFormat(Split(GetParam().header, ','), "t.csv");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(*f, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Trace, TraceDetect,
    ::testing::Values(
        DetectCase{"arena",
                   "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,"
                   "gpu_type",
                   TraceFormat::kArena},
        DetectCase{"pollux", "name,time,application,num_replicas,batch_size",
                   TraceFormat::kPollux},
        DetectCase{"itp", "job_id,submission_time,duration,num_gpu", TraceFormat::kItp},
        DetectCase{"itp_extra_column", "job_id,submission_time,duration,num_gpu,user",
                   TraceFormat::kItp},
        DetectCase{"philly", "timestamp,duration,num_gpus,gpu_time,cluster",
                   TraceFormat::kPhilly},
        DetectCase{"alibaba",
                   "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                   "creation_time,deletion_time,scheduled_time",
                   TraceFormat::kAlibaba},
        DetectCase{"tessel",
                   "job_id,user,submit_s,model,global_batch,iterations,duration_s,"
                   "requested_gpus,gpu_type,deadline_s,priority,min_gpus,max_gpus,"
                   "adaptive_batch",
                   TraceFormat::kTessel}),
    [](const auto& info) { return TestName(info.param.name); });

TEST(TraceDetect, UnknownHeaderListsAcceptedHeaders) {
  auto f = DetectTraceFormat({"id", "start", "gpus"}, "x.csv");
  ASSERT_FALSE(f.ok());
  const std::string& m = f.status().message();
  EXPECT_TRUE(StartsWith(m, "x.csv:1: header 'id,start,gpus' matches no trace format; "
                            "accepted headers:"))
      << m;
  EXPECT_TRUE(Contains(m, "itp: job_id,submission_time,duration,num_gpu")) << m;
  EXPECT_TRUE(Contains(m, "philly: timestamp,duration,num_gpus,gpu_time,cluster")) << m;
}

// ------------------------------------------------------------- timestamps

TEST(TraceTimestamp, ParsesUtc) {
  struct Case {
    const char* text;
    double want;
  };
  for (const Case& c : {Case{"1970-01-01 00:00:00", 0}, Case{"1969-12-31 23:59:59", -1},
                        Case{"2000-03-01 00:00:00", 951868800},
                        Case{"2016-02-29 12:00:00", 1456747200},
                        Case{"2017-10-09 07:01:55", 1507532515},
                        Case{"2017-10-09T07:01:55", 1507532515}}) {
    auto t = workload_internal::ParseUtcTimestamp(c.text, "ts");
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.status().message();
    EXPECT_EQ(*t, c.want) << c.text;
  }
}

TEST(TraceTimestamp, RejectsMalformed) {
  for (const char* bad : {"2017-02-29 00:00:00", "2017-13-01 00:00:00", "2017-10-09 24:00:00",
                          "2017-10-09 07:01", "2017/10/09 07:01:55", "", "2017-10-09 07:01:5x"}) {
    auto t = workload_internal::ParseUtcTimestamp(bad, "f.csv:2: timestamp");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message(),
              std::string("f.csv:2: timestamp: expected a UTC time YYYY-MM-DD HH:MM:SS, got '") +
                  bad + "'");
  }
}

// ------------------------------------------------------- malformed input

struct ErrorCase {
  std::string name;
  std::string file;  // name of the file inside the temp dir
  std::string text;
  TraceFormat format;
  std::string want;  // expected message; "{f}" stands for the file's path
};

class TraceErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(TraceErrors, NameFileLineAndField) {
  const ErrorCase& c = GetParam();
  TempDir dir("err_" + c.name);
  std::string path = dir.Write(c.file, c.text);
  auto w = LoadTrace(path, c.format, {});
  ASSERT_FALSE(w.ok());
  std::string want = c.want;
  for (size_t p; (p = want.find("{f}")) != std::string::npos;) want.replace(p, 3, path);
  EXPECT_TRUE(StartsWith(w.status().message(), want))
      << "got:  " << w.status().message() << "\nwant: " << want;
}

const char kArenaHeader[] =
    "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type\n";
const char kItpHeader[] = "job_id,submission_time,duration,num_gpu\n";
const char kAlibabaHeader[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";
const char kTesselHeader[] =
    "job_id,user,submit_s,model,global_batch,iterations,duration_s,requested_gpus,gpu_type,"
    "deadline_s,priority,min_gpus,max_gpus,adaptive_batch\n";

INSTANTIATE_TEST_SUITE_P(
    Trace, TraceErrors,
    ::testing::Values(
        ErrorCase{"itp_non_numeric_time", "t.csv",
                  std::string(kItpHeader) + "a,10,5,1\nb,ten,5,1\n", TraceFormat::kAuto,
                  "{f}:3: submission_time: expected a number of seconds from 0 to 1e+10, got 'ten'"},
        ErrorCase{"itp_negative_gpus", "t.csv", std::string(kItpHeader) + "a,10,5,-1\n",
                  TraceFormat::kItp, "{f}:2: num_gpu: expected an integer from 0 to 2147483647, got '-1'"},
        ErrorCase{"itp_fractional_gpus", "t.csv", std::string(kItpHeader) + "a,10,5,1.5\n",
                  TraceFormat::kItp, "{f}:2: num_gpu: expected an integer from 0 to 2147483647, got '1.5'"},
        ErrorCase{"itp_duplicate_id", "t.csv", std::string(kItpHeader) + "a,10,5,1\na,11,5,1\n",
                  TraceFormat::kItp,
                  "{f}:3: job_id: duplicate job id 'a' (first at {f}:2)"},
        ErrorCase{"itp_missing_column", "t.csv", "job_id,submission_time,num_gpu\na,1,1\n",
                  TraceFormat::kItp,
                  "{f}:1: missing column 'duration' of the itp format (expected header "
                  "job_id,submission_time,duration,num_gpu)"},
        ErrorCase{"arena_unknown_model", "t.csv",
                  std::string(kArenaHeader) + "a,0,100,bert__9B,0,256,4,a100\n",
                  TraceFormat::kArena, "{f}:2: model_name: unknown model 'bert__9B'"},
        ErrorCase{"arena_unknown_gpu", "t.csv",
                  std::string(kArenaHeader) + "a,0,100,bert__2.6B,0,256,4,b200\n",
                  TraceFormat::kArena, "{f}:2: gpu_type: unknown gpu 'b200'"},
        ErrorCase{"arena_zero_gpus", "t.csv",
                  std::string(kArenaHeader) + "a,0,100,bert__2.6B,0,256,0,a100\n",
                  TraceFormat::kArena, "{f}:2: num_gpu: expected an integer >= 1, got '0'"},
        ErrorCase{"arena_bad_iterations", "t.csv",
                  std::string(kArenaHeader) + "a,0,-5,bert__2.6B,0,256,4,a100\n",
                  TraceFormat::kArena,
                  "{f}:2: num_iteration: expected a number > 0 and at most 1e15, got '-5'"},
        ErrorCase{"philly_bad_timestamp", "p.csv",
                  "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,5,1,5,vc\n",
                  TraceFormat::kAuto,
                  "{f}:2: timestamp: expected a UTC time YYYY-MM-DD HH:MM:SS, got "
                  "'2017-13-01 00:00:00'"},
        // Found by fuzzing: each timestamp in range, but 4,000 years apart.
        ErrorCase{"philly_span_past_the_time_bound", "p.csv",
                  "timestamp,duration,num_gpus,gpu_time,cluster\n2018-10-09 07:01:55,66,1,66,vc\n"
                  "6017-10-09 08:00:00,3600,8,28800,vc\n",
                  TraceFormat::kAuto, "{f}:3: arrives 1.262e+11 s after the first job; a trace may span at most 1e10 s"},
        ErrorCase{"pollux_unknown_app", "workloads/w.csv",
                  "name,time,application,num_replicas,batch_size\nx-0,1,resnet,1,32\n",
                  TraceFormat::kPollux,
                  "{f}:2: application: unknown application 'resnet'; known: imagenet, bert, "
                  "cifar10, yolov3, deepspeech2, ncf, gpt_pmp"},
        ErrorCase{"pollux_missing_apps", "workloads/w.csv",
                  "name,time,application,num_replicas,batch_size\nx-0,1,bert,1,32\n",
                  TraceFormat::kPollux,
                  "{f}:2: application: no profile directory for application 'bert'; looked "
                  "for "},
        ErrorCase{"alibaba_milli_over_1000", "a.csv",
                  std::string(kAlibabaHeader) + "p0,1000,1024,1,1500,,LS,Running,0,10,0\n",
                  TraceFormat::kAuto,
                  "{f}:2: gpu_milli: expected an integer in [0, 1000] (thousandths of a GPU), "
                  "got '1500'"},
        ErrorCase{"tessel_both_work_forms", "g.csv",
                  std::string(kTesselHeader) + "j,,0,bert__760M,128,10,20,1,,,0,1,1,false\n",
                  TraceFormat::kAuto,
                  "{f}:2: iterations: expected exactly one of iterations and duration_s"},
        ErrorCase{"tessel_max_below_min", "g.csv",
                  std::string(kTesselHeader) + "j,,0,bert__760M,128,10,,1,,,0,4,2,false\n",
                  TraceFormat::kAuto, "{f}:2: max_gpus: expected an integer >= 4, got '2'"},
        ErrorCase{"unknown_header", "u.csv", "a,b\n1,2\n", TraceFormat::kAuto,
                  "{f}:1: header 'a,b' matches no trace format; accepted headers:"}),
    [](const auto& info) { return TestName(info.param.name); });

TEST(TraceLoad, MissingPathIsNotFound) {
  auto w = LoadTrace("/nonexistent/trace.csv", TraceFormat::kAuto, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(w.status().message(), "trace '/nonexistent/trace.csv' does not exist");
}

TEST(TraceLoad, RejectsNonPositiveTimeScale) {
  TraceOptions o;
  o.time_scale = 0;
  auto w = LoadTrace("/nonexistent", TraceFormat::kAuto, o);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), "time scale: expected a number > 0, got 0");
}

TEST(TraceLoad, SkipsRowsWithoutGpusOrDurationAndSaysSo) {
  TempDir dir("skip");
  std::string path =
      dir.Write("c.csv", std::string(kItpHeader) + "a,100,50,1\nb,110,0,2\nc,120,60,0\n"
                                                   "d,130,-3,4\ne,90,70,8\n");
  auto w = LoadTrace(path, TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "e");  // sorted by submit, rebased to 0
  EXPECT_EQ(w->jobs[0].submit, 0);
  EXPECT_EQ(w->jobs[1].id, "a");
  EXPECT_EQ(w->jobs[1].submit, Seconds(10));
  EXPECT_EQ(w->jobs[0].origin, path + ":6");
  EXPECT_TRUE(HasNoteContaining(*w, "c: skipped 2 rows with duration <= 0 (first at " + path +
                                        ":3)"));
  EXPECT_TRUE(HasNoteContaining(*w, "c: skipped 1 row with num_gpu = 0 (first at " + path +
                                        ":4)"));
}

TEST(TraceLoad, LimitKeepsEarliestAndTimeScaleKeepsDeadlineSlack) {
  TempDir dir("limit");
  std::string path = dir.Write(
      "a.csv", std::string(kArenaHeader) + "late,300,10,bert__760M,,128,1,\n"
                                           "first,100,10,bert__760M,150,128,1,a100\n"
                                           "mid,200,10,moe__690M,50,256,2,v100\n");
  TraceOptions o;
  o.limit = 2;
  o.time_scale = 0.5;
  auto w = LoadTrace(path, TraceFormat::kAuto, o);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "first");
  EXPECT_EQ(w->jobs[0].submit, 0);
  ASSERT_TRUE(w->jobs[0].deadline.has_value());
  EXPECT_EQ(*w->jobs[0].deadline, Seconds(50));  // slack kept
  EXPECT_EQ(w->jobs[0].requested_gpu_type, "a100-40g");
  EXPECT_EQ(w->jobs[1].id, "mid");
  EXPECT_EQ(w->jobs[1].submit, Seconds(50));  // 100 s after the first, halved
  EXPECT_FALSE(w->jobs[1].deadline.has_value());  // 50 <= submit 200: none
  EXPECT_EQ(w->jobs[1].requested_gpu_type, "v100-32g");
  EXPECT_EQ(w->jobs[1].max_gpus, 8);
  EXPECT_TRUE(HasNoteContaining(*w, "kept the first 2 of 3 jobs"));
}

TEST(TraceLoad, DirectoryPrefixesIdsAndRejectsMixedFormats) {
  TempDir dir("dir");
  dir.Write("b.csv", std::string(kItpHeader) + "x,5,10,1\n");
  dir.Write("a.csv", std::string(kItpHeader) + "x,0,10,1\n");
  dir.Write("notes.txt", "not a trace");
  auto w = LoadTrace(dir.path(), TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "a/x");
  EXPECT_EQ(w->jobs[1].id, "b/x");
  // Mapping keys on the trace's own id, so both map alike.
  EXPECT_EQ(w->jobs[0].model, w->jobs[1].model);

  dir.Write("c.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n"
                     "2017-10-09 07:01:55,5,1,5,vc\n");
  auto mixed = LoadTrace(dir.path(), TraceFormat::kAuto, {});
  ASSERT_FALSE(mixed.ok());
  EXPECT_TRUE(Contains(mixed.status().message(), "a directory must hold one format"))
      << mixed.status().message();
}

TEST(TraceLoad, EmptyDirectoryIsNotFound) {
  TempDir dir("empty");
  auto w = LoadTrace(dir.path(), TraceFormat::kAuto, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(w.status().message(), "no *.csv files in directory '" + dir.path() + "'");
}

TEST(TraceLoad, PolluxNearestBatchScalesIterations) {
  TempDir dir("pollux");
  dir.Write("apps/bert/validation-100.csv", "progress,iteration,metric\n1,10,0\n2,400,0\n");
  dir.Write("apps/bert/validation-400.csv", "progress,iteration,metric\n1,10,0\n2,100,0\n");
  std::string path = dir.Write("workloads/workload-1.csv",
                               "name,time,application,num_replicas,batch_size\n"
                               "bert-0,0,bert,2,400\nbert-1,30.5,bert,4,200\n");
  auto w = LoadTrace(path, TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(*w->jobs[0].iterations, 100);
  // 200 is as near 100 as 400 in log ratio; the smaller wins: 400 x 100/200.
  EXPECT_EQ(*w->jobs[1].iterations, 200);
  EXPECT_EQ(w->jobs[1].submit, Seconds(30.5));
  EXPECT_EQ(w->jobs[1].model, "bert-base");
  EXPECT_TRUE(w->jobs[1].adaptive_batch);
  EXPECT_EQ(w->jobs[1].requested_gpus, 4);
  EXPECT_EQ(w->jobs[1].min_gpus, 1);
  EXPECT_EQ(w->jobs[1].max_gpus, 64);
  EXPECT_TRUE(HasNoteContaining(*w, "1 jobs had no validation profile at their batch size"));
}

// ----------------------------------------------------- the shared data

std::string Data(const std::string& rel) { return DataDir() + "/" + rel; }

void ExpectSortedFromZero(const Workload& w) {
  ASSERT_FALSE(w.jobs.empty());
  EXPECT_EQ(w.jobs.front().submit, 0);
  for (size_t i = 1; i < w.jobs.size(); ++i)
    ASSERT_LE(w.jobs[i - 1].submit, w.jobs[i].submit) << i;
}

void ExpectCatalogModels(const Workload& w) {
  std::set<std::string> seen;
  for (const JobSpec& j : w.jobs) {
    if (!seen.insert(j.model).second) continue;
    auto m = FindModel(j.model);
    ASSERT_TRUE(m.ok()) << j.model;
    EXPECT_EQ((*m)->name, j.model);
  }
}

TEST(TraceData, ItpAllClusters) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data("itp"), TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->jobs.size(), 69351u);
  ExpectSortedFromZero(*w);
  ExpectCatalogModels(*w);
  std::set<std::string> prefixes;
  for (const JobSpec& j : w->jobs) {
    prefixes.insert(j.id.substr(0, j.id.find('/')));
    ASSERT_TRUE(j.duration_s.has_value());
    ASSERT_FALSE(j.iterations.has_value());
    ASSERT_EQ(j.min_gpus, j.requested_gpus);
    ASSERT_EQ(j.max_gpus, j.requested_gpus);
  }
  EXPECT_EQ(prefixes.size(), 10u);
  EXPECT_TRUE(prefixes.count("cluster01"));
  EXPECT_FALSE(HasNoteContaining(*w, "skipped"));
}

TEST(TraceData, ItpOneClusterKeepsIds) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data("itp/cluster01.csv"), TraceFormat::kItp, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->jobs.size(), 1595u);
  EXPECT_EQ(w->name, "cluster01.csv");
  bool found = false;
  for (const JobSpec& j : w->jobs) {
    if (j.id != "965d744f-0445-c1a8-12af-97e4c536c66e") continue;
    found = true;
    EXPECT_EQ(j.requested_gpus, 64);
    EXPECT_EQ(*j.duration_s, 2429);
  }
  EXPECT_TRUE(found);
}

TEST(TraceData, Philly) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data("pollux/philly.csv"), TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->jobs.size(), 82247u);
  ExpectSortedFromZero(*w);
  ExpectCatalogModels(*w);
  for (const JobSpec& j : w->jobs) ASSERT_FALSE(j.user.empty()) << j.id;
  // The first data row: 2017-10-09 07:01:55, 66 s, 1 GPU, cluster 11cb48.
  for (const JobSpec& j : w->jobs) {
    if (j.id != "philly-0") continue;
    EXPECT_EQ(j.user, "11cb48");
    EXPECT_EQ(*j.duration_s, 66);
    EXPECT_EQ(j.requested_gpus, 1);
  }
}

struct ArenaCase {
  std::string file;
  size_t jobs;
};

class TraceDataArena : public ::testing::TestWithParam<ArenaCase> {};

TEST_P(TraceDataArena, LoadsEveryJob) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data("arena/traces/" + GetParam().file), TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->jobs.size(), GetParam().jobs);
  ExpectSortedFromZero(*w);
  ExpectCatalogModels(*w);
  std::set<std::string> types;
  for (const JobSpec& j : w->jobs) {
    types.insert(j.requested_gpu_type);
    ASSERT_TRUE(j.iterations.has_value());
    ASSERT_GT(*j.iterations, 0);
    ASSERT_EQ(j.min_gpus, 1);
    ASSERT_GE(j.max_gpus, j.requested_gpus);
    ASSERT_LE(j.max_gpus, std::max(64, j.requested_gpus));
  }
  for (const std::string& t : types)
    EXPECT_TRUE(t == "a100-40g" || t == "v100-32g" || t == "a40" || t == "a10") << t;
}

INSTANTIATE_TEST_SUITE_P(Trace, TraceDataArena,
                         ::testing::Values(ArenaCase{"simulate_trace_philly.csv", 1938},
                                           ArenaCase{"simulate_trace_venus.csv", 438},
                                           ArenaCase{"simulate_trace_pai.csv", 125},
                                           ArenaCase{"runtime_trace.csv", 244}),
                         [](const auto& info) { return TestName(info.param.file); });

// arena_round_s: each job submitted at the start of its round, as the
// artifact's trace manager buckets rows in file order (rounds from the
// first row's time; a row at or before the round's start + round joins
// it; an unsorted row joins the current round).
TEST(Trace, ArenaArrivalsAtTheStartOfTheirRound) {
  TempDir dir("arena_rounds");
  std::string path = dir.Write("rounds.csv",
                               "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,gpu_type\n"
                               "a,1000,10,bert__1.3B,,256,1,v100\n"
                               "b,1300,10,bert__1.3B,,256,1,v100\n"
                               "c,1301,10,bert__1.3B,,256,1,v100\n"
                               "d,2000,10,bert__1.3B,9000,256,1,v100\n"
                               "e,1100,10,bert__1.3B,,256,1,v100\n");
  TraceOptions opts;
  opts.arena_round_s = 300;
  auto w = LoadTrace(path, TraceFormat::kArena, opts);
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::map<std::string, double> at;
  for (const JobSpec& j : w->jobs) at[j.id] = ToSeconds(j.submit);
  // Rebased to a's 1000 s: a and b in round 0, c in round 1, d in round 3
  // (1900 < 2000 <= 2200), e (unsorted, 1100) in d's round.
  EXPECT_EQ(at, (std::map<std::string, double>{{"a", 0}, {"b", 0}, {"c", 300}, {"d", 900}, {"e", 900}}));
  EXPECT_TRUE(HasNoteContaining(*w, "arrivals at the start of their 300 s round"));
  // The deadline stays where the trace put it.
  for (const JobSpec& j : w->jobs) {
    if (j.id == "d") {
      EXPECT_EQ(*j.deadline, Seconds(9000 - 1000));
    }
  }
  auto plain = LoadTrace(path, TraceFormat::kArena, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(ToSeconds(plain->jobs.back().submit), 1000.0) << "d keeps its own time by default";
}

TEST(TraceData, ArenaPhillyFirstJob) {
  TESSEL_REQUIRE_DATA();
  TraceOptions literal;
  literal.arena_iteration_divisor = 1;
  auto w = LoadTrace(Data("arena/traces/simulate_trace_philly.csv"), TraceFormat::kArena, literal);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // f043f272-...,1945645,119965,bert__2.6B,1956739,256,4,a40 (the earliest).
  const JobSpec& j = w->jobs.front();
  EXPECT_EQ(j.id, "f043f272-f7a0-6861-353c-30479e8fffc1");
  EXPECT_EQ(j.model, "bert__2.6B");
  EXPECT_EQ(*j.iterations, 119965);
  // By default, as the artifact's simulator: 119965 // 5.
  auto scaled = LoadTrace(Data("arena/traces/simulate_trace_philly.csv"), TraceFormat::kArena, {});
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  EXPECT_EQ(*scaled->jobs.front().iterations, 23993);
  TraceOptions bad;
  bad.arena_iteration_divisor = 0;
  EXPECT_FALSE(LoadTrace(Data("arena/traces/simulate_trace_philly.csv"), TraceFormat::kArena, bad).ok());
  EXPECT_EQ(j.global_batch, 256);
  EXPECT_EQ(j.requested_gpus, 4);
  EXPECT_EQ(j.max_gpus, 16);
  EXPECT_EQ(j.requested_gpu_type, "a40");
  ASSERT_TRUE(j.deadline.has_value());
  EXPECT_EQ(*j.deadline, Seconds(1956739 - 1945645));
}

struct PolluxCase {
  std::string file;
  size_t jobs;
};

class TraceDataPollux : public ::testing::TestWithParam<PolluxCase> {};

TEST_P(TraceDataPollux, LoadsWithProfiledWork) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data(GetParam().file), TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->jobs.size(), GetParam().jobs);
  ExpectSortedFromZero(*w);
  ExpectCatalogModels(*w);
  for (const JobSpec& j : w->jobs) {
    ASSERT_TRUE(j.iterations.has_value());
    ASSERT_GT(*j.iterations, 0);
    ASSERT_TRUE(j.adaptive_batch);
  }
  EXPECT_FALSE(HasNoteContaining(*w, "nearest batch size"));
}

INSTANTIATE_TEST_SUITE_P(
    Trace, TraceDataPollux,
    ::testing::Values(PolluxCase{"pollux/workloads/workload-1.csv", 160},
                      PolluxCase{"pollux/workloads-0.5/workload-1.csv", 80},
                      PolluxCase{"pollux/workloads-2.0/workload-1.csv", 320},
                      PolluxCase{"sia/workloads/saturn/workload-1.csv", 160},
                      PolluxCase{"sia/workloads/philly/workload-1.csv", 160}),
    [](const auto& info) { return TestName(info.param.file); });

TEST(TraceData, PolluxIterationsComeFromTheValidationProfile) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data("pollux/workloads/workload-1.csv"), TraceFormat::kPollux, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  // cifar10-0,107,cifar10,6,2048: validation-2048.csv ends at iteration 3178.
  for (const JobSpec& j : w->jobs) {
    if (j.id != "cifar10-0") continue;
    EXPECT_EQ(*j.iterations, 3178);
    EXPECT_EQ(j.global_batch, 2048);
    EXPECT_EQ(j.requested_gpus, 6);
    EXPECT_EQ(j.model, "resnet-50");
  }
  EXPECT_TRUE(HasNoteContaining(*w, "cifar10 jobs as resnet-50 (stand-in"));
}

TEST(TraceData, Alibaba) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTrace(Data("alibaba-v2023/openb_pod_list_default.csv"), TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  // 8,152 pods: 1,088 CPU-only, one deleted the second it was created.
  EXPECT_EQ(w->jobs.size(), 8152u - 1088u - 1u);
  ExpectSortedFromZero(*w);
  ExpectCatalogModels(*w);
  EXPECT_TRUE(HasNoteContaining(*w, "skipped 1088 rows with num_gpu = 0 (CPU-only pods)"));
  EXPECT_TRUE(HasNoteContaining(*w, "skipped 1 row with a duration <= 0"));
  EXPECT_TRUE(HasNoteContaining(*w, "asked for a fraction of a GPU"));
  for (const JobSpec& j : w->jobs) ASSERT_GT(*j.duration_s, 0);
}

TEST(TraceData, LoadTracesMergesAndPrefixes) {
  TESSEL_REQUIRE_DATA();
  auto w = LoadTraces({Data("itp/cluster10.csv"), Data("arena/traces/simulate_trace_pai.csv")},
                      TraceFormat::kAuto, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->jobs.size(), 260u + 125u);
  EXPECT_EQ(w->name, "cluster10.csv+simulate_trace_pai.csv");
  size_t arena = 0;
  for (const JobSpec& j : w->jobs) arena += StartsWith(j.id, "simulate_trace_pai/");
  EXPECT_EQ(arena, 125u);
}

}  // namespace
}  // namespace tessel
