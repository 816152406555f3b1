#include "cluster/slurm_client.h"

#include <algorithm>
#include <set>

#include "cluster/slurm_json.h"
#include "core/strings.h"

namespace tessel {
namespace {

// stderr fragments of Slurm's tools meaning "slurmctld (or munge) cannot be
// reached now": worth retrying.
constexpr const char* kUnreachable[] = {
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Connection timed out",
    "Zero Bytes were transmitted or received",
    "Communication connection failure",
    "temporarily unable",
    "backup controller in standby mode",
    "Munge encode failed",
    "Protocol authentication error",
};

bool IsUnreachable(std::string_view text) {
  for (const char* fragment : kUnreachable) {
    if (Contains(text, fragment)) return true;
  }
  return false;
}

// The Status for a Slurm tool that exited non-zero: Unavailable when the
// controller could not be reached, else `code` with the tool's message.
Status ToolFailure(const CommandRequest& request, const CommandResult& result, StatusCode code) {
  std::string text = DescribeCommandFailure(request, result);
  if (IsUnreachable(result.stderr_text)) return Unavailable(text);
  return Status(code, text);
}

bool IsPlainName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool IsAbsolute(std::string_view path) { return !path.empty() && path[0] == '/'; }

bool Uniform(const std::vector<NodeGpuCount>& nodes) {
  return std::all_of(nodes.begin(), nodes.end(),
                     [&](const NodeGpuCount& n) { return n.gpus == nodes[0].gpus; });
}

Status ValidateSubmit(const SubmitRequest& r) {
  auto bad = [](const std::string& m) { return InvalidArgument("submit: " + m); };
  if (r.job_name.empty() || r.job_name.find('\n') != std::string::npos) {
    return bad("job_name must be one non-empty line");
  }
  if (!IsPlainName(r.gpu_type)) {
    return bad("gpu_type '" + r.gpu_type + "' must be a GRES type such as a100");
  }
  if (r.nodes.empty()) return bad("nodes is empty; an exact allocation names its nodes");
  std::set<std::string> seen;
  for (const auto& n : r.nodes) {
    if (!IsPlainName(n.node)) return bad("node name '" + n.node + "' is not a host name");
    if (!seen.insert(n.node).second) return bad("node " + n.node + " is listed twice");
    if (n.gpus < 1) {
      return bad("node " + n.node + " has " + std::to_string(n.gpus) +
                 " GPUs; each node needs at least 1");
    }
  }
  if (r.batch_script.empty()) return bad("batch_script is empty");
  if (!IsAbsolute(r.working_dir)) {
    return bad("working_dir '" + r.working_dir + "' must be an absolute path");
  }
  if (!IsAbsolute(r.output_path)) {
    return bad("output_path '" + r.output_path + "' must be an absolute path");
  }
  if (!r.error_path.empty() && !IsAbsolute(r.error_path)) {
    return bad("error_path '" + r.error_path + "' must be an absolute path");
  }
  for (const auto& [name, value] : r.env) {
    if (!IsEnvName(name)) return bad("env name '" + name + "' is not a variable name");
    if (StartsWith(name, "SLURM_")) {
      return bad("env name '" + name + "': SLURM_* variables are Slurm's");
    }
  }
  if (r.cpus_per_task < 0) return bad("cpus_per_task must not be negative");
  if (r.time_limit_minutes < 0) return bad("time_limit_minutes must not be negative");
  if (!r.partition.empty() && !IsPlainName(r.partition)) {
    return bad("partition '" + r.partition + "' is not a partition name");
  }
  return Status::Ok();
}

Result<SlurmJobId> ParseJobId(std::string_view stdout_text) {
  // --parsable prints "ID" or "ID;CLUSTER".
  std::string line = Trim(stdout_text.substr(0, stdout_text.find('\n')));
  std::string id_text = line.substr(0, line.find(';'));
  auto id = ParseInt(id_text, "sbatch --parsable output");
  if (!id.ok() || *id <= 0) {
    return Internal("sbatch --parsable printed '" + line + "', not a job id");
  }
  return static_cast<SlurmJobId>(*id);
}

}  // namespace

SlurmClient::SlurmClient(CommandRunner& runner, SlurmClientOptions options)
    : runner_(runner), options_(std::move(options)) {}

CommandRequest SlurmClient::ToolRequest(std::vector<std::string> argv) const {
  CommandRequest request;
  request.argv = std::move(argv);
  if (!options_.slurm_conf.empty()) request.env.emplace_back("SLURM_CONF", options_.slurm_conf);
  request.timeout = options_.timeout;
  return request;
}

Result<std::vector<SlurmNode>> SlurmClient::ListNodes() const {
  CommandRequest request = ToolRequest({"sinfo", "--json"});
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) return ToolFailure(request, *result, StatusCode::kInternal);
  return ParseSinfoJson(result->stdout_text);
}

