// A client of the daemon's HTTP API (server/api.h): sends requests with the
// bearer token and returns the raw reply. The CLI's client commands, `tessel
// loadtest` and the API tests use it. It never includes the token in an
// error message.
//
// Thread-safety: one ApiClient per thread (each holds its own connection
// when keep_alive is on).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/http_transport.h"

namespace tessel {

inline constexpr const char* kDefaultServerUrl = "http://127.0.0.1:8642";

// Timeouts and keep-alive (server/http_transport.h).
using ApiClientOptions = http::ClientOptions;

struct HttpReply {
  int code = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // The first value of header `name` (case-insensitive); "" when absent.
  std::string Header(const std::string& name) const;
};

class ApiClient {
 public:
  // `server_url`: "http://HOST:PORT" (https:// also works). `token` may be
  // empty (no Authorization header). InvalidArgument for a malformed URL.
  static Result<ApiClient> Create(const std::string& server_url, std::string token,
                                  ApiClientOptions options = {});
  ApiClient(ApiClient&&) noexcept;
  ApiClient& operator=(ApiClient&&) noexcept;
  ~ApiClient();

  // Any HTTP reply, 4xx/5xx included, is a HttpReply. Unavailable when no
  // reply came: "cannot reach tessel server at URL: connection refused"
  // (or the reason: host unknown, timed out, connection reset, ...).
  // `content_type` is sent only with a non-empty body.
  Result<HttpReply> Send(const std::string& method, const std::string& path, const std::string& body = "",
                         const std::string& content_type = "application/json");

  const std::string& url() const;

 private:
  struct Impl;
  explicit ApiClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where the client commands connect: `server_flag` if given, else
// $TESSEL_SERVER, else kDefaultServerUrl.
std::string ResolveServerUrl(const std::string& server_flag);

// The bearer token: the first line of `token_file` (trimmed) if given, else
// $TESSEL_TOKEN (trimmed). InvalidArgument when neither gives one, NotFound
// when the file cannot be read. Messages never contain the token.
Result<std::string> ResolveToken(const std::string& token_file);

}  // namespace tessel
