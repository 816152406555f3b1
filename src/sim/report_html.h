// report.html: one self-contained page of a simulation (`tessel simulate`)
// or a comparison (`tessel compare`) for a browser: the summary table (the
// figures RenderSummary prints, per policy, wall times aside), the JCT CDF,
// GPUs allocated and making progress and pending jobs over time,
// allocation by GPU type, JCT and queueing, restarts, and deadlines when
// any job has one.
//
// The page loads nothing: Chart.js (Debian's libjs-chart.js), the page's
// script and its style are embedded in tessel at build time
// (sim/report_assets.h) and inlined. A Content-Security-Policy meta tag
// allows only the page's own inline scripts, by their SHA-256 hashes, and
// no other resource. Every string from input (policy specs, cluster, trace
// and GPU names, unfinished jobs' reasons) travels as JSON in a data block
// (every '<', '>' and '&' escaped as \u003c, \u003e, \u0026) and is shown
// with textContent, never parsed as HTML. Series are reduced as
// sim/report_series.h says. Deterministic: the same runs give the same
// bytes (no time stamps; wall times left out).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/cluster.h"
#include "sim/sim_backend.h"

namespace tessel {

// The page for `runs` (one for simulate, several for compare; the first
// run's cluster, trace, truth, placement and seed head the page).
// `command`: "simulate" or "compare", for the title.
std::string ReportHtml(std::span<const SimResult> runs, const Cluster& cluster, std::string_view command);

// The series colours, policy i taking colour i (mod 16; past 16 lines are
// dashed): Kenneth L. Kelly's "Twenty-two colors of maximum contrast"
// (Color Engineering 3(6), 1965) in his order, as the ISCC-NBS centroid
// colours R's Polychrome::kelly.colors() gives, without white and
// greenish yellow (too faint on the white page): black, yellow, purple,
// orange, light blue, red, buff, grey, green, purplish pink, blue,
// yellowish pink, violet, orange yellow, purplish red, reddish brown.
const std::vector<std::string>& ReportPalette();

// The CSP source that allows an inline script whose text is `script`:
// 'sha256-<base64 of its SHA-256>'.
std::string CspScriptSource(std::string_view script);

// JSON text safe inside a <script> element: '<', '>' and '&' (which JSON
// has only inside strings) as \u003c, \u003e and \u0026.
std::string EscapeJsonForScript(std::string_view json);

}  // namespace tessel