Result<std::vector<SlurmJob>> SlurmClient::ListJobs(std::string_view name_prefix) const {
  CommandRequest request = ToolRequest({"squeue", "--json"});
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) return ToolFailure(request, *result, StatusCode::kInternal);
  auto jobs = ParseSqueueJson(result->stdout_text);
  if (!jobs.ok() || name_prefix.empty()) return jobs;
  std::vector<SlurmJob> matching;
  for (auto& job : *jobs) {
    if (StartsWith(job.name, name_prefix)) matching.push_back(std::move(job));
  }
  return matching;
}

Result<SlurmJob> SlurmClient::GetJob(SlurmJobId id) const {
  auto jobs = ListJobs();
  if (!jobs.ok()) return jobs.status();
  for (auto& job : *jobs) {
    if (job.id == id) return std::move(job);
  }
  return NotFound("job " + std::to_string(id) +
                  " is not known to slurmctld (never submitted, or finished longer than "
                  "MinJobAge ago)");
}

Result<CommandRequest> SlurmClient::BuildSubmitCommand(const SubmitRequest& r,
                                                       const SlurmClientOptions& options) {
  TESSEL_RETURN_IF_ERROR(ValidateSubmit(r));
  // Options of every component (the whole job when it has one).
  auto resources = [&](std::vector<std::string>& a, const std::vector<std::string>& nodes,
                       int gpus_per_node) {
    a.push_back("--nodes=" + std::to_string(nodes.size()));
    a.push_back("--nodelist=" + Join(nodes, ","));
    a.push_back("--ntasks-per-node=" + std::to_string(gpus_per_node));
    a.push_back("--gpus-per-task=" + r.gpu_type + ":1");
    a.push_back("--gpu-bind=per_task:1");
    if (r.cpus_per_task > 0) a.push_back("--cpus-per-task=" + std::to_string(r.cpus_per_task));
    if (!r.partition.empty()) a.push_back("--partition=" + r.partition);
    if (r.time_limit_minutes > 0) a.push_back("--time=" + std::to_string(r.time_limit_minutes));
    a.push_back(r.requeue ? "--requeue" : "--no-requeue");
  };
  CommandRequest request;
  request.timeout = options.timeout;
  auto& a = request.argv;
  a = {"sbatch", "--parsable", "--job-name=" + r.job_name};
  if (Uniform(r.nodes)) {
    std::vector<std::string> names;
    for (const auto& n : r.nodes) names.push_back(n.node);
    resources(a, names, r.nodes[0].gpus);
  }
  a.push_back("--chdir=" + r.working_dir);
  a.push_back("--output=" + r.output_path);
  if (!r.error_path.empty()) a.push_back("--error=" + r.error_path);
  a.push_back("--export=ALL");
  if (!Uniform(r.nodes)) {
    // A heterogeneous job, one component per node in request order.
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      if (i > 0) a.push_back(":");
      resources(a, {r.nodes[i].node}, r.nodes[i].gpus);
    }
  }
  a.push_back(r.batch_script);
  if (!options.slurm_conf.empty()) request.env.emplace_back("SLURM_CONF", options.slurm_conf);
  for (const auto& kv : r.env) request.env.push_back(kv);
  return request;
}

Result<SlurmJobId> SlurmClient::Submit(const SubmitRequest& r) const {
  auto request = BuildSubmitCommand(r, options_);
  if (!request.ok()) return request.status();
  auto result = runner_.Run(*request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    // sbatch refusing a request ("Invalid node name specified", "Requested
    // node configuration is not available") is the caller's to fix.
    return ToolFailure(*request, *result, StatusCode::kInvalidArgument);
  }
  return ParseJobId(result->stdout_text);
}

