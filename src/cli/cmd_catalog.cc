// `tessel gpus`, `tessel node-types`, `tessel models`: the catalogs as tables or
// JSON.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/commands.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"
#include "hardware/node.h"
#include "model/catalog.h"
#include "model/flops.h"
#include "model/profiled_model.h"

namespace tessel {

namespace {
std::string Num(double v, int prec = 4) { return v > 0 ? FormatDouble(v, prec) : "-"; }

std::string LinkText(const GpuSpec& g) {
  if (g.nvlink_gbs > 0)
    return std::string(LinkKindName(g.link)) + " gen" + std::to_string(g.nvlink_gen) + " " +
           FormatDouble(g.nvlink_gbs) + " GB/s/dir";
  return "pcie gen" + std::to_string(g.pcie_gen) + " " + FormatDouble(g.PcieGbs()) + " GB/s/dir";
}
}  // namespace

CommandAction SetupGpus(CLI::App& app, CommandIo io) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "Print JSON");
  return [io, json] {
    if (*json) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& g : GpuCatalog()) {
        arr.push_back({{"name", g.name}, {"aliases", g.aliases}, {"description", g.description},
                       {"arch", g.arch}, {"memory_gib", g.memory_gib},
                       {"memory_bw_gbs", g.memory_bw_gbs}, {"fp32_tflops", g.fp32_tflops},
                       {"tf32_tflops", g.tf32_tflops}, {"fp16_tflops", g.fp16_tflops},
                       {"bf16_tflops", g.bf16_tflops}, {"fp8_tflops", g.fp8_tflops},
                       {"pcie_gen", g.pcie_gen}, {"intra_node_link", LinkKindName(g.link)},
                       {"nvlink_gen", g.nvlink_gen}, {"nvlink_gbs_per_direction", g.nvlink_gbs},
                       {"sms", g.sms}, {"source", g.source}});
      }
      io.out << JsonText(arr, 2) << "\n";
      return 0;
    }
    TextTable t({"name", "description", "mem GiB", "GB/s", "fp32", "tf32", "fp16", "bf16", "fp8", "SMs", "intra-node link"});
    for (const auto& g : GpuCatalog()) {
      t.AddRow({g.name, g.description, Num(g.memory_gib), Num(g.memory_bw_gbs), Num(g.fp32_tflops),
                Num(g.tf32_tflops), Num(g.fp16_tflops), Num(g.bf16_tflops), Num(g.fp8_tflops),
                std::to_string(g.sms), LinkText(g)});
    }
    io.out << t.Render() << "TFLOP/s are dense (no sparsity) peaks; sources in `tessel gpus --json`.\n";
    return 0;
  };
}

CommandAction SetupNodeTypes(CLI::App& app, CommandIo io) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "Print JSON");
  return [io, json] {
    if (*json) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& n : NodeCatalog()) {
        arr.push_back({{"name", n.name}, {"gpu", n.gpu}, {"gpus_per_node", n.gpus_per_node},
                       {"intra_node", LinkKindName(n.intra)}, {"network_gbps", n.network_gbps},
                       {"description", n.description}, {"source", n.source}});
      }
      io.out << JsonText(arr, 2) << "\n";
      return 0;
    }
    TextTable t({"name", "gpu", "gpus", "intra-node", "network Gb/s", "description"});
    for (const auto& n : NodeCatalog())
      t.AddRow({n.name, n.gpu, std::to_string(n.gpus_per_node), LinkKindName(n.intra),
                FormatDouble(n.network_gbps), n.description});
    io.out << t.Render();
    return 0;
  };
}

CommandAction SetupModels(CLI::App& app, CommandIo io) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "Print JSON");
  return [io, json] {
    if (*json) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& m : ModelCatalog()) {
        nlohmann::json j = {{"name", m.name}, {"family", m.family},
                            {"kind", m.kind == ModelKind::kCnn ? "cnn" : "transformer"},
                            {"params", m.Params()}, {"precision", PrecisionName(m.default_precision)},
                            {"source", m.source}};
        if (m.kind == ModelKind::kTransformer) {
          const auto& s = m.tf;
          j["layers"] = s.layers;
          j["hidden"] = s.hidden;
          j["heads"] = s.heads;
          j["kv_heads"] = s.kv_heads;
          j["ffn_hidden"] = s.ffn_hidden;
          j["vocab"] = s.vocab;
          j["seq_len"] = s.seq_len;
          j["experts"] = s.experts;
          j["top_k"] = s.top_k;
        } else {
          j["blocks"] = m.cnn.blocks.size();
          j["image"] = m.cnn.image;
        }
        arr.push_back(j);
      }
      io.out << JsonText(arr, 2) << "\n";
      return 0;
    }
    TextTable t({"name", "family", "params", "layers", "hidden", "heads", "kv", "ffn", "vocab", "seq", "experts", "precision"});
    for (const auto& m : ModelCatalog()) {
      std::string params = FormatDouble(m.Params() / 1e9, 4) + "B";
      if (m.kind == ModelKind::kCnn) {
        t.AddRow({m.name, m.family, params, std::to_string(m.cnn.blocks.size()) + " blocks", "-", "-", "-", "-", "-",
                  std::to_string(m.cnn.image) + "px", "-", PrecisionName(m.default_precision)});
        continue;
      }
      const auto& s = m.tf;
      t.AddRow({m.name, m.family, params, std::to_string(s.layers), std::to_string(s.hidden),
                std::to_string(s.heads), std::to_string(s.kv_heads), std::to_string(s.ffn_hidden),
                std::to_string(s.vocab), std::to_string(s.seq_len),
                s.IsMoe() ? std::to_string(s.experts) + " top" + std::to_string(s.top_k) : "-",
                PrecisionName(m.default_precision)});
    }
    io.out << t.Render();
    // Jobs may also name a profiled model (simulator only; not in --json).
    TextTable p({"profiled model", "size MB", "forward ms", "backward ms", "batch/GPU", "description"});
    for (const ProfiledModel& m : ProfiledModels()) {
      p.AddRow({m.name, FormatDouble(m.size_bytes / 1e6, 5), FormatDouble(m.forward_s * 1e3),
                FormatDouble(m.backward_s * 1e3), std::to_string(m.per_gpu_batch), m.description});
    }
    io.out << "\nProfiled models (measured per-iteration times; traces may name them, the simulator times them\n"
              "from these figures; estimate and plan cannot):\n"
           << p.Render();
    return 0;
  };
}

}  // namespace tessel
