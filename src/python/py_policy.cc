#include "python/py_policy.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/placement.h"
#include "policy/snapshot.h"

namespace py = pybind11;

namespace tessel {
namespace {

// Whether the snapshot a view was made from is still the one being decided
// on: set false when `decide` returns, so that a view kept past it raises
// instead of reading freed memory.
struct Guard {
  bool valid = true;
};
using GuardPtr = std::shared_ptr<Guard>;

void Check(const GuardPtr& g) {
  if (!g || !g->valid) {
    throw py::value_error("this snapshot (or a job or free map from it) was used after decide() returned; "
                          "keep what you need as plain values");
  }
}

py::object SecondsOrNone(SimTime t) {
  if (t == kNever) return py::none();
  return py::float_(ToSeconds(t));
}

// A job as the policy sees it.
struct PyJob {
  const JobView* view;
  GuardPtr guard;
  const JobView& v() const {
    Check(guard);
    return *view;
  }
};

struct PySnapshot;

// A scratch copy of the free GPUs, placing as the snapshot's rule places.
struct PyFreeMap {
  FreeMap map;
  GuardPtr guard;
  int num_types;
  const Cluster* cluster;
};

// An allocation the free map can take or release: its type and nodes exist
// and match.
void CheckAllocation(const PyFreeMap& f, const Allocation& a, const char* what) {
  const auto& nodes = f.cluster->nodes();
  bool ok = a.type >= 0 && a.type < f.num_types;
  for (const Placement& p : a.parts)
    ok = ok && p.node >= 0 && p.node < static_cast<int>(nodes.size()) && nodes[p.node].type == a.type &&
         p.gpus > 0 && p.gpus <= nodes[p.node].gpus;
  if (!ok) {
    throw py::value_error(std::string(what) + ": " + std::string(py::repr(py::cast(a))) +
                          " is not GPUs of one type on nodes of that type");
  }
}

// The active jobs as a sequence whose items are made when read, so that a
// policy that stops early (FCFS at the first job that does not fit) pays
// for the jobs it reads, not for the whole queue.
struct PyJobs {
  const Snapshot* snap;
  GuardPtr guard;
  size_t size() const {
    Check(guard);
    return snap->jobs.size();
  }
  PyJob at(py::ssize_t i) const {
    const py::ssize_t n = static_cast<py::ssize_t>(size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw py::index_error("job position out of range");
    return PyJob{snap->jobs[static_cast<size_t>(i)], guard};
  }
};

struct PyJobsIterator {
  PyJobs jobs;
  size_t next = 0;
};

struct PySnapshot {
  const Snapshot* snap;
  GuardPtr guard;
  const Snapshot& s() const {
    Check(guard);
    return *snap;
  }
};

int JobIndex(const py::handle& job) {
  if (py::isinstance<PyJob>(job)) return job.cast<const PyJob&>().v().index;
  if (py::isinstance<py::int_>(job)) return job.cast<int>();
  throw py::type_error("expected a job (from snapshot.jobs) or a job index");
}

const JobSpec& SpecOf(const py::handle& job) {
  if (!py::isinstance<PyJob>(job)) throw py::type_error("expected a job from snapshot.jobs");
  return *job.cast<const PyJob&>().v().spec;
}

int CheckType(const Snapshot& s, int type) {
  if (type < 0 || type >= static_cast<int>(s.cluster->types().size())) {
    throw py::value_error("GPU type index " + std::to_string(type) + " out of range: the cluster has " +
                          std::to_string(s.cluster->types().size()) + " types (snapshot.gpu_types)");
  }
  return type;
}

class PythonPolicy : public Policy {
 public:
  PythonPolicy(py::object obj, std::string name, PolicyTraits traits)
      : obj_(std::move(obj)), name_(std::move(name)), traits_(traits) {}
  ~PythonPolicy() override {
    py::gil_scoped_acquire gil;
    obj_ = py::object();
  }
  std::string_view name() const override { return name_; }
  PolicyTraits traits() const override { return traits_; }

