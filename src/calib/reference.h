// Reference measurements the estimator is judged against, read from the
// shared data folder:
//  - measured/calibration.csv: published training throughput (Megatron-LM
//    papers and READMEs, NVIDIA DeepLearningExamples);
//  - arena/database/prof_database.json and prof_database_h100_l20.json:
//    iteration times of Alpa's best plan measured on real GPUs.
// Each becomes a ReferenceCase: a model, hardware, batch, what is known of
// the plan, and the measured iteration time. Unknown plan fields are left
// for the planner to choose (the best plan), as the measured systems chose
// theirs. Rows whose stated shape is not what ran (data/measured/
// unusable-rows.csv) are listed as skipped, with the source's evidence.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "hardware/node.h"
#include "model/model.h"
#include "perf/parallel_plan.h"

namespace tessel {

struct ReferenceCase {
  std::string id;      // "calibration.csv:23", "prof_database.json:bert_1.3B_128@1_a100_1_n_4_d"
  // The publication (leave-one-source-out groups on it): "narayanan2021",
  // "dle-bert", "arena-prof-db", or published.csv's own ids.
  std::string source;
  std::string gpu_generation;  // "a100", "v100", "h100", "a40", "a10", "l20"
  std::string arch;            // the GPU's architecture: "ampere", "hopper", ...
  // The framework that ran it (a PerfParams framework name); empty = the
  // default the plan implies.
  std::string framework;
  ModelSpec model;
  Topology topology;
  int gpus = 1;
  int global_batch = 0;         // 0 = unknown (then micro_batch * M * d)
  // Known plan fields; 0 / nullopt = unknown, chosen by the planner.
  int tp = 0, pp = 0, dp = 0, micro_batch = 0, num_micro_batches = 0, virtual_stages = 0;
  std::optional<Recompute> recompute;
  int zero = -1;  // ZeRO stage; -1 = unknown
  Precision precision = Precision::kBf16;
  double measured_iteration_s = 0;
  // Memory per GPU as the source states it (published.csv memory_GB_per_gpu,
  // in GiB); 0 = not stated. What it counts (allocated, reserved, the
  // device's use) differs between sources: see the row's notes.
  double measured_memory_gib = 0;
  std::string note;  // assumptions made reading the row
};

struct SkippedCase {
  std::string id;
  std::string reason;
};

struct ReferenceSet {
  std::vector<ReferenceCase> cases;
  std::vector<SkippedCase> skipped;
  int infeasible_measured = 0;  // Alpa entries marked -1 (out of memory)
  // Published runs that failed for memory (other_result "out of memory ..."):
  // everything but a time; the estimator must not call them fitting.
  std::vector<ReferenceCase> out_of_memory;
};

// Reads calibration.csv; rows without a model shape or a usable result are
// listed in `skipped` with the reason. Malformed numbers are errors
// (file:line: column).
Status LoadCalibrationCsv(const std::string& path, ReferenceSet* out);
// The same for text in the same format (published.csv's superset of
// columns: kv_heads, ffn_hidden, ffn_kind, vocab, sharding_zero, cp,
// tokens_per_s_per_gpu, ...); `file` names it in ids and errors.
Status LoadThroughputCsvText(std::string_view text, const std::string& file, ReferenceSet* out);
// data/measured/published.csv, embedded at build time.
std::string_view EmbeddedPublishedCsv();
// data/measured/unusable-rows.csv, embedded at build time: reference rows
// (by file name and row_id) whose stated shape is not what the measured run
// executed, with the evidence. LoadThroughputCsvText lists them in
// `skipped` with that reason instead of comparing them.
std::string_view EmbeddedUnusableRowsCsv();
// The same table parsed: "<file>:<row_id>" -> reason. Errors name the file,
// line and column.
Result<std::map<std::string, std::string>> ParseUnusableRows(std::string_view text, const std::string& file);
// Reads an Arena/Alpa profile database (either format).
Status LoadArenaDatabase(const std::string& path, double arena_network_gbps, ReferenceSet* out);

}  // namespace tessel
