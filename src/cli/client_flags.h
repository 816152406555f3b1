// What the client commands (cmd_client.cc) and `tessel loadtest` share:
// the --server/--token-file flags, connecting, and turning a failed reply
// into the CLI's message and exit code.
//
// Exit codes: 0 success; 2 the user's input (a 4xx reply: 400, 401, 403,
// 404, 409, 413; a bad flag, unreadable spec or token file); 1 the server or
// the connection (5xx, no reply, a reply that does not parse).
#pragma once

#include <iosfwd>
#include <string>

#include "core/status.h"
#include "server/api_client.h"

namespace CLI {
class App;
}

namespace tessel {

struct ClientFlags {
  std::string server;      // "" -> $TESSEL_SERVER -> kDefaultServerUrl
  std::string token_file;  // "" -> $TESSEL_TOKEN
};

// Declares --server and --token-file on `app`.
void AddClientFlags(CLI::App& app, ClientFlags& flags);

// An ApiClient for the flags' server and token; a status saying why not
// (no token, unreadable token file, malformed URL) otherwise.
Result<ApiClient> ConnectClient(const ClientFlags& flags, ApiClientOptions options);

// Prints a failed status ("error: " + each line of its message) and returns
// its exit code: 1 for Unavailable/Internal, 2 otherwise.
int ReportError(const Status& status, std::ostream& err);

// Prints a non-2xx reply: the server's {"error": ...} message, one "error:"
// line per line of it (field errors are one per line); a hint for 401.
// Returns 2 for 4xx, 1 otherwise.
int ReportReplyError(const HttpReply& reply, const std::string& server_url, std::ostream& err);

// The exit code for an HTTP status: 0 for 2xx, 2 for 4xx, 1 otherwise.
int ExitCodeForHttp(int code);

}  // namespace tessel
