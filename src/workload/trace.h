// Trace import: turns the public traces in ../shared/data (Arena, Pollux /
// Sia, Microsoft ITP, Philly, Alibaba GPU v2023) and tessel's own trace
// format into a Workload, and writes tessel's format back.
//
// What each importer takes from its trace (decisions a trace cannot make
// are written to Workload::notes):
//  arena    job_id,submission_time,num_iteration,model_name,deadline,
//           batch_size,num_gpu,gpu_type. Model by catalog name (bert__2.6B),
//           iterations = num_iteration at global_batch = batch_size,
//           requested type by FindGpu (a100 -> a100-40g, v100 -> v100-32g,
//           a40, a10). Deadline absolute; one at or before submission means
//           none. Arena's scheduler chooses each job's GPU count, so jobs are
//           elastic: min_gpus 1, max_gpus max(num_gpu, min(4 x num_gpu, 64));
//           the batch is fixed.
//  pollux   name,time,application,num_replicas,batch_size (Pollux and Sia
//           workload-N.csv). Work = the last `iteration` of the app's
//           validation-<batch_size>.csv, found in ../apps/<app>/ (Pollux) or
//           ../../apps/<app>/ (Sia) beside the workload file; without an
//           exact file, the nearest batch size's, scaled by the batch ratio
//           (same number of samples). Elastic and adaptive-batch (Pollux
//           jobs are): min_gpus 1, max_gpus 64, requested = num_replicas, no
//           GPU type. Applications map to catalog models (kPolluxApps in
//           import_pollux.cc): imagenet -> resnet-50 and bert -> bert-base
//           are the apps' own models; cifar10 (ResNet-18, 32 px), yolov3
//           (Darknet-53) -> resnet-50, deepspeech2 and ncf -> bert-base,
//           gpt_pmp -> gpt3-1.3b are stand-ins (the catalog has no RNN,
//           recommender or ResNet-18).
//  itp      job_id,submission_time,duration,num_gpu: rigid jobs
//           (min = max = requested = num_gpu) of duration_s, no GPU type,
//           model by the model mapping (model_mapping.h).
//  philly   timestamp,duration,num_gpus,gpu_time,cluster (Pollux's
//           philly.csv): timestamp "YYYY-MM-DD HH:MM:SS" read as UTC,
//           user = cluster (the virtual cluster), id = <file stem>-<row>,
//           otherwise as itp.
//  alibaba  openb_pod_list_*.csv: submit = creation_time, duration =
//           deletion_time - scheduled_time (- creation_time for pods never
//           scheduled), requested = num_gpu; a fractional-GPU pod
//           (gpu_milli < 1000) counts as one whole GPU. gpu_spec maps
//           V100M16 -> v100-16g, V100M32 -> v100-32g, P100 -> p100,
//           T4 -> t4, A10 -> a10; anonymised types (G2, G3), lists of
//           alternatives ("A|B") and empty specs mean any type. qos LS and
//           Guaranteed -> priority 1, others 0. CPU-only pods are skipped.
//  tessel   tessel's own format (WriteTraceCsv): every JobSpec field; model
//           is a catalog model or a profiled one (model/profiled_model.h).
//
// Rows of real traces (itp, philly, alibaba) with no GPUs or a duration
// <= 0 are skipped and counted in the notes; every malformed field (not a
// number, negative count, unknown model or GPU) is an error naming
// file:line: column and what is accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "workload/job.h"

namespace tessel {

enum class TraceFormat { kAuto, kArena, kPollux, kItp, kPhilly, kAlibaba, kTessel };

// "auto", "arena", "pollux", "itp", "philly", "alibaba", "tessel".
const char* TraceFormatName(TraceFormat f);
std::vector<std::string> TraceFormatNames();
// Case-insensitive; unknown names are an error listing the known ones.
Result<TraceFormat> ParseTraceFormat(std::string_view name);

// The format whose columns `header` has; `source` names the file in the
// error, which lists the header each format expects.
Result<TraceFormat> DetectTraceFormat(const std::vector<std::string>& header,
                                      const std::string& source);

struct TraceOptions {
  uint64_t seed = 1;        // for the model mapping
  size_t limit = 0;         // keep the first N jobs by submit time; 0 = all
  // Submit times (after rebasing to 0) are multiplied by this; deadlines
  // keep their slack after submission. < 1 makes arrivals denser. > 0.
  double time_scale = 1.0;
  // Arena traces: num_iteration is divided by this (integer division, at
  // least 1 iteration left), as the Arena artifact's simulator does
  // (ITER_NUM_SCALE_FACTOR_SIM = 5 in its macro/macro_def.py). 1 keeps
  // the trace's numbers.
  int arena_iteration_divisor = 5;
  // Arena traces, > 0: each job is submitted at the start of the round of
  // this many seconds its arrival falls in, as the Arena artifact's trace
  // manager buckets arrivals (sjtu-epcc/arena trace_manager.py:39-81,
  // simulator.py:283): rounds start at the first row's time; in file order,
  // a job arriving at or before the current round's start + round joins
  // it, else the rounds move on (an unsorted row joins the current round).
  // 0 (default): the trace's own times.
  double arena_round_s = 0;
  // Pollux/Sia workloads: where the applications' profiles are (the
  // directory holding <app>/). "" = look beside the workload (../apps,
  // ../../apps).
  std::string apps_dir;
};

// The trace files `path` names: itself, or a directory's *.csv files sorted
// by name (what LoadTrace merges). NotFound for a missing path or a
// directory without *.csv files.
Result<std::vector<std::string>> ListTraceFiles(const std::string& path);

// Loads `path`: a trace file, or a directory whose *.csv files (sorted by
// name, all of one format) are merged. When more than one file is merged,
// job ids become "<file stem>/<id>" so they stay unique. Jobs come back in
// submit order, the first at t = 0. Errors: NotFound for a missing path or
// an empty directory, InvalidArgument for an unreadable header or field
// (file:line: column: what was expected), a duplicate job id, or a bad
// option.
Result<Workload> LoadTrace(const std::string& path, TraceFormat format,
                           const TraceOptions& opts);
// As LoadTrace over several paths (files or directories), merged into one
// workload; the format applies to (or is detected for) each file.
Result<Workload> LoadTraces(const std::vector<std::string>& paths, TraceFormat format,
                            const TraceOptions& opts);

// Writes `workload` in tessel's format (header
// job_id,user,submit_s,model,global_batch,iterations,duration_s,
// requested_gpus,gpu_type,deadline_s,priority,min_gpus,max_gpus,
// adaptive_batch). LoadTrace reads it back to equal JobSpecs (all fields
// but origin) when the first job is at t = 0. Fails (InvalidArgument) on a
// job with neither or both of iterations and duration_s, or when the
// stream fails.
Status WriteTraceCsv(const Workload& workload, std::ostream& out);

}  // namespace tessel
