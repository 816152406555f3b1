// Policies written in Python, run by the same simulator and scheduling loop
// as the built-in ones (issue 40). A Python object with a
// `decide(snapshot) -> tessel.Decision` method becomes a tessel::Policy:
// each decision takes the GIL, hands Python a read-only view of the
// Snapshot (jobs, free GPUs, the belief's rates, placement helpers) that is
// valid only during the call, and converts what it returns. The loop checks
// every decision as it checks a built-in policy's (CheckDecision: a bad
// decision is an error naming the job and the rule); an exception in
// `decide`, or a return value that is not a Decision, stops the run with
// the Python error's text.
#pragma once

#include <memory>

#include <pybind11/pybind11.h>

#include "core/status.h"
#include "policy/policy.h"

namespace tessel {

// Registers Snapshot, Job, FreeMap, Allocation and Decision on `m`.
void BindPolicyApi(pybind11::module_& m);

// The adapter for `obj` (called with the GIL held). Its name is
// `obj.name` (or the class's name); traits from `obj.uses_rounds` (bool,
// default False: decide on events only) and `obj.plan_mode` (one of
// --baseline-parallelism's values, default `default_mode`).
Result<std::unique_ptr<Policy>> MakePythonPolicy(pybind11::object obj, PlanMode default_mode);

}  // namespace tessel
