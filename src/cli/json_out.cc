#include "cli/json_out.h"

namespace tessel {

nlohmann::json PlanToJson(const ParallelPlan& p) {
  return {{"dp", p.dp},
          {"tp", p.tp},
          {"pp", p.pp},
          {"micro_batch", p.micro_batch},
          {"num_micro_batches", p.num_micro_batches},
          {"virtual_stages", p.virtual_stages},
          {"ep", p.ep},
          {"recompute", RecomputeName(p.recompute)},
          {"zero", p.zero},
          {"precision", PrecisionName(p.precision)},
          {"sequence_parallel", p.tp > 1}};
}

nlohmann::json EstimateToJson(const Estimate& e) {
  const auto& b = e.breakdown;
  const auto& m = e.memory;
  nlohmann::json j;
  j["iteration_time_s"] = e.iteration_time_s;
  j["samples_per_s"] = e.samples_per_s;
  j["tokens_per_s"] = e.tokens_per_s;
  j["tokens_per_s_per_gpu"] = e.tokens_per_s_per_gpu;
  j["model_tflops_per_gpu"] = e.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = e.hardware_tflops_per_gpu;
  j["mfu"] = e.mfu;
  j["framework"] = e.framework;
  j["memory_gib_per_gpu"] = e.memory_gib_per_gpu;
  j["fits"] = e.fits;
  j["reason"] = e.reason;
  j["breakdown"] = {{"compute_s", b.compute_s},
                    {"recompute_s", b.recompute_s},
                    {"tp_comm_s", b.tp_comm_s},
                    {"ep_comm_s", b.ep_comm_s},
                    {"pp_p2p_s", b.pp_p2p_s},
                    {"pp_bubble_s", b.pp_bubble_s},
                    {"dp_comm_s", b.dp_comm_s},
                    {"dp_comm_overlapped_s", b.dp_comm_overlapped_s},
                    {"dp_comm_exposed_s", b.dp_comm_exposed_s},
                    {"dp_interference_s", b.dp_interference_s},
                    {"optimizer_s", b.optimizer_s},
                    {"overhead_s", b.overhead_s}};
  j["memory"] = {{"weights_gib", m.weights_gib},
                 {"gradients_gib", m.gradients_gib},
                 {"optimizer_gib", m.optimizer_gib},
                 {"activations_gib", m.activations_gib},
                 {"in_flight_micro_batches", m.in_flight_micro_batches},
                 {"gradients_beside_activations", m.gradients_beside_activations},
                 {"overhead_gib", m.overhead_gib},
                 {"total_gib", m.total_gib},
                 {"capacity_gib", m.capacity_gib}};
  j["plan"] = PlanToJson(e.plan);
  return j;
}

}  // namespace tessel
