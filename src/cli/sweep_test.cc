#include "cli/sweep.h"

#include "core/csv.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tessel {
namespace {

namespace fs = std::filesystem;

Result<SweepSpec> Parse(const std::string& yaml) { return ParseSweep(yaml, "s.yaml", ""); }

TEST(Sweep, ExpandsEveryAxisInAFixedOrder) {
  auto spec = Parse(
      "name: t\npolicies: [fcfs, srtf]\nclusters: [demo]\nseeds: 3\n"
      "options:\n  placement: [consolidate, first-fit]\n  horizon: 30d\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  std::vector<SweepCell> cells = ExpandSweep(*spec);
  ASSERT_EQ(cells.size(), 2u * 3u * 2u);
  // Policies fastest, then options, then seeds.
  EXPECT_EQ(cells[0].policy, "fcfs");
  EXPECT_EQ(cells[1].policy, "srtf");
  EXPECT_EQ(cells[0].options[0].second, "consolidate");
  EXPECT_EQ(cells[2].options[0].second, "first-fit");
  EXPECT_EQ(cells[0].seed, 1u);
  EXPECT_EQ(cells[4].seed, 2u);
  EXPECT_EQ(cells[0].options[1], (std::pair<std::string, std::string>{"horizon", "30d"}));
  // Ids are distinct, stable, and the group drops only the seed.
  std::set<std::string> ids;
  for (const SweepCell& c : cells) ids.insert(c.Id());
  EXPECT_EQ(ids.size(), cells.size());
  EXPECT_EQ(cells[0].Id(), ExpandSweep(*Parse(
      "name: t\npolicies: [fcfs, srtf]\nclusters: [demo]\nseeds: 3\n"
      "options:\n  placement: [consolidate, first-fit]\n  horizon: 30d\n"))[0].Id());
  EXPECT_EQ(cells[0].GroupKey(), cells[4].GroupKey());
  EXPECT_NE(cells[0].GroupKey(), cells[1].GroupKey());
  std::vector<std::string> args = cells[3].FlagArgs();
  EXPECT_EQ(args, (std::vector<std::string>{"--cluster", "demo", "--seed", "1", "--placement", "first-fit",
                                            "--horizon", "30d", "--no-progress"}));
  EXPECT_TRUE(CheckSweepFlags(cells).ok());
}

TEST(Sweep, BadFilesNameTheLineAndTheField) {
  struct Case {
    const char* yaml;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"policies: [fcfs]\nclusterz: [demo]\n", "s.yaml:2: unknown field 'clusterz'; expected name, policies"},
           {"clusters: [demo]\n", "s.yaml: policies: required"},
           {"policies: []\n", "s.yaml:1: policies: the list is empty"},
           {"policies: [fcfs, nope]\n", "s.yaml:1: policies: nope: unknown policy 'nope'"},
           {"policies: [fcfs:backfill=maybe]\n", "expected none, first-fit or easy"},
           {"policies: [fcfs]\nseeds: 0\n", "s.yaml:2: seeds: expected a count from 1 to 1000, got 0"},
           {"policies: [fcfs]\nseeds: [1, 1]\n", "s.yaml:2: seeds: '1' is listed twice"},
           {"policies: [fcfs, srtf, fcfs]\n", "s.yaml:1: policies: 'fcfs' is listed twice"},
           {"policies: [fcfs]\nseeds: [1, x]\n", "s.yaml:2: seeds: 'x' is not a non-negative integer"},
           {"policies: [fcfs]\noptions:\n  seed: 3\n", "s.yaml:3: options: seed: set by the sweep itself"},
           {"policies: [fcfs]\noptions:\n  out: /tmp/x\n", "options: out: set by the sweep itself"},
           {"policies: [fcfs]\noptions:\n  placement: {a: 1}\n", "s.yaml:3: options.placement: expected a scalar"},
           {"policies: [fcfs]\ntraces: [/no/such/trace.csv]\n", "s.yaml:2: traces: /no/such/trace.csv: no such file"},
           {"name: 'a b'\npolicies: [fcfs]\n", "s.yaml:1: name: letters, digits"},
           {"policies: [fcfs\n", "s.yaml:2: YAML syntax error"},
           {"- fcfs\n", "s.yaml: expected a mapping"},
       }) {
    auto spec = Parse(c.yaml);
    ASSERT_FALSE(spec.ok()) << c.yaml;
    EXPECT_NE(spec.status().message().find(c.error), std::string::npos) << spec.status().message();
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  }
  // A simulate flag that does not exist is refused before anything runs.
  auto spec = Parse("policies: [fcfs]\noptions:\n  no-such-flag: 1\n");
  ASSERT_TRUE(spec.ok());
  Status s = CheckSweepFlags(ExpandSweep(*spec));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no-such-flag"), std::string::npos) << s.message();
}

