#include "cluster/slurm_types.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/strings.h"

namespace tessel {
namespace {

constexpr std::array<std::pair<SlurmNodeState, const char*>, 7> kNodeStates = {{
    {SlurmNodeState::kIdle, "idle"},
    {SlurmNodeState::kMixed, "mixed"},
    {SlurmNodeState::kAllocated, "allocated"},
    {SlurmNodeState::kDown, "down"},
    {SlurmNodeState::kError, "error"},
    {SlurmNodeState::kFuture, "future"},
    {SlurmNodeState::kUnknown, "unknown"},
}};

constexpr std::array<std::pair<SlurmJobState, const char*>, 14> kJobStates = {{
    {SlurmJobState::kPending, "PENDING"},
    {SlurmJobState::kRunning, "RUNNING"},
    {SlurmJobState::kSuspended, "SUSPENDED"},
    {SlurmJobState::kCompleting, "COMPLETING"},
    {SlurmJobState::kCompleted, "COMPLETED"},
    {SlurmJobState::kCancelled, "CANCELLED"},
    {SlurmJobState::kFailed, "FAILED"},
    {SlurmJobState::kTimeout, "TIMEOUT"},
    {SlurmJobState::kNodeFail, "NODE_FAIL"},
    {SlurmJobState::kPreempted, "PREEMPTED"},
    {SlurmJobState::kBootFail, "BOOT_FAIL"},
    {SlurmJobState::kDeadline, "DEADLINE"},
    {SlurmJobState::kOutOfMemory, "OUT_OF_MEMORY"},
    {SlurmJobState::kUnknown, "UNKNOWN"},
}};

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace

const char* SlurmNodeStateName(SlurmNodeState state) {
  for (const auto& [s, name] : kNodeStates) {
    if (s == state) return name;
  }
  return "unknown";
}

SlurmNodeState ParseSlurmNodeState(std::string_view word) {
  std::string lower = ToLower(word);
  // "allocated" is also written "alloc" by sinfo's short forms.
  if (lower == "alloc") return SlurmNodeState::kAllocated;
  for (const auto& [s, name] : kNodeStates) {
    if (lower == name) return s;
  }
  return SlurmNodeState::kUnknown;
}

bool SlurmNode::HasFlag(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool SlurmNode::Usable() const {
  bool up = state == SlurmNodeState::kIdle || state == SlurmNodeState::kMixed ||
            state == SlurmNodeState::kAllocated;
  for (const char* bad :
       {"DRAIN", "NOT_RESPONDING", "FAIL", "MAINTENANCE", "POWER_DOWN", "POWERED_DOWN",
        "POWERING_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "INVALID_REG"}) {
    if (HasFlag(bad)) return false;
  }
  return up;
}

bool SlurmNode::Lost() const {
  if (state == SlurmNodeState::kDown || state == SlurmNodeState::kError || state == SlurmNodeState::kFuture)
    return true;
  for (const char* bad : {"DRAIN", "FAIL", "MAINTENANCE", "POWER_DOWN", "POWERED_DOWN", "POWERING_DOWN",
                          "REBOOT_REQUESTED", "REBOOT_ISSUED", "INVALID_REG"}) {
    if (HasFlag(bad)) return true;
  }
  return false;
}

std::string SlurmNode::StateString() const {
  std::string s = ToUpper(SlurmNodeStateName(state));
  for (const auto& f : flags) s += "+" + f;
  return s;
}

int SlurmNode::TotalGpus() const {
  int n = 0;
  for (const auto& g : gpus) n += g.total;
  return n;
}

int SlurmNode::FreeGpus() const {
  int n = 0;
  for (const auto& g : gpus) n += std::max(0, g.total - g.used);
  return n;
}

const char* SlurmJobStateName(SlurmJobState state) {
  for (const auto& [s, name] : kJobStates) {
    if (s == state) return name;
  }
  return "UNKNOWN";
}

SlurmJobState ParseSlurmJobState(std::string_view word) {
  std::string upper = ToUpper(word);
  for (const auto& [s, name] : kJobStates) {
    if (upper == name) return s;
  }
  return SlurmJobState::kUnknown;
}

bool IsFinished(SlurmJobState state) {
  switch (state) {
    case SlurmJobState::kCompleted:
    case SlurmJobState::kCancelled:
    case SlurmJobState::kFailed:
    case SlurmJobState::kTimeout:
    case SlurmJobState::kNodeFail:
    case SlurmJobState::kPreempted:
    case SlurmJobState::kBootFail:
    case SlurmJobState::kDeadline:
    case SlurmJobState::kOutOfMemory:
      return true;
    default:
      return false;
  }
}

}  // namespace tessel
