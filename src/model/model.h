// What a model is to tessel: its shape, from which parameters, FLOPs and
// memory follow. Two kinds: transformers (GPT/LLaMA/BERT/MoE, described by a
// handful of numbers) and convolutional networks (ResNet / Wide-ResNet,
// described by their list of convolutions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/gpu.h"

namespace tessel {

enum class ModelKind { kTransformer, kCnn };

// The optimizer a model trains with: it sets the state kept per parameter.
//  - adam: first and second moments (Kingma & Ba), fp32;
//  - adafactor: factored second moments, no momentum (Shazeer & Stern
//    2018; optax.adafactor's default): a row and a column vector per
//    matrix, negligible per parameter;
//  - sgd-momentum: one fp32 momentum buffer.
// Mixed precision adds an fp32 master copy of the weights to each.
enum class Optimizer { kAdam, kAdafactor, kSgdMomentum };
Result<Optimizer> ParseOptimizer(std::string_view s);

// A CNN memory format by name: true for channels-first ("nchw",
// "channels_first"), false for channels-last ("nhwc", "channels_last"),
// nullopt for anything else (CnnShape::channels_first). Callers word the
// error for their input.
std::optional<bool> ChannelsFirstFromName(std::string_view s);

// The largest value of any one shape dimension (layers, hidden, heads, FFN
// width, vocabulary, sequence, experts): 2^24, beyond any published shape
// and far from int overflow in the shape arithmetic (4 x hidden, ...).
inline constexpr int kMaxModelDim = 1 << 24;

struct TransformerShape {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    // grouped-query attention; == heads for multi-head
  int ffn_hidden = 0;  // per expert for MoE layers
  int vocab = 0;
  int seq_len = 0;
  bool gated_ffn = false;        // SwiGLU (three FFN matrices), as in LLaMA
  bool tied_embeddings = false;  // output layer shares the input embedding
  bool causal = true;            // decoder (causal mask); false for BERT encoders
  // Trained with attention and hidden dropout (GPT-2/3, BERT, Megatron's GPT
  // arguments: 0.1); Llama's configurations have none (attention_dropout 0,
  // no hidden dropout). A framework that runs without dropout overrides it.
  bool dropout = true;
  int experts = 0;               // 0 = dense
  int top_k = 0;                 // experts each token is routed to
  int moe_every = 1;             // every n-th layer is MoE (Alpa/GShard: 2)

  bool IsMoe() const { return experts > 0; }
  int MoeLayers() const { return IsMoe() ? layers / moe_every : 0; }
  int DenseLayers() const { return layers - MoeLayers(); }
  int HeadDim() const { return hidden / heads; }
};

// One convolution (or the final dense layer, as a 1x1 "conv" on 1x1).
struct ConvOp {
  int64_t out_hw = 0;  // output spatial positions per sample (H*W)
  int64_t cin = 0;
  int64_t cout = 0;
  int kernel = 1;           // k x k
  bool batch_norm = true;   // followed by BN (+ReLU)
  int stride = 1;           // spatial stride (2: a downsampling convolution)
  double Params() const;
  // Forward multiply-add FLOPs per sample (2 * m * n * k).
  double FlopsPerSample() const;
};

// A pipeline-able unit of a CNN (the stem, one residual block, the head).
struct CnnBlock {
  std::string name;
  std::vector<ConvOp> convs;
};

struct CnnShape {
  int image = 224;
  int num_classes = 1000;
  std::vector<CnnBlock> blocks;
  // Activations kept channels-first (NCHW: PyTorch's default memory format;
  // channels_last is opt-in). Tensor-core convolutions (16-bit, TF32) run on
  // NHWC data, so cuDNN transposes each convolution's input and output
  // (NVIDIA's Deep Learning Performance guide, "Convolutional Layers":
  // tensor cores need NHWC, NCHW tensors are transposed on the fly); FP32 on
  // the CUDA cores runs NCHW natively. false: channels-last, as PyTorch's
  // channels_last, TensorFlow's default and XLA's own layout assignment.
  bool channels_first = false;
};

struct ModelSpec {
  std::string name;
  std::string family;  // "gpt", "llama", "bert", "moe", "wide_resnet", ...
  std::string description;
  std::string source;
  ModelKind kind = ModelKind::kTransformer;
  TransformerShape tf;
  CnnShape cnn;
  Precision default_precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdam;

  // Total trainable parameters.
  double Params() const;
  // Parameters a token actually uses (MoE: only its top-k experts).
  double ActiveParams() const;
  // Units of work per sample: tokens for transformers, 1 image for CNNs.
  double TokensPerSample() const;
  // Pipeline-able layers (transformer layers; CNN blocks).
  int NumLayers() const;
  int SeqLen() const { return kind == ModelKind::kTransformer ? tf.seq_len : 1; }
};

// Validates a shape; errors name the offending field and what is accepted.
Status ValidateModel(const ModelSpec& m);

}  // namespace tessel
