#include "sim/shared_gpu_sim.h"

#include <algorithm>
#include <numeric>

namespace tessel {
namespace {

// Their dag_task's initial end time and speed (job.py:11, :20): replaced in
// the step a transfer starts, so never seen by a decision.
constexpr int64_t kNotBusyEnd = 9999999;
constexpr double kInitialSpeedMbPerMs = 1.28;

enum class Task : uint8_t { kForward, kBackward, kComm };

struct Job {
  const SharedGpuJob* in = nullptr;
  int64_t compute_duration = 0;  // (fw + bw) x iterations
  int64_t gpu_compute = 0;       // x workers: the queue's key
  double comm_duration = 0;      // expected, for LWF's queued work
  double comm_once = 0;
  int64_t remain_compute_cumul = 0;  // the SRSF key
  std::vector<Task> task;            // per worker
  std::vector<int8_t> communicated;  // per worker: -1 computing, 1 waiting for the all-reduce
  int communicated_count = 0;
  int iteration = 1;
  bool finished = false;
  bool stall = false;  // its all-reduce is running
  std::vector<int> nodes;  // in the order its GPUs were chosen
  std::vector<int> gpus;   // per worker
  // Its all-reduce (dag_task).
  int64_t last_change_ms = 0;
  double transferred = 0;
  double speed = kInitialSpeedMbPerMs;
  double end_ms = static_cast<double>(kNotBusyEnd);
  SharedGpuJobResult* out = nullptr;
};

struct Gpu {
  int node = 0;
  int rest_mem = 0;
  std::vector<std::pair<int, int>> jobs;  // (job, worker), in placement order
  bool busy = false;
  int64_t end_ms = kNotBusyEnd;
  int cur_job = -1, cur_worker = -1;
  double makespan = 0;  // queued work (LWF)
};

struct Node {
  std::vector<int> gpus;
  std::vector<int> transfers;  // jobs whose all-reduce crosses this node
  int num_of_task = 0;         // as of the last re-rating
  double makespan = 0;
};

class SharedGpuSim {
 public:
  SharedGpuSim(const std::vector<SharedGpuJob>& in, const SharedGpuConfig& c, SharedGpuRun* run)
      : c_(c), run_(run) {
    const int n = static_cast<int>(in.size());
    run_->jobs.assign(n, {});
    jobs_.resize(n);
    for (int j = 0; j < n; ++j) {
      Job& job = jobs_[j];
      job.in = &in[j];
      job.compute_duration = static_cast<int64_t>(in[j].forward_ms + in[j].backward_ms) * in[j].iterations;
      job.gpu_compute = job.compute_duration * in[j].workers;
      job.remain_compute_cumul = job.gpu_compute;
      job.task.assign(in[j].workers, Task::kForward);
      job.communicated.assign(in[j].workers, -1);
      job.out = &run_->jobs[j];
    }
    arrivals_.resize(n);
    std::iota(arrivals_.begin(), arrivals_.end(), 0);
    std::stable_sort(arrivals_.begin(), arrivals_.end(),
                     [&](int a, int b) { return in[a].arrival_ms < in[b].arrival_ms; });
    nodes_.resize(c.nodes);
    for (int nd = 0; nd < c.nodes; ++nd) {
      for (int g = 0; g < c.gpus_per_node; ++g) {
        nodes_[nd].gpus.push_back(static_cast<int>(gpus_.size()));
        gpus_.push_back({nd, c.gpu_memory_mb, {}, false, kNotBusyEnd, -1, -1, 0});
      }
      node_order_.push_back(nd);
    }
  }

  void Run() {
    const int total = static_cast<int>(jobs_.size());
    int64_t t = 0;
    size_t next_arrival = 0;
    while (retired_ < total && (c_.horizon_ms <= 0 || t < c_.horizon_ms)) {
      for (int nd : node_order_) UpdateNode(nd, t);
      Retire();
      while (next_arrival < arrivals_.size() && jobs_[arrivals_[next_arrival]].in->arrival_ms <= t)
        queue_.push_back(arrivals_[next_arrival++]);
      Allocate(t);
      StartTransfers(t);
      for (Node& node : nodes_) node.num_of_task = static_cast<int>(node.transfers.size());
      for (int j : running_) {
        if (jobs_[j].stall) Rerate(jobs_[j], t);
      }
      for (int nd : node_order_)
        for (int g : nodes_[nd].gpus) StartCompute(g, t);
      Record(t);
      ++t;
    }
    run_->end_ms = t;
  }

