// Microsoft's ITP traces (microsoft/elasticflow-traces, cluster<NN>.csv:
// job_id,submission_time,duration,num_gpu); see trace.h.
#include "workload/importers.h"
#include "workload/model_mapping.h"

namespace tessel::workload_internal {

Status ImportItp(const ImportFile& in, Workload& out) {
  const CsvTable& t = in.table;
  SkipCounter skipped;
  size_t kept = 0;
  for (const CsvRow& row : t.rows()) {
    std::string id = t.Get(row, "job_id");
    if (id.empty()) return InvalidArgument(t.Where(row, "job_id") + ": expected a job id, got an empty value");
    auto submit = GetNonNegative(t, row, "submission_time");
    if (!submit.ok()) return submit.status();
    auto duration = GetNumber(t, row, "duration");
    if (!duration.ok()) return duration.status();
    if (Status s = CheckTraceSeconds(t, row, "duration", *duration); !s.ok()) return s;
    auto gpus = GetCount(t, row, "num_gpu");
    if (!gpus.ok()) return gpus.status();
    if (*gpus == 0) {
      skipped.Add("num_gpu = 0", Origin(t, row));
      continue;
    }
    if (*duration <= 0) {
      skipped.Add("duration <= 0", Origin(t, row));
      continue;
    }
    JobSpec j = RigidMappedJob(std::move(id), Seconds(*submit), *duration,
                               static_cast<int>(*gpus), in.opts.seed);
    j.origin = Origin(t, row);
    out.jobs.push_back(std::move(j));
    ++kept;
  }
  skipped.AppendNotes(in.stem, out.notes);
  out.notes.push_back(in.stem + ": " + ModelMappingNote(in.opts.seed, kept));
  return Status::Ok();
}

}  // namespace tessel::workload_internal
