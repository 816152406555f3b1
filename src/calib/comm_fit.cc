#include "calib/comm_fit.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "calib/arena_mesh.h"
#include "core/csv.h"
#include "core/stats.h"
#include "core/strings.h"
#include "hardware/node.h"

namespace tessel {

namespace {



double BwFactor(const std::string& op, int n) {
  if (op == "all-reduce") return 2.0 * (n - 1) / n;
  if (op == "send") return 1.0;
  return 1.0 * (n - 1) / n;
}

double Steps(const std::string& op, int n) {
  if (op == "all-reduce") return 2.0 * (n - 1);
  if (op == "send") return 1.0;
  return n - 1.0;
}

Collective OpOf(const std::string& op) {
  if (op == "all-reduce") return Collective::kAllReduce;
  if (op == "all-gather") return Collective::kAllGather;
  if (op == "reduce-scatter") return Collective::kReduceScatter;
  if (op == "all-to-all") return Collective::kAllToAll;
  return Collective::kSendRecv;
}

}  // namespace

Result<std::vector<CommCurve>> LoadCommMeasurements(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) return NotFound("no collective measurements at '" + dir + "'");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<CommCurve> curves;
  for (const auto& path : files) {
    std::string mesh = fs::path(path).stem().string();
    auto parsed = ParseArenaMesh(mesh, path);
    if (!parsed.ok()) return parsed.status();
    const ArenaMesh& am = *parsed;
    auto table = CsvTable::ReadFile(path);
    if (!table.ok()) return table.status();
    for (const char* col : {"op", "replica_groups", "elements", "dtype", "seconds"})
      if (!table->HasColumn(col)) return InvalidArgument(path + ": missing column '" + col + "'");
    std::map<std::pair<std::string, std::string>, size_t> index;
    for (const auto& row : table->rows()) {
      std::string op = table->Get(row, "op"), groups = table->Get(row, "replica_groups");
      static const std::set<std::string> kOps = {"send", "all-reduce", "all-gather", "reduce-scatter", "all-to-all"};
      if (!kOps.count(op)) {
        return InvalidArgument(table->Where(row, "op") + ": unknown collective '" + op +
                               "'; known: send, all-reduce, all-gather, reduce-scatter, all-to-all");
      }
      auto elements = table->GetDouble(row, "elements");
      if (!elements.ok()) return elements.status();
      auto seconds = table->GetDouble(row, "seconds");
      if (!seconds.ok()) return seconds.status();
      std::string dtype = table->Get(row, "dtype");
      double size = dtype == "float16" || dtype == "bfloat16" ? 2 : (dtype == "float32" ? 4 : 0);
      if (size == 0) return InvalidArgument(table->Where(row, "dtype") + ": expected float32, float16 or bfloat16");
      auto key = std::make_pair(op, groups);
      auto it = index.find(key);
      if (it == index.end()) {
        CommCurve c;
        c.mesh = mesh;
        c.gpu = am.gpu->name;
        c.intra = am.node->intra;
        c.op = op;
        c.groups = groups;
        c.hosts = am.hosts;
        c.gpus_per_host = am.gpus_per_host;
        c.infiniband = am.infiniband;
        if (groups == "cross-mesh") {
          c.group_size = 2;
          c.cross_node = c.hosts > 1;
          c.ranks_per_node = c.cross_node ? 1 : 2;
          c.concurrent = 1;
        } else {
          auto first = Split(Split(groups, ';')[0], '-');
          c.group_size = static_cast<int>(first.size());
          std::set<int> nodes;
          std::map<int, int> per_node;
          for (const auto& r : first) {
            auto v = ParseInt(r, table->Where(row, "replica_groups"));
            if (!v.ok()) return v.status();
            int node = static_cast<int>(*v / am.gpus_per_host);
            nodes.insert(node);
            per_node[node]++;
          }
          c.cross_node = nodes.size() > 1;
          c.ranks_per_node = per_node.begin()->second;
          int n_groups = static_cast<int>(Split(groups, ';').size());
          // Groups sharing one node's NIC: all groups with a rank on it.
          c.concurrent = std::max(1, static_cast<int>(n_groups * nodes.size() / c.hosts));
        }
        index[key] = curves.size();
        curves.push_back(c);
        it = index.find(key);
      }
      curves[it->second].points.push_back({*elements * size, *seconds});
    }
  }
  if (curves.empty()) return NotFound("no collective measurements in '" + dir + "'");
  return curves;
}

