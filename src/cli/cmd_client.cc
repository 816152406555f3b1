// The client commands of `tessel serve`'s HTTP API: submit, jobs, job,
// cancel, nodes. Their output and exit codes are a contract scripts rely on
// (cli/client_flags.h; the JSON shapes are server/api_json.h's):
//
//   tessel submit SPEC.yaml [--json]   the new job's id; --json {"id": N}
//   tessel jobs [--all] [--json]       a table; --json [JobInfo, ...]
//   tessel job ID [--json]             the job, its history, steps, corrections
//   tessel cancel ID                   "job ID: STATE"
//   tessel nodes [--json]              nodes, GPU types, used/free GPUs, state
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/client_flags.h"
#include "cli/commands.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"
#include "server/service.h"

namespace tessel {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kClientFooter =
    "\nConnects to `tessel serve` at --server (or $TESSEL_SERVER, default http://127.0.0.1:8642)\n"
    "with the token from --token-file (or $TESSEL_TOKEN).\n"
    "Exit codes: 0 done; 2 refused input (bad spec, unknown or another user's job, bad token);\n"
    "1 server or connection error.";

// The action, with a reply of an unexpected shape (a JSON type error)
// reported instead of thrown.
template <typename F>
CommandAction Guarded(CommandIo io, F f) {
  return [io, f]() -> int {
    try {
      return f();
    } catch (const nlohmann::json::exception& e) {
      io.err << "error: unexpected reply from the server: " << e.what() << "\n";
      return 1;
    }
  };
}

// Runs one request and parses a successful reply's JSON; prints the error
// and sets *code otherwise.
std::optional<Json> Call(const ClientFlags& flags, const std::string& method, const std::string& path,
                         const std::string& body, std::ostream& err, int* code) {
  Result<ApiClient> client = ConnectClient(flags, ApiClientOptions{});
  if (!client.ok()) {
    *code = ReportError(client.status(), err);
    return std::nullopt;
  }
  Result<HttpReply> reply = client->Send(method, path, body);
  if (!reply.ok()) {
    *code = ReportError(reply.status(), err);
    return std::nullopt;
  }
  if (ExitCodeForHttp(reply->code) != 0) {
    *code = ReportReplyError(*reply, client->url(), err);
    return std::nullopt;
  }
  Json j = Json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    err << "error: the server at " << client->url() << " sent a reply that is not JSON\n";
    *code = 1;
    return std::nullopt;
  }
  *code = 0;
  return j;
}

// A positive job id, checked here so it cannot change the request's path.
std::optional<int64_t> ParseJobIdArg(const std::string& text, std::ostream& err) {
  bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    long long id = std::stoll(text);
    if (id > 0) return id;
  }
  err << "error: job id '" << text << "': must be a positive integer (see `tessel jobs`)\n";
  return std::nullopt;
}

std::string Str(const Json& j, const char* key, const char* none = "-") {
  if (!j.contains(key) || j[key].is_null()) return none;
  if (j[key].is_string()) return j[key].get<std::string>().empty() ? none : j[key].get<std::string>();
  return JsonText(j[key]);
}

// "2024-05-01T12:00:03Z" -> "2024-05-01 12:00:03" (the table says UTC).
std::string Time(const Json& j, const char* key) {
  std::string t = Str(j, key);
  if (t.size() == 20 && t[10] == 'T' && t.back() == 'Z') {
    t[10] = ' ';
    t.pop_back();
  }
  return t;
}

std::string Gpus(const Json& j) {
  int n = j.value("gpus", 0);
  if (n == 0) return "-";
  std::string type = Str(j, "gpu_type", "");
  return std::to_string(n) + (type.empty() ? "" : " " + type);
}

std::string Nodes(const Json& j) {
  if (!j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty()) return "-";
  std::vector<std::string> names;
  for (const auto& n : j["nodes"]) names.push_back(n.is_string() ? n.get<std::string>() : JsonText(n));
  return Join(names, ",");
}

}  // namespace

