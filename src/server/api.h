// The daemon's HTTP API as a function from request to response, free of any
// HTTP library (server/http_server.h carries it over cpp-httplib). Routes:
//
//   GET    /healthz               200 {"status": "ok"}          (no token)
//   GET    /metrics               200 Prometheus text           (server/metrics.h)
//   POST   /v1/jobs               201 {"id": N}                 body: server/api_json.h
//   GET    /v1/jobs[?all=true]    200 [JobInfo, ...]
//   GET    /v1/jobs/{id}          200 JobDetail
//   POST   /v1/jobs/{id}/cancel   200 {"id": N, "state": "..."}
//   DELETE /v1/jobs/{id}          the same as .../cancel
//   GET    /v1/nodes              200 [NodeInfo, ...]
//   GET    /v1/cluster/history    200 ClusterHistoryInfo        (GPUs allocated by type over time)
//   GET    /v1/me                 200 {"user": "...", "admin": false}
//   GET    /, /dashboard.js, ...  200 the dashboard's files     (no token; server/dashboard.h)
//
// Order of checks: unknown path 404; known path, other method 405 (with
// `Allow`); then every route but /healthz needs `Authorization: Bearer
// TOKEN`: missing or unknown -> 401 with `WWW-Authenticate: Bearer` and the
// service is not called; then the request's own checks (id, query, body:
// 400 naming the field); then the service, whose Status maps to the code
// (HttpCode). HEAD is answered as GET. Errors are {"error": "message"}.
// Every response has `X-Content-Type-Options: nosniff`; those under /v1/
// `Cache-Control: no-store`.
//
// Thread-safety: Handle may run on many threads at once; the JobService must
// be thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/auth.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/service.h"

namespace tessel {

// What the HTTP transport reads and writes (server/http_transport.h).
using ApiRequest = http::Request;
using ApiResponse = http::Response;

// The HTTP code of a Status (service.h): Ok 200, InvalidArgument 400,
// PermissionDenied 403, NotFound 404, FailedPrecondition 409, Unavailable
// 503, anything else 500.
int HttpCode(StatusCode code);

class Api {
 public:
  // `requests` feeds /metrics' tessel_api_requests_total; all three must
  // outlive the Api.
  Api(JobService& service, const TokenStore& tokens, const RequestCounter& requests)
      : service_(service), tokens_(tokens), requests_(requests) {}

  ApiResponse Handle(const ApiRequest& request) const;

 private:
  ApiResponse Dispatch(const ApiRequest& request) const;

  JobService& service_;
  const TokenStore& tokens_;
  const RequestCounter& requests_;
};

}  // namespace tessel