 private:
  // node.update_status (cluster.py:166-177, :58-68; job.py:28-33).
  void UpdateNode(int nd, int64_t t) {
    Node& node = nodes_[nd];
    for (int g : node.gpus) {
      Gpu& gpu = gpus_[g];
      if (gpu.busy) ++run_->busy_gpu_ms;
      if (t == gpu.end_ms) {
        gpu.busy = false;
        PopTask(gpu.cur_job, gpu.cur_worker);
      }
    }
    for (int j : node.transfers) {
      Job& job = jobs_[j];
      if (job.stall && static_cast<double>(t) >= job.end_ms) SyncComm(job, t);
    }
    std::erase_if(node.transfers, [&](int j) { return static_cast<double>(t) >= jobs_[j].end_ms; });
  }

  // dag_job.pop_task (job.py:192-204).
  void PopTask(int j, int w) {
    Job& job = jobs_[j];
    Gpu& gpu = gpus_[job.gpus[w]];
    if (job.task[w] == Task::kForward) {
      gpu.makespan -= job.in->forward_ms;
      job.task[w] = Task::kBackward;
      job.remain_compute_cumul -= job.in->forward_ms;
      job.out->compute_ms += job.in->forward_ms;
    } else if (job.task[w] == Task::kBackward) {
      gpu.makespan -= job.in->backward_ms;
      job.task[w] = Task::kComm;
      job.communicated[w] = 1;
      ++job.communicated_count;
      job.remain_compute_cumul -= job.in->backward_ms;
      job.out->compute_ms += job.in->backward_ms;
    }
  }

  // dag_job.sync_comm (job.py:167-184): the all-reduce is done.
  void SyncComm(Job& job, int64_t t) {
    std::fill(job.communicated.begin(), job.communicated.end(), -1);
    job.communicated_count = 0;
    job.stall = false;
    for (int g : job.gpus) gpus_[g].makespan -= job.comm_once;
    job.out->iterations_done += 1;
    if (job.iteration < job.in->iterations) {
      ++job.iteration;
      std::fill(job.task.begin(), job.task.end(), Task::kForward);
    } else {
      job.finished = true;
      job.out->finished_ms = t;
    }
  }

  // check_finished (job_master.py:318-326), retiring a job skipping the
  // next one.
  void Retire() {
    for (size_t i = 0; i < running_.size();) {
      Job& job = jobs_[running_[i]];
      if (!job.finished) {
        ++i;
        continue;
      }
      ++retired_;
      for (int g : job.gpus) {
        gpus_[g].rest_mem += job.in->memory_mb;
        if (gpus_[g].rest_mem == c_.gpu_memory_mb) --gpus_in_use_;
      }
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      ++i;  // the list shifted under the loop: the next job waits a step
    }
  }

  // allocate (job_master.py:289-316): the queue by total GPU time, each
  // placed where it fits; placing one skips the next for this step.
  void Allocate(int64_t t) {
    if (queue_.empty()) return;
    std::stable_sort(queue_.begin(), queue_.end(),
                     [&](int a, int b) { return jobs_[a].gpu_compute < jobs_[b].gpu_compute; });
    for (size_t i = 0; i < queue_.size();) {
      if (Place(queue_[i], t)) {
        queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(i));
        ++i;
      } else {
        ++i;
      }
    }
  }

  bool HasMemory(int g, const Job& job) const { return gpus_[g].rest_mem >= job.in->memory_mb; }