  Decision Decide(const Snapshot& snapshot) override {
    py::gil_scoped_acquire gil;
    auto guard = std::make_shared<Guard>();
    Decision d;
    try {
      PySnapshot view{&snapshot, guard};
      py::object result = obj_.attr("decide")(py::cast(std::move(view)));
      if (!py::isinstance<Decision>(result)) {
        d.error = InvalidArgument("decide() returned " + std::string(py::str(py::type::of(result).attr("__name__"))) +
                                  ", not a tessel.Decision");
      } else {
        d = result.cast<Decision>();
        d.error = Status::Ok();
      }
    } catch (py::error_already_set& e) {
      d = Decision{};
      d.error = InvalidArgument("decide() raised " + std::string(e.what()));
    } catch (const std::exception& e) {
      d = Decision{};
      d.error = InvalidArgument(std::string("decide() failed: ") + e.what());
    }
    guard->valid = false;
    return d;
  }

 private:
  py::object obj_;
  std::string name_;
  PolicyTraits traits_;
};

}  // namespace

void BindPolicyApi(py::module_& m) {
  py::class_<Allocation>(m, "Allocation",
                         "GPUs of one type on nodes: `type` (index into snapshot.gpu_types) and `parts`, "
                         "[(node id, GPUs), ...] in ascending node id.")
      .def(py::init([](int type, std::vector<std::pair<int, int>> parts) {
             Allocation a;
             a.type = type;
             for (auto [node, gpus] : parts) a.parts.push_back({node, gpus});
             return a;
           }),
           py::arg("type"), py::arg("parts"))
      .def_readonly("type", &Allocation::type)
      .def_property_readonly("parts",
                             [](const Allocation& a) {
                               std::vector<std::pair<int, int>> v;
                               for (const Placement& p : a.parts) v.emplace_back(p.node, p.gpus);
                               return v;
                             })
      .def_property_readonly("gpus", &Allocation::gpus)
      .def_property_readonly("nodes", &Allocation::nodes)
      .def("__eq__", [](const Allocation& a, const Allocation& b) { return a == b; })
      .def("__bool__", [](const Allocation& a) { return !a.empty(); })
      .def("__repr__", [](const Allocation& a) {
        std::string s = "Allocation(type=" + std::to_string(a.type) + ", parts=[";
        for (size_t i = 0; i < a.parts.size(); ++i)
          s += (i ? ", (" : "(") + std::to_string(a.parts[i].node) + ", " + std::to_string(a.parts[i].gpus) + ")";
        return s + "])";
      });

  py::class_<Decision>(m, "Decision",
                       "What a policy wants changed. Jobs not named keep their allocation.")
      .def(py::init<>())
      .def(
          "assign",
          [](Decision& d, const py::handle& job, std::optional<Allocation> alloc) {
            d.assign.emplace_back(JobIndex(job), alloc ? std::move(*alloc) : Allocation{});
          },
          py::arg("job"), py::arg("allocation"),
          "Gives the job (or job index) this allocation; None suspends it (or keeps it waiting).")
      .def(
          "reject",
          [](Decision& d, const py::handle& job, std::string why) { d.reject.emplace_back(JobIndex(job), std::move(why)); },
          py::arg("job"), py::arg("reason"), "The job can never run: it leaves the system with this reason.")
      .def_property(
          "wake_at", [](const Decision& d) { return SecondsOrNone(d.wake_at); },
          [](Decision& d, std::optional<double> s) { d.wake_at = s ? Seconds(*s) : kNever; },
          "Seconds: be called again then even if nothing happens (None: not needed).")
      .def_property_readonly("assignments",
                             [](const Decision& d) {
                               py::list l;
                               for (const auto& [i, a] : d.assign) l.append(py::make_tuple(i, a));
                               return l;
                             })
      .def_property_readonly("rejections", [](const Decision& d) { return d.reject; });

  py::class_<PyJob>(m, "Job", "An active job as the policy sees it (read-only; valid during decide()).")
      .def_property_readonly("index", [](const PyJob& j) { return j.v().index; })
      .def_property_readonly("id", [](const PyJob& j) { return j.v().spec->id; })
      .def_property_readonly("user", [](const PyJob& j) { return j.v().spec->user; })
      .def_property_readonly("model", [](const PyJob& j) { return j.v().spec->model; })
      .def_property_readonly("submit", [](const PyJob& j) { return ToSeconds(j.v().spec->submit); })
      .def_property_readonly("requested_gpus", [](const PyJob& j) { return j.v().spec->requested_gpus; })
      .def_property_readonly("requested_gpu_type",
                             [](const PyJob& j) -> py::object {
                               const std::string& t = j.v().spec->requested_gpu_type;
                               if (t.empty()) return py::none();
                               return py::str(t);
                             })
      .def_property_readonly("min_gpus", [](const PyJob& j) { return j.v().spec->min_gpus; })
      .def_property_readonly("max_gpus", [](const PyJob& j) { return j.v().spec->max_gpus; })
      .def_property_readonly("priority", [](const PyJob& j) { return j.v().spec->priority; })
      .def_property_readonly("deadline",
                             [](const PyJob& j) {
                               const auto& d = j.v().spec->deadline;
                               return d ? SecondsOrNone(*d) : py::none();
                             })
      .def_property_readonly("phase", [](const PyJob& j) { return std::string(JobPhaseName(j.v().phase)); })
      .def_property_readonly("pending", [](const PyJob& j) { return j.v().phase == JobPhase::kPending; })
      .def_property_readonly("allocation", [](const PyJob& j) { return j.v().alloc; })
      .def_property_readonly("gpus", [](const PyJob& j) { return j.v().alloc.gpus(); })
      .def_property_readonly("total_iterations", [](const PyJob& j) { return j.v().total_iterations; })
      .def_property_readonly("done_iterations", [](const PyJob& j) { return j.v().done_iterations; })
      .def_property_readonly("remaining_iterations", [](const PyJob& j) { return j.v().remaining_iterations(); })
      .def_property_readonly("first_start", [](const PyJob& j) { return SecondsOrNone(j.v().first_start); })
      .def_property_readonly("alloc_since", [](const PyJob& j) { return ToSeconds(j.v().alloc_since); })
      .def_property_readonly("attained_gpu_s", [](const PyJob& j) { return j.v().attained_gpu_s; })
      .def_property_readonly("restarts", [](const PyJob& j) { return j.v().restarts; })
      .def_property_readonly("preemptions", [](const PyJob& j) { return j.v().preemptions; })
      .def_property_readonly(
          "agent",
          [](const PyJob& j) -> py::object {
            const AgentReport* a = j.v().agent;
            if (a == nullptr) return py::none();
            py::dict d;
            d["adaptive"] = a->adaptive;
            d["fixed_batch"] = a->fixed_batch;
            d["max_gpus"] = a->max_gpus;
            d["observations"] = a->observations;
            d["rule"] = goodput::ScalingRuleName(a->rule);
            d["grad"] = py::dict(py::arg("sqr") = a->grad.sqr, py::arg("var") = a->grad.var);
            d["limits"] = py::dict(py::arg("init_batch") = a->limits.init_batch, py::arg("max_batch") = a->limits.max_batch,
                                   py::arg("min_atomic") = a->limits.min_atomic,
                                   py::arg("max_atomic") = a->limits.max_atomic);
            py::list fitted;
            for (const auto& p : a->params) fitted.append(p.has_value());
            d["fitted_types"] = fitted;
            d["max_replicas"] = a->max_replicas;
            return d;
          },
          "What the job's goodput agent reports (Pollux's co-adaptive half): gradient statistics, batch "
          "limits, which GPU types it has a fitted step-time model for; None for jobs without one.")
      .def("__repr__", [](const PyJob& j) {
        return "Job(index=" + std::to_string(j.v().index) + ", id='" + j.v().spec->id + "', " +
               JobPhaseName(j.v().phase) + ")";
      });

  py::class_<PyJobsIterator>(m, "JobsIterator")
      .def("__iter__", [](PyJobsIterator& it) -> PyJobsIterator& { return it; }, py::return_value_policy::reference)
      .def("__next__", [](PyJobsIterator& it) {
        if (it.next >= it.jobs.size()) throw py::stop_iteration();
        return it.jobs.at(static_cast<py::ssize_t>(it.next++));
      });

  py::class_<PyJobs>(m, "Jobs", "The active jobs of a snapshot, in submit order (valid during decide()).")
      .def("__len__", &PyJobs::size)
      .def("__getitem__", &PyJobs::at)
      .def("__iter__", [](const PyJobs& j) { return PyJobsIterator{j, 0}; });

  py::class_<PyFreeMap>(m, "FreeMap",
                        "A scratch copy of the free GPUs for planning one decision: place() takes GPUs as the "
                        "simulator's placement rule (--placement) chooses them; the snapshot is not changed.")
      .def(
          "place",
          [](PyFreeMap& f, int type, int gpus, int max_nodes) -> std::optional<Allocation> {
            Check(f.guard);
            if (type < 0 || type >= f.num_types) {
              throw py::value_error("place: GPU type index " + std::to_string(type) + " out of range: the cluster has " +
                                    std::to_string(f.num_types) + " types (snapshot.gpu_types)");
            }
            if (gpus <= 0) throw py::value_error("place: gpus must be > 0, got " + std::to_string(gpus));
            return f.map.Place(type, gpus, max_nodes);
          },
          py::arg("type"), py::arg("gpus"), py::arg("max_nodes") = 0,
          "Takes `gpus` GPUs of `type` (within max_nodes nodes; 0 = any) and returns where, or None.")
      .def(
          "can_place",
          [](const PyFreeMap& f, int type, int gpus, int max_nodes) {
            Check(f.guard);
            if (type < 0 || type >= f.num_types) throw py::value_error("can_place: GPU type index out of range");
            return f.map.CanPlace(type, gpus, max_nodes);
          },
          py::arg("type"), py::arg("gpus"), py::arg("max_nodes") = 0)
      .def(
          "free_of_type",
          [](const PyFreeMap& f, int type) {
            Check(f.guard);
            if (type < 0 || type >= f.num_types) throw py::value_error("free_of_type: GPU type index out of range");
            return f.map.free_of_type(type);
          },
          py::arg("type"))
      .def(
          "release",
          [](PyFreeMap& f, const Allocation& a) {
            Check(f.guard);
            CheckAllocation(f, a, "release");
            f.map.Release(a);
          },
          py::arg("allocation"), "Gives back a job's GPUs (one this decision suspends, shrinks or moves).")
      .def(
          "take",
          [](PyFreeMap& f, const Allocation& a) {
            Check(f.guard);
            CheckAllocation(f, a, "take");
            if (!f.map.IsFree(a)) throw py::value_error("take: not every GPU of " + std::string(py::repr(py::cast(a))) + " is free");
            f.map.Take(a);
          },
          py::arg("allocation"), "Takes exactly these GPUs (they must be free).");

  py::class_<PySnapshot>(m, "Snapshot",
                         "What a policy sees at one decision (read-only; valid during decide()). Times are "
                         "seconds of simulated time.")
      .def_property_readonly("now", [](const PySnapshot& s) { return ToSeconds(s.s().now); })
      .def_property_readonly("now_us", [](const PySnapshot& s) { return s.s().now; },
                             "The time in the engine's own unit, integer microseconds (exact).")
      .def_property_readonly("at_round", [](const PySnapshot& s) { return s.s().at_round; })
      .def_property_readonly("round_length", [](const PySnapshot& s) { return ToSeconds(s.s().round_length); })
      .def_property_readonly("jobs", [](const PySnapshot& s) {
        Check(s.guard);
        return PyJobs{s.snap, s.guard};
      }, "The active jobs (pending and running), in submit order: a sequence (len, [i], iteration).")
      .def_property_readonly("gpu_types",
                             [](const PySnapshot& s) {
                               std::vector<std::string> names;
                               for (const auto& t : s.s().cluster->types()) names.push_back(t.gpu->name);
                               return names;
                             })
      .def_property_readonly("free_gpus",
                             [](const PySnapshot& s) {
                               return std::vector<int>(s.s().free_gpus.begin(), s.s().free_gpus.end());
                             },
                             "Free GPUs per node id (0 on failed nodes).")
      .def_property_readonly("node_types",
                             [](const PySnapshot& s) {
                               std::vector<int> v;
                               for (const ClusterNode& n : s.s().cluster->nodes()) v.push_back(n.type);
                               return v;
                             })
      .def_property_readonly("node_gpus",
                             [](const PySnapshot& s) {
                               std::vector<int> v;
                               for (const ClusterNode& n : s.s().cluster->nodes()) v.push_back(n.gpus);
                               return v;
                             })
      .def("free_map",
           [](const PySnapshot& s) {
             return PyFreeMap{FreeMap(s.s()), s.guard, static_cast<int>(s.s().cluster->types().size()),
                              s.s().cluster};
           },
           "A scratch FreeMap of the free GPUs to plan this decision with.")
      .def(
          "rate",
          [](const PySnapshot& s, const py::handle& job, int type, int gpus, int nodes) {
            const Snapshot& snap = s.s();
            const JobSpec& spec = SpecOf(job);
            CheckType(snap, type);
            if (gpus <= 0) throw py::value_error("rate: gpus must be > 0");
            const JobRate& r =
                snap.belief->Rate(spec, type, gpus, nodes > 0 ? nodes : MinNodes(*snap.cluster, type, gpus));
            py::dict d;
            d["fits"] = r.fits;
            d["iteration_time_s"] = r.iteration_time_s;
            d["samples_per_s"] = r.samples_per_s;
            d["reason"] = r.reason;
            return d;
          },
          py::arg("job"), py::arg("type"), py::arg("gpus"), py::arg("nodes") = 0,
          "The belief's speed of the job on `gpus` GPUs of `type` over `nodes` nodes (0: the fewest): "
          "{fits, iteration_time_s, samples_per_s, reason}.")
      .def(
          "goodput",
          [](const PySnapshot& s, const py::handle& job, int type, int nodes, int replicas) -> py::object {
            const Snapshot& snap = s.s();
            if (!py::isinstance<PyJob>(job)) throw py::type_error("expected a job from snapshot.jobs");
            CheckType(snap, type);
            if (nodes < 1 || replicas < nodes) throw py::value_error("goodput: need 1 <= nodes <= replicas");
            const AgentReport* a = job.cast<const PyJob&>().v().agent;
            if (a == nullptr || type >= static_cast<int>(a->params.size()) || !a->params[type]) return py::none();
            goodput::GoodputFunction f(*a->params[type], a->grad, a->limits, a->rule);
            goodput::BatchChoice c = a->adaptive ? f.Optimize(nodes, replicas) : f.Fixed(nodes, replicas, a->fixed_batch);
            py::dict d;
            d["valid"] = c.valid;
            d["atomic_bsz"] = c.atomic_bsz;
            d["accum_steps"] = c.accum_steps;
            d["batch"] = c.batch;
            d["throughput"] = c.throughput;
            d["efficiency"] = c.efficiency;
            d["goodput"] = c.goodput;
            return d;
          },
          py::arg("job"), py::arg("type"), py::arg("nodes"), py::arg("replicas"),
          "The job's goodput model (Pollux: throughput x statistical efficiency) on `replicas` GPUs of `type` "
          "over `nodes` nodes, at the batch its agent would choose (or its fixed batch): {valid, atomic_bsz, "
          "accum_steps, batch, throughput, efficiency, goodput}; None before the job has a model for the type.")
      .def(
          "candidate_types",
          [](const PySnapshot& s, const py::handle& job, std::optional<int> gpus) {
            const Snapshot& snap = s.s();
            if (!py::isinstance<PyJob>(job)) throw py::type_error("expected a job from snapshot.jobs");
            const JobView& j = job.cast<const PyJob&>().v();
            return gpus ? CandidateTypes(j, snap, *gpus) : CandidateTypes(j, snap);
          },
          py::arg("job"), py::arg("gpus") = py::none(),
          "The job's GPU types as a heterogeneity-unaware policy tries them: its requested type, or every "
          "type fastest first; types where it cannot fit are left out.")
      .def(
          "never_runs_reason",
          [](const PySnapshot& s, const py::handle& job, int gpus) {
            const Snapshot& snap = s.s();
            if (!py::isinstance<PyJob>(job)) throw py::type_error("expected a job from snapshot.jobs");
            return NeverRunsReason(job.cast<const PyJob&>().v(), snap, gpus);
          },
          py::arg("job"), py::arg("gpus"));
}

Result<std::unique_ptr<Policy>> MakePythonPolicy(py::object obj, PlanMode default_mode) {
  if (!py::hasattr(obj, "decide") || !PyCallable_Check(obj.attr("decide").ptr())) {
    return InvalidArgument("a Python policy needs a decide(snapshot) method; " +
                           std::string(py::str(py::repr(obj))) + " has none");
  }
  std::string name;
  if (py::hasattr(obj, "name") && !obj.attr("name").is_none()) {
    name = py::str(obj.attr("name"));
  } else {
    name = py::str(py::type::of(obj).attr("__name__"));
  }
  if (name.empty()) return InvalidArgument("a Python policy's name must not be empty");
  PolicyTraits traits;
  traits.plan_mode = default_mode;
  if (py::hasattr(obj, "uses_rounds")) traits.uses_rounds = py::bool_(obj.attr("uses_rounds"));
  if (py::hasattr(obj, "plan_mode") && !obj.attr("plan_mode").is_none()) {
    std::string mode = py::str(obj.attr("plan_mode"));
    auto parsed = ParsePlanMode(mode);
    if (!parsed.ok()) return InvalidArgument("policy " + name + ": plan_mode: " + parsed.status().message());
    traits.plan_mode = *parsed;
  }
  return std::unique_ptr<Policy>(new PythonPolicy(std::move(obj), std::move(name), traits));
}

}  // namespace tessel
