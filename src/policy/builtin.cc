// The built-in policies, registered in the order `tessel policies` lists them.
#include "policy/fcfs.h"
#include "policy/policy.h"

namespace tessel {

const PolicyRegistry& PolicyRegistry::Builtin() {
  static const PolicyRegistry registry = [] {
    PolicyRegistry r;
    RegisterFcfsPolicy(r);
    return r;
  }();
  return registry;
}

}  // namespace tessel
