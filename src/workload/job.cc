#include "workload/job.h"

#include <algorithm>

namespace tessel {

void SortBySubmit(Workload& workload, bool rebase) {
  std::stable_sort(workload.jobs.begin(), workload.jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  if (rebase && !workload.jobs.empty()) {
    SimTime first = workload.jobs.front().submit;
    for (JobSpec& j : workload.jobs) j.submit -= first;
    for (JobSpec& j : workload.jobs) {
      if (j.deadline) *j.deadline -= first;
    }
  }
}

}  // namespace tessel
