#include "server/api.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/strings.h"
#include "server/api_json.h"
#include "server/dashboard.h"

namespace tessel {

using Json = nlohmann::ordered_json;

int HttpCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

namespace {

enum class Route { kHealthz, kMetrics, kJobs, kJob, kJobCancel, kNodes, kMe, kClusterHistory };

struct RouteMatch {
  Route route;
  std::string id;  // the {id} segment, unparsed
};

std::optional<RouteMatch> MatchRoute(const std::string& path) {
  if (path == "/healthz") return RouteMatch{Route::kHealthz, ""};
  if (path == "/metrics") return RouteMatch{Route::kMetrics, ""};
  if (path == "/v1/nodes") return RouteMatch{Route::kNodes, ""};
  if (path == "/v1/jobs") return RouteMatch{Route::kJobs, ""};
  if (path == "/v1/me") return RouteMatch{Route::kMe, ""};
  if (path == "/v1/cluster/history") return RouteMatch{Route::kClusterHistory, ""};
  constexpr std::string_view kJobsPrefix = "/v1/jobs/";
  if (!StartsWith(path, kJobsPrefix)) return std::nullopt;
  std::vector<std::string> rest = Split(std::string_view(path).substr(kJobsPrefix.size()), '/');
  if (rest.empty() || rest[0].empty()) return std::nullopt;
  if (rest.size() == 1) return RouteMatch{Route::kJob, rest[0]};
  if (rest.size() == 2 && rest[1] == "cancel") return RouteMatch{Route::kJobCancel, rest[0]};
  return std::nullopt;
}

std::vector<std::string> AllowedMethods(Route r) {
  switch (r) {
    case Route::kJobs:
      return {"GET", "POST"};
    case Route::kJob:
      return {"GET", "DELETE"};
    case Route::kJobCancel:
      return {"POST"};
    default:
      return {"GET"};
  }
}

ApiResponse Json200(const Json& j, int code = 200) {
  ApiResponse r;
  r.code = code;
  r.body = DumpJson(j);
  return r;
}

ApiResponse Error(int code, std::string_view message) {
  ApiResponse r;
  r.code = code;
  r.body = ErrorJson(message);
  // 503 (Slurm unreachable, the state disk full): worth retrying, not at once.
  if (code == 503) r.headers.emplace_back("Retry-After", "5");
  return r;
}

ApiResponse Error(const Status& s) { return Error(HttpCode(s.code()), s.message()); }

// For echoing user input in messages: at most 40 bytes.
std::string Clip(std::string_view s) {
  return s.size() <= 40 ? std::string(s) : std::string(s.substr(0, 40)) + "...";
}

Result<int64_t> ParseJobId(const std::string& text) {
  bool digits = !text.empty();
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits) return InvalidArgument("job id '" + Clip(text) + "': must be a positive integer");
  int64_t id = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec == std::errc::result_out_of_range)
    return InvalidArgument("job id '" + Clip(text) + "': out of range (at most 9223372036854775807)");
  if (ec != std::errc() || ptr != text.data() + text.size() || id < 1)
    return InvalidArgument("job id '" + Clip(text) + "': must be a positive integer");
  return id;
}

