#include "model/cnn.h"

#include <string>

namespace tessel {

Result<CnnShape> BuildResNet(int depth, int base_channels, int width_factor, int image,
                             int num_classes) {
  std::vector<int> stages;
  if (depth == 50) stages = {3, 4, 6, 3};
  else if (depth == 101) stages = {3, 4, 23, 3};
  else if (depth == 152) stages = {3, 8, 36, 3};
  else return InvalidArgument("resnet depth: expected 50, 101 or 152, got " + std::to_string(depth));
  if (base_channels <= 0 || width_factor <= 0 || image < 32 || num_classes <= 0)
    return InvalidArgument("resnet: channels, width factor, classes must be positive; image >= 32");
  CnnShape s;
  s.image = image;
  s.num_classes = num_classes;
  int64_t hw = image / 2;  // 7x7 stride-2 stem
  s.blocks.push_back({"stem", {{hw * hw, 3, base_channels, 7, true, 2}}});
  hw /= 2;  // 3x3 stride-2 max-pool
  int64_t in = base_channels;
  for (size_t i = 0; i < stages.size(); ++i) {
    int64_t filters = static_cast<int64_t>(base_channels) << i;
    for (int b = 0; b < stages[i]; ++b) {
      int64_t out_hw = (i > 0 && b == 0) ? hw / 2 : hw;
      CnnBlock blk;
      blk.name = "stage" + std::to_string(i + 1) + "." + std::to_string(b);
      blk.convs.push_back({hw * hw, in, filters, 1, true});
      // ResNet v1.5: a downsampling block strides its 3x3 convolution (and the projection).
      const int stride = out_hw != hw ? 2 : 1;
      blk.convs.push_back({out_hw * out_hw, filters, filters * width_factor, 3, true, stride});
      blk.convs.push_back({out_hw * out_hw, filters * width_factor, filters * 4, 1, true});
      if (in != filters * 4 || out_hw != hw)
        blk.convs.push_back({out_hw * out_hw, in, filters * 4, 1, true, stride});  // projection
      s.blocks.push_back(std::move(blk));
      in = filters * 4;
      hw = out_hw;
    }
  }
  s.blocks.push_back({"head", {{1, in, num_classes, 1, false}}});
  return s;
}

}  // namespace tessel
