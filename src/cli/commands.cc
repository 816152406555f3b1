#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <iostream>

namespace tessel {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> table = {
      {"gpus", "List the GPU catalog (memory, bandwidth, peak TFLOP/s, links)", SetupGpus, "docs/estimator.md"},
      {"node-types", "List node types (GPUs per node, intra-node fabric, network)", SetupNodeTypes,
       "docs/estimator.md"},
      {"models", "List the model catalog (shapes, parameters)", SetupModels, "docs/estimator.md"},
      {"estimate", "Estimate one parallel plan: time, throughput, memory, breakdown", SetupEstimate,
       "docs/estimator.md"},
      {"plan", "Search parallel plans (full search or an Arena grid) and rank them", SetupPlan, "docs/estimator.md"},
      {"accuracy", "Compare the estimator with published and Alpa-measured runs", SetupAccuracy, "docs/estimator.md"},
      {"kernels", "Compare GPU kernel times measured with scripts/measure-kernels.py with the estimator", SetupKernels,
       "docs/estimator.md"},
      {"calibrate", "Fit the estimator's parameters from measurements in TESSEL_DATA", SetupCalibrate,
       "docs/estimator.md"},
      {"clusters", "List the embedded clusters (or show a cluster YAML file)", SetupClusters, "docs/simulator.md"},
      {"policies", "List the scheduling policies and their options", SetupPolicies, "README.md#which-policy"},
      {"gen-trace", "Write a seeded synthetic workload (Poisson arrivals, published size/duration mixes)",
       SetupGenTrace, "docs/simulator.md"},
      {"simulate", "Simulate a policy on a cluster and a trace: JCTs, queueing, utilisation, plots", SetupSimulate,
       "docs/simulator.md"},
      {"compare", "Simulate several policies on the same cluster and trace, side by side", SetupCompare,
       "docs/simulator.md"},
      {"sweep", "Run a grid of simulations (policies x clusters x traces x seeds x options) here or on Slurm; mean and CI over seeds",
       SetupSweep, "docs/sweeps.md"},
      {"submit", "Submit a job spec to a tessel server; prints the job's id", SetupSubmit, "docs/daemon.md"},
      {"jobs", "List your jobs on a tessel server (--all: finished ones too)", SetupJobs, "docs/daemon.md"},
      {"job", "Show one job on a tessel server: state history, step times, corrections", SetupJob, "docs/daemon.md"},
      {"cancel", "Cancel a job on a tessel server", SetupCancel, "docs/daemon.md"},
      {"nodes", "List a tessel server's nodes: GPU type, used/free GPUs, state", SetupClientNodes, "docs/daemon.md"},
      {"loadtest", "Benchmark a running tessel server's API: submissions and status queries, or a timed soak",
       SetupLoadtest, "docs/daemon.md"},
      {"serve", "Run the tessel daemon on Slurm: accept jobs over HTTP, schedule, launch, reconfigure", SetupServe,
       "docs/daemon.md"},
      {"job-exec", "Internal: run a launched job's task from its launch file (what srun runs)", SetupJobExec,
       "examples/README.md"},
  };
  return table;
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "tessel: a scheduler for training large models on heterogeneous GPU clusters.\n"
      "Estimates and plans parallel training (data/tensor/pipeline parallelism,\n"
      "micro-batching, recomputation, ZeRO) for a model on a GPU type, simulates\n"
      "scheduling policies on a cluster and a trace, and is the client of `tessel serve`."};
  app.footer(
      "\nDocs (in tessel's source tree): README.md (start here, and which policy to use),\n"
      "docs/estimator.md (estimate, plan), docs/simulator.md (simulate, compare, traces),\n"
      "docs/daemon.md (serve and its clients), examples/README.md (the job contract).\n"
      "`tessel <command> --help` names the doc of each command.");
  app.name(args.empty() ? "tessel" : args[0]);
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessel 0.1.0");
  CommandIo io{out, err};
  CommandAction action;
  for (const auto& spec : Commands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    CommandAction a = spec.setup(*sub, io);
    sub->footer(sub->get_footer() + "\nDocs: " + spec.doc + " (in tessel's source tree)");
    sub->callback([&action, a] { action = a; });
  }
  std::vector<std::string> rev(args.rbegin(), args.rend());
  if (!rev.empty()) rev.pop_back();  // program name
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    CLI::App* target = &app;
    for (auto* sub : app.get_subcommands()) target = sub;
    out << target->help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "error: " << e.what() << "\n";
    if (std::string(e.what()).find("subcommand") != std::string::npos) {
      err << "commands:";
      for (const auto& spec : Commands()) err << " " << spec.name;
      err << "\n";
    }
    err << "run '" << app.get_name() << " --help' for usage\n";
    return 2;
  }
  if (!action) return 2;
  return action();
}

}  // namespace tessel
