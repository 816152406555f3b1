#include "workload/model_mapping.h"

#include <algorithm>

namespace tessel {

namespace {

// Family weights: model families of Arena's simulate_trace_philly.csv
// (bert 450, moe 1231, wide_resnet 257 of 1,938 jobs).
constexpr std::array<uint64_t, kMappedFamilies> kFamilyWeights = {450, 1231, 257};

// Per-family batch range: the global batches Arena's prof_database.json
// profiled (bert 128/256/512; moe and wide_resnet 256/512/1024).
constexpr std::array<int, kMappedFamilies> kMinBatch = {128, 256, 256};
constexpr std::array<int, kMappedFamilies> kMaxBatch = {512, 1024, 1024};
constexpr int kBatchPerGpu = 32;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

const char* MappedFamilyName(MappedFamily f) {
  switch (f) {
    case MappedFamily::kBert: return "bert";
    case MappedFamily::kMoe: return "moe";
    case MappedFamily::kWideResnet: return "wide_resnet";
  }
  return "?";
}

// Sizes per GPU count. "Fits" below means Arena's prof_database.json has a
// measured (not OOM) iteration time on that many A100-40GB GPUs (or, where
// the database stops at 16 GPUs, the next size whose fp16 weights, grads and
// Adam state spread over the GPUs stay under ~16 GiB each).
//   GPUs   bert        moe        wide_resnet   large (>= 100 GPU-hours)
//   1      760M        690M       500M          (nothing larger fits one GPU)
//   2-3    1.3B        1.3B       1B            moe 2.4B
//   4-7    2.6B        2.4B       2B            moe 10B, wide_resnet 4B
//   8-15   6.7B        10B        4B            wide_resnet 6.8B
//   16-31  6.7B        10B        6.8B          bert 15B, moe 27B
//   32+    15B         27B        13B           (same)
const std::vector<ModelMappingRow>& ModelMappingTable() {
  static const std::vector<ModelMappingRow> table = {
      {1, {"bert__760M", "moe__690M", "wide_resnet__500M"},
       {"bert__760M", "moe__690M", "wide_resnet__500M"}},
      {2, {"bert__1.3B", "moe__1.3B", "wide_resnet__1B"},
       {"bert__1.3B", "moe__2.4B", "wide_resnet__1B"}},
      {4, {"bert__2.6B", "moe__2.4B", "wide_resnet__2B"},
       {"bert__2.6B", "moe__10B", "wide_resnet__4B"}},
      {8, {"bert__6.7B", "moe__10B", "wide_resnet__4B"},
       {"bert__6.7B", "moe__10B", "wide_resnet__6.8B"}},
      {16, {"bert__6.7B", "moe__10B", "wide_resnet__6.8B"},
       {"bert__15B", "moe__27B", "wide_resnet__6.8B"}},
      {32, {"bert__15B", "moe__27B", "wide_resnet__13B"},
       {"bert__15B", "moe__27B", "wide_resnet__13B"}},
  };
  return table;
}

uint64_t StableHash(uint64_t seed, std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return SplitMix64(SplitMix64(seed) ^ h);
}

MappedFamily MapFamily(uint64_t seed, std::string_view job_id) {
  uint64_t total = 0;
  for (uint64_t w : kFamilyWeights) total += w;
  uint64_t r = StableHash(seed, job_id) % total;
  for (int f = 0; f < kMappedFamilies; ++f) {
    if (r < kFamilyWeights[f]) return static_cast<MappedFamily>(f);
    r -= kFamilyWeights[f];
  }
  return MappedFamily::kMoe;  // unreachable
}

MappedModel MapModel(uint64_t seed, std::string_view job_id, int gpus, double duration_s) {
  gpus = std::max(gpus, 1);
  const auto& table = ModelMappingTable();
  const ModelMappingRow* row = &table.front();
  for (const ModelMappingRow& r : table)
    if (gpus >= r.min_gpus) row = &r;
  int f = static_cast<int>(MapFamily(seed, job_id));
  bool large = duration_s > 0 && gpus * duration_s >= kLargeJobGpuHours * 3600;
  MappedModel out;
  out.model = std::string(large ? row->large[f] : row->base[f]);
  int batch = 1;
  // Saturate before overflow: anything past the family's maximum is clamped.
  while (batch < static_cast<long long>(kBatchPerGpu) * gpus && batch < kMaxBatch[f]) batch *= 2;
  out.global_batch = std::clamp(batch, kMinBatch[f], kMaxBatch[f]);
  return out;
}

std::string ModelMappingNote(uint64_t seed, size_t jobs) {
  return std::to_string(jobs) +
         " jobs: model and global batch from the seeded model mapping (seed " +
         std::to_string(seed) +
         "; family by hash of the job id, size by requested GPUs, one size up at >= 100 "
         "GPU-hours; see workload/model_mapping.h)";
}

}  // namespace tessel
