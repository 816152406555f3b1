// The compiled part of the Python package `tessel` (python/tessel/): the
// engine in-process, the GIL released while it works. Two entry points:
//
//   run_cli(args) -> (code, stdout, stderr)
//       runs one `tessel` command (args without the program name) exactly as
//       the command line does: the same flags, checks, messages and --json.
//   simulate(flags, policies) -> (code, [(summary_json, jobs_csv), ...], stderr)
//       `tessel simulate`'s flags (--cluster, --trace, ...), each policy run
//       on one resolved setup as `tessel compare` does, returning each run's
//       summary (the --json object) and jobs.csv's text in memory. A policy
//       is a spec ("fcfs:backfill=easy") or a Python object with
//       decide(snapshot) (py_policy.h), run by the same loop.
//
// python/tessel/__init__.py turns keyword arguments into flags, the JSON and
// CSV into dicts and lists (and pandas DataFrames), and a non-zero code into
// tessel.TesselError carrying the command's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/sim_flags.h"
#include "core/status.h"
#include "python/py_policy.h"
#include "sim/report.h"

namespace py = pybind11;

namespace tessel {
namespace {

py::tuple RunCliCaptured(const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(args.size() + 1);
  argv.push_back("tessel");
  argv.insert(argv.end(), args.begin(), args.end());
  std::ostringstream out, err;
  int code = 0;
  {
    py::gil_scoped_release release;
    code = RunCli(argv, out, err);
  }
  return py::make_tuple(code, out.str(), err.str());
}

struct SimRuns {
  int code = 0;
  std::vector<std::pair<std::string, std::string>> runs;  // (summary JSON, jobs CSV) per policy
  std::string err;
};

// One policy of a run: a registry spec, or a Python policy (its adapter).
struct PolicyToRun {
  std::string spec;
  py::object python;                // null for a spec
  std::unique_ptr<Policy> adapter;  // built from `python` once the flags are known
};

SimRuns SimulateNoGil(const std::vector<std::string>& flag_args, std::vector<PolicyToRun>& policies) {
  SimRuns r;
  std::ostringstream err;
  auto parsed = ParseSimFlags(flag_args);
  if (!parsed.ok()) {
    r.code = 2;
    r.err = "error: " + parsed.status().message() + "\n";
    return r;
  }
  const SimFlags& flags = *parsed;
  auto setup = ResolveSim(flags);
  if (!setup.ok()) {
    r.code = ExitCode(setup.status());
    r.err = "error: " + setup.status().message() + "\n";
    return r;
  }
  // Python policies are built now (their default plan mode is
  // --baseline-parallelism's), with the GIL held.
  for (PolicyToRun& p : policies) {
    if (!p.python) continue;
    py::gil_scoped_acquire gil;
    auto made = MakePythonPolicy(p.python, MakePolicyContext(flags).baseline_plan_mode);
    if (!made.ok()) {
      r.code = ExitCode(made.status());
      r.err = "error: " + made.status().message() + "\n";
      return r;
    }
    p.adapter = std::move(*made);
    p.spec = std::string(p.adapter->name());
  }
  std::vector<SimResult> results;
  for (PolicyToRun& p : policies) {
    const std::string& spec = p.spec;
    SimFlags per = flags;
    if (!per.event_log.empty() && policies.size() > 1) per.event_log += "." + spec;
    auto result = p.adapter ? RunPolicy(*setup, per, *p.adapter, spec, err) : RunPolicy(*setup, per, spec, err);
    if (!result.ok()) {
      r.code = ExitCode(result.status());
      r.err = err.str() + "error: " + spec + ": " + result.status().message() + "\n";
      r.runs.clear();
      return r;
    }
    r.runs.emplace_back(SummaryJson(result->summary), JobsCsv(*result, setup->cluster));
    results.push_back(std::move(*result));
  }
  // --out: the files `tessel simulate` (one policy) or `tessel compare` writes.
  if (!flags.out.empty()) {
    std::string warning;
    Status written = results.size() == 1 ? WriteRunOutputs(results.front(), setup->cluster, flags.out, &warning)
                                         : WriteComparisonOutputs(results, setup->cluster, flags.out, &warning);
    if (!written.ok()) {
      r.code = 1;
      r.err = err.str() + "error: --out " + flags.out + ": " + written.message() + "\n";
      r.runs.clear();
      return r;
    }
    if (!warning.empty()) err << "warning: " << warning << "\n";
  }
  r.err = err.str();
  return r;
}

py::tuple Simulate(const std::vector<std::string>& flag_args, const py::list& policy_list) {
  std::vector<PolicyToRun> policies;
  for (const py::handle& p : policy_list) {
    PolicyToRun run;
    if (py::isinstance<py::str>(p)) {
      run.spec = p.cast<std::string>();
    } else {
      run.python = py::reinterpret_borrow<py::object>(p);
    }
    policies.push_back(std::move(run));
  }
  SimRuns r;
  {
    py::gil_scoped_release release;
    r = SimulateNoGil(flag_args, policies);
  }
  {
    // The adapters hold Python objects: drop them with the GIL held.
    for (PolicyToRun& p : policies) p.adapter.reset();
  }
  py::list runs;
  for (auto& [summary, jobs] : r.runs) runs.append(py::make_tuple(summary, jobs));
  return py::make_tuple(r.code, runs, r.err);
}

}  // namespace
}  // namespace tessel

PYBIND11_MODULE(_tessel, m) {
  m.doc() = "tessel's engine in-process (use the `tessel` package, python/tessel/)";
  m.def("run_cli", &tessel::RunCliCaptured, py::arg("args"),
        "Runs one tessel command (arguments without the program name) in-process, the GIL released; "
        "returns (exit code, stdout, stderr).");
  m.def("simulate", &tessel::Simulate, py::arg("flags"), py::arg("policies"),
        "Runs `tessel simulate` flags once per policy on one setup, the GIL released (a Python policy "
        "takes it for each decision); each policy a spec string or an object with decide(snapshot); "
        "returns (exit code, [(summary JSON, jobs CSV), ...], stderr).");
  tessel::BindPolicyApi(m);
}
