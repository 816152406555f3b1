#include "cluster/slurm_json.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cluster/hostlist.h"
#include "core/json_text.h"
#include "core/strings.h"

namespace tessel {
namespace {

using nlohmann::json;

std::string Quote(std::string_view s) {
  if (s.size() > 60) return "'" + std::string(s.substr(0, 60)) + "...'";
  return "'" + std::string(s) + "'";
}

// Parses `text` as the JSON object a Slurm listing prints; `command` names
// it in errors. A non-empty "errors" array is Unavailable.
Result<json> ParseListing(std::string_view text, std::string_view command, const char* list_field) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    std::string head(text.substr(0, 40));
    return Internal(std::string(command) + ": output is not JSON (" + e.what() + "); it begins " +
                    Quote(head));
  }
  if (!doc.is_object()) {
    return Internal(std::string(command) + ": output is JSON but not an object");
  }
  auto errors = doc.find("errors");
  if (errors != doc.end() && errors->is_array() && !errors->empty()) {
    std::vector<std::string> parts;
    for (const auto& e : *errors) {
      std::string part;
      for (const char* key : {"description", "error", "source"}) {
        auto it = e.find(key);
        if (it != e.end() && it->is_string() && !it->get<std::string>().empty()) {
          if (!part.empty()) part += ": ";
          part += it->get<std::string>();
        }
      }
      parts.push_back(part.empty() ? JsonText(e) : part);
    }
    return Unavailable(std::string(command) +
                       " reported errors (is slurmctld up?): " + Join(parts, "; "));
  }
  auto list = doc.find(list_field);
  if (list == doc.end() || !list->is_array()) {
    return Internal(std::string(command) + ": output has no '" + list_field + "' array");
  }
  return doc;
}

// Typed field access; `where` names the element ("sinfo --json: nodes[2]").
Result<std::string> StringField(const json& obj, const char* field, const std::string& where,
                                bool optional = false) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (optional) return std::string();
    return Internal(where + ": field '" + field + "' is missing");
  }
  if (!it->is_string()) {
    return Internal(where + ": field '" + field + "' should be a string, is " + it->type_name());
  }
  return it->get<std::string>();
}

Result<int64_t> IntField(const json& obj, const char* field, const std::string& where,
                         bool optional = false) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (optional) return int64_t{0};
    return Internal(where + ": field '" + field + "' is missing");
  }
  if (!it->is_number_integer()) {
    return Internal(where + ": field '" + field + "' should be an integer, is " + it->type_name());
  }
  return it->get<int64_t>();
}

