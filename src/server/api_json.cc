#include "server/api_json.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/strings.h"

namespace tessel {

using Json = nlohmann::ordered_json;

namespace {

Json OptionalTime(const std::optional<int64_t>& t) { return t ? Json(FormatUtc(*t)) : Json(nullptr); }
Json NullIfEmpty(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

const char* JsonTypeName(const Json& j) {
  if (j.is_string()) return "a string";
  if (j.is_number()) return "a number";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  if (j.is_array()) return "an array";
  return "an object";
}

}  // namespace

std::string FormatUtc(int64_t time_us) {
  int64_t secs = time_us / 1'000'000;
  if (time_us % 1'000'000 < 0) --secs;  // floor for times before 1970
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Json ToJson(const JobInfo& job) {
  return Json{{"id", job.id},
              {"name", job.name},
              {"user", job.user},
              {"state", job.state},
              {"gpu_type", NullIfEmpty(job.gpu_type)},
              {"gpus", job.gpus},
              {"nodes", job.nodes},
              {"plan", NullIfEmpty(job.plan)},
              {"restarts", job.restarts},
              {"submitted", FormatUtc(job.submitted_us)},
              {"started", OptionalTime(job.started_us)},
              {"finished", OptionalTime(job.finished_us)},
              {"reason", job.reason},
              {"deadline", OptionalTime(job.deadline_us)},
              {"iterations", job.iterations}};
}

Json ToJson(const JobDetail& d) {
  Json j = ToJson(d.job);
  Json history = Json::array();
  for (const JobTransitionInfo& t : d.history)
    history.push_back(
        {{"time", FormatUtc(t.time_us)}, {"from", NullIfEmpty(t.from)}, {"to", t.to}, {"reason", t.reason}});
  Json steps = Json::array();
  for (const JobStepInfo& s : d.steps)
    steps.push_back({{"time", FormatUtc(s.time_us)},
                     {"step", s.step},
                     {"step_time_s", s.step_time_s},
                     {"gpu_type", s.gpu_type},
                     {"gpus", s.gpus},
                     {"profile", s.profile},
                     {"loss", s.loss ? Json(*s.loss) : Json(nullptr)}});
  Json corrections = Json::array();
  for (const JobCorrectionInfo& c : d.corrections)
    corrections.push_back(
        {{"gpu_type", c.gpu_type}, {"scope", c.scope}, {"factor", c.factor}, {"samples", c.samples}});
  j["history"] = std::move(history);
  j["steps"] = std::move(steps);
  j["corrections"] = std::move(corrections);
  // The plan is stored as JSON text; a text that does not parse (a bug in
  // the daemon) is shown as null rather than failing the whole request.
  Json plan = nullptr;
  if (!d.plan_json.empty()) {
    plan = Json::parse(d.plan_json, nullptr, /*allow_exceptions=*/false);
    if (plan.is_discarded()) plan = nullptr;
  }
  j["plan_json"] = std::move(plan);
  j["spec_yaml"] = d.spec_yaml;
  j["failures"] = d.failures;
  j["launches"] = d.launches;
  j["slurm_job_id"] = d.slurm_job_id ? Json(*d.slurm_job_id) : Json(nullptr);
  return j;
}

Json ToJson(const NodeInfo& n) {
  return Json{{"name", n.name},
              {"gpu_type", n.gpu_type},
              {"gres_type", n.gres_type},
              {"gpus", n.gpus},
              {"gpus_used", n.gpus_used},
              {"gpus_free", n.gpus > n.gpus_used ? n.gpus - n.gpus_used : 0},
              {"state", n.state}};
}

Json ToJson(const ClusterHistoryInfo& h) {
  Json types = Json::array();
  for (size_t i = 0; i < h.gpu_types.size(); ++i)
    types.push_back({{"name", h.gpu_types[i]}, {"gpus", i < h.gpus.size() ? h.gpus[i] : 0}});
  Json samples = Json::array();
  for (const ClusterHistorySample& s : h.samples)
    samples.push_back({{"time", FormatUtc(s.time_us)}, {"allocated", s.allocated}});
  return Json{{"interval_s", h.interval_s}, {"gpu_types", std::move(types)}, {"samples", std::move(samples)}};
}

std::string DumpJson(const Json& j) { return JsonText(j); }

std::string ErrorJson(std::string_view message) { return DumpJson(Json{{"error", std::string(message)}}); }

Result<JobSubmission> ParseSubmitRequest(std::string_view body) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return InvalidArgument(
        "request body is not valid JSON; expected {\"spec_yaml\": \"...\", \"file\": \"...\", \"base_dir\": \"/...\"}");
  if (!j.is_object())
    return InvalidArgument(std::string("request body must be a JSON object, got ") + JsonTypeName(j));
  std::vector<std::string> errors;
  JobSubmission req;
  auto field = [&](const char* name, std::string& out, const char* what) {
    auto it = j.find(name);
    if (it == j.end()) {
      errors.push_back(std::string(name) + ": required (" + what + ")");
    } else if (!it->is_string()) {
      errors.push_back(std::string(name) + ": must be a string, got " + JsonTypeName(*it));
    } else {
      out = it->get<std::string>();
    }
  };
  field("spec_yaml", req.spec_yaml, "the job spec's YAML text");
  field("file", req.file, "the spec's file name, for messages");
  field("base_dir", req.base_dir, "the absolute path of the spec's folder");
  if (j.contains("file") && j["file"].is_string() && req.file.empty())
    errors.push_back("file: must not be empty");
  if (j.contains("base_dir") && j["base_dir"].is_string() && !StartsWith(req.base_dir, "/"))
    errors.push_back("base_dir: must be an absolute path (starting with '/')");
  for (const auto& [key, value] : j.items())
    if (key != "spec_yaml" && key != "file" && key != "base_dir")
      errors.push_back("unknown field '" + key + "'; known: spec_yaml, file, base_dir");
  if (!errors.empty()) return InvalidArgument(Join(errors, "\n"));
  return req;
}

}  // namespace tessel
