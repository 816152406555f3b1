// The client side of the HTTP transport plugin (server/http_transport.h).
#include "server/api_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/strings.h"
#include "server/http_transport_loader.h"

namespace tessel {

namespace {

struct ParsedUrl {
  std::string scheme, host;
  int port = 0;
};

Result<ParsedUrl> ParseServerUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("server URL '" + url + "': " + why + "; expected http://HOST:PORT, e.g. " +
                           kDefaultServerUrl);
  };
  ParsedUrl p;
  size_t sep = url.find("://");
  if (sep == std::string::npos) return bad("no scheme");
  p.scheme = ToLower(url.substr(0, sep));
  if (p.scheme != "http" && p.scheme != "https") return bad("scheme must be http or https");
  std::string rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return bad("no path expected");
  std::string port_text;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) return bad("unbalanced brackets");
    p.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return bad("expected ':' after ']'");
      port_text = rest.substr(close + 2);
    }
  } else {
    size_t colon = rest.find(':');
    p.host = rest.substr(0, colon);
    if (colon != std::string::npos) port_text = rest.substr(colon + 1);
  }
  if (p.host.empty()) return bad("no host");
  p.port = p.scheme == "https" ? 443 : 80;
  if (!port_text.empty() || rest.find(':') != std::string::npos) {
    if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port_text) < 1 || std::stoi(port_text) > 65535)
      return bad("port must be a number from 1 to 65535");
    p.port = std::stoi(port_text);
  }
  return p;
}

// Why a connection to host:port failed: httplib says only that it did, so a
// probe connection (non-blocking, at most 2 s) reads the reason.
std::string ConnectFailureReason(const ParsedUrl& u) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(u.host.c_str(), std::to_string(u.port).c_str(), &hints, &res);
  if (rc != 0) return std::string("cannot resolve host '") + u.host + "': " + ::gai_strerror(rc);
  int err = 0;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      if (::poll(&pfd, 1, 2000) == 1) {
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        r = err == 0 ? 0 : -1;
      } else {
        err = ETIMEDOUT;
      }
    } else if (r != 0) {
      err = errno;
    }
    ::close(fd);
    if (r == 0) {
      err = 0;
      break;
    }
  }
  ::freeaddrinfo(res);
  if (err == 0) return "connection failed";
  std::string reason = std::strerror(err);
  if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  return reason;
}

std::string TransportError(const http::ClientReply& r, const ParsedUrl& url) {
  switch (r.error) {
    case http::ClientError::kConnection:
      return ConnectFailureReason(url);
    case http::ClientError::kConnectionTimeout:
      return "connection timed out";
    case http::ClientError::kRead:
      return "no reply (the connection was closed or the read timed out)";
    case http::ClientError::kWrite:
      return "could not send the request (the connection was closed or the write timed out)";
    case http::ClientError::kTls:
      return "TLS error (" + r.error_text + ")";
    default:
      return r.error_text;
  }
}

}  // namespace

struct ApiClient::Impl {
  std::string url;
  ParsedUrl parsed;
  std::string token;
  std::unique_ptr<http::Client> client;
};

std::string HttpReply::Header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (ToLower(k) == ToLower(name)) return v;
  return "";
}

Result<ApiClient> ApiClient::Create(const std::string& server_url, std::string token, ApiClientOptions options) {
  Result<ParsedUrl> parsed = ParseServerUrl(server_url);
  if (!parsed.ok()) return parsed.status();
  std::string url = server_url;
  if (!url.empty() && url.back() == '/') url.pop_back();
  Result<const http::Transport*> transport = LoadHttpTransport();
  if (!transport.ok()) return transport.status();
  auto impl = std::make_unique<Impl>();
  impl->url = url;
  impl->parsed = *parsed;
  impl->token = std::move(token);
  impl->client = (*transport)->make_client(url, options);
  if (!impl->client->Valid()) return InvalidArgument("server URL '" + server_url + "': not understood");
  return ApiClient(std::move(impl));
}

ApiClient::ApiClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ApiClient::ApiClient(ApiClient&&) noexcept = default;
ApiClient& ApiClient::operator=(ApiClient&&) noexcept = default;
ApiClient::~ApiClient() = default;

const std::string& ApiClient::url() const { return impl_->url; }

Result<HttpReply> ApiClient::Send(const std::string& method, const std::string& path, const std::string& body,
                                  const std::string& content_type) {
  http::Headers headers;
  if (!impl_->token.empty()) headers.emplace_back("Authorization", "Bearer " + impl_->token);
  if (!body.empty()) headers.emplace_back("Content-Type", content_type);
  http::ClientReply res = impl_->client->Send(method, path, headers, body);
  if (res.error != http::ClientError::kNone)
    return Unavailable("cannot reach tessel server at " + impl_->url + ": " + TransportError(res, impl_->parsed));
  HttpReply reply;
  reply.code = res.code;
  reply.body = std::move(res.body);
  reply.headers = std::move(res.headers);
  return reply;
}

std::string ResolveServerUrl(const std::string& server_flag) {
  if (!server_flag.empty()) return server_flag;
  if (const char* env = std::getenv("TESSEL_SERVER"); env != nullptr && *env != '\0') return env;
  return kDefaultServerUrl;
}

Result<std::string> ResolveToken(const std::string& token_file) {
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return NotFound("--token-file: cannot open '" + token_file + "': " + std::strerror(errno));
    std::string line;
    std::getline(in, line);
    std::string token = Trim(line);
    if (token.empty()) return InvalidArgument("--token-file '" + token_file + "': the first line is empty");
    return token;
  }
  if (const char* env = std::getenv("TESSEL_TOKEN"); env != nullptr) {
    std::string token = Trim(env);
    if (!token.empty()) return token;
  }
  return InvalidArgument("no API token: pass --token-file FILE (the token on its first line) or set TESSEL_TOKEN");
}

}  // namespace tessel
