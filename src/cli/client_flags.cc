#include "cli/client_flags.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/strings.h"

namespace tessel {

void AddClientFlags(CLI::App& app, ClientFlags& flags) {
  app.add_option("--server", flags.server,
                 std::string("The tessel server's URL (default: $TESSEL_SERVER, else ") + kDefaultServerUrl + ")");
  app.add_option("--token-file", flags.token_file,
                 "File whose first line is your API token (default: the token in $TESSEL_TOKEN)");
}

Result<ApiClient> ConnectClient(const ClientFlags& flags, ApiClientOptions options) {
  Result<std::string> token = ResolveToken(flags.token_file);
  if (!token.ok()) return token.status();
  return ApiClient::Create(ResolveServerUrl(flags.server), *token, options);
}

int ReportError(const Status& status, std::ostream& err) {
  for (const std::string& line : Split(status.message(), '\n')) err << "error: " << line << "\n";
  return status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kInternal ? 1 : 2;
}

int ExitCodeForHttp(int code) {
  if (code >= 200 && code < 300) return 0;
  if (code >= 400 && code < 500) return 2;
  return 1;
}

int ReportReplyError(const HttpReply& reply, const std::string& server_url, std::ostream& err) {
  std::string message;
  auto j = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_string()) {
    message = j["error"].get<std::string>();
  } else {
    std::string body = Trim(reply.body);
    if (body.size() > 200) body = body.substr(0, 200) + "...";
    message = "the server at " + server_url + " replied HTTP " + std::to_string(reply.code) +
              (body.empty() ? "" : ": " + body);
  }
  for (const std::string& line : Split(message, '\n')) err << "error: " << line << "\n";
  if (reply.code == 401)
    err << "hint: check the token in --token-file or $TESSEL_TOKEN (it must be listed in the server's tokens "
           "file)\n";
  return ExitCodeForHttp(reply.code) == 0 ? 1 : ExitCodeForHttp(reply.code);
}

}  // namespace tessel
