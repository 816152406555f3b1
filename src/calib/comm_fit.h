// Fits the collective model's link parameters from NCCL measurements
// (../shared/data/arena/comm/<mesh>.csv: op, replica_groups, elements,
// dtype, seconds). Each (mesh, op, group layout) curve is fitted with
// t = alpha * steps + bytes * f(n) / busbw (least squares on large messages
// for busbw, small messages for alpha); link efficiencies are then the
// median of busbw / nominal bandwidth per link class.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "perf/collective.h"
#include "perf/params.h"

namespace tessel {

struct CommPoint {
  double bytes = 0;
  double seconds = 0;
};

struct CommCurve {
  std::string mesh;       // "2_a100_2_n_4_d"
  std::string gpu;        // catalog name
  std::string op;         // all-reduce, all-gather, reduce-scatter, all-to-all, send
  std::string groups;     // replica_groups as written
  int hosts = 1;
  int gpus_per_host = 1;
  int group_size = 2;
  int ranks_per_node = 2; // of one group
  int concurrent = 1;     // groups per node
  bool cross_node = false;
  bool infiniband = false;
  LinkKind intra = LinkKind::kPcie;  // the testbed node's fabric (hardware/node.cc says why)
  std::vector<CommPoint> points;
  // Fitted:
  double step_latency_s = 0;
  double bus_bw = 0;  // bytes/s
};

// Reads every mesh CSV under `dir`. Malformed rows: file:line: field.
Result<std::vector<CommCurve>> LoadCommMeasurements(const std::string& dir);

// Fits alpha and bus bandwidth of one curve in place.
void FitCurve(CommCurve& c);

struct CommFitSummary {
  LinkFit pcie, nvlink, nvswitch;  // as fitted (nvlink = point-to-point mesh)
  double network_node_gbps = 0;    // effective per-node network of the testbed, Gb/s
  double network_step_latency_us = 0;
  int curves = 0;
  // Median |relative error| of the fitted CollectiveModel against every
  // measured point with at least 1 MiB (the model as the estimator uses it).
  double median_abs_error = 0;
  double p90_abs_error = 0;
};

// Fits link classes from curves of the Arena testbed; `params` supplies the
// rest of the model for the error check.
CommFitSummary SummarizeCommFit(std::vector<CommCurve>& curves, const PerfParams& params);

// The testbed topology a mesh ran on (GPU, GPUs per host, the fitted
// network), for checking the model against the measurement.
Topology MeshTopology(const CommCurve& c, double network_gbps);

}  // namespace tessel
