// Alibaba's GPU cluster trace v2023 (alibaba/clusterdata
// cluster-trace-gpu-v2023, openb_pod_list_*.csv): one row per pod; see
// trace.h for what each column becomes.
#include <string_view>

#include "core/strings.h"
#include "hardware/gpu.h"
#include "workload/importers.h"
#include "workload/model_mapping.h"

namespace tessel::workload_internal {

namespace {

// gpu_spec -> catalog GPU, for the types the catalog has. The trace's node
// list also names G2 and G3 (anonymised types) and A10; specs not listed
// here mean "any type".
constexpr std::pair<std::string_view, std::string_view> kAlibabaGpus[] = {
    {"V100M16", "v100-16g"}, {"V100M32", "v100-32g"}, {"P100", "p100"},
    {"T4", "t4"},            {"A10", "a10"},
};

// The catalog GPU for a gpu_spec; "" for none or any.
std::string MapGpuSpec(const std::string& spec) {
  if (spec.empty() || spec.find('|') != std::string::npos) return "";
  for (const auto& [name, gpu] : kAlibabaGpus) {
    if (spec == name) {
      auto g = FindGpu(gpu);
      return g.ok() ? (*g)->name : "";
    }
  }
  return "";
}

}  // namespace

Status ImportAlibaba(const ImportFile& in, Workload& out) {
  const CsvTable& t = in.table;
  SkipCounter skipped;
  size_t kept = 0, fractional = 0, never_scheduled = 0, any_type_specs = 0;
  for (const CsvRow& row : t.rows()) {
    std::string id = t.Get(row, "name");
    if (id.empty()) return InvalidArgument(t.Where(row, "name") + ": expected a pod name, got an empty value");
    auto gpus = GetCount(t, row, "num_gpu");
    if (!gpus.ok()) return gpus.status();
    auto milli = GetCount(t, row, "gpu_milli");
    if (!milli.ok() || *milli > 1000) {
      return InvalidArgument(t.Where(row, "gpu_milli") +
                             ": expected an integer in [0, 1000] (thousandths of a GPU), got '" +
                             t.Get(row, "gpu_milli") + "'");
    }
    auto created = GetNonNegative(t, row, "creation_time");
    if (!created.ok()) return created.status();
    auto scheduled = t.GetOptionalDouble(row, "scheduled_time");
    if (!scheduled.ok()) return scheduled.status();
    auto deleted = t.GetOptionalDouble(row, "deletion_time");
    if (!deleted.ok()) return deleted.status();
    if (*gpus == 0) {
      skipped.Add("num_gpu = 0 (CPU-only pods)", Origin(t, row));
      continue;
    }
    if (!*deleted) {
      skipped.Add("no deletion_time", Origin(t, row));
      continue;
    }
    double start = *scheduled ? **scheduled : *created;
    double duration = **deleted - start;
    if (Status s = CheckTraceSeconds(t, row, "deletion_time", **deleted); !s.ok()) return s;
    if (duration <= 0) {
      skipped.Add("a duration <= 0", Origin(t, row));
      continue;
    }
    if (!*scheduled) ++never_scheduled;
    if (*milli < 1000) ++fractional;

    JobSpec j = RigidMappedJob(id, Seconds(*created), duration, static_cast<int>(*gpus),
                               in.opts.seed);
    std::string spec = t.Get(row, "gpu_spec");
    j.requested_gpu_type = MapGpuSpec(spec);
    if (!spec.empty() && j.requested_gpu_type.empty()) ++any_type_specs;
    std::string qos = t.Get(row, "qos");
    j.priority = (qos == "LS" || qos == "Guaranteed") ? 1 : 0;
    j.origin = Origin(t, row);
    out.jobs.push_back(std::move(j));
    ++kept;
  }
  skipped.AppendNotes(in.stem, out.notes);
  if (fractional > 0) {
    out.notes.push_back(in.stem + ": " + std::to_string(fractional) +
                        " pods asked for a fraction of a GPU (gpu_milli < 1000); each counts as "
                        "one whole GPU");
  }
  if (never_scheduled > 0) {
    out.notes.push_back(in.stem + ": " + std::to_string(never_scheduled) +
                        " pods were never scheduled; their duration is deletion - creation");
  }
  if (any_type_specs > 0) {
    out.notes.push_back(in.stem + ": " + std::to_string(any_type_specs) +
                        " pods name a gpu_spec the catalog lacks (anonymised or a list of "
                        "alternatives); they may run on any type");
  }
  out.notes.push_back(in.stem + ": " + ModelMappingNote(in.opts.seed, kept) +
                      "; priority 1 for qos LS and Guaranteed");
  return Status::Ok();
}

}  // namespace tessel::workload_internal
