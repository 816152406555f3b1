// Sources: NVIDIA datasheets and architecture whitepapers, dense figures
// (sparsity doubles the tensor numbers; those are NOT used here).
//  K80: Tesla K80 board brief (per GK210 die: half the board).
//  P100: Tesla P100 PCIe datasheet (16 GB).
//  V100: Tesla V100 SXM2 datasheet (NVLink 2.0, 6 links x 25 GB/s/dir).
//  T4: Tesla T4 datasheet.  A10, A40, L4, L20: product datasheets.
//  RTX 2080 Ti / Quadro RTX 6000: NVIDIA Turing architecture whitepaper
//    (GeForce runs fp16 tensor math with fp32 accumulate at half rate).
//  RTX 3090: NVIDIA Ampere GA102 whitepaper (fp16 tensor, fp32 accumulate).
//  A100: A100 datasheet (SXM4; NVLink 3.0, 12 links x 25 GB/s/dir).
//  H100: H100 datasheet (SXM5: NVLink 4.0, 18 links x 25 GB/s/dir; PCIe:
//    NVLink bridge 600 GB/s bidirectional).  H200: H200 datasheet.
#include "hardware/gpu.h"

#include "core/strings.h"

namespace tessel {

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
  }
  return "?";
}

Result<Precision> ParsePrecision(std::string_view s) {
  std::string l = ToLower(s);
  if (l == "fp32" || l == "float32") return Precision::kFp32;
  if (l == "tf32") return Precision::kTf32;
  if (l == "fp16" || l == "float16" || l == "half") return Precision::kFp16;
  if (l == "bf16" || l == "bfloat16") return Precision::kBf16;
  if (l == "fp8") return Precision::kFp8;
  return InvalidArgument("unknown precision '" + std::string(s) +
                         "'; known: fp32, tf32, fp16, bf16, fp8");
}

double ActivationBytes(Precision p) {
  return (p == Precision::kFp32 || p == Precision::kTf32) ? 4.0 : 2.0;
}

const char* LinkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::kPcie: return "pcie";
    case LinkKind::kNvlinkBridge: return "nvlink-bridge";
    case LinkKind::kNvlinkMesh: return "nvlink-mesh";
    case LinkKind::kNvswitch: return "nvswitch";
  }
  return "?";
}

double GpuSpec::PeakTflops(Precision p) const {
  switch (p) {
    case Precision::kFp32: return fp32_tflops;
    case Precision::kTf32: return tf32_tflops > 0 ? tf32_tflops : fp32_tflops;
    case Precision::kFp16: return fp16_tflops;
    case Precision::kBf16: return bf16_tflops;
    case Precision::kFp8: return fp8_tflops;
  }
  return 0;
}

double GpuSpec::PcieGbs() const {
  // x16 per direction after 128b/130b (gen3+) encoding.
  switch (pcie_gen) {
    case 3: return 15.75;
    case 4: return 31.5;
    case 5: return 63.0;
    default: return 7.9;
  }
}

