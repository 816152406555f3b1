// The web dashboard `tessel serve` serves at `/` (docs/daemon.md,
// "Dashboard"): static files only, embedded in the binary at build time
// (CMakeLists.txt's tessel_embed_asset: the page's script and style from
// src/server/dashboard/, Chart.js from Debian's libjs-chart.js, the one
// report.html inlines). They hold no data, so they need no token; the page
// asks the user for the API token, keeps it in the tab's sessionStorage and
// reads everything from the token-protected JSON API.
//
// Every file is served with kDashboardCsp (scripts, styles, images and
// requests from this origin only: no inline script, nothing from another
// origin, forms submit nowhere, no framing) and the headers of
// DashboardHeaders.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel {

struct DashboardFile {
  std::string_view content_type;
  std::string_view body;
  std::string etag;  // "\"<16 hex digits of the body's SHA-256>\"": a request
                     // with If-None-Match naming it is answered 304
};

// The file at `path` ("/", "/index.html", "/dashboard.js", "/dashboard.css",
// "/chart.js", "/favicon.svg"); nullptr for any other path.
const DashboardFile* FindDashboardFile(std::string_view path);

inline constexpr std::string_view kDashboardCsp =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Content-Security-Policy, X-Content-Type-Options: nosniff, Referrer-Policy:
// no-referrer, X-Frame-Options: DENY, Cache-Control: no-cache (the browser
// revalidates with the ETag: a new binary's files are fetched again, the same
// ones cost a 304).
std::vector<std::pair<std::string, std::string>> DashboardHeaders();

}  // namespace tessel
