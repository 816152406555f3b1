// Arena's LLM-job traces (sjtu-epcc/arena traces/*.csv); see trace.h for
// what each column becomes.
#include <algorithm>
#include <cmath>

#include "core/strings.h"
#include "hardware/gpu.h"
#include "model/catalog.h"
#include "workload/importers.h"

namespace tessel::workload_internal {

namespace {

// Arena's scheduler picks each job's GPU count; the request is a hint. The
// upper bound (4x the request, at most 64 GPUs, never below the request)
// keeps a job within the scale its model was profiled for.
constexpr int kElasticFactor = 4;
constexpr int kElasticCap = 64;

}  // namespace

Status ImportArena(const ImportFile& in, Workload& out) {
  const CsvTable& t = in.table;
  const size_t first = out.jobs.size();  // this file's first job
  for (const CsvRow& row : t.rows()) {
    JobSpec j;
    j.id = t.Get(row, "job_id");
    if (j.id.empty()) return InvalidArgument(t.Where(row, "job_id") + ": expected a job id, got an empty value");
    j.origin = Origin(t, row);

    auto submit = GetNonNegative(t, row, "submission_time");
    if (!submit.ok()) return submit.status();
    j.submit = Seconds(*submit);

    auto iters = t.GetDouble(row, "num_iteration");
    if (!iters.ok() || !(*iters > 0 && *iters <= kMaxIterations)) {
      return InvalidArgument(t.Where(row, "num_iteration") + ": expected a number > 0 and at most 1e15, got '" +
                             t.Get(row, "num_iteration") + "'");
    }
    if (in.opts.arena_iteration_divisor < 1) {
      return InvalidArgument("arena iteration divisor: expected an integer >= 1, got " +
                             std::to_string(in.opts.arena_iteration_divisor));
    }
    j.iterations = std::max(1.0, std::floor(*iters / in.opts.arena_iteration_divisor));

    auto model = FindModel(t.Get(row, "model_name"));
    if (!model.ok()) return InvalidArgument(t.Where(row, "model_name") + ": " + model.status().message());
    j.model = (*model)->name;

    auto batch = GetCount(t, row, "batch_size");
    if (!batch.ok() || *batch < 1) {
      return InvalidArgument(t.Where(row, "batch_size") + ": expected an integer >= 1, got '" +
                             t.Get(row, "batch_size") + "'");
    }
    j.global_batch = static_cast<int>(*batch);

    auto gpus = GetCount(t, row, "num_gpu");
    if (!gpus.ok() || *gpus < 1) {
      return InvalidArgument(t.Where(row, "num_gpu") + ": expected an integer >= 1, got '" +
                             t.Get(row, "num_gpu") + "'");
    }
    j.requested_gpus = static_cast<int>(*gpus);
    j.min_gpus = 1;
    j.max_gpus = std::max(j.requested_gpus, std::min(kElasticFactor * j.requested_gpus, kElasticCap));

    std::string type = t.Get(row, "gpu_type");
    if (!type.empty()) {
      auto gpu = FindGpu(type);
      if (!gpu.ok()) return InvalidArgument(t.Where(row, "gpu_type") + ": " + gpu.status().message());
      j.requested_gpu_type = (*gpu)->name;
    }

    auto deadline = t.GetOptionalDouble(row, "deadline");
    if (!deadline.ok()) return deadline.status();
    if (*deadline && **deadline > *submit) j.deadline = Seconds(**deadline);

    out.jobs.push_back(std::move(j));
  }
  if (in.opts.arena_round_s > 0 && first < out.jobs.size()) {
    const SimTime round = Seconds(in.opts.arena_round_s);
    SimTime start = out.jobs[first].submit;
    for (size_t i = first; i < out.jobs.size(); ++i) {
      JobSpec& j = out.jobs[i];
      while (start + round < j.submit) start += round;
      j.submit = start;
    }
    out.notes.push_back(in.stem + ": arrivals at the start of their " + FormatDouble(in.opts.arena_round_s) +
                        " s round, as the Arena artifact's trace manager");
  }
  out.notes.push_back(in.stem + ": " + std::to_string(t.rows().size()) +
                      " Arena jobs, elastic in [1, min(4 x num_gpu, 64)] GPUs at their batch size");
  if (in.opts.arena_iteration_divisor != 1) {
    out.notes.push_back(in.stem + ": num_iteration divided by " + std::to_string(in.opts.arena_iteration_divisor) +
                        ", as the Arena artifact's simulator (--arena-iteration-divisor 1 keeps it)");
  }
  return Status::Ok();
}

}  // namespace tessel::workload_internal