Result<std::vector<std::string>> StringListField(const json& obj, const char* field,
                                                 const std::string& where) {
  std::vector<std::string> out;
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) {
    return Internal(where + ": field '" + field + "' should be an array, is " + it->type_name());
  }
  for (const auto& v : *it) {
    if (!v.is_string()) {
      return Internal(where + ": field '" + field + "' should hold strings");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

// Splits at commas outside parentheses: "gpu:a:1(IDX:0,2),gpu:b:0".
std::vector<std::string> SplitGresList(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth <= 0) {
      if (i > start) out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool IsNone(std::string_view s) { return s.empty() || s == "(null)" || s == "N/A"; }

// Adds the GPU counts of one GRES string into `counts` (type -> count).
Status AddGpuCounts(std::string_view gres, std::string_view where, const char* what,
                    std::map<std::string, int>& counts) {
  if (IsNone(gres)) return Status::Ok();
  for (const auto& item : SplitGresList(gres)) {
    std::string_view spec(item);
    spec = spec.substr(0, spec.find('('));
    std::vector<std::string> parts = Split(spec, ':');
    if (parts.empty() || parts[0] != "gpu") continue;
    std::string type;
    std::string count_text;
    if (parts.size() == 2) {
      count_text = parts[1];
    } else if (parts.size() == 3) {
      type = parts[1];
      count_text = parts[2];
    } else {
      return Internal(std::string(where) + ": " + what + " " + Quote(gres) + ": cannot read " +
                      Quote(item) + " (expected gpu[:type]:count)");
    }
    auto count = ParseInt(count_text, "count");
    if (!count.ok() || *count < 0) {
      return Internal(std::string(where) + ": " + what + " " + Quote(gres) + ": count " +
                      Quote(count_text) + " of " + Quote(item) + " is not a number");
    }
    counts[type] += static_cast<int>(*count);
  }
  return Status::Ok();
}

void DecodeWaitStatus(int64_t status, SlurmJob& job) {
  if ((status & 0x7f) != 0) {
    job.exit_signal = static_cast<int>(status & 0x7f);
  } else {
    job.exit_code = static_cast<int>((status >> 8) & 0xff);
  }
}

// One element of squeue's "jobs": a job, or one component of a
// heterogeneous job (het_job_id != 0).
struct SqueueEntry {
  SlurmJob job;
  int64_t het_job_id = 0;
  int64_t het_job_offset = 0;
};

// Merges the components of each heterogeneous job into one SlurmJob at the
// position of its first component: the leader's (offset 0) id and state,
// every component's nodes in offset order.
std::vector<SlurmJob> MergeHetComponents(std::vector<SqueueEntry> entries) {
  std::map<int64_t, std::vector<SqueueEntry*>> groups;
  for (auto& e : entries) {
    if (e.het_job_id != 0) groups[e.het_job_id].push_back(&e);
  }
  std::vector<SlurmJob> jobs;
  std::set<int64_t> emitted;
  for (auto& e : entries) {
    if (e.het_job_id == 0) {
      jobs.push_back(std::move(e.job));
      continue;
    }
    if (!emitted.insert(e.het_job_id).second) continue;
    std::vector<SqueueEntry*>& parts = groups[e.het_job_id];
    std::stable_sort(parts.begin(), parts.end(), [](const SqueueEntry* a, const SqueueEntry* b) {
      return a->het_job_offset < b->het_job_offset;
    });
    SlurmJob merged = parts.front()->job;
    merged.id = e.het_job_id;
    merged.components = static_cast<int>(parts.size());
    merged.nodes.clear();
    for (const SqueueEntry* p : parts) {
      merged.nodes.insert(merged.nodes.end(), p->job.nodes.begin(), p->job.nodes.end());
    }
    jobs.push_back(std::move(merged));
  }
  return jobs;
}

}  // namespace

Result<std::vector<SlurmGpus>> ParseGpuGres(std::string_view configured, std::string_view used,
                                            std::string_view where) {
  std::map<std::string, int> total, in_use;
  TESSEL_RETURN_IF_ERROR(AddGpuCounts(configured, where, "gres", total));
  TESSEL_RETURN_IF_ERROR(AddGpuCounts(used, where, "gres_used", in_use));
  std::vector<SlurmGpus> gpus;
  for (const auto& [type, n] : total) {
    auto it = in_use.find(type);
    gpus.push_back({type, n, it == in_use.end() ? 0 : it->second});
  }
  return gpus;
}

Result<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text) {
  auto doc = ParseListing(text, "sinfo --json", "nodes");
  if (!doc.ok()) return doc.status();
  std::vector<SlurmNode> nodes;
  std::set<std::string> seen;
  const json& list = (*doc)["nodes"];
  for (size_t i = 0; i < list.size(); ++i) {
    const json& n = list[i];
    std::string where = "sinfo --json: nodes[" + std::to_string(i) + "]";
    if (!n.is_object()) return Internal(where + ": not an object");
    SlurmNode node;
    auto name = StringField(n, "name", where);
    if (!name.ok()) return name.status();
    node.name = *name;
    where += " (" + node.name + ")";
    if (!seen.insert(node.name).second) continue;
    auto state = StringField(n, "state", where);
    if (!state.ok()) return state.status();
    node.state = ParseSlurmNodeState(*state);
    auto flags = StringListField(n, "state_flags", where);
    if (!flags.ok()) return flags.status();
    node.flags = *flags;
    auto cpus = IntField(n, "cpus", where);
    if (!cpus.ok()) return cpus.status();
    node.cpus = static_cast<int>(*cpus);
    auto alloc = IntField(n, "alloc_cpus", where, /*optional=*/true);
    if (!alloc.ok()) return alloc.status();
    node.alloc_cpus = static_cast<int>(*alloc);
    auto gres = StringField(n, "gres", where, /*optional=*/true);
    if (!gres.ok()) return gres.status();
    auto gres_used = StringField(n, "gres_used", where, /*optional=*/true);
    if (!gres_used.ok()) return gres_used.status();
    auto gpus = ParseGpuGres(*gres, *gres_used, where);
    if (!gpus.ok()) return gpus.status();
    node.gpus = *gpus;
    auto reason = StringField(n, "reason", where, /*optional=*/true);
    if (!reason.ok()) return reason.status();
    node.reason = *reason;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text) {
  auto doc = ParseListing(text, "squeue --json", "jobs");
  if (!doc.ok()) return doc.status();
  std::vector<SqueueEntry> entries;
  const json& list = (*doc)["jobs"];
  for (size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    std::string where = "squeue --json: jobs[" + std::to_string(i) + "]";
    if (!j.is_object()) return Internal(where + ": not an object");
    SlurmJob job;
    auto id = IntField(j, "job_id", where);
    if (!id.ok()) return id.status();
    job.id = *id;
    where += " (job " + std::to_string(job.id) + ")";
    auto name = StringField(j, "name", where);
    if (!name.ok()) return name.status();
    job.name = *name;
    auto state = StringField(j, "job_state", where);
    if (!state.ok()) return state.status();
    job.state_text = *state;
    job.state = ParseSlurmJobState(*state);
    auto reason = StringField(j, "state_reason", where, /*optional=*/true);
    if (!reason.ok()) return reason.status();
    job.reason = *reason;
    auto nodes = StringField(j, "nodes", where, /*optional=*/true);
    if (!nodes.ok()) return nodes.status();
    auto expanded = ExpandHostlist(*nodes);
    if (!expanded.ok()) return Internal(where + ": nodes: " + expanded.status().message());
    job.nodes = *expanded;
    auto exit_code = IntField(j, "exit_code", where, /*optional=*/true);
    if (!exit_code.ok()) return exit_code.status();
    if (IsFinished(job.state)) DecodeWaitStatus(*exit_code, job);
    auto submit = IntField(j, "submit_time", where, /*optional=*/true);
    if (!submit.ok()) return submit.status();
    job.submit_time = *submit;
    auto start = IntField(j, "start_time", where, /*optional=*/true);
    if (!start.ok()) return start.status();
    // A pending job's start_time is Slurm's estimate (or 0): not a start.
    if (job.state != SlurmJobState::kPending) job.start_time = *start;
    auto end = IntField(j, "end_time", where, /*optional=*/true);
    if (!end.ok()) return end.status();
    // A running job's end_time is its time limit's end: not an end.
    if (IsFinished(job.state)) job.end_time = *end;
    auto cwd = StringField(j, "current_working_directory", where, /*optional=*/true);
    if (!cwd.ok()) return cwd.status();
    job.working_dir = *cwd;
    auto out = StringField(j, "standard_output", where, /*optional=*/true);
    if (!out.ok()) return out.status();
    job.stdout_path = *out;
    auto het_id = IntField(j, "het_job_id", where, /*optional=*/true);
    if (!het_id.ok()) return het_id.status();
    auto het_offset = IntField(j, "het_job_offset", where, /*optional=*/true);
    if (!het_offset.ok()) return het_offset.status();
    entries.push_back({std::move(job), *het_id, *het_offset});
  }
  return MergeHetComponents(std::move(entries));
}

}  // namespace tessel
