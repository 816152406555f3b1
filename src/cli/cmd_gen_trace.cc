// `tessel gen-trace`: a seeded synthetic workload in tessel's trace format.
#include <CLI/CLI.hpp>
#include <fstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "workload/gen_trace.h"
#include "workload/trace.h"

namespace tessel {

CommandAction SetupGenTrace(CLI::App& app, CommandIo io) {
  auto opts = std::make_shared<GenTraceOptions>();
  auto out = std::make_shared<std::string>();
  AddSeedOption(app, &opts->seed, "Seed (default 1); the same seed gives the same file byte for byte");
  CLI::Option* jobs = app.add_option("--jobs", opts->jobs, "Number of jobs (default 200; 160 for ddl)");
  app.add_option("--profile", opts->profile,
                 "Size/duration mix: philly (default) or itp; or ddl, the job set of Wang et al. (ICDCS 2020)");
  app.add_option("--rate", opts->arrival_rate_per_hour,
                 "Arrivals per hour (default: the profile's measured rate; ddl: 160 per 12 s)");
  app.add_option("--duration-scale", opts->duration_scale, "Multiply every duration (ddl: the iterations; default 1)");
  app.add_option("--max-job-gpus", opts->max_job_gpus, "Clamp job sizes to this many GPUs (default 64)");
  app.add_option("--gpu-types", opts->gpu_types, "GPU types jobs request, uniformly (default: any type)")
      ->delimiter(',');
  app.add_flag("--elastic", opts->elastic, "Elastic jobs: [1, 4 x requested] GPUs");
  app.add_option("--deadlines", opts->deadline_fraction,
                 "Share of the jobs (0 to 1) given a deadline: submit + U(LO, HI) x the job's duration alone "
                 "(default 0: none)");
  auto range = std::make_shared<std::vector<double>>();
  app.add_option("--deadline-range", *range,
                 "LO,HI of those deadlines, in multiples of the duration (default 0.5,1.5, ElasticFlow's "
                 "generator: some cannot be met)")
      ->delimiter(',')
      ->expected(2);
  app.add_option("--out", *out, "Write here instead of stdout");
  app.footer(
      "\nphilly, itp: arrivals are Poisson; GPU counts and durations follow published cluster-trace\n"
      "mixes (see src/workload/gen_trace.h). Models come from the same seeded mapping the ITP/Philly\n"
      "importers use.\n"
      "ddl: the workload of Wang et al., \"Communication Contention Aware Scheduling of Multiple Deep\n"
      "Learning Training Jobs\" (ICDCS 2020), after their generator (HKBU-HPML/dl-scheduling): GPU\n"
      "counts 1/2/4/8/16/32 in shares 80/14/26/30/8/2 of 160, models uniform over their four\n"
      "profiled ones (ddl-vgg16, ddl-resnet50, ddl-inception3, ddl-lstm-ptb; global batch = their\n"
      "per-GPU batch x GPUs), 10-60 iterations, arrivals uniform over 12 s (whole ms). Deviations:\n"
      "--jobs keeps their rate (the window grows), the first job arrives at 0, and the draws are\n"
      "tessel's, not numpy's. Run it on the ddl-64 cluster.\n"
      "The output is tessel's trace format (`--format tessel`).");
  return [io, opts, out, jobs, range] {
    if (jobs->count() == 0) opts->jobs = GenTraceDefaultJobs(opts->profile);
    if (range->size() == 2) {
      opts->deadline_min = (*range)[0];
      opts->deadline_max = (*range)[1];
    }
    if (!out->empty()) {
      Status where = CheckOutputFile("--out", *out);
      if (!where.ok()) {
        io.err << "error: " << where.message() << "\n";
        return 2;
      }
    }
    auto generated = GenerateTrace(*opts);
    if (!generated.ok()) {
      io.err << "error: " << generated.status().message() << "\n";
      return 2;
    }
    const Workload& w = *generated;
    if (out->empty()) {
      Status s = WriteTraceCsv(w, io.out);
      if (!s.ok()) {
        io.err << "error: " << s.message() << "\n";
        return 1;
      }
      return 0;
    }
    std::ofstream f(*out, std::ios::binary);
    Status s = f ? WriteTraceCsv(w, f) : Unavailable("cannot write " + *out);
    if (!s.ok()) {
      io.err << "error: " << s.message() << "\n";
      return 1;
    }
    io.err << "wrote " << w.jobs.size() << " jobs to " << *out << "\n";
    return 0;
  };
}

}  // namespace tessel
