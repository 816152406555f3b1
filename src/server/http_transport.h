// The HTTP transport of the daemon and its clients: cpp-httplib behind an
// interface of standard types only, built as a plugin (libtessel_http.so,
// server/httplib_transport.cc) that the binary loads when it first serves or
// sends a request (LoadHttpTransport, server/http_transport_loader.h).
// cpp-httplib brings OpenSSL, zlib and Brotli with it; loading them costs
// every process about 10 ms at start, which the commands that never touch
// the network (simulate, estimate, plan, ...) no longer pay.
//
// The plugin knows nothing of tessel: HttpServer (server/http_server.h)
// answers its requests, counts and logs them through ServerHooks, and
// ApiClient (server/api_client.h) turns its replies and errors into
// Status. Both sides are built from this header by the same compiler and
// standard library, in one build.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessel::http {

// Bumped whenever anything in this header changes; the loader refuses a
// plugin of another version.
inline constexpr int kTransportVersion = 1;

using Headers = std::vector<std::pair<std::string, std::string>>;

struct ServerOptions {
  size_t max_body_bytes = 1 << 20;
  int read_timeout_s = 10;
  int write_timeout_s = 10;
  int keep_alive_timeout_s = 5;
  int keep_alive_max_requests = 1000;  // per connection, then it is closed
  int threads = 16;
};

// A request routed to ServerHooks::serve (the API's ApiRequest, server/api.h).
struct Request {
  std::string method;         // "GET", "POST", ...
  std::string path;           // URL-decoded, without the query
  Headers query;              // decoded
  std::string authorization;  // the header's value; "" when absent
  std::string if_none_match;  // the header's value; "" when absent (the dashboard's files)
  std::string body;           // read whole, at most max_body_bytes
};

// Its answer (the API's ApiResponse).
struct Response {
  int code = 200;
  std::string content_type = "application/json";
  std::string body;
  Headers headers;   // beyond Content-Type
  std::string user;  // the authenticated caller ("" when none), for the access log
};

// One response written, whoever made it (the hooks or the transport: 413,
// 400 for a malformed request, ...).
struct Finished {
  std::string method;  // raw, as received
  std::string path;
  int code = 0;
  double latency_ms = 0;  // 0 and no user for a request refused before routing
  std::string user;
  std::string remote;  // "ip:port"
};

struct ServerHooks {
  std::function<void(const Request&, Response&)> serve;
  // The body of an error response the transport makes itself.
  std::function<std::string(const std::string& message)> error_body;
  // Called on the server's threads before each response is written.
  std::function<void(const Finished&)> finished;
};

class Server {
 public:
  virtual ~Server() = default;
  // Binds host:port (port 0: any free one) with a wide backlog; returns the
  // bound port, or <= 0 when binding failed (the caller diagnoses why).
  virtual int Bind(const std::string& host, int port) = 0;
  // Accepts and serves until Stop (blocks; run it on a thread).
  virtual void Serve() = 0;
  virtual bool Running() const = 0;
  // Stops accepting and ends keep-alive connections; Serve returns.
  virtual void Stop() = 0;
};

struct ClientOptions {
  int connect_timeout_s = 5;
  int read_timeout_s = 60;
  int write_timeout_s = 60;
  bool keep_alive = false;  // reuse one connection for successive requests
};

// Why no reply came.
enum class ClientError { kNone, kConnection, kConnectionTimeout, kRead, kWrite, kTls, kOther };

struct ClientReply {
  ClientError error = ClientError::kNone;
  std::string error_text;  // the library's words for kTls and kOther
  int code = 0;
  std::string body;
  Headers headers;
};

class Client {
 public:
  virtual ~Client() = default;
  // False when the library did not understand the URL.
  virtual bool Valid() const = 0;
  virtual ClientReply Send(const std::string& method, const std::string& path, const Headers& headers,
                           const std::string& body) = 0;
};

// What the plugin exports (as tessel_http_transport(), C linkage).
struct Transport {
  int version = kTransportVersion;
  std::unique_ptr<Server> (*make_server)(const ServerOptions& options, ServerHooks hooks) = nullptr;
  // `url`: "http://HOST:PORT" or "https://...", already checked by the caller.
  std::unique_ptr<Client> (*make_client)(const std::string& url, const ClientOptions& options) = nullptr;
};

}  // namespace tessel::http

extern "C" const tessel::http::Transport* tessel_http_transport();