Status SlurmClient::Cancel(SlurmJobId id) const {
  std::vector<std::string> argv = {"scancel", std::to_string(id)};
  CommandRequest request = ToolRequest(argv);
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    if (Contains(result->stderr_text, "Invalid job id specified")) return Status::Ok();
    return ToolFailure(request, *result, StatusCode::kInternal);
  }
  return Status::Ok();
}

Status SlurmClient::Signal(SlurmJobId id, std::string_view signal, SignalTarget target) const {
  std::string sig(signal);
  if (StartsWith(sig, "SIG")) sig = sig.substr(3);
  if (!IsPlainName(sig) || sig.find_first_of("-.") != std::string::npos) {
    return InvalidArgument("signal '" + std::string(signal) + "' is not a signal name");
  }
  auto job = GetJob(id);
  if (!job.ok()) return job.status();
  if (job->state != SlurmJobState::kRunning) {
    return FailedPrecondition("job " + std::to_string(id) + " is " + job->state_text +
                              "; only a RUNNING job can be signalled");
  }
  std::vector<std::string> argv = {"scancel", "--signal=" + sig};
  if (target == SignalTarget::kBatchShell) argv.push_back("--batch");
  if (target == SignalTarget::kAll) argv.push_back("--full");
  argv.push_back(std::to_string(id));
  CommandRequest request = ToolRequest(argv);
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    const std::string& err = result->stderr_text;
    if (Contains(err, "Invalid job id specified")) {
      return Status(StatusCode::kNotFound, DescribeCommandFailure(request, *result));
    }
    if (Contains(err, "can not be altered now") || Contains(err, "pending")) {
      return Status(StatusCode::kFailedPrecondition, DescribeCommandFailure(request, *result));
    }
    return ToolFailure(request, *result, StatusCode::kInternal);
  }
  return Status::Ok();
}

Status SlurmClient::Drain(std::string_view node, std::string_view reason) const {
  if (!IsPlainName(node))
    return InvalidArgument("drain: '" + std::string(node) + "' is not a node name");
  if (Trim(reason).empty())
    return InvalidArgument("drain " + std::string(node) + ": a reason is required");
  std::vector<std::string> argv = {"scontrol", "update", "NodeName=" + std::string(node),
                                   "State=DRAIN", "Reason=" + std::string(reason)};
  CommandRequest request = ToolRequest(argv);
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    StatusCode code = Contains(result->stderr_text, "Invalid node name specified")
                          ? StatusCode::kNotFound
                          : StatusCode::kInternal;
    return ToolFailure(request, *result, code);
  }
  return Status::Ok();
}

Status SlurmClient::SetPower(std::string_view node, bool up) const {
  if (!IsPlainName(node))
    return InvalidArgument("power: '" + std::string(node) + "' is not a node name");
  std::vector<std::string> argv = {"scontrol", "update", "NodeName=" + std::string(node),
                                   up ? "State=POWER_UP" : "State=POWER_DOWN"};
  CommandRequest request = ToolRequest(argv);
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    StatusCode code = Contains(result->stderr_text, "Invalid node name specified")   ? StatusCode::kNotFound
                      : Contains(result->stderr_text, "Invalid node state specified") ? StatusCode::kFailedPrecondition
                                                                                       : StatusCode::kInternal;
    return ToolFailure(request, *result, code);
  }
  return Status::Ok();
}

Status SlurmClient::Resume(std::string_view node) const {
  if (!IsPlainName(node))
    return InvalidArgument("resume: '" + std::string(node) + "' is not a node name");
  std::vector<std::string> argv = {"scontrol", "update", "NodeName=" + std::string(node),
                                   "State=RESUME"};
  CommandRequest request = ToolRequest(argv);
  auto result = runner_.Run(request);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    // Neither drained nor down: already in service.
    if (Contains(result->stderr_text, "Invalid node state specified")) return Status::Ok();
    StatusCode code = Contains(result->stderr_text, "Invalid node name specified")
                          ? StatusCode::kNotFound
                          : StatusCode::kInternal;
    return ToolFailure(request, *result, code);
  }
  return Status::Ok();
}

}  // namespace tessel
