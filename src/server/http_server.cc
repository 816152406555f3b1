// The one translation unit of the server that includes cpp-httplib (a heavy
// header): requests are converted to ApiRequest and answered by Api.
#include "server/http_server.h"

#include <httplib.h>
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
#include "server/metrics.h"

namespace tessel {

namespace {

using SteadyClock = std::chrono::steady_clock;

// What the server knows about the request a thread is answering, between
// the pre-routing hook (headers read) and the post-routing hook (response
// ready). httplib answers a connection's requests on one thread, one at a
// time, so a thread-local is exact. `active` is false for requests rejected
// before routing (a malformed request line).
struct RequestScope {
  bool active = false;
  SteadyClock::time_point start;
  std::string user;
};
thread_local RequestScope tls_scope;

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

std::vector<std::pair<std::string, std::string>> QueryOf(const std::string& target) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t q = target.find('?');
  if (q == std::string::npos) return out;
  httplib::Params params;
  httplib::detail::parse_query_text(target.substr(q + 1), params);
  for (const auto& [k, v] : params) out.emplace_back(k, v);
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

// httplib::Server listening with a real backlog: the library's is 5, so a
// burst of more simultaneous connections (8 load-test clients) loses SYNs
// and waits out a 1 s retransmission. Linux lets listen() be called again
// on a listening socket to change its backlog.
class BackloggedServer : public httplib::Server {
 public:
  void WidenBacklog() {
    socket_t sock = svr_sock_;
    if (sock != INVALID_SOCKET) ::listen(sock, SOMAXCONN);
  }
};

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

  void Configure();
  void Serve(const httplib::Request& req, const std::string& body, httplib::Response& res);
  std::string TooLarge() const {
    return "request body too large; at most " + std::to_string(options.max_body_bytes) + " bytes";
  }

  HttpServerOptions options;
  AccessLog access_log;
  RequestCounter requests;
  Api api;
  BackloggedServer server;
  std::thread thread;
  std::atomic<int> port{0};
  std::atomic<bool> thread_done{false};
  bool started = false;

  // Until the accept loop runs (httplib's is_running) or has ended.
  void WaitUntilServing() const {
    while (!server.is_running() && !thread_done) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
};

void HttpServer::Impl::Configure() {
  const int threads = options.threads > 0 ? options.threads : 1;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // httplib's default sets SO_REUSEPORT, which lets a second daemon bind
  // the same port and silently share its connections; SO_REUSEADDR alone
  // still allows a restart while old connections sit in TIME_WAIT.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_tcp_nodelay(true);  // headers and body are separate writes
  server.set_payload_max_length(options.max_body_bytes);
  server.set_read_timeout(options.read_timeout_s, 0);
  server.set_write_timeout(options.write_timeout_s, 0);
  server.set_keep_alive_timeout(options.keep_alive_timeout_s);
  server.set_keep_alive_max_count(static_cast<size_t>(options.keep_alive_max_requests > 0
                                                          ? options.keep_alive_max_requests
                                                          : 1));

  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    tls_scope = RequestScope{true, SteadyClock::now(), ""};
    auto refuse = [&](int code, const std::string& message) {
      res.status = code;
      res.set_content(ErrorJson(message), "application/json");
      res.set_header("Connection", "close");  // the body was not read
      return httplib::Server::HandlerResponse::Handled;
    };
    // Requests without a body reader below read bodies by Content-Length
    // only, unbounded when chunked; none of them takes a body anyway.
    const bool body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                             req.method == "DELETE";
    if (!body_method && req.has_header("Transfer-Encoding"))
      return refuse(400, "a " + req.method + " request takes no chunked body");
    // httplib would hand a multipart body to a parser we do not use.
    if (req.get_header_value("Content-Type").rfind("multipart/", 0) == 0)
      return refuse(415, "multipart bodies are not accepted; send application/json");
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Every method and path goes to Serve; Api does the routing (so it can
  // tell 404 from 405). httplib answers HEAD with the GET handler. Methods
  // that may carry a body read it through a ContentReader, which bounds
  // chunked bodies too and skips httplib's 8 KiB limit on form-encoded ones
  // (curl -d sends JSON as application/x-www-form-urlencoded).
  const std::string any = "[\\s\\S]*";
  auto serve = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, "", res); };
  auto serve_body = [this](const httplib::Request& req, httplib::Response& res,
                           const httplib::ContentReader& reader) {
    std::string body;
    bool too_large = false;
    const size_t limit = options.max_body_bytes;
    bool ok = reader([&](const char* data, size_t n) {
      if (body.size() + n > limit) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (!ok) {
      // httplib set 413 when Content-Length was over the limit (and skipped
      // the body); otherwise the body is half read.
      too_large = too_large || res.status == 413;
      res.status = too_large ? 413 : 400;
      res.set_content(ErrorJson(too_large ? TooLarge() : "could not read the request body"), "application/json");
      if (res.status == 400 || body.size() > 0) res.set_header("Connection", "close");
      return;
    }
    Serve(req, body, res);
  };
  server.Get(any, serve);
  server.Options(any, serve);
  server.Post(any, serve_body);
  server.Put(any, serve_body);
  server.Patch(any, serve_body);
  server.Delete(any, serve_body);

  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content(ErrorJson("internal error: " + what), "application/json");
  });