  // pick_gpus (job_master.py:218-287).
  bool Place(int j, int64_t t) {
    Job& job = jobs_[j];
    const size_t n = static_cast<size_t>(job.in->workers);
    std::vector<int> chosen;
    if (c_.placement == SharedGpuConfig::Placement::kFirstFit || job.in->workers <= c_.kappa) {
      for (int g = 0; g < static_cast<int>(gpus_.size()); ++g)
        if (HasMemory(g, job)) chosen.push_back(g);
      if (c_.placement == SharedGpuConfig::Placement::kLwf) {
        std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) {
          if (gpus_[a].makespan != gpus_[b].makespan) return gpus_[a].makespan < gpus_[b].makespan;
          return gpus_[a].node < gpus_[b].node;
        });
      }
    } else {
      for (Node& node : nodes_) node.makespan = MeanMakespan(node);
      std::stable_sort(node_order_.begin(), node_order_.end(),
                       [&](int a, int b) { return nodes_[a].makespan < nodes_[b].makespan; });
      for (int nd : node_order_) {
        size_t from = chosen.size();
        for (int g : nodes_[nd].gpus)
          if (HasMemory(g, job)) chosen.push_back(g);
        std::stable_sort(chosen.begin() + static_cast<std::ptrdiff_t>(from), chosen.end(),
                         [&](int a, int b) { return gpus_[a].makespan < gpus_[b].makespan; });
      }
    }
    if (chosen.size() < n) return false;
    chosen.resize(n);
    for (int g : chosen) {
      int nd = gpus_[g].node;
      if (std::find(job.nodes.begin(), job.nodes.end(), nd) == job.nodes.end()) job.nodes.push_back(nd);
    }
    if (job.nodes.size() > 1) {
      job.comm_duration = job.in->size_mb * c_.expected_comm_ms_per_mb * job.in->iterations;
      job.comm_once = job.in->size_mb * c_.expected_comm_ms_per_mb;
    }
    for (size_t w = 0; w < n; ++w) {
      Gpu& gpu = gpus_[chosen[w]];
      gpu.jobs.emplace_back(j, static_cast<int>(w));
      gpu.makespan += static_cast<double>(job.compute_duration) + job.comm_duration;
      job.gpus.push_back(chosen[w]);
    }
    for (int g : job.gpus) {
      if (gpus_[g].rest_mem == c_.gpu_memory_mb) ++gpus_in_use_;
      gpus_[g].rest_mem -= job.in->memory_mb;
    }
    running_.push_back(j);
    job.out->placed_ms = t;
    job.out->nodes = static_cast<int>(job.nodes.size());
    return true;
  }

  // node.update_makespan (cluster.py:148-150): np.mean, whose reduction
  // adds the first value to the sequential sum of the rest.
  double MeanMakespan(const Node& node) const {
    double rest = 0;
    for (size_t i = 1; i < node.gpus.size(); ++i) rest += gpus_[node.gpus[i]].makespan;
    return (gpus_[node.gpus[0]].makespan + rest) / static_cast<double>(node.gpus.size());
  }

  // The communication phase of a step (job_master.py:362-383).
  void StartTransfers(int64_t t) {
    std::vector<int> ready;
    for (int j : running_) {
      Job& job = jobs_[j];
      if (job.finished || job.stall || job.communicated_count != job.in->workers) continue;
      if (job.nodes.size() == 1) {
        SyncComm(job, t);
      } else {
        ready.push_back(j);
      }
    }
    std::stable_sort(ready.begin(), ready.end(), [&](int a, int b) {
      return jobs_[a].remain_compute_cumul < jobs_[b].remain_compute_cumul;
    });
    for (int j : ready) {
      Job& job = jobs_[j];
      if (!NodesFree(job, t)) continue;
      // dag_task.set_time (job.py:16-21), once per node.
      job.last_change_ms = t;
      job.transferred = 0;
      job.speed = kInitialSpeedMbPerMs;
      job.end_ms = static_cast<double>(t) + job.in->size_mb / job.speed;
      for (int nd : job.nodes) nodes_[nd].transfers.push_back(j);
      job.stall = true;
    }
  }

  // is_all_nodes_free (job.py:119-149).
  bool NodesFree(const Job& job, int64_t t) {
    size_t num_comm = 0;
    int other = -1;  // with num_comm 1: the transfer on the first busy node
    for (int nd : job.nodes) {
      const std::vector<int>& on = nodes_[nd].transfers;
      if (on.size() > num_comm) {
        num_comm = on.size();
        if (other < 0) other = on.front();
      }
    }
    if (!c_.adadual || c_.comm_threshold != 1) return num_comm <= static_cast<size_t>(c_.comm_threshold);
    if (num_comm == 0) return true;
    if (num_comm > 1) return false;
    Job& o = jobs_[other];
    double rest;
    if (c_.paper_rest_size) {
      // get_rest_size (job.py:52-54): the elapsed transfer is added and kept.
      o.transferred += static_cast<double>(t - o.last_change_ms) * o.speed;
      rest = o.in->size_mb - o.transferred;
    } else {
      rest = o.in->size_mb - (o.transferred + static_cast<double>(t - o.last_change_ms) * o.speed);
    }
    return !(rest * 1.0 / job.in->size_mb < c_.law.AdaDualRatio());
  }

  // dag_task.update_comm_time (job.py:38-45) at the busiest node's count.
  void Rerate(Job& job, int64_t t) {
    int k = 0;
    for (int nd : job.nodes) k = std::max(k, nodes_[nd].num_of_task);
    job.transferred += static_cast<double>(t - job.last_change_ms) * job.speed;
    double rest = job.in->size_mb - job.transferred;
    job.speed = c_.law.RateMbPerMs(k);
    job.end_ms = static_cast<double>(t) + rest / job.speed;
    job.last_change_ms = t;
  }

  // A free GPU runs the task of least remaining GPU compute among its jobs
  // waiting for compute (cluster.py:140-160, 115-138; job_master.py:395-418).
  void StartCompute(int g, int64_t t) {
    Gpu& gpu = gpus_[g];
    if (gpu.busy) return;
    int best = -1, best_worker = -1;
    for (auto [j, w] : gpu.jobs) {
      const Job& job = jobs_[j];
      if (job.finished || job.communicated[w] != -1) continue;
      if (best < 0 || job.remain_compute_cumul < jobs_[best].remain_compute_cumul) {
        best = j;
        best_worker = w;
      }
    }
    if (best < 0) return;
    const Job& job = jobs_[best];
    int duration = job.task[best_worker] == Task::kForward    ? job.in->forward_ms
                   : job.task[best_worker] == Task::kBackward ? job.in->backward_ms
                                                              : 0;
    gpu.busy = true;
    gpu.end_ms = t + duration;
    gpu.cur_job = best;
    gpu.cur_worker = best_worker;
  }

  void Record(int64_t t) {
    SharedGpuRun::Point p{t, gpus_in_use_, static_cast<int>(running_.size()), static_cast<int>(queue_.size())};
    if (!run_->timeline.empty()) {
      const SharedGpuRun::Point& last = run_->timeline.back();
      if (last.gpus_in_use == p.gpus_in_use && last.running == p.running && last.waiting == p.waiting) return;
    }
    run_->timeline.push_back(p);
  }

  const SharedGpuConfig& c_;
  SharedGpuRun* run_;
  std::vector<Job> jobs_;
  std::vector<int> arrivals_;  // job indices by arrival, then input order
  std::vector<Gpu> gpus_;      // node-major
  std::vector<Node> nodes_;
  std::vector<int> node_order_;  // their cluster.node_list, re-sorted by LWF
  std::vector<int> queue_;
  std::vector<int> running_;
  int retired_ = 0;
  int gpus_in_use_ = 0;
};

}  // namespace

