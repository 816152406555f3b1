// Text rendering of the accuracy report, shared by `accuracy` and
// `calibrate`.
#pragma once

#include <string>

#include "calib/accuracy.h"

namespace tessel {

// Per-row table (with `rows`) and error statistics by GPU generation, by
// source, and by both.
std::string RenderAccuracy(const AccuracyReport& rep, bool rows);

// The Arena testbed's per-node network as the node catalog embeds it (the
// value `tessel calibrate` fits from arena/comm).
double ArenaNetworkGbps();

}  // namespace tessel
