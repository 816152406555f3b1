// Strings given on the command line: policy specs and lists (`--policy`,
// `--policies`), placement rules, durations, trace format names, numbers
// and counts, GPU, model and cluster names. The first byte picks which.
#include <cmath>

#include "core/sim_time.h"
#include "core/strings.h"
#include "fuzz/fuzz_util.h"
#include "hardware/cluster.h"
#include "hardware/gpu.h"
#include "model/catalog.h"
#include "policy/placement_rule.h"
#include "policy/policy.h"
#include "workload/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  auto in = fuzz::Split(data, size, 8);
  std::string_view text = in.text;
  switch (in.choice) {
    case 0: {
      PolicyContext ctx;
      auto p = PolicyRegistry::Builtin().Create(text, ctx);
      if (p.ok()) FUZZ_CHECK(*p != nullptr, "a policy created as null");
      break;
    }
    case 1: {
      for (const std::string& spec : PolicyRegistry::Builtin().SplitList(text)) {
        FUZZ_CHECK(!spec.empty(), "an empty spec from SplitList");
        (void)PolicyRegistry::Builtin().Create(spec, PolicyContext{});
      }
      break;
    }
    case 2: {
      auto r = ParsePlacementRule(text);
      if (r.ok()) {
        auto back = ParsePlacementRule(PlacementRuleName(*r));
        FUZZ_CHECK(back.ok(), "a rule's own name does not parse: " + PlacementRuleName(*r));
      }
      break;
    }
    case 3: {
      auto d = ParseDuration(text, "--horizon");
      if (d.ok()) FUZZ_CHECK(*d >= 0 && ToSeconds(*d) <= kMaxInputSeconds, "duration out of range");
      break;
    }
    case 4: {
      (void)ParseTraceFormat(text);
      (void)ParsePrecision(text);
      (void)FindGpu(text);
      (void)FindModel(text);
      break;
    }
    case 5: {
      auto v = ParseDouble(text, "--rate");
      if (v.ok()) FUZZ_CHECK(std::isfinite(*v), "a non-finite number accepted");
      break;
    }
    case 6: {
      auto i = ParseInt(text, "--gpus");
      if (i.ok()) FUZZ_CHECK(std::to_string(*i) == Trim(text) || text.find_first_of("+0") != std::string_view::npos,
                             "an integer that does not read back: " + std::to_string(*i));
      break;
    }
    case 7: {
      // Names only: a path would read files.
      if (text.find('/') == std::string_view::npos && !text.ends_with(".yaml") && !text.ends_with(".yml"))
        (void)ResolveClusterSpec(text);
      break;
    }
  }
  return 0;
}