void FitCurve(CommCurve& c) {
  std::vector<CommPoint> pts = c.points;
  std::sort(pts.begin(), pts.end(), [](const CommPoint& a, const CommPoint& b) { return a.bytes < b.bytes; });
  // Latency: median time of the 8 smallest messages, per ring step.
  std::vector<double> small;
  for (size_t i = 0; i < pts.size() && i < 8; ++i) small.push_back(pts[i].seconds);
  double t0 = Median(small);
  c.step_latency_s = t0 / Steps(c.op, c.group_size);
  // Bandwidth: least squares of (t - t0) = x / bw over messages >= 16 MiB.
  double f = BwFactor(c.op, c.group_size);
  double sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    if (p.bytes < 16.0 * (1 << 20)) continue;
    double x = p.bytes * f;
    sxx += x * x;
    sxy += x * std::max(0.0, p.seconds - t0);
  }
  c.bus_bw = sxy > 0 ? sxx / sxy : 0;
}

Topology MeshTopology(const CommCurve& c, double network_gbps) {
  Topology t;
  t.gpu = *FindGpu(c.gpu);
  t.gpus_per_node = c.gpus_per_host;
  t.intra = c.intra;
  t.network_gbps = network_gbps;
  return t;
}

CommFitSummary SummarizeCommFit(std::vector<CommCurve>& curves, const PerfParams& params) {
  CommFitSummary s;
  std::vector<double> eff_pcie, eff_nvswitch, eff_nvlink, lat_pcie, lat_nv, lat_net, node_bw;
  for (auto& c : curves) {
    FitCurve(c);
    if (c.bus_bw <= 0) continue;
    ++s.curves;
    if (c.op != "all-reduce" && c.op != "all-gather" && c.op != "reduce-scatter") continue;
    if (c.group_size < 2) continue;
    if (c.cross_node) {
      // The NIC carries one ring crossing per concurrent group.
      node_bw.push_back(c.bus_bw * c.concurrent);
      lat_net.push_back(c.step_latency_s);
      continue;
    }
    Topology t = MeshTopology(c, 100);
    double nominal = t.IntraNodeGbs(c.group_size) * 1e9;
    double eff = c.bus_bw / nominal;
    if (t.intra == LinkKind::kPcie) {
      eff_pcie.push_back(eff);
      lat_pcie.push_back(c.step_latency_s);
    } else if (t.intra == LinkKind::kNvlinkMesh) {
      eff_nvlink.push_back(eff);
      lat_nv.push_back(c.step_latency_s);
    } else {
      eff_nvswitch.push_back(eff);
      lat_nv.push_back(c.step_latency_s);
    }
  }
  s.pcie = {Median(eff_pcie), Median(lat_pcie) * 1e6};
  s.nvlink = {Median(eff_nvlink), Median(lat_nv) * 1e6};
  s.nvswitch = {Median(eff_nvswitch), Median(lat_nv) * 1e6};
  s.network_node_gbps = Median(node_bw) * 8 / 1e9;
  s.network_step_latency_us = Median(lat_net) * 1e6;

  // Check the collective model, with these fits, against every point.
  PerfParams p = params;
  p.pcie = s.pcie;
  p.nvlink_mesh = s.nvlink;
  p.nvswitch = s.nvswitch;
  p.network = {1.0, s.network_step_latency_us};
  std::vector<double> errs;
  for (const auto& c : curves) {
    if (c.op == "send" && c.groups == "cross-mesh") continue;  // mesh-to-mesh resharding, not a collective
    Topology t = MeshTopology(c, s.network_node_gbps);
    CollectiveModel model(t, p);
    GroupShape g{c.group_size, c.ranks_per_node, c.concurrent};
    for (const auto& pt : c.points) {
      if (pt.bytes < (1 << 20)) continue;
      double pred = model.Time(OpOf(c.op), pt.bytes, g);
      errs.push_back(std::fabs(pred - pt.seconds) / pt.seconds);
    }
  }
  s.median_abs_error = Median(errs);
  s.p90_abs_error = Quantile(errs, 0.9);
  return s;
}

}  // namespace tessel
