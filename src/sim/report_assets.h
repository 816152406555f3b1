// What report.html inlines, embedded in tessel at build time by
// CMakeLists.txt's tessel_embed_asset (from src/sim/embedded_asset.cc.in),
// so a built binary writes the page without any file beside it.
#pragma once

#include <string_view>

namespace tessel {

// Chart.js's UMD build as Debian's libjs-chart.js installs it (MIT
// licence; its header comment names the version).
std::string_view EmbeddedChartJs();
// The page's own script (src/sim/report_page.js) and style
// (src/sim/report_page.css).
std::string_view EmbeddedReportJs();
std::string_view EmbeddedReportCss();

}  // namespace tessel
