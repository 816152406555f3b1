// Loads the HTTP transport plugin (server/http_transport.h) once per
// process: libtessel_http.so from the directory of the running executable,
// or the file $TESSEL_HTTP_PLUGIN names.
#pragma once

#include "core/status.h"
#include "server/http_transport.h"

namespace tessel {

// Unavailable naming the file and why it could not be loaded (absent, not
// a plugin, another version); the same answer on every call.
Result<const http::Transport*> LoadHttpTransport();

}  // namespace tessel