Result<SharedGpuRun> RunSharedGpu(const std::vector<SharedGpuJob>& jobs, const SharedGpuConfig& config) {
  if (config.nodes < 1 || config.gpus_per_node < 1 || config.gpu_memory_mb < 1 || config.kappa < 1 ||
      config.comm_threshold < 0) {
    return InvalidArgument("shared-GPU simulator: nodes, GPUs per node, GPU memory and kappa must be >= 1, the "
                           "communication threshold >= 0");
  }
  const int total_gpus = config.nodes * config.gpus_per_node;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const SharedGpuJob& job = jobs[j];
    std::string at = "job " + std::to_string(j) + ": ";
    if (job.workers < 1 || job.workers > total_gpus)
      return InvalidArgument(at + std::to_string(job.workers) + " workers; the cluster has " +
                             std::to_string(total_gpus) + " GPUs (1 to that many run)");
    if (job.memory_mb < 0 || job.memory_mb > config.gpu_memory_mb)
      return InvalidArgument(at + std::to_string(job.memory_mb) + " MB per GPU; a GPU has " +
                             std::to_string(config.gpu_memory_mb) + " MB");
    if (job.iterations < 1 || job.forward_ms < 1 || job.backward_ms < 1 || !(job.size_mb > 0) || job.arrival_ms < 0)
      return InvalidArgument(at + "expected iterations, forward and backward ms >= 1, a size > 0 MB and an arrival >= 0");
  }
  SharedGpuRun run;
  SharedGpuSim sim(jobs, config, &run);
  sim.Run();
  return run;
}

}  // namespace tessel
