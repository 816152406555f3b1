// FLOP counts. "Model FLOPs" count the math the model needs (forward +
// backward = 3x forward), never recomputation, so MFU is comparable across
// plans; hardware FLOPs add recomputation.
#pragma once

#include "model/model.h"

namespace tessel {

// Forward FLOPs per sample (a sequence or an image), all layers + head.
double ForwardFlopsPerSample(const ModelSpec& m);
// 3 x forward: model FLOPs of one training sample.
double ModelFlopsPerSample(const ModelSpec& m);

// Forward FLOPs of one transformer layer per token (matmuls only; attention
// scores counted over the full s x s square, as Megatron does).
double TransformerLayerForwardFlopsPerToken(const TransformerShape& s, bool moe);

// The closed form of Narayanan et al. (SC'21, eq. 3) for a GPT with FFN 4h:
//   F = k * B * s * L * h^2 * (1 + s/(6h) + V/(c*L*h))
// with (k, c) = (72, 12) without recomputation, (96, 16) with full
// recomputation. Used to test the general counter and to read published
// TFLOP/s figures back into tokens/s.
double MegatronFlopsPerIteration(double batch, double seq, double layers, double hidden,
                                 double vocab, bool full_recompute);

}  // namespace tessel