// Query parameters: `all`, `limit` and `after` on GET /v1/jobs; any other is
// refused so a typo (?al=true) does not silently mean the default.
Result<JobsPage> ParseQuery(const ApiRequest& req, Route route) {
  JobsPage page;
  for (const auto& [key, value] : req.query) {
    const bool known = route == Route::kJobs ? key == "all" || key == "limit" || key == "after"
                                             : route == Route::kJob && key == "steps";
    if (!known)
      return InvalidArgument("unknown query parameter '" + Clip(key) + "'" +
                             (route == Route::kJobs  ? "; known: all, limit, after"
                              : route == Route::kJob ? "; known: steps"
                                                     : "; this route takes none"));
    if (key == "all") {
      if (value.empty() || value == "true" || value == "1") {
        page.all = true;
      } else if (value == "false" || value == "0") {
        page.all = false;
      } else {
        return InvalidArgument("all: must be true or false, got '" + Clip(value) + "'");
      }
      continue;
    }
    int64_t n = -1;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    bool number = ec == std::errc() && ptr == value.data() + value.size() && !value.empty();
    if (key == "limit") {
      if (!number || n < 1 || n > kMaxJobsPage)
        return InvalidArgument("limit: must be an integer from 1 to " + std::to_string(kMaxJobsPage) + ", got '" +
                               Clip(value) + "'");
      page.limit = static_cast<int>(n);
    } else if (key == "steps") {
      if (!number || n < 1 || n > kMaxJobSteps)
        return InvalidArgument("steps: must be an integer from 1 to " + std::to_string(kMaxJobSteps) + ", got '" +
                               Clip(value) + "'");
      page.steps = static_cast<int>(n);
    } else {
      if (!number || n < 0)
        return InvalidArgument("after: must be a job id (an integer >= 0), got '" + Clip(value) + "'");
      page.after = n;
    }
  }
  return page;
}

}  // namespace

ApiResponse Api::Handle(const ApiRequest& request) const {
  try {
    ApiResponse r = Dispatch(request);
    // JSON is never to be read as anything else, and the token's data is
    // not for caches.
    bool nosniff = false;
    for (const auto& [k, v] : r.headers) nosniff = nosniff || k == "X-Content-Type-Options";
    if (!nosniff) r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    if (StartsWith(request.path, "/v1/")) r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  } catch (const std::exception& e) {
    // The service must not throw; if it does, the client gets a 500 and the
    // server keeps serving.
    return Error(500, std::string("internal error: ") + e.what());
  } catch (...) {
    return Error(500, "internal error: unknown exception");
  }
}

