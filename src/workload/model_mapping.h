// The model mapping: how a job from a trace that names no model (ITP,
// Philly, Alibaba, generated traces) gets a catalog model and a global
// batch. Deterministic: the same (seed, job id, GPUs, duration) gives the
// same model on every platform and run.
//
// Approach. Pollux (Qiao et al., OSDI'21, §5.1) and Sia (Jayaram Subramanya
// et al., SOSP'23) bucket each Philly job by its GPU-time and draw a model
// for it from the bucket's list; Arena (the sjtu-epcc/arena artifact whose
// simulate_trace_*.csv put LLM models on Philly / Helios / PAI arrivals)
// assigns models per requested GPU count so that each fits its request.
// This mapping combines the two:
//  - the family (bert, moe or wide_resnet — Arena's families, which its
//    profile database measured) is drawn by a stable hash of (seed, job id),
//    weighted as in Arena's simulate_trace_philly.csv (450 bert, 1231 moe,
//    257 wide_resnet of 1,938 jobs);
//  - the size follows the requested GPU count (the table in
//    model_mapping.cc): the largest size Arena's database shows fitting that
//    many A100-40GB GPUs at the mapped batch;
//  - jobs of at least kLargeJobGpuHours GPU-hours (Pollux's "XLarge"
//    GPU-time class) take the row's `large` size, one step up where a larger
//    size still fits;
//  - the global batch is 32 per requested GPU rounded up to a power of two,
//    clamped to the batch sizes the database profiled for the family
//    (bert 128–512; moe and wide_resnet 256–1024).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessel {

// Arena's model families, in the order of ModelMappingRow's arrays.
enum class MappedFamily { kBert = 0, kMoe = 1, kWideResnet = 2 };
inline constexpr int kMappedFamilies = 3;
const char* MappedFamilyName(MappedFamily f);

// One row of the size table: applies to requests of [min_gpus, next row's
// min_gpus) GPUs. Names are catalog names.
struct ModelMappingRow {
  int min_gpus = 1;
  std::array<std::string_view, kMappedFamilies> base;   // by MappedFamily
  std::array<std::string_view, kMappedFamilies> large;  // >= kLargeJobGpuHours
};

// The table, ascending min_gpus, the first row at 1.
const std::vector<ModelMappingRow>& ModelMappingTable();

// Jobs with requested_gpus x duration at or above this take the row's
// `large` size (Pollux's XLarge class starts at 100 GPU-hours).
inline constexpr double kLargeJobGpuHours = 100;

struct MappedModel {
  std::string model;  // catalog name
  int global_batch = 0;
};

// The model and batch for a job that requested `gpus` (>= 1; values below
// 1 are treated as 1) and ran `duration_s` seconds (<= 0 when unknown:
// then never "large"). `job_id` is the trace's own id (before any merge
// prefix), so a job maps the same whether its file is loaded alone or
// with others.
MappedModel MapModel(uint64_t seed, std::string_view job_id, int gpus, double duration_s);

// The family draw alone (exposed for tests).
MappedFamily MapFamily(uint64_t seed, std::string_view job_id);

// A fixed 64-bit hash of (seed, text): FNV-1a over the bytes, mixed with
// the seed through splitmix64. Stable across platforms and runs (unlike
// std::hash).
uint64_t StableHash(uint64_t seed, std::string_view text);

// One line for Workload::notes describing the mapping and its seed.
std::string ModelMappingNote(uint64_t seed, size_t jobs);

}  // namespace tessel
