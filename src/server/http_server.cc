// The daemon's HTTP server: the API answers requests the transport plugin
// (server/http_transport.h, cpp-httplib) reads; this side counts and logs
// them and diagnoses a failed bind.
#include "server/http_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "server/api.h"
#include "server/api_json.h"
#include "server/http_transport_loader.h"
#include "server/metrics.h"

namespace tessel {

namespace {

std::string EscapeForLog(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Why binding `host:port` failed: httplib reports only that it did, so the
// bind is retried here to read errno.
Status DiagnoseBind(const std::string& host, int port) {
  const std::string where = "cannot listen on " + (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                            ":" + std::to_string(port) + ": ";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0)
    return InvalidArgument(where + "cannot resolve host '" + host + "' (" + ::gai_strerror(rc) +
                           "); give an address of this machine, e.g. 127.0.0.1");
  int err = 0;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      err = 0;
      ::close(fd);
      break;
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  switch (err) {
    case EADDRINUSE:
      return Unavailable(where + "address already in use (another tessel serve? pick another port)");
    case EADDRNOTAVAIL:
      return InvalidArgument(where + "'" + host + "' is not an address of this machine");
    case EACCES:
      return PermissionDenied(where + "permission denied (ports below 1024 need privileges)");
    case 0:
      return Unavailable(where + "the server socket could not be set up");
    default:
      return Unavailable(where + std::strerror(err));
  }
}

}  // namespace

std::string FormatAccessLog(const AccessLogEntry& e) {
  char latency[32];
  std::snprintf(latency, sizeof latency, "%.3fms", e.latency_ms);
  return e.method + " " + e.path + " " + std::to_string(e.code) + " " + latency +
         " user=" + (e.user.empty() ? "-" : e.user) + " from=" + e.remote;
}

Status ParseListenAddress(const std::string& listen, std::string* host, int* port) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("listen address '" + listen + "': " + why +
                           "; expected HOST:PORT, e.g. 127.0.0.1:8642, [::1]:8642 or 0.0.0.0:8642 (all interfaces)");
  };
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string h = listen.substr(0, colon);
  std::string p = listen.substr(colon + 1);
  if (!h.empty() && h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return bad("unbalanced brackets");
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string::npos) {
    return bad("an IPv6 address needs brackets");
  }
  if (h.empty()) return bad("no host");
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
    return bad("port must be a number from 0 to 65535");
  int n = std::stoi(p);
  if (n > 65535) return bad("port must be a number from 0 to 65535");
  *host = h;
  *port = n;
  return Status::Ok();
}

struct HttpServer::Impl {
  Impl(JobService& service, const TokenStore& tokens, HttpServerOptions opts, AccessLog log)
      : options(opts), access_log(std::move(log)), api(service, tokens, requests) {}

  http::ServerHooks Hooks();

  HttpServerOptions options;
  AccessLog access_log;
  RequestCounter requests;
  Api api;
  std::unique_ptr<http::Server> server;
  std::thread thread;
  std::atomic<int> port{0};
  std::atomic<bool> thread_done{false};
  bool started = false;

  // Until the accept loop runs or has ended.
  void WaitUntilServing() const {
    while (!server->Running() && !thread_done) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
};

http::ServerHooks HttpServer::Impl::Hooks() {
  http::ServerHooks hooks;
  hooks.serve = [this](const ApiRequest& req, ApiResponse& res) { res = api.Handle(req); };
  hooks.error_body = [](const std::string& message) { return ErrorJson(message); };
  hooks.finished = [this](const http::Finished& f) {
    requests.Count(f.code);
    if (!access_log) return;
    AccessLogEntry e;
    e.method = EscapeForLog(f.method);
    e.path = EscapeForLog(f.path);
    e.code = f.code;
    e.latency_ms = f.latency_ms;
    e.user = f.user;
    e.remote = f.remote;
    access_log(e);
  };
  return hooks;
}

HttpServer::HttpServer(JobService& service, const TokenStore& tokens, HttpServerOptions options, AccessLog log)
    : impl_(std::make_unique<Impl>(service, tokens, options, std::move(log))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& listen) {
  if (impl_->started) return FailedPrecondition("the HTTP server is already started");
  std::string host;
  int port = 0;
  TESSEL_RETURN_IF_ERROR(ParseListenAddress(listen, &host, &port));
  Result<const http::Transport*> transport = LoadHttpTransport();
  if (!transport.ok()) return transport.status();
  impl_->server = (*transport)->make_server(impl_->options, impl_->Hooks());
  int bound = impl_->server->Bind(host, port);
  if (bound <= 0) {
    impl_->server.reset();
    return DiagnoseBind(host, port);
  }
  impl_->port = bound;
  impl_->started = true;
  // The socket is listening once bound: connections made before the thread
  // runs wait in the backlog.
  impl_->thread_done = false;
  impl_->thread = std::thread([this] {
    impl_->server->Serve();
    impl_->thread_done = true;
  });
  impl_->WaitUntilServing();
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!impl_ || !impl_->started) return;
  // httplib's stop() does nothing until its accept loop has started.
  impl_->WaitUntilServing();
  impl_->server->Stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->started = false;
}

int HttpServer::port() const { return impl_->port; }

}  // namespace tessel