ApiResponse Api::Dispatch(const ApiRequest& req) const {
  // The dashboard's static files (server/dashboard.h): no data, no token.
  if (const DashboardFile* file = FindDashboardFile(req.path)) {
    if (req.method != "GET" && req.method != "HEAD") {
      ApiResponse r = Error(405, "method " + Clip(req.method) + " not allowed on " + req.path + "; allowed: GET");
      r.headers.emplace_back("Allow", "GET");
      return r;
    }
    ApiResponse r;
    r.content_type = std::string(file->content_type);
    r.headers = DashboardHeaders();
    r.headers.emplace_back("ETag", file->etag);
    if (!req.if_none_match.empty() && req.if_none_match.find(file->etag) != std::string::npos) {
      r.code = 304;  // the browser's copy is this one
      return r;
    }
    r.body = std::string(file->body);
    return r;
  }
  std::optional<RouteMatch> match = MatchRoute(req.path);
  if (!match) return Error(404, "no such route: " + Clip(req.path));
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  std::vector<std::string> allowed = AllowedMethods(match->route);
  if (std::find(allowed.begin(), allowed.end(), method) == allowed.end()) {
    ApiResponse r = Error(405, "method " + Clip(req.method) + " not allowed on " + req.path + "; allowed: " +
                                   Join(allowed, ", "));
    r.headers.emplace_back("Allow", Join(allowed, ", "));
    return r;
  }
  if (match->route == Route::kHealthz) {
    Result<JobsPage> q = ParseQuery(req, match->route);
    if (!q.ok()) return Error(q.status());
    // The API answers either way; when Slurm is unreachable the daemon keeps
    // its state and acts again once a poll reaches it.
    ServiceHealth h = service_.Health();
    Json body{{"status", h.slurm_reachable ? "ok" : "degraded"},
              {"slurm", h.slurm_reachable ? "reachable" : "unreachable"}};
    if (!h.slurm_reachable) {
      body["slurm_error"] = h.slurm_error;
      body["slurm_unreachable_since_us"] = h.unreachable_since_us;
    }
    return Json200(body);
  }

  // Authentication: the service is not called for an unknown caller.
  std::optional<std::string_view> token = BearerToken(req.authorization);
  std::optional<Caller> caller = token ? tokens_.Lookup(*token) : std::nullopt;
  if (!caller) {
    ApiResponse r = token ? Error(401, "invalid token")
                          : Error(401, "missing bearer token: send 'Authorization: Bearer TOKEN'");
    r.headers.emplace_back("WWW-Authenticate",
                           token ? "Bearer realm=\"tessel\", error=\"invalid_token\"" : "Bearer realm=\"tessel\"");
    return r;
  }

  ApiResponse r = [&]() -> ApiResponse {
    Result<JobsPage> all = ParseQuery(req, match->route);
    if (!all.ok()) return Error(all.status());
    std::optional<int64_t> id;
    if (match->route == Route::kJob || match->route == Route::kJobCancel) {
      Result<int64_t> parsed = ParseJobId(match->id);
      if (!parsed.ok()) return Error(parsed.status());
      id = *parsed;
    }
    switch (match->route) {
      case Route::kMetrics: {
        ApiResponse m;
        m.content_type = "text/plain; version=0.0.4; charset=utf-8";
        m.body = RenderMetrics(service_.Metrics(), requests_.Snapshot());
        return m;
      }
      case Route::kJobs: {
        if (method == "POST") {
          Result<JobSubmission> sub = ParseSubmitRequest(req.body);
          if (!sub.ok()) return Error(sub.status());
          Result<int64_t> new_id = service_.Submit(*caller, sub->spec_yaml, sub->file, sub->base_dir);
          if (!new_id.ok()) return Error(new_id.status());
          ApiResponse created = Json200(Json{{"id", *new_id}}, 201);
          created.headers.emplace_back("Location", "/v1/jobs/" + std::to_string(*new_id));
          return created;
        }
        Result<std::vector<JobInfo>> jobs = service_.Jobs(*caller, *all);
        if (!jobs.ok()) return Error(jobs.status());
        Json arr = Json::array();
        for (const JobInfo& j : *jobs) arr.push_back(ToJson(j));
        ApiResponse listed = Json200(arr);
        // A full page may have more after it (RFC 8288's rel="next").
        if (static_cast<int>(jobs->size()) == all->limit && !jobs->empty()) {
          listed.headers.emplace_back("Link", "</v1/jobs?" + std::string(all->all ? "all=true&" : "") +
                                                  "limit=" + std::to_string(all->limit) +
                                                  "&after=" + std::to_string(jobs->back().id) + ">; rel=\"next\"");
        }
        return listed;
      }
      case Route::kJob:
        if (method == "GET") {
          Result<JobDetail> detail = service_.Job(*caller, *id, all->steps);
          if (!detail.ok()) return Error(detail.status());
          return Json200(ToJson(*detail));
        }
        [[fallthrough]];  // DELETE /v1/jobs/{id} cancels
      case Route::kJobCancel: {
        Status st = service_.Cancel(*caller, *id);
        if (!st.ok()) return Error(st);
        // Cancel succeeded; report the state the job is in now (the daemon
        // may still be stopping it).
        Result<JobDetail> detail = service_.Job(*caller, *id, 1);
        return Json200(Json{{"id", *id}, {"state", detail.ok() ? detail->job.state : std::string("cancelled")}});
      }
      case Route::kNodes: {
        Result<std::vector<NodeInfo>> nodes = service_.Nodes(*caller);
        if (!nodes.ok()) return Error(nodes.status());
        Json arr = Json::array();
        for (const NodeInfo& n : *nodes) arr.push_back(ToJson(n));
        return Json200(arr);
      }
      case Route::kMe:
        return Json200(Json{{"user", caller->user}, {"admin", caller->admin}});
      case Route::kClusterHistory: {
        Result<ClusterHistoryInfo> history = service_.ClusterHistory(*caller);
        if (!history.ok()) return Error(history.status());
        return Json200(ToJson(*history));
      }
      case Route::kHealthz:
        break;
    }
    return Error(500, "internal error: unrouted request");
  }();
  r.user = caller->user;
  return r;
}

}  // namespace tessel
