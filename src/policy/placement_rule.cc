#include "policy/placement_rule.h"

#include <vector>

#include "core/strings.h"

namespace tessel {
namespace {

constexpr const char* kAccepted = "consolidate, first-fit, lwf-kappa or lwf-kappa:kappa=N (N >= 1)";

}  // namespace

Result<PlacementRule> ParsePlacementRule(std::string_view text) {
  std::vector<std::string> parts = Split(text, ':');
  std::string name = ToLower(Trim(parts.empty() ? "" : parts[0]));
  PlacementRule rule;
  if (name == "consolidate") {
    rule.kind = PlacementRule::Kind::kConsolidate;
  } else if (name == "first-fit") {
    rule.kind = PlacementRule::Kind::kFirstFit;
  } else if (name == "lwf-kappa") {
    rule.kind = PlacementRule::Kind::kLwfKappa;
  } else {
    return InvalidArgument(UnknownNameMessage("placement", name, {"consolidate", "first-fit", "lwf-kappa"}) +
                           " (expected " + kAccepted + ")");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    size_t eq = parts[i].find('=');
    std::string key = ToLower(Trim(parts[i].substr(0, eq)));
    if (rule.kind != PlacementRule::Kind::kLwfKappa) {
      return InvalidArgument("placement " + name + " takes no options, got '" + parts[i] + "' (expected " +
                             kAccepted + ")");
    }
    if (eq == std::string::npos || key != "kappa") {
      return InvalidArgument("placement lwf-kappa: unknown option '" + parts[i] + "'; it takes kappa=N (N >= 1)");
    }
    auto kappa = ParseInt(parts[i].substr(eq + 1), "placement lwf-kappa: kappa");
    if (!kappa.ok()) return kappa.status();
    if (*kappa < 1 || *kappa > 1'000'000) {
      return InvalidArgument("placement lwf-kappa: kappa must be an integer >= 1 (at most 1000000), got " + std::to_string(*kappa));
    }
    rule.kappa = static_cast<int>(*kappa);
  }
  return rule;
}

std::string PlacementRuleName(const PlacementRule& rule) {
  switch (rule.kind) {
    case PlacementRule::Kind::kConsolidate: return "consolidate";
    case PlacementRule::Kind::kFirstFit: return "first-fit";
    case PlacementRule::Kind::kLwfKappa: return "lwf-kappa:kappa=" + std::to_string(rule.kappa);
  }
  return "?";
}

}  // namespace tessel