  // Responses httplib makes itself (413, 400 for a malformed request, 404
  // for a path the pattern cannot match) get a JSON body too.
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request&, httplib::Response& res) -> httplib::Server::HandlerResponse {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    if (res.status == 413) {
      message = TooLarge();
    } else if (res.status == 404) {
      message = "no such route";
    } else if (res.status == 414) {
      message = "request URI too long";
    } else {
      message = "malformed request (HTTP " + std::to_string(res.status) + ")";
    }
    res.set_content(ErrorJson(message), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));

  // The last hook before the response is written: count and log it here
  // (the logger hook runs after the client may already have the response,
  // which would let /metrics miss a request the client saw answered).
  server.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    requests.Count(res.status);
    if (access_log) {
      AccessLogEntry e;
      e.method = EscapeForLog(req.method);
      e.path = EscapeForLog(req.path);
      e.code = res.status;
      if (tls_scope.active)
        e.latency_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - tls_scope.start).count();
      e.user = tls_scope.active ? tls_scope.user : "";
      e.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
      access_log(e);
    }
    tls_scope.active = false;
  });
}

void HttpServer::Impl::Serve(const httplib::Request& req, const std::string& body, httplib::Response& res) {
  ApiRequest in;
  in.method = req.method;
  in.path = req.path;
  in.query = QueryOf(req.target);
  in.authorization = req.get_header_value("Authorization");
  in.if_none_match = req.get_header_value("If-None-Match");
  in.body = body;
  ApiResponse out = api.Handle(in);
  tls_scope.user = out.user;
  res.status = out.code;
  for (const auto& [k, v] : out.headers) res.set_header(k, v);
  res.set_content(std::move(out.body), out.content_type.c_str());
}

HttpServer::HttpServer(JobService& service, const TokenStore& tokens, HttpServerOptions options, AccessLog log)
    : impl_(std::make_unique<Impl>(service, tokens, options, std::move(log))) {
  impl_->Configure();
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& listen) {
  if (impl_->started) return FailedPrecondition("the HTTP server is already started");
  std::string host;
  int port = 0;
  TESSEL_RETURN_IF_ERROR(ParseListenAddress(listen, &host, &port));
  int bound = -1;
  if (port == 0) {
    bound = impl_->server.bind_to_any_port(host);
  } else if (impl_->server.bind_to_port(host, port)) {
    bound = port;
  }
  if (bound <= 0) return DiagnoseBind(host, port);
  impl_->server.WidenBacklog();
  impl_->port = bound;
  impl_->started = true;
  // The socket is listening once bound: connections made before the thread
  // runs wait in the backlog.
  impl_->thread_done = false;
  impl_->thread = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->thread_done = true;
  });
  impl_->WaitUntilServing();
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!impl_ || !impl_->started) return;
  // httplib's stop() does nothing until its accept loop has started.
  impl_->WaitUntilServing();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->started = false;
}

int HttpServer::port() const { return impl_->port; }

}  // namespace tessel
