// What the daemon reads from Slurm and from running jobs: `sinfo --json`,
// `squeue --json`, GRES strings, hostlist expressions, node and job state
// words, and a job's metrics lines. The first byte picks which. Slurm is
// trusted to be Slurm, not to be well-formed: nothing it prints may crash
// the daemon or make it allocate without bound.
#include "cluster/hostlist.h"
#include "cluster/metrics_file.h"
#include "cluster/slurm_json.h"
#include "cluster/slurm_types.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  auto in = fuzz::Split(data, size, 6);
  switch (in.choice) {
    case 0: {
      auto nodes = ParseSinfoJson(in.text);
      if (!nodes.ok()) break;
      for (const SlurmNode& n : *nodes) {
        FUZZ_CHECK(!n.name.empty(), "a node without a name");
        for (const SlurmGpus& g : n.gpus) FUZZ_CHECK(g.total >= 0 && g.used >= 0, "negative GPU count");
      }
      break;
    }
    case 1: {
      auto jobs = ParseSqueueJson(in.text);
      if (!jobs.ok()) break;
      for (const SlurmJob& j : *jobs) FUZZ_CHECK(j.nodes.size() <= kMaxHostlistSize, "too many nodes");
      break;
    }
    case 2: {
      auto [configured, used] = fuzz::FirstLine(in.text);
      auto gpus = ParseGpuGres(configured, used, "node n1");
      if (gpus.ok())
        for (const SlurmGpus& g : *gpus) FUZZ_CHECK(g.total >= 0 && g.used >= 0, "negative GPU count");
      break;
    }
    case 3: {
      auto hosts = ExpandHostlist(in.text);
      if (hosts.ok()) {
        FUZZ_CHECK(hosts->size() <= kMaxHostlistSize, "hostlist beyond its bound");
        for (const std::string& h : *hosts) FUZZ_CHECK(!h.empty(), "an empty host name");
      }
      break;
    }
    case 4: {
      (void)ParseSlurmNodeState(in.text);
      (void)ParseSlurmJobState(in.text);
      break;
    }
    case 5: {
      MetricsUpdate update;
      std::string_view rest = in.text;
      while (!rest.empty()) {
        auto [line, tail] = fuzz::FirstLine(rest);
        ParseMetricsLine(std::string(line), &update);
        rest = tail;
      }
      break;
    }
  }
  return 0;
}
