// Synthetic workloads: seeded, reproducible job streams shaped like
// published cluster traces (or a paper's generated job set), for
// experiments that need more (or other) jobs than a real trace offers.
//
// A job of a trace profile (philly, itp): Poisson arrivals (exponential
// inter-arrival times at the given rate); a requested GPU count drawn from
// the profile's measured mix; a duration drawn log-normally around the
// profile's median for that GPU count; a model and batch from the model
// mapping (model_mapping.h). Work is duration_s on the requested GPUs, as
// in the ITP and Philly traces.
//
// Profiles (src/workload/gen_trace.cc, kProfiles) are measured from the
// public traces, grouped by requested GPUs (1, 2, 4, 8, 16, 32, 64):
//  philly  Microsoft Philly 2017 (Jeon et al., ATC'19; the 82,247 jobs of
//          Pollux's philly.csv): 93% single-GPU, 0.3% >= 16 GPUs, median
//          duration 19 min for single-GPU jobs, 31.5 jobs/hour.
//  itp     Microsoft ITP 2021 (ElasticFlow, Gu et al., ASPLOS'23; 69,351
//          jobs of ten clusters): 83% single-GPU, 10% 8-GPU, 1.2% >= 16,
//          longer jobs (median 2.8 h single-GPU), 48 jobs/hour.
//
// The `ddl` profile is not a cluster trace but the synthetic workload of
// Wang, Shi, Wang, Chu, "Communication Contention Aware Scheduling of
// Multiple Deep Learning Training Jobs" (ICDCS 2020), after their
// generator (HKBU-HPML/dl-scheduling, online/job_master.py
// microsoft_generate, d5398bd), for the ddl-64 cluster:
//  - GPU counts 1/2/4/8/16/32 in exact shares 80/14/26/30/8/2 of 160 (their
//    job_dist); other job counts get the same shares by largest remainder
//    (ties to the smaller count), which is theirs for multiples of 80;
//  - a model uniformly among the four profiled ones (model/profiled_model.h:
//    ddl-vgg16, ddl-resnet50, ddl-inception3, ddl-lstm-ptb), global batch =
//    the profiled per-GPU batch x GPUs;
//  - work: iterations uniform in [10, 60];
//  - arrivals uniform over [0, 12 s), floored to whole milliseconds (their
//    simulator's step), then sorted: the jobs carry ids in submit order.
// Where it deviates: their arrival window stays 12 s for any job count;
// here the window is jobs / rate with the rate theirs (160 jobs per 12 s,
// 48,000/hour) unless --rate says otherwise, so --jobs keeps the load. Times
// are shifted so the first job arrives at 0 (as every trace loader does).
// --duration-scale multiplies the iterations (rounded, >= 1), and
// --max-job-gpus, --gpu-types and --elastic apply as for the other profiles.
// Draws come from this file's generator, not numpy's: the same seed is not
// the paper's job set, only the same distribution.
//
// Reproducibility: std::mt19937_64 (whose output the standard fixes) with
// the distributions written here (exponential by inversion, normal by
// Box-Muller), not libstdc++'s, whose algorithms are unspecified; times are
// whole seconds. The same options give the same workload wherever libm's
// log/exp/cos agree to the rounding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "workload/job.h"

namespace tessel {

// The most jobs gen-trace writes (sizes are bounded before allocation).
inline constexpr int kMaxGeneratedJobs = 10000000;

struct GenTraceOptions {
  uint64_t seed = 1;
  int jobs = 200;                   // >= 0 (the CLI's default: GenTraceDefaultJobs)
  std::string profile = "philly";   // GenTraceProfileNames()
  double arrival_rate_per_hour = 0;  // > 0; 0 = the profile's measured rate
  double duration_scale = 1.0;      // multiplies every drawn duration (ddl: iterations); > 0
  int max_job_gpus = 64;            // larger draws are clamped to this; >= 1
  // Each job requests one of these (catalog names or aliases), uniformly;
  // empty = any type.
  std::vector<std::string> gpu_types;
  // false: rigid jobs (min = max = requested). true: elastic in
  // [1, min(4 x requested, max_job_gpus)], as the Arena importer does.
  bool elastic = false;
  // This share of the jobs (0 to 1, drawn per job) get a deadline: submit +
  // U(deadline_min, deadline_max) x the job's duration alone on its request
  // (ElasticFlow's generator: U(0.5, 1.5), so some deadlines cannot be met).
  // Drawn from a stream of their own: the other fields do not change.
  double deadline_fraction = 0;
  double deadline_min = 0.5, deadline_max = 1.5;
};

std::vector<std::string> GenTraceProfileNames();
// How many jobs a profile generates unless told: 160 for ddl (the paper's
// job set), 200 for the others.
int GenTraceDefaultJobs(std::string_view profile);

// The workload for `opts`, first job at t = 0, ids "gen-00000", ... in
// submit order. InvalidArgument names the bad option and what it accepts.
Result<Workload> GenerateTrace(const GenTraceOptions& opts);

}  // namespace tessel
