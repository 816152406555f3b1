// The GPU catalog: datasheet facts per GPU type (memory, bandwidth, dense
// peak throughput per precision, intra-node link). Immutable, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessel {

// Numeric format of the training step's matrix math. Mixed precision (fp16,
// bf16, fp8) keeps fp32 master weights and optimizer state.
enum class Precision { kFp32, kTf32, kFp16, kBf16, kFp8 };

const char* PrecisionName(Precision p);
Result<Precision> ParsePrecision(std::string_view s);
// Bytes of one weight/activation element in the compute precision
// (fp8 keeps activations in bf16 between layers, so 2).
double ActivationBytes(Precision p);

// How GPUs inside a node talk to each other.
enum class LinkKind {
  kPcie,          // through the host's PCIe root/switches
  kNvlinkBridge,  // NVLink bridges joining pairs of GPUs; PCIe beyond a pair
  kNvlinkMesh,    // NVLink point-to-point mesh (DGX-1 hybrid cube mesh)
  kNvswitch,      // NVSwitch: full NVLink bandwidth between any two GPUs
};
const char* LinkKindName(LinkKind k);

struct GpuSpec {
  std::string name;                  // canonical catalog name, e.g. "a100-80g"
  std::vector<std::string> aliases;  // other accepted spellings
  std::string description;           // "NVIDIA A100 80GB SXM4"
  std::string arch;                  // "ampere"
  int sm_version = 0;                // CUDA compute capability x10 (80 = sm_80)
  double memory_gib = 0;
  double memory_bw_gbs = 0;  // HBM/GDDR bandwidth, GB/s (1e9 B/s)
  // Dense (no sparsity) peak TFLOP/s. 0 = the format is not supported by
  // the hardware's matrix units; PeakTflops() then falls back as noted.
  double fp32_tflops = 0;
  double tf32_tflops = 0;
  double fp16_tflops = 0;  // tensor cores, fp32 accumulate
  double bf16_tflops = 0;
  double fp8_tflops = 0;
  int pcie_gen = 3;
  LinkKind link = LinkKind::kPcie;  // best intra-node link the GPU offers
  int nvlink_gen = 0;
  double nvlink_gbs = 0;  // per GPU, per direction, GB/s; 0 without NVLink
  std::string source;
  // Streaming multiprocessors (the whitepapers): a GEMM runs its output
  // tiles in waves of one per SM, so a partly filled last wave idles SMs.
  int sms = 0;

  // Peak dense TFLOP/s for `p`; tf32 on pre-Ampere falls back to fp32.
  // Returns 0 when the precision is unsupported (bf16 before Ampere, fp8
  // before Ada/Hopper).
  double PeakTflops(Precision p) const;
  // Per-direction PCIe x16 bandwidth of the GPU's host link, GB/s.
  double PcieGbs() const;
  // Whether FlashAttention-style fused attention kernels exist (sm_80+).
  bool HasFusedAttention() const { return sm_version >= 80; }
};

// Every catalog GPU, in a fixed order (oldest first).
const std::vector<GpuSpec>& GpuCatalog();
// By name or alias, case-insensitive. NotFound lists the known names.
Result<const GpuSpec*> FindGpu(std::string_view name);
std::vector<std::string> GpuNames();

}  // namespace tessel
