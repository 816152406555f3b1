// Estimator parameters (`--params FILE`, what `calibrate --out` writes):
// parsed; parameters that load give finite, positive iteration times on a
// few plans (so no negative overhead or zero efficiency slips through), and
// write back to JSON that loads again.
#include <cmath>

#include "fuzz/fuzz_util.h"
#include "hardware/gpu.h"
#include "model/catalog.h"
#include "perf/estimator.h"
#include "perf/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto p = PerfParamsFromJson(text, "params.json");
  if (!p.ok()) {
    FUZZ_CHECK(p.status().message().find("params.json") != std::string::npos,
               "an error not naming the file: " + p.status().message());
    return 0;
  }
  auto again = PerfParamsFromJson(PerfParamsToJson(*p), "round-trip.json");
  FUZZ_CHECK(again.ok(), "written parameters do not load: " + again.status().message());
  static const ModelSpec gpt = **FindModel("gpt3-1.3b");
  struct Case {
    const char* gpu;
    int gpus, dp, tp, pp;
  };
  for (Case c : {Case{"a100-80g", 16, 4, 2, 2}, Case{"v100-32g", 8, 8, 1, 1}}) {
    EstimateRequest r;
    r.model = &gpt;
    r.topology = *MakeTopology(**FindGpu(c.gpu), 0, 0);
    r.gpus = c.gpus;
    r.global_batch = 64;
    r.plan.dp = c.dp;
    r.plan.tp = c.tp;
    r.plan.pp = c.pp;
    r.plan.micro_batch = 1;
    r.plan.num_micro_batches = 64 / c.dp;
    r.plan.precision = Precision::kFp16;
    auto e = Estimator(*p).Run(r);
    if (!e.ok()) continue;
    FUZZ_CHECK(std::isfinite(e->iteration_time_s) && e->iteration_time_s > 0,
               std::string(c.gpu) + ": iteration time " + std::to_string(e->iteration_time_s));
    FUZZ_CHECK(std::isfinite(e->memory_gib_per_gpu) && e->memory_gib_per_gpu >= 0,
               std::string(c.gpu) + ": memory " + std::to_string(e->memory_gib_per_gpu));
  }
  return 0;
}
