// The built-in policies, registered in the order `tessel policies` lists them.
#include "policy/arena.h"
#include "policy/elasticflow.h"
#include "policy/fcfs.h"
#include "policy/gandiva.h"
#include "policy/gavel.h"
#include "policy/policy.h"
#include "policy/optimus.h"
#include "policy/pollux.h"
#include "policy/sia.h"
#include "policy/srsf.h"
#include "policy/srtf.h"
#include "policy/tiresias.h"

namespace tessel {

const PolicyRegistry& PolicyRegistry::Builtin() {
  static const PolicyRegistry registry = [] {
    PolicyRegistry r;
    RegisterFcfsPolicy(r);
    RegisterSrtfPolicy(r);
    RegisterSrsfPolicies(r);
    RegisterTiresiasPolicy(r);
    RegisterGandivaPolicy(r);
    RegisterElasticFlowPolicy(r);
    RegisterGavelPolicies(r);
    RegisterPolluxPolicy(r);
    RegisterSiaPolicy(r);
    RegisterOptimusPolicy(r);
    RegisterArenaPolicies(r);
    return r;
  }();
  return registry;
}

}  // namespace tessel
