// The HTTP transport plugin (libtessel_http.so): the one translation unit
// that includes cpp-httplib, and the only code linked against it
// (server/http_transport.h says why it is a plugin).
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>

#include "server/http_transport.h"

namespace tessel::http {
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

class HttplibServer : public Server {
 public:
  HttplibServer(const ServerOptions& options, ServerHooks hooks) : options_(options), hooks_(std::move(hooks)) {
    Configure();
  }

  int Bind(const std::string& host, int port) override {
    int bound = -1;
    if (port == 0) {
      bound = server_.bind_to_any_port(host);
    } else if (server_.bind_to_port(host, port)) {
      bound = port;
    }
    if (bound > 0) server_.WidenBacklog();
    return bound;
  }
  void Serve() override { server_.listen_after_bind(); }
  bool Running() const override { return server_.is_running(); }
  void Stop() override { server_.stop(); }

 private:
  void Configure();
  void Route(const httplib::Request& req, const std::string& body, httplib::Response& res) const;
  void Refuse(httplib::Response& res, int code, const std::string& message) const {
    res.status = code;
    res.set_content(hooks_.error_body(message), "application/json");
  }
  std::string TooLarge() const {
    return "request body too large; at most " + std::to_string(options_.max_body_bytes) + " bytes";
  }

  ServerOptions options_;
  ServerHooks hooks_;
  BackloggedServer server_;
};

void HttplibServer::Configure() {
  const int threads = options_.threads > 0 ? options_.threads : 1;
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // httplib's default sets SO_REUSEPORT, which lets a second daemon bind
  // the same port and silently share its connections; SO_REUSEADDR alone
  // still allows a restart while old connections sit in TIME_WAIT.
  server_.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_.set_tcp_nodelay(true);  // headers and body are separate writes
  server_.set_payload_max_length(options_.max_body_bytes);
  server_.set_read_timeout(options_.read_timeout_s, 0);
  server_.set_write_timeout(options_.write_timeout_s, 0);
  server_.set_keep_alive_timeout(options_.keep_alive_timeout_s);
  server_.set_keep_alive_max_count(
      static_cast<size_t>(options_.keep_alive_max_requests > 0 ? options_.keep_alive_max_requests : 1));

  server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    tls_scope = RequestScope{true, SteadyClock::now(), ""};
    auto refuse = [&](int code, const std::string& message) {
      Refuse(res, code, message);
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

  // Every method and path goes to Route; the hooks do the routing (so they
  // can tell 404 from 405). httplib answers HEAD with the GET handler.
  // Methods that may carry a body read it through a ContentReader, which
  // bounds chunked bodies too and skips httplib's 8 KiB limit on
  // form-encoded ones (curl -d sends JSON as
  // application/x-www-form-urlencoded).
  const std::string any = "[\\s\\S]*";
  auto route = [this](const httplib::Request& req, httplib::Response& res) { Route(req, "", res); };
  auto route_body = [this](const httplib::Request& req, httplib::Response& res,
                           const httplib::ContentReader& reader) {
    std::string body;
    bool too_large = false;
    const size_t limit = options_.max_body_bytes;
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
      Refuse(res, too_large ? 413 : 400, too_large ? TooLarge() : "could not read the request body");
      if (res.status == 400 || body.size() > 0) res.set_header("Connection", "close");
      return;
    }
    Route(req, body, res);
  };
  server_.Get(any, route);
  server_.Options(any, route);
  server_.Post(any, route_body);
  server_.Put(any, route_body);
  server_.Patch(any, route_body);
  server_.Delete(any, route_body);

  server_.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    Refuse(res, 500, "internal error: " + what);
  });

  // Responses httplib makes itself (413, 400 for a malformed request, 404
  // for a path the pattern cannot match) get a JSON body too.
  server_.set_error_handler(httplib::Server::HandlerWithResponse(
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
        res.set_content(hooks_.error_body(message), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));

  // The last hook before the response is written: count and log it here
  // (the logger hook runs after the client may already have the response,
  // which would let /metrics miss a request the client saw answered).
  server_.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    Finished f;
    f.method = req.method;
    f.path = req.path;
    f.code = res.status;
    if (tls_scope.active) {
      f.latency_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - tls_scope.start).count();
      f.user = tls_scope.user;
    }
    f.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
    if (hooks_.finished) hooks_.finished(f);
    tls_scope.active = false;
  });
}

void HttplibServer::Route(const httplib::Request& req, const std::string& body, httplib::Response& res) const {
  Request in;
  in.method = req.method;
  in.path = req.path;
  if (size_t q = req.target.find('?'); q != std::string::npos) {
    httplib::Params params;
    httplib::detail::parse_query_text(req.target.substr(q + 1), params);
    for (const auto& [k, v] : params) in.query.emplace_back(k, v);
  }
  in.authorization = req.get_header_value("Authorization");
  in.if_none_match = req.get_header_value("If-None-Match");
  in.body = body;
  Response out;
  hooks_.serve(in, out);
  tls_scope.user = out.user;
  res.status = out.code;
  for (const auto& [k, v] : out.headers) res.set_header(k, v);
  res.set_content(std::move(out.body), out.content_type.c_str());
}

class HttplibClient : public Client {
 public:
  HttplibClient(const std::string& url, const ClientOptions& options) : client_(url) {
    client_.set_connection_timeout(options.connect_timeout_s, 0);
    client_.set_read_timeout(options.read_timeout_s, 0);
    client_.set_write_timeout(options.write_timeout_s, 0);
    client_.set_keep_alive(options.keep_alive);
    client_.set_tcp_nodelay(true);
  }

  bool Valid() const override { return client_.is_valid(); }

  ClientReply Send(const std::string& method, const std::string& path, const Headers& headers,
                   const std::string& body) override {
    httplib::Request req;
    req.method = method;
    req.path = path;
    for (const auto& [k, v] : headers) req.headers.emplace(k, v);
    req.body = body;
    httplib::Result res = client_.send(req);
    ClientReply reply;
    if (!res) {
      switch (res.error()) {
        case httplib::Error::Connection: reply.error = ClientError::kConnection; break;
        case httplib::Error::ConnectionTimeout: reply.error = ClientError::kConnectionTimeout; break;
        case httplib::Error::Read: reply.error = ClientError::kRead; break;
        case httplib::Error::Write: reply.error = ClientError::kWrite; break;
        case httplib::Error::SSLConnection:
        case httplib::Error::SSLLoadingCerts:
        case httplib::Error::SSLServerVerification: reply.error = ClientError::kTls; break;
        default: reply.error = ClientError::kOther; break;
      }
      reply.error_text = httplib::to_string(res.error());
      return reply;
    }
    reply.code = res->status;
    reply.body = res->body;
    for (const auto& [k, v] : res->headers) reply.headers.emplace_back(k, v);
    return reply;
  }

 private:
  httplib::Client client_;
};

std::unique_ptr<Server> MakeServer(const ServerOptions& options, ServerHooks hooks) {
  return std::make_unique<HttplibServer>(options, std::move(hooks));
}

std::unique_ptr<Client> MakeClient(const std::string& url, const ClientOptions& options) {
  return std::make_unique<HttplibClient>(url, options);
}

}  // namespace
}  // namespace tessel::http

extern "C" const tessel::http::Transport* tessel_http_transport() {
  static const tessel::http::Transport transport{tessel::http::kTransportVersion, &tessel::http::MakeServer,
                                                 &tessel::http::MakeClient};
  return &transport;
}
