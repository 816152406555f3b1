// Builds the convolution list of ResNet-style networks (He et al. 2016),
// including Alpa's Wide-ResNet variant used by the Arena artifact
// (alpa/model/wide_resnet.py: stage widths C, 2C, 4C, 8C; the bottleneck's
// 3x3 conv is widened by width_factor; output 4x the stage width).
#pragma once

#include "core/status.h"
#include "model/model.h"

namespace tessel {

// depth: 50 ([3,4,6,3] bottlenecks) or 101 ([3,4,23,3]).
Result<CnnShape> BuildResNet(int depth, int base_channels, int width_factor, int image,
                             int num_classes);

}  // namespace tessel