TEST(Sweep, StudentQuantiles) {
  EXPECT_DOUBLE_EQ(StudentT975(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT975(2), 4.303);
  EXPECT_DOUBLE_EQ(StudentT975(30), 2.042);
  EXPECT_DOUBLE_EQ(StudentT975(1000), 1.96);
}

// Runs a small sweep here, resumes it, and gathers a table whose means and
// intervals are those of its cells' results.
TEST(Sweep, RunsResumesAndGathers) {
  const fs::path dir = fs::temp_directory_path() / ("tessel-sweep-unit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto spec = Parse("name: unit\npolicies: [fcfs, srtf]\nseeds: [1, 2, 3]\noptions:\n  limit: 40\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  std::vector<SweepCell> cells = ExpandSweep(*spec);
  ASSERT_TRUE(WriteSweepPlan(dir.string(), *spec, cells, 2).ok());
  int per_task = 0;
  std::string name;
  auto read = ReadSweepPlan(dir.string(), &per_task, &name);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(per_task, 2);
  EXPECT_EQ(name, "unit");
  ASSERT_EQ(read->size(), cells.size());
  for (size_t i = 0; i < cells.size(); ++i) EXPECT_EQ((*read)[i].Key(), cells[i].Key());

  std::ostringstream err;
  int failed = -1;
  EXPECT_EQ(RunSweepLocally(dir.string(), cells, 2, err, &failed), 6);
  EXPECT_EQ(failed, 0) << err.str();
  EXPECT_EQ(RunSweepLocally(dir.string(), cells, 2, err, &failed), 0);  // all done: nothing runs
  fs::remove(dir / "cells" / (cells[3].Id() + ".json"));
  EXPECT_EQ(RunSweepLocally(dir.string(), cells, 2, err, &failed), 1);

  auto table = GatherSweep(dir.string(), cells);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->done, 6);
  EXPECT_TRUE(table->missing.empty());
  // Two groups (fcfs, srtf), three seeds each; 40 jobs finish in every cell.
  std::istringstream csv(table->table_csv);
  std::string header, row;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("policy,cluster,trace,limit,seeds,avg_jct_s_mean,avg_jct_s_ci95", 0), 0u) << header;
  int rows = 0;
  while (std::getline(csv, row)) {
    ++rows;
    EXPECT_NE(row.find(",demo,,40,3,"), std::string::npos) << row;
  }
  EXPECT_EQ(rows, 2);
  EXPECT_NE(table->table_json.find("\"jobs_finished\""), std::string::npos);
  // The plots' data: a row per setting, a mean and CI column pair per policy.
  auto dat = ReadTextFile((dir / "sweep_avg_jct.dat").string());
  ASSERT_TRUE(dat.ok());
  EXPECT_EQ(dat->rfind("setting \"fcfs\" ci \"srtf\" ci\n\"demo limit=40\" ", 0), 0u) << *dat;
  EXPECT_TRUE(fs::exists(dir / "sweep.gp"));
  // A cell whose result is for another cell (a stale file) counts as missing.
  std::ofstream(dir / "cells" / (cells[0].Id() + ".json")) << "{\"key\": \"something else\", \"summary\": {}}\n";
  EXPECT_FALSE(SweepCellDone(dir.string(), cells[0]));
  table = GatherSweep(dir.string(), cells);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->missing, std::vector<std::string>{cells[0].Id()});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessel
