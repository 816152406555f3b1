// The compiled part of the Python package `tessel` (python/tessel/): the
// engine in-process, the GIL released while it works. Two entry points:
//
//   run_cli(args) -> (code, stdout, stderr)
//       runs one `tessel` command (args without the program name) exactly as
//       the command line does: the same flags, checks, messages and --json.
//   simulate(flags, policies) -> (code, [(summary_json, jobs_csv), ...], stderr)
//       `tessel simulate`'s flags (--cluster, --trace, ...), each policy run
//       on one resolved setup as `tessel compare` does, returning each run's
//       summary (the --json object) and jobs.csv's text in memory.
//
// python/tessel/__init__.py turns keyword arguments into flags, the JSON and
// CSV into dicts and lists (and pandas DataFrames), and a non-zero code into
// tessel.TesselError carrying the command's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <CLI/CLI.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/sim_flags.h"
#include "core/status.h"
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

SimRuns SimulateNoGil(const std::vector<std::string>& flag_args, const std::vector<std::string>& policies) {
  SimRuns r;
  std::ostringstream err;
  SimFlags flags;
  CLI::App app{"tessel simulate (Python)"};
  flags.Add(app);
  std::vector<std::string> rev(flag_args.rbegin(), flag_args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    r.code = 2;
    r.err = std::string("error: ") + e.what() + "\n";
    return r;
  }
  auto setup = ResolveSim(flags);
  if (!setup.ok()) {
    r.code = ExitCode(setup.status());
    r.err = "error: " + setup.status().message() + "\n";
    return r;
  }
  std::vector<SimResult> results;
  for (const std::string& spec : policies) {
    SimFlags per = flags;
    if (!per.event_log.empty() && policies.size() > 1) per.event_log += "." + spec;
    auto result = RunPolicy(*setup, per, spec, err);
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

py::tuple Simulate(const std::vector<std::string>& flag_args, const std::vector<std::string>& policies) {
  SimRuns r;
  {
    py::gil_scoped_release release;
    r = SimulateNoGil(flag_args, policies);
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
        "Runs `tessel simulate` flags once per policy on one setup, the GIL released; returns "
        "(exit code, [(summary JSON, jobs CSV), ...], stderr).");
}
