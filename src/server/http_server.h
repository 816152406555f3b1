// The daemon's HTTP server: the API (server/api.h) over cpp-httplib, on its
// own threads. What it adds to the API: the listening socket, limits and
// timeouts, per-request counting (/metrics) and an access log.
//
// Limits: bodies over max_body_bytes -> 413 (read and discarded, so the
// connection stays usable); chunked request bodies -> 411 (send
// Content-Length), since the library would not bound them; read and write
// timeouts per request; keep-alive connections idle past keep_alive_timeout_s
// are closed. Connections are served by a pool of `threads` threads, each
// holding a keep-alive connection while it lasts.
//
// The access log gets one entry per response, 401s and 404s included, with
// the path but never the query or the Authorization header.
//
// Thread-safety: Start and Stop from one thread; the log callback runs on
// the server's threads (concurrently).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/auth.h"
#include "server/http_transport.h"
#include "server/service.h"

namespace tessel {

// Body limit, timeouts, keep-alive and threads (server/http_transport.h).
using HttpServerOptions = http::ServerOptions;

struct AccessLogEntry {
  std::string method;
  std::string path;  // without the query; control characters escaped
  int code = 0;
  double latency_ms = 0;  // from the request's headers read to the response ready
  std::string user;       // "" when not authenticated
  std::string remote;     // "ip:port"
};
using AccessLog = std::function<void(const AccessLogEntry&)>;

// "GET /v1/jobs 200 1.234ms user=alice from=127.0.0.1:5000".
std::string FormatAccessLog(const AccessLogEntry& e);

class HttpServer {
 public:
  // `service` and `tokens` must outlive the server.
  HttpServer(JobService& service, const TokenStore& tokens, HttpServerOptions options = {},
             AccessLog log = nullptr);
  ~HttpServer();  // Stops.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `listen` ("HOST:PORT", "[IPV6]:PORT"; port 0 picks a free one, see
  // port()) and serves on background threads until Stop. Errors:
  // InvalidArgument for a malformed address or a host that does not resolve
  // or is not this machine's; Unavailable when the address is in use;
  // PermissionDenied for a privileged port; FailedPrecondition when already
  // started.
  Status Start(const std::string& listen);
  // Stops accepting, ends keep-alive connections, joins the threads.
  // Idempotent.
  void Stop();
  // The bound port (after Start), 0 before.
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "HOST:PORT" / "[V6]:PORT"; InvalidArgument naming what is accepted.
Status ParseListenAddress(const std::string& listen, std::string* host, int* port);

}  // namespace tessel
