// `tessel plan`: search and rank parallel plans.
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_out.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"
#include "plan/planner.h"

namespace tessel {

namespace {
struct PlanFlags {
  JobFlags job;
  int gpus = 0, global_batch = 0, pp = 0, top = 0;
  std::string search = "full";
  bool json = false;
};
}  // namespace

CommandAction SetupPlan(CLI::App& app, CommandIo io) {
  auto f = std::make_shared<PlanFlags>();
  app.footer(
      "Search parallel plans for a model on N GPUs of one type and rank those that fit by\n"
      "throughput. --search full tries every (t, p, d, micro-batch, interleaving, recompute,\n"
      "ZeRO); --search grid --pp P searches one Arena grid (GPU type, count, layout and P\n"
      "fixed; d x t and micro-batching searched) and returns its Pareto set (throughput vs\n"
      "memory) of at most --top plans. With --framework alpa, plans are ranked as Alpa's own\n"
      "search would rank them (the gradient sync priced every micro-batch; a CNN's plans by their\n"
      "communication alone, as its HLO cost model prices no convolution), so the first is the\n"
      "plan Alpa would run, with its true time.\n"
      "Example: tessel plan --model gpt3-175b --gpu a100-80g --gpus 1024 --global-batch 1536");
  f->job.Add(app);
  app.add_option("--gpus", f->gpus, "Number of GPUs")->required();
  app.add_option("--global-batch", f->global_batch, "Global batch, samples")->required();
  app.add_option("--search", f->search, "full|grid")->default_str("full");
  app.add_option("--pp", f->pp, "Pipeline stages (required for grid; fixes p for full)");
  app.add_option("--top", f->top, "Plans to print (default 5; grid: Pareto set of at most 32)");
  app.add_flag("--json", f->json, "Print {\"plans\": [...], \"candidates_evaluated\", \"search_time_ms\"}");
  return [io, f]() -> int {
    auto fail = [&](const Status& s) {
      io.err << "error: " << s.message() << "\n";
      return 2;
    };
    auto in = f->job.Resolve();
    if (!in.ok()) return fail(in.status());
    const ModelSpec* model = &in->model;
    const Topology* topo = &in->topology;
    auto mode = ParseSearchMode(f->search);
    if (!mode.ok()) return fail(mode.status());
    PlanRequest req;
    req.model = model;
    req.topology = *topo;
    req.gpus = f->gpus;
    req.global_batch = f->global_batch;
    req.mode = *mode;
    req.pp = f->pp;
    if (f->top < 0) return fail(InvalidArgument("--top: expected a positive integer"));
    req.top_k = f->top > 0 ? f->top : (*mode == SearchMode::kGrid ? 32 : 5);
    req.precision = in->precision;
    req.framework = in->framework;
    Estimator est(*in->params);
    auto r = SearchPlans(est, req);
    if (!r.ok()) return fail(r.status());
    if (f->json) {
      nlohmann::json j;
      j["plans"] = nlohmann::json::array();
      for (const auto& e : r->plans) j["plans"].push_back(EstimateToJson(e));
      j["candidates_evaluated"] = r->candidates_evaluated;
      j["search_time_ms"] = r->search_time_ms;
      if (!r->reason.empty()) j["reason"] = r->reason;
      io.out << JsonText(j, 2) << "\n";
    } else {
      io.out << model->name << " on " << f->gpus << " x " << topo->gpu->name << " (" << topo->gpus_per_node
             << " per node), global batch " << f->global_batch << ": " << r->candidates_evaluated
             << " candidates in " << FormatDouble(r->search_time_ms, 3) << " ms\n";
      if (r->plans.empty()) {
        io.out << "no plan: " << r->reason << "\n";
      } else {
        TextTable t({"#", "d", "t", "p", "v", "ep", "mb", "M", "recompute", "zero", "iter s", "samples/s", "tokens/s/GPU", "MFU %", "mem GiB"});
        int i = 0;
        for (const auto& e : r->plans) {
          const auto& p = e.plan;
          t.AddRow({std::to_string(++i), std::to_string(p.dp), std::to_string(p.tp), std::to_string(p.pp),
                    std::to_string(p.virtual_stages), std::to_string(p.ep), std::to_string(p.micro_batch),
                    std::to_string(p.num_micro_batches), RecomputeName(p.recompute), std::to_string(p.zero),
                    FormatDouble(e.iteration_time_s, 4), FormatDouble(e.samples_per_s, 4),
                    FormatDouble(e.tokens_per_s_per_gpu, 4), FormatDouble(100 * e.mfu, 3),
                    FormatDouble(e.memory_gib_per_gpu, 3)});
        }
        io.out << t.Render();
      }
    }
    return 0;
  };
}

}  // namespace tessel