CommandAction SetupSubmit(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<ClientFlags>();
  auto spec = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app.add_option("spec", *spec, "The job spec (YAML); relative paths in it are resolved against its folder")
      ->required();
  app.add_flag("--json", *json, "Print {\"id\": N}");
  AddClientFlags(app, *flags);
  app.footer(std::string("\nPrints the new job's id. The server validates the spec and names the bad fields.\n") +
             kClientFooter);
  return Guarded(io, [io, flags, spec, json] {
    std::ifstream in(*spec, std::ios::binary);
    if (!in) {
      io.err << "error: cannot read '" << *spec << "': " << std::strerror(errno) << "\n";
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(*spec, ec).lexically_normal();
    if (ec) {
      io.err << "error: '" << *spec << "': " << ec.message() << "\n";
      return 2;
    }
    Json body = {{"spec_yaml", text.str()}, {"file", *spec}, {"base_dir", abs.parent_path().string()}};
    int code = 0;
    std::optional<Json> reply =
        Call(*flags, "POST", "/v1/jobs", JsonText(body), io.err, &code);
    if (!reply) return code;
    if (!reply->contains("id")) {
      io.err << "error: the server's reply has no job id\n";
      return 1;
    }
    if (*json) {
      io.out << JsonText(Json{{"id", (*reply)["id"]}}) << "\n";
    } else {
      io.out << JsonText((*reply)["id"]) << "\n";
    }
    return 0;
  });
}

CommandAction SetupJobs(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<ClientFlags>();
  auto all = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  app.add_flag("--all", *all, "Include finished jobs (completed, failed, cancelled)");
  app.add_flag("--json", *json,
               "Print JSON: [{id, name, user, state, gpu_type, gpus, nodes, plan, restarts, submitted, started, "
               "finished, reason}]");
  AddClientFlags(app, *flags);
  app.footer(std::string("\nLists your jobs (an admin sees everyone's), oldest first. Times are UTC.\n") +
             kClientFooter);
  return Guarded(io, [io, flags, all, json] {
    int code = 0;
    // Every page (GET /v1/jobs pages by id: the largest page, then the jobs
    // after the last one seen, until a page is not full).
    std::optional<Json> reply = Json::array();
    for (int64_t after = 0;;) {
      std::string path = std::string("/v1/jobs?") + (*all ? "all=true&" : "") + "limit=" +
                         std::to_string(kMaxJobsPage) + "&after=" + std::to_string(after);
      std::optional<Json> page = Call(*flags, "GET", path, "", io.err, &code);
      if (!page) return code;
      if (!page->is_array()) {
        io.err << "error: the server's reply is not a list of jobs\n";
        return 1;
      }
      for (Json& j : *page) reply->push_back(std::move(j));
      if (static_cast<int>(page->size()) < kMaxJobsPage || reply->back().value("id", int64_t{0}) <= after) break;
      after = reply->back().value("id", int64_t{0});
    }
    if (*json) {
      io.out << reply->dump(2) << "\n";
      return 0;
    }
    if (reply->empty()) {
      io.out << (*all ? "no jobs\n" : "no active jobs (--all shows finished ones too)\n");
      return 0;
    }
    TextTable t({"id", "name", "user", "state", "gpus", "nodes", "restarts", "submitted (UTC)", "plan", "reason"});
    for (const Json& j : *reply)
      t.AddRow({Str(j, "id"), Str(j, "name"), Str(j, "user"), Str(j, "state"), Gpus(j), Nodes(j), Str(j, "restarts"),
                Time(j, "submitted"), Str(j, "plan"), Str(j, "reason", "")});
    io.out << t.Render();
    return 0;
  });
}

CommandAction SetupJob(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<ClientFlags>();
  auto id = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app.add_option("id", *id, "The job's id (see `tessel jobs`)")->required();
  app.add_flag("--json", *json,
               "Print JSON: the job's fields as in `tessel jobs --json` plus history, steps, corrections, "
               "plan_json, spec_yaml, failures, launches, slurm_job_id");
  AddClientFlags(app, *flags);
  app.footer(std::string("\nShows one job: its allocation and plan, state history, measured step times and the\n"
                         "estimator's corrections per GPU type (scope: the type's, a pipeline depth's, a plan's).\n"
                         "Times are UTC.\n") +
             kClientFooter);
  return Guarded(io, [io, flags, id, json] {
    std::optional<int64_t> job_id = ParseJobIdArg(*id, io.err);
    if (!job_id) return 2;
    int code = 0;
    std::optional<Json> reply = Call(*flags, "GET", "/v1/jobs/" + std::to_string(*job_id), "", io.err, &code);
    if (!reply) return code;
    const Json& j = *reply;
    if (*json) {
      io.out << JsonText(j, 2) << "\n";
      return 0;
    }
    io.out << "job " << Str(j, "id") << ": " << Str(j, "name") << " (user " << Str(j, "user") << ")\n";
    std::string reason = Str(j, "reason", "");
    io.out << "state:      " << Str(j, "state") << (reason.empty() ? "" : " (" + reason + ")") << "\n";
    io.out << "gpus:       " << Gpus(j) << " on " << Nodes(j) << "\n";
    io.out << "plan:       " << Str(j, "plan") << "\n";
    io.out << "submitted:  " << Time(j, "submitted") << "\n";
    io.out << "started:    " << Time(j, "started") << "\n";
    io.out << "finished:   " << Time(j, "finished") << "\n";
    io.out << "restarts:   " << Str(j, "restarts") << "   failures: " << Str(j, "failures")
           << "   launches: " << Str(j, "launches") << "\n";
    io.out << "slurm job:  " << Str(j, "slurm_job_id") << "\n";

    io.out << "\nhistory\n";
    if (j.contains("history") && j["history"].is_array() && !j["history"].empty()) {
      TextTable t({"time (UTC)", "from", "to", "reason"});
      for (const Json& h : j["history"]) t.AddRow({Time(h, "time"), Str(h, "from"), Str(h, "to"), Str(h, "reason", "")});
      io.out << t.Render();
    } else {
      io.out << "(none)\n";
    }
    io.out << "\nsteps (latest measured)\n";
    if (j.contains("steps") && j["steps"].is_array() && !j["steps"].empty()) {
      TextTable t({"time (UTC)", "step", "step time s", "loss", "gpu", "gpus", "profiling"});
      auto number = [](const Json& s, const char* key) {
        return s.contains(key) && s[key].is_number() ? FormatDouble(s[key].get<double>(), 4) : std::string("-");
      };
      for (const Json& s : j["steps"])
        t.AddRow({Time(s, "time"), Str(s, "step"), number(s, "step_time_s"), number(s, "loss"), Str(s, "gpu_type"),
                  Str(s, "gpus"), s.value("profile", false) ? "yes" : "no"});
      io.out << t.Render();
    } else {
      io.out << "(none yet)\n";
    }
    io.out << "\ncorrections (measured / estimated step time)\n";
    if (j.contains("corrections") && j["corrections"].is_array() && !j["corrections"].empty()) {
      TextTable t({"gpu", "scope", "factor", "samples"});
      for (const Json& c : j["corrections"])
        t.AddRow({Str(c, "gpu_type"), Str(c, "scope", "type"),
                  c.contains("factor") && c["factor"].is_number() ? FormatDouble(c["factor"].get<double>(), 4) : "-",
                  Str(c, "samples")});
      io.out << t.Render();
    } else {
      io.out << "(none yet)\n";
    }
    return 0;
  });
}

CommandAction SetupCancel(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<ClientFlags>();
  auto id = std::make_shared<std::string>();
  app.add_option("id", *id, "The job's id (see `tessel jobs`)")->required();
  AddClientFlags(app, *flags);
  app.footer(std::string("\nCancels a job that has not finished (a finished one is refused, exit 2) and prints\n"
                         "\"job ID: STATE\" with the state it is in now.\n") +
             kClientFooter);
  return Guarded(io, [io, flags, id] {
    std::optional<int64_t> job_id = ParseJobIdArg(*id, io.err);
    if (!job_id) return 2;
    int code = 0;
    std::optional<Json> reply =
        Call(*flags, "POST", "/v1/jobs/" + std::to_string(*job_id) + "/cancel", "", io.err, &code);
    if (!reply) return code;
    io.out << "job " << *job_id << ": " << Str(*reply, "state", "cancelled") << "\n";
    return 0;
  });
}

CommandAction SetupClientNodes(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<ClientFlags>();
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "Print JSON: [{name, gpu_type, gres_type, gpus, gpus_used, gpus_free, state}]");
  AddClientFlags(app, *flags);
  app.footer(std::string("\nThe cluster's nodes as the server sees them: GPU type, GPUs used (by anything) and free,\n"
                         "Slurm state. (The node-type catalog is `tessel node-types`.)\n") +
             kClientFooter);
  return Guarded(io, [io, flags, json] {
    int code = 0;
    std::optional<Json> reply = Call(*flags, "GET", "/v1/nodes", "", io.err, &code);
    if (!reply) return code;
    if (!reply->is_array()) {
      io.err << "error: the server's reply is not a list of nodes\n";
      return 1;
    }
    if (*json) {
      io.out << reply->dump(2) << "\n";
      return 0;
    }
    TextTable t({"node", "gpu", "gres", "gpus", "used", "free", "state"});
    int64_t gpus = 0, free_gpus = 0;
    for (const Json& n : *reply) {
      gpus += n.value("gpus", 0);
      free_gpus += n.value("gpus_free", 0);
      t.AddRow({Str(n, "name"), Str(n, "gpu_type"), Str(n, "gres_type"), Str(n, "gpus"), Str(n, "gpus_used"),
                Str(n, "gpus_free"), Str(n, "state")});
    }
    io.out << t.Render() << reply->size() << " nodes, " << free_gpus << " of " << gpus << " GPUs free\n";
    return 0;
  });
}

}  // namespace tessel