namespace {

std::vector<GpuSpec> BuildCatalog() {
  std::vector<GpuSpec> c;
  auto add = [&](GpuSpec g) { c.push_back(std::move(g)); };
  //   name, aliases, description, arch, sm, mem GiB, mem GB/s,
  //   fp32, tf32, fp16, bf16, fp8, pcie, link, nvlink gen, nvlink GB/s/dir,
  //   source, SMs
  // SM counts (the last field): GK210 13 SMX; GP100 (P100
  // PCIe) 56; GV100 (V100) 80; TU104 (T4) 40; TU102 68 (2080 Ti) and 72
  // (Quadro RTX 6000); GA102 82 (RTX 3090), 72 (A10), 84 (A40); GA100
  // (A100) 108; AD104 (L4) 58; AD102 (L20) 92; GH100 114 (H100 PCIe) and 132
  // (H100/H200 SXM) — NVIDIA's architecture whitepapers and product briefs.
  add({"k80", {"tesla-k80"}, "NVIDIA Tesla K80 (one GK210 of the dual board)", "kepler", 37,
       12, 240, 4.37, 0, 4.37, 0, 0, 3, LinkKind::kPcie, 0, 0,
       "Tesla K80 board brief: 8.73 TFLOP/s fp32 boost, 480 GB/s, 24 GB per board", 13});
  add({"p100", {"tesla-p100", "p100-16g"}, "NVIDIA Tesla P100 PCIe 16GB", "pascal", 60, 16, 732,
       9.3, 0, 18.7, 0, 0, 3, LinkKind::kPcie, 0, 0, "Tesla P100 PCIe datasheet", 56});
  add({"v100-16g", {"v100-sxm2-16g"}, "NVIDIA V100 SXM2 16GB", "volta", 70, 16, 900, 15.7, 0,
       125, 0, 0, 3, LinkKind::kNvlinkMesh, 2, 150, "Tesla V100 SXM2 datasheet", 80});
  add({"v100-32g", {"v100", "v100-sxm2-32g"}, "NVIDIA V100 SXM2 32GB", "volta", 70, 32, 900,
       15.7, 0, 125, 0, 0, 3, LinkKind::kNvlinkMesh, 2, 150, "Tesla V100 SXM2 datasheet", 80});
  add({"t4", {"tesla-t4"}, "NVIDIA T4 16GB", "turing", 75, 16, 320, 8.1, 0, 65, 0, 0, 3,
       LinkKind::kPcie, 0, 0, "T4 datasheet (65 TFLOP/s fp16 mixed)", 40});
  add({"rtx2080ti", {"2080ti", "rtx-2080ti"}, "NVIDIA GeForce RTX 2080 Ti 11GB", "turing", 75,
       11, 616, 13.4, 0, 53.8, 0, 0, 3, LinkKind::kPcie, 0, 0,
       "Turing whitepaper: 53.8 TFLOP/s fp16 tensor with fp32 accumulate (reference clocks)", 68});
  add({"rtx6000", {"quadro-rtx6000", "quadro"}, "NVIDIA Quadro RTX 6000 24GB", "turing", 75,
       24, 672, 16.3, 0, 130.5, 0, 0, 3, LinkKind::kPcie, 0, 0,
       "Quadro RTX 6000 datasheet / Turing whitepaper", 72});
  add({"rtx3090", {"3090", "rtx-3090"}, "NVIDIA GeForce RTX 3090 24GB", "ampere", 86, 24, 936,
       35.6, 35.6, 71, 71, 0, 4, LinkKind::kNvlinkBridge, 3, 56.25,
       "GA102 whitepaper: 71 TFLOP/s fp16/bf16 tensor with fp32 accumulate; NVLink bridge "
       "112.5 GB/s bidirectional", 82});
  add({"a10", {"a10-24g"}, "NVIDIA A10 24GB", "ampere", 86, 24, 600, 31.2, 62.5, 125, 125, 0,
       4, LinkKind::kPcie, 0, 0, "A10 datasheet", 72});
  add({"a40", {"a40-48g"}, "NVIDIA A40 48GB", "ampere", 86, 48, 696, 37.4, 74.8, 149.7, 149.7,
       0, 4, LinkKind::kNvlinkBridge, 3, 56.25,
       "A40 datasheet; NVLink bridge 112.5 GB/s bidirectional", 84});
  add({"a100-40g", {"a100", "a100-sxm4-40g"}, "NVIDIA A100 SXM4 40GB", "ampere", 80, 40, 1555,
       19.5, 156, 312, 312, 0, 4, LinkKind::kNvswitch, 3, 300, "A100 datasheet", 108});
  add({"a100-80g", {"a100-sxm4-80g"}, "NVIDIA A100 SXM4 80GB", "ampere", 80, 80, 2039, 19.5,
       156, 312, 312, 0, 4, LinkKind::kNvswitch, 3, 300, "A100 datasheet", 108});
  add({"l4", {"l4-24g"}, "NVIDIA L4 24GB", "ada", 89, 24, 300, 30.3, 60, 121, 121, 242.5, 4,
       LinkKind::kPcie, 0, 0, "L4 datasheet", 58});
  add({"l20", {"l20-48g"}, "NVIDIA L20 48GB", "ada", 89, 48, 864, 59.8, 59.8, 119.5, 119.5,
       239, 4, LinkKind::kPcie, 0, 0, "L20 datasheet", 92});
  add({"h100-pcie", {"h100-pcie-80g"}, "NVIDIA H100 PCIe 80GB", "hopper", 90, 80, 2000, 51,
       378, 756, 756, 1513, 5, LinkKind::kNvlinkBridge, 4, 300,
       "H100 PCIe datasheet; NVLink bridge 600 GB/s bidirectional", 114});
  add({"h100-sxm", {"h100", "h100-80g", "h100-sxm5"}, "NVIDIA H100 SXM5 80GB", "hopper", 90,
       80, 3350, 67, 494.7, 989.5, 989.5, 1979, 5, LinkKind::kNvswitch, 4, 450,
       "H100 SXM datasheet", 132});
  add({"h200", {"h200-sxm", "h200-141g"}, "NVIDIA H200 SXM 141GB", "hopper", 90, 140, 4800, 67,
       494.7, 989.5, 989.5, 1979, 5, LinkKind::kNvswitch, 4, 450, "H200 datasheet", 132});
  return c;
}

}  // namespace

const std::vector<GpuSpec>& GpuCatalog() {
  static const std::vector<GpuSpec> catalog = BuildCatalog();
  return catalog;
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> out;
  for (const auto& g : GpuCatalog()) out.push_back(g.name);
  return out;
}

Result<const GpuSpec*> FindGpu(std::string_view name) {
  std::string l = ToLower(Trim(name));
  for (const auto& g : GpuCatalog()) {
    if (g.name == l) return &g;
    for (const auto& a : g.aliases)
      if (a == l) return &g;
  }
  return NotFound(UnknownNameMessage("gpu", name, GpuNames()));
}

}  // namespace tessel
