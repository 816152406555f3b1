// `tessel estimate`: one plan, all the numbers.
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_out.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "perf/estimator.h"

namespace tessel {

namespace {

struct EstimateFlags {
  JobFlags job;
  int gpus = 0, global_batch = 0, tp = 1, pp = 1, dp = 0, micro_batch = 0, virtual_stages = 1,
      zero = 0, ep = 1;
  std::string recompute = "none";
  bool json = false;
};

std::string F(double v, int p = 4) { return FormatDouble(v, p); }

void PrintHuman(std::ostream& o, const ModelSpec& m, const Topology& topo, const EstimateRequest& req,
                const Estimate& e) {
  const auto& b = e.breakdown;
  const auto& mem = e.memory;
  o << "model     " << m.name << " (" << F(m.Params() / 1e9) << "B params)\n";
  o << "hardware  " << req.gpus << " x " << topo.gpu->name << ", " << topo.gpus_per_node
    << " per node (" << LinkKindName(topo.intra) << "), " << F(topo.network_gbps) << " Gb/s per node\n";
  o << "plan      " << e.plan.ToString() << ", global batch " << req.global_batch << "\n";
  o << "framework " << e.framework << " (--framework to choose)\n\n";
  o << "iteration time      " << F(e.iteration_time_s) << " s\n";
  o << "throughput          " << F(e.samples_per_s) << " samples/s, " << F(e.tokens_per_s) << " tokens/s ("
    << F(e.tokens_per_s_per_gpu) << " per GPU)\n";
  o << "model TFLOP/s/GPU   " << F(e.model_tflops_per_gpu) << " (MFU " << F(100 * e.mfu, 3) << "%; with recompute "
    << F(e.hardware_tflops_per_gpu) << ")\n";
  o << "memory per GPU      " << F(e.memory_gib_per_gpu) << " of " << F(mem.capacity_gib) << " GiB: weights "
    << F(mem.weights_gib, 3) << ", gradients " << F(mem.gradients_gib, 3) << ", optimizer "
    << F(mem.optimizer_gib, 3) << ", activations " << F(mem.activations_gib, 3) << " ("
    << F(mem.in_flight_micro_batches, 3) << " micro-batches in flight), overhead " << F(mem.overhead_gib, 3)
    << (mem.gradients_beside_activations ? "" : "; gradients and activations never coexist: the larger counts")
    << "\n";
  o << "fits                " << (e.fits ? "yes" : "NO: " + e.reason) << "\n\n";
  o << "breakdown (slowest stage, per iteration)\n";
  o << "  compute           " << F(b.compute_s) << " s (recompute " << F(b.recompute_s) << ")\n";
  o << "  tensor-parallel   " << F(b.tp_comm_s) << " s\n";
  if (b.ep_comm_s > 0) o << "  expert all-to-all " << F(b.ep_comm_s) << " s\n";
  o << "  pipeline p2p      " << F(b.pp_p2p_s) << " s\n";
  o << "  pipeline bubble   " << F(b.pp_bubble_s) << " s\n";
  o << "  data-parallel     " << F(b.dp_comm_s) << " s (overlapped " << F(b.dp_comm_overlapped_s)
    << ", exposed " << F(b.dp_comm_exposed_s) << ")\n";
  o << "  overlap slowdown  " << F(b.dp_interference_s) << " s (hidden communication's SMs and bandwidth)\n";
  o << "  optimizer step    " << F(b.optimizer_s) << " s\n";
  o << "  fixed overhead    " << F(b.overhead_s) << " s\n";
}

}  // namespace

CommandAction SetupEstimate(CLI::App& app, CommandIo io) {
  auto f = std::make_shared<EstimateFlags>();
  app.footer(
      "Estimate one parallel plan. Prints iteration time, throughput (samples, tokens), model\n"
      "TFLOP/s and MFU, memory per GPU and whether it fits, and where the time goes.\n"
      "Example: tessel estimate --model gpt3-175b --gpu a100-80g --gpus 64 --global-batch 64 \\\n"
      "           --tp 8 --pp 8 --micro-batch 1 --recompute selective --virtual-stages 3");
  f->job.Add(app);
  app.add_option("--gpus", f->gpus, "Number of GPUs (N = d*t*p)")->required();
  app.add_option("--global-batch", f->global_batch, "Global batch, samples (sequences/images)")->required();
  app.add_option("--tp", f->tp, "Tensor-parallel degree t (within a node; sequence parallel)")->required();
  app.add_option("--pp", f->pp, "Pipeline-parallel stages p")->required();
  app.add_option("--dp", f->dp, "Data-parallel degree d (default N/(t*p))");
  app.add_option("--micro-batch", f->micro_batch, "Micro-batch size (default 1)");
  app.add_option("--recompute", f->recompute, "Activation recomputation: none|selective|full")->default_str("none");
  app.add_option("--zero", f->zero, "ZeRO stage: 0, 1 (optimizer), 2 (+grads), 3 (+weights, FSDP)")->default_str("0");
  app.add_option("--virtual-stages", f->virtual_stages, "Interleaved 1F1B chunks per stage (v)")->default_str("1");
  app.add_option("--ep", f->ep, "Expert-parallel degree for MoE (divides d)")->default_str("1");
  app.add_flag("--json", f->json, "Print one JSON object");
  return [io, f]() -> int {
    auto fail = [&](const Status& s) {
      io.err << "error: " << s.message() << "\n";
      return 2;
    };
    auto in = f->job.Resolve();
    if (!in.ok()) return fail(in.status());
    ParallelPlan plan;
    plan.tp = f->tp;
    plan.pp = f->pp;
    if (f->tp <= 0 || f->pp <= 0) return fail(InvalidArgument("--tp and --pp: expected positive integers"));
    plan.dp = f->dp > 0 ? f->dp : f->gpus / (f->tp * f->pp);
    if (f->dp <= 0 && f->gpus % (f->tp * f->pp) != 0) {
      return fail(InvalidArgument("--gpus " + std::to_string(f->gpus) + " is not divisible by t*p = " +
                                  std::to_string(f->tp * f->pp)));
    }
    plan.micro_batch = f->micro_batch > 0 ? f->micro_batch : 1;
    if (f->micro_batch < 0) return fail(InvalidArgument("--micro-batch: expected a positive integer"));
    plan.num_micro_batches = plan.dp > 0 && f->global_batch % plan.dp == 0 ? f->global_batch / plan.dp / plan.micro_batch : 0;
    plan.virtual_stages = f->virtual_stages;
    plan.zero = f->zero;
    plan.ep = f->ep;
    auto rc = ParseRecompute(f->recompute);
    if (!rc.ok()) return fail(rc.status());
    plan.recompute = *rc;
    plan.precision = in->precision;
    EstimateRequest req;
    req.model = &in->model;
    req.topology = in->topology;
    req.gpus = f->gpus;
    req.global_batch = f->global_batch;
    req.plan = plan;
    req.framework = in->framework;
    Estimator est(*in->params);
    auto e = est.Run(req);
    if (!e.ok()) return fail(e.status());
    if (f->json) io.out << JsonText(EstimateToJson(*e), 2) << "\n";
    else PrintHuman(io.out, in->model, in->topology, req, *e);
    return 0;
  };
}

}  // namespace tessel
