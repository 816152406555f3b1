#include "server/http_transport_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

namespace tessel {

namespace {

constexpr const char* kPluginFile = "libtessel_http.so";

// The plugin beside the executable (the build directory, where CMake puts
// both), unless TESSEL_HTTP_PLUGIN names one.
std::string PluginPath() {
  if (const char* env = std::getenv("TESSEL_HTTP_PLUGIN"); env != nullptr && *env != '\0') return env;
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return kPluginFile;
  std::string dir(exe, static_cast<size_t>(n));
  size_t slash = dir.rfind('/');
  return (slash == std::string::npos ? std::string(".") : dir.substr(0, slash)) + "/" + kPluginFile;
}

Result<const http::Transport*> Load() {
  const std::string path = PluginPath();
  auto fail = [&](const std::string& why) -> Result<const http::Transport*> {
    return Unavailable("cannot load the HTTP transport " + path + ": " + why +
                       " (it is built beside the tessel binary; set TESSEL_HTTP_PLUGIN to use another)");
  };
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    return fail(err != nullptr ? err : "dlopen failed");
  }
  using Entry = const http::Transport* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "tessel_http_transport"));
  if (entry == nullptr) return fail("no tessel_http_transport entry point (not a tessel HTTP plugin)");
  const http::Transport* transport = entry();
  if (transport == nullptr || transport->version != http::kTransportVersion || transport->make_server == nullptr ||
      transport->make_client == nullptr)
    return fail("version " + std::to_string(transport ? transport->version : 0) + ", this binary needs " +
                std::to_string(http::kTransportVersion) + " (rebuild both)");
  // Never unloaded: its objects may live until the process ends.
  return transport;
}

}  // namespace

Result<const http::Transport*> LoadHttpTransport() {
  static std::once_flag once;
  static Result<const http::Transport*> loaded = Unavailable("not loaded");
  std::call_once(once, [] { loaded = Load(); });
  return loaded;
}

}  // namespace tessel
