// Text rendering of the accuracy report, shared by `accuracy` and
// `calibrate`.
#pragma once

#include <string>

#include "calib/accuracy.h"

namespace tessel {

// Per-row table (with `rows`) and error statistics by GPU generation, by
// source, and by both; with `scaling`, the strong-scaling steps' measured
// and predicted speedups (ScalingSteps), each step listed too with `rows`.
std::string RenderAccuracy(const AccuracyReport& rep, bool rows, bool scaling = false);

// The Arena testbed's per-node network as the node catalog embeds it (the
// value `tessel calibrate` fits from arena/comm).
double ArenaNetworkGbps();

}  // namespace tessel
