// Model YAML (`--model FILE`): parsed; a model that loads is estimated on
// one plan (8 A100s, data parallel), which must give a finite, positive
// iteration time or a clear error, never a negative or infinite result.
#include <cmath>

#include "fuzz/fuzz_util.h"
#include "hardware/gpu.h"
#include "model/catalog.h"
#include "perf/estimator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto m = LoadModelYaml(text, "model.yaml");
  if (!m.ok()) {
    FUZZ_CHECK(m.status().message().rfind("model.yaml", 0) == 0, "an error not naming the file: " + m.status().message());
    return 0;
  }
  FUZZ_CHECK(ValidateModel(*m).ok(), "a loaded model fails validation");
  EstimateRequest r;
  r.model = &*m;
  r.topology = *MakeTopology(**FindGpu("a100-80g"), 0, 0);
  r.gpus = 8;
  r.global_batch = 8;
  r.plan.dp = 8;
  r.plan.micro_batch = 1;
  r.plan.num_micro_batches = 1;
  r.plan.precision = r.topology.gpu->PeakTflops(m->default_precision) > 0 ? m->default_precision : Precision::kFp16;
  auto e = Estimator().Run(r);
  if (!e.ok()) return 0;
  FUZZ_CHECK(std::isfinite(e->iteration_time_s) && e->iteration_time_s > 0, "iteration time " + std::to_string(e->iteration_time_s));
  FUZZ_CHECK(std::isfinite(e->memory_gib_per_gpu) && e->memory_gib_per_gpu >= 0, "memory " + std::to_string(e->memory_gib_per_gpu));
  return 0;
}
