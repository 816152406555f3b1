// `tessel clusters` (the embedded clusters, or one YAML file) and
// `tessel policies` (the policy registry).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"
#include "hardware/cluster.h"
#include "policy/policy.h"

namespace tessel {

CommandAction SetupClusters(CLI::App& app, CommandIo io) {
  auto json = std::make_shared<bool>(false);
  auto file = std::make_shared<std::string>();
  app.add_flag("--json", *json, "Print JSON");
  app.add_option("--cluster", *file, "Show only this cluster (a name or a YAML file)");
  app.footer(
      "\nA cluster YAML lists node pools (gpu, nodes, gpus_per_node or node_type, intra, network_gbps)\n"
      "and optionally racks {nodes_per_rack, oversubscription}; see src/hardware/cluster.h.");
  return [io, json, file] {
    std::vector<ClusterSpec> specs;
    if (file->empty()) {
      specs = EmbeddedClusters();
    } else {
      auto s = ResolveClusterSpec(*file);
      if (!s.ok()) {
        io.err << "error: --cluster: " << s.status().message() << "\n";
        return 2;
      }
      specs.push_back(*s);
    }
    if (*json) {
      nlohmann::ordered_json arr = nlohmann::ordered_json::array();
      for (const ClusterSpec& c : specs) {
        nlohmann::ordered_json pools = nlohmann::ordered_json::array();
        int total = 0;
        for (const NodePool& p : c.pools) {
          pools.push_back({{"name", p.name}, {"gpu", p.gpu->name}, {"nodes", p.nodes},
                           {"gpus_per_node", p.gpus_per_node}, {"intra", LinkKindName(p.intra)},
                           {"network_gbps", p.network_gbps}});
          total += p.nodes * p.gpus_per_node;
        }
        arr.push_back({{"name", c.name}, {"description", c.description}, {"total_gpus", total},
                       {"nodes_per_rack", c.nodes_per_rack}, {"rack_oversubscription", c.rack_oversubscription},
                       {"pools", pools}});
      }
      io.out << JsonText(arr, 2) << "\n";
      return 0;
    }
    TextTable t({"cluster", "GPUs", "pool", "gpu", "nodes", "GPUs/node", "intra-node", "network Gb/s", "racks"});
    for (const ClusterSpec& c : specs) {
      int total = 0;
      for (const NodePool& p : c.pools) total += p.nodes * p.gpus_per_node;
      bool first = true;
      for (const NodePool& p : c.pools) {
        std::string racks = c.nodes_per_rack > 0 ? std::to_string(c.nodes_per_rack) + "/rack " +
                                                       FormatDouble(c.rack_oversubscription, 3) + ":1"
                                                 : "one switch";
        t.AddRow({first ? c.name : "", first ? std::to_string(total) : "", p.name, p.gpu->name,
                  std::to_string(p.nodes), std::to_string(p.gpus_per_node), LinkKindName(p.intra),
                  FormatDouble(p.network_gbps, 4), first ? racks : ""});
        first = false;
      }
    }
    io.out << t.Render();
    for (const ClusterSpec& c : specs) {
      if (!c.description.empty()) io.out << c.name << ": " << c.description << "\n";
    }
    return 0;
  };
}

CommandAction SetupPolicies(CLI::App& app, CommandIo io) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "Print JSON");
  app.footer("\nSelect with --policy name or name:key=value:key=value.");
  return [io, json] {
    const auto& list = PolicyRegistry::Builtin().policies();
    if (*json) {
      nlohmann::ordered_json arr = nlohmann::ordered_json::array();
      for (const PolicyInfo& p : list) arr.push_back({{"name", p.name}, {"summary", p.summary}, {"options", p.options}});
      io.out << JsonText(arr, 2) << "\n";
      return 0;
    }
    TextTable t({"policy", "what it does", "options"});
    for (const PolicyInfo& p : list) t.AddRow({p.name, p.summary, Join(p.options, "; ")});
    io.out << t.Render();
    return 0;
  };
}

}  // namespace tessel
