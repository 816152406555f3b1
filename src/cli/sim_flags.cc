#include "cli/sim_flags.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/common.h"
#include "core/strings.h"
#include "policy/policy.h"
#include "policy/profiled_throughput.h"
#include "sim/arena_db.h"
#include "sim/ddl_paper.h"
#include "sim/memory_gate.h"
#include "workload/gen_trace.h"
#include "workload/trace.h"

namespace tessel {

void SimFlags::Add(CLI::App& app) {
  app.add_option("--cluster", cluster,
                 "Embedded cluster name (see `tessel clusters`) or a cluster YAML file (default demo)");
  app.add_option("--trace", traces,
                 "Trace file or directory of traces; repeat to merge. Default: the embedded synthetic "
                 "workload, `tessel gen-trace --jobs 400 --rate 250 --seed S`");
  app.add_option("--format", format, "Trace format: auto|arena|pollux|itp|philly|alibaba|tessel (default auto)");
  AddSeedOption(app, &seed, "Seed for every random choice: model mapping, failures, generated trace (default 1)");
  app.add_option("--horizon", horizon, "Stop at this simulated time (e.g. 7d, 36h); unfinished jobs are reported");
  app.add_option("--round", round,
                 "Scheduling round length (default 300 s; 60 s, the Pollux and Sia artifacts', for workloads played "
                 "from application profiles; at least 1 s)");
  app.add_option("--setting", setting,
                 "Comparison setting: default (tessel's: baselines fall back to the planner's plan where data "
                 "parallelism does not fit) or arena-artifact (the Arena artifact's: 300 s rounds, arrivals at the "
                 "start of their round and jobs ending at the end of theirs, 1 to 16 GPUs a job, --truth "
                 "arena-db seen by every policy, shapes it lacks answered as the artifact's querier answers them "
                 "(best locality x 0.9 per halving of GPUs per host, else a larger model x 1.8 per size, else "
                 "not fit), baselines data-parallel only, deciding on the querier's unscaled answers and refused "
                 "where dp_mem.json says it does not fit, restarts cost a full plan search for baselines "
                 "(150 s/GPU, at most 600 s) and the pruned one for arena (10 s/GPU, at most 40 s) on every "
                 "allocation, no checkpoint or "
                 "restart overhead, deadlines 5x looser) or ddl-paper (Wang et al.'s shared-GPU simulator for "
                 "ada-srsf, srsf-avoid and srsf-accept on profiled-model traces: GPUs shared by memory, 1 ms "
                 "steps, their k-way contention law; see docs/contention.md); see docs/deadlines-and-settings.md");
  app.add_option("--deadline-slack", deadline_slack,
                 "Multiply each job's time to its deadline (deadline - submit) by this (default 1; 5 under "
                 "--setting arena-artifact, as the artifact's simulator)");
  app.add_option("--truth", truth,
                 "What jobs really run at: estimator (default) or arena-db (Arena's measured prof_database, "
                 "estimator where it has no entry). Jobs of Pollux/Sia workloads are played from their "
                 "application profiles instead (see --apps); jobs of profiled models (ddl-vgg16, ...; "
                 "gen-trace --profile ddl) run at their measured times under either");
  app.add_option("--apps", apps,
                 "Application profiles (Pollux/Sia apps directory) to play jobs that name an application from: "
                 "measured step times per placement and GPU type, gradient noise and progress per epoch. Default: "
                 "the directory the workload's importer found (../apps beside a Pollux/Sia workload)");
  app.add_flag("--no-apps", no_apps, "Time application jobs with --truth instead of their profiles");
  app.add_option("--scaling-rule", scaling_rule,
                 "Learning-rate scaling rule of adaptive-batch jobs: adascale (default), linear or sqrt");
  app.add_option("--baseline-parallelism", baseline_parallelism,
                 "Plans of the baseline policies: dp (data parallel, or the planner's plan when DP does not fit; "
                 "default) or best (the planner's best plan for each allocation)");
  app.add_option("--placement", placement,
                 "Where every policy puts a job's GPUs: consolidate (default; best fit on one node, else the "
                 "fewest nodes, within a rack when one holds the job), first-fit (nodes in ascending id, as many "
                 "GPUs from each as it has) or lwf-kappa[:kappa=N] (least-loaded nodes first -- load: busy GPU "
                 "fraction + multi-node jobs on the node --, spread over at most N nodes when N nodes can hold the "
                 "job, else the fewest; default N = 2; Wang et al. 2020). Under --setting ddl-paper: first-fit or "
                 "lwf-kappa:kappa=N (default N = 2), N their threshold on a job's GPUs (sim/shared_gpu_sim.h)");
  app.add_option("--autoscale", autoscale,
                 "Goodput-driven cluster auto-scaling (Pollux OSDI 2021 §5; pollux only): MIN:MAX[:LOW,HIGH] nodes. "
                 "The cluster starts with its first MIN nodes; each round the utility (jobs' speedups over the "
                 "powered GPUs) enters a window (--autoscale-window rounds), and when its mean leaves [LOW, HIGH] (default "
                 "0.35,0.65) the node count moves to the one whose utility is nearest the band's middle; only "
                 "nodes holding no job are powered down. The summary adds node_hours");
  app.add_option("--autoscale-window", autoscale_window,
                 "Rounds of utility --autoscale averages before it acts (default 15, as the Pollux artifact)");
  app.add_option("--autoscale-by", autoscale_by,
                 "What --autoscale's utility counts: goodput (default; Pollux) or throughput (each replica keeps "
                 "the job's batch, statistical efficiency not counted: a throughput-based auto-scaler in the "
                 "manner of Or et al. 2020, for comparison)");
  app.add_option("--boot-delay", boot_delay_s,
                 "Seconds a node powered up by --autoscale takes to join (default 0, as the Pollux artifact; a "
                 "cloud VM takes minutes)");
  app.add_option("--reference-gpu", reference_gpu,
                 "GPU type a trace's durations were measured on when it names none (default: the cluster's "
                 "most numerous type)");
  app.add_option("--limit", limit, "Simulate only the first N jobs of the trace (1 to 1e9)")
      ->check(CLI::Range(1, 1000000000));
  app.add_option("--time-scale", time_scale, "Multiply arrival times (< 1: denser arrivals)");
  app.add_option("--arena-iteration-divisor", arena_iteration_divisor,
                 "Arena traces: divide num_iteration by this, as the Arena artifact's simulator does (default 5; 1 "
                 "keeps the trace's numbers)");
  app.add_option("--node-mtbf-h", node_mtbf_h,
                 "Mean time between failures per node, hours (default 0: none; the cluster's, MTBF / nodes, must be "
                 "at least 60 s)");
  app.add_option("--repair-h", repair_h, "Hours until a failed node returns (default 1)");
  app.add_option("--checkpoint-interval", checkpoint_interval_s,
                 "Seconds between a running job's checkpoints (failures lose progress since the last; default 1800)");
  app.add_option("--storage-gbs", storage_gbs, "Checkpoint read/write bandwidth per node, GB/s (default 2)");
  app.add_option("--restart-overhead", restart_overhead_s,
                 "Seconds a restart costs besides checkpoint save/load and plan search (default 10; 30, the "
                 "Pollux artifact's, for workloads played from application profiles)");
  app.add_option("--start-overhead", start_overhead_s,
                 "Seconds a job's first start costs (default 0; 30 for workloads played from application profiles)");
  app.add_option("--network", network,
                 "Network model for jobs spread over nodes: flow (default; their transfers share NICs and rack "
                 "uplinks max-min, a fluid model) or off (each runs at its rate alone)");
  app.add_option("--contention-overhead", contention_overhead,
                 "Bandwidth transfers lose when they contend for a link, as Wang et al.'s eta/beta: k transfers "
                 "carry capacity / (1 + x (k-1)/k) (default 0: pure max-min; their 10 GbE figure is 0.2745)");
  app.add_option("--interference", interference,
                 "Slowdown of a job spread over nodes while it shares a node with another such job: it makes "
                 "progress this fraction slower (default 0: none; the Pollux paper's experiment uses 0.25 and 0.5). "
                 "pollux avoids such sharing unless pollux:avoid_interference=false");
  app.add_option("--out", out,
                 "Write summary.json, jobs.csv, timeline.csv, plots (PNG, gnuplot) and report.html (one "
                 "self-contained page: the summary table and charts) to this directory");
  app.add_option("--event-log", event_log, "Write every event and decision to this file");
  app.add_option("--decision-log", decision_log,
                 "Write one CSV row per decision to this file: policy,time_s,at_round,active_jobs,changes,wall_ms "
                 "(wall time of the policy, the check and the apply: varies run to run)");
  app.add_option("--data", data, "Shared data folder for --truth arena-db (default $TESSEL_DATA or ../shared/data)");
  app.add_flag("--json", json, "Print the summary as JSON");
  app.add_flag("--no-progress", no_progress, "No progress bar on stderr");
}

int ExitCode(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

Result<SimSetup> ResolveSim(const SimFlags& f) {
  if (!f.out.empty()) TESSEL_RETURN_IF_ERROR(CheckOutputDir("--out", f.out));
  if (!f.event_log.empty()) TESSEL_RETURN_IF_ERROR(CheckOutputFile("--event-log", f.event_log));
  if (!f.decision_log.empty()) {
    TESSEL_RETURN_IF_ERROR(CheckOutputFile("--decision-log", f.decision_log));
    std::ofstream out(f.decision_log, std::ios::binary | std::ios::trunc);
    out << "policy,time_s,at_round,active_jobs,changes,wall_ms\n";
    if (!out) return Unavailable("--decision-log: cannot write " + f.decision_log);
  }
  auto cluster = LoadCluster(f.cluster);
  if (!cluster.ok()) return Status(cluster.status().code(), "--cluster: " + cluster.status().message());
  SimSetup setup{std::move(*cluster), {}, {}, {}, nullptr};
  if (f.traces.empty()) {
    // The embedded default: a Philly-like mix, arrivals dense enough that
    // jobs queue on the demo cluster.
    GenTraceOptions g;
    g.seed = f.seed;
    g.jobs = 400;
    g.arrival_rate_per_hour = 250;
    auto generated = GenerateTrace(g);
    if (!generated.ok()) return generated.status();
    setup.workload = std::move(*generated);
    setup.workload.name = "generated (gen-trace --jobs 400 --rate 250 --seed " + std::to_string(f.seed) + ")";
    if (f.limit > 0 && setup.workload.jobs.size() > f.limit) setup.workload.jobs.resize(f.limit);
  } else {
    auto format = ParseTraceFormat(f.format);
    if (!format.ok()) return InvalidArgument("--format: " + format.status().message());
    TraceOptions opts;
    opts.seed = f.seed;
    opts.limit = f.limit;
    opts.time_scale = f.time_scale;
    if (!f.no_apps) opts.apps_dir = f.apps;
    opts.arena_iteration_divisor = f.arena_iteration_divisor;
    if (f.setting == "arena-artifact") {
      // Arrivals at the start of their round, as the artifact's.
      auto round = ParseDuration(f.round.empty() ? "300" : f.round, "--round");
      if (!round.ok()) return round.status();
      opts.arena_round_s = ToSeconds(*round);
    }
    auto w = LoadTraces(f.traces, *format, opts);
    if (!w.ok()) return w.status();
    setup.workload = std::move(*w);
  }
  setup.notes = setup.workload.notes;
  if (!f.no_apps) {
    std::string dir = f.apps.empty() ? setup.workload.apps_dir : f.apps;
    if (!dir.empty()) {
      auto apps = goodput::AppCatalog::Load(dir);
      if (!apps.ok()) return Status(apps.status().code(), "--apps: " + apps.status().message());
      size_t played = 0;
      for (const JobSpec& j : setup.workload.jobs)
        if (!j.app.empty() && apps->Find(j.app) != nullptr) ++played;
      if (played > 0) {
        setup.apps = std::make_shared<const goodput::AppCatalog>(std::move(*apps));
        setup.notes.push_back(std::to_string(played) + " jobs played from application profiles in " + dir);
      }
    }
  }
  const bool app_defaults = setup.apps != nullptr;
  SimConfig& c = setup.config;
  c.seed = f.seed;
  auto rule = goodput::ParseScalingRule(f.scaling_rule);
  if (!rule.ok()) return InvalidArgument("--scaling-rule: " + rule.status().message());
  c.scaling_rule = *rule;
  if (f.setting != "default" && f.setting != "arena-artifact" && f.setting != kDdlPaperSetting)
    return InvalidArgument("--setting " + f.setting + ": expected default, arena-artifact or ddl-paper");
  const bool artifact = f.setting == "arena-artifact";
  setup.ddl_paper = f.setting == kDdlPaperSetting;
  if (setup.ddl_paper) {
    // Their simulator has no failures, no interference model, no measured
    // truth but the models' own profiles, and no logs of tessel's engine.
    if (f.node_mtbf_h > 0 || f.interference > 0 || f.truth != "estimator" || !f.event_log.empty() ||
        !f.decision_log.empty() || !f.autoscale.empty()) {
      return InvalidArgument(
          "--setting ddl-paper plays Wang et al.'s simulator, which has no failures, interference, --truth "
          "source, event log, decision log or auto-scaling: drop --node-mtbf-h, --interference, --truth, "
          "--event-log, --decision-log and --autoscale");
    }
  }
  setup.arena_artifact = artifact;
  if (artifact) {
    // The artifact's schedulers give a job 1 to 16 GPUs, Crius and the
    // baselines alike (MAX_SUPPORTED_GPU_NUM and SUPPORTED_GPU_NUM_LIST,
    // macro/macro_def.py:106-107; scheduler.py:2978): its profile database
    // covers those counts.
    for (JobSpec& j : setup.workload.jobs) j.max_gpus = std::min(j.max_gpus, std::max(16, j.requested_gpus));
  }
  setup.truth = artifact ? "arena-db" : f.truth;
  if (f.deadline_slack != -1 && !(f.deadline_slack > 0 && f.deadline_slack <= 1e6)) {
    return InvalidArgument("--deadline-slack: expected a number > 0 and at most 1e6, got " + FormatDouble(f.deadline_slack));
  }
  const double slack = f.deadline_slack > 0 ? f.deadline_slack : (artifact ? 5.0 : 1.0);
  if (slack != 1.0) {
    for (JobSpec& j : setup.workload.jobs) {
      if (j.deadline) j.deadline = j.submit + static_cast<SimTime>(std::llround(slack * static_cast<double>(*j.deadline - j.submit)));
    }
  }
  auto round = ParseDuration(f.round.empty() ? (app_defaults ? "60" : "300") : f.round, "--round");
  if (!round.ok()) return round.status();
  // A round shorter than a second lets a round-based policy re-plan (and
  // restart jobs) before anything progresses: refused, not looped on.
  if (*round < Seconds(1)) return InvalidArgument("--round: must be at least 1 s, got " + f.round);
  c.round = *round;
  c.complete_at_rounds = artifact;
  if (!f.horizon.empty()) {
    auto h = ParseDuration(f.horizon, "--horizon");
    if (!h.ok()) return h.status();
    c.horizon = *h;
  }
  // Times become integer microseconds: keep them finite and representable.
  constexpr double kMaxSeconds = 1e9;  // about 31 years
  auto seconds_ok = [&](double v) { return std::isfinite(v) && v >= 0 && v <= kMaxSeconds; };
  if (!seconds_ok(f.node_mtbf_h * 3600) || !seconds_ok(f.repair_h * 3600) || !seconds_ok(f.checkpoint_interval_s) ||
      !(f.storage_gbs > 0) || !std::isfinite(f.storage_gbs) || !(f.time_scale > 0) || !std::isfinite(f.time_scale)) {
    return InvalidArgument(
        "--node-mtbf-h, --repair-h and --checkpoint-interval: expected finite values >= 0 (at most 1e9 s); "
        "--storage-gbs and --time-scale: expected finite values > 0");
  }
  if (f.network != "flow" && f.network != "off")
    return InvalidArgument("--network '" + f.network + "': expected flow or off");
  c.network.enabled = f.network == "flow";
  if (!std::isfinite(f.contention_overhead) || f.contention_overhead < 0 || f.contention_overhead > 100)
    return InvalidArgument("--contention-overhead: expected a finite number from 0 to 100");
  c.network.contention_overhead = f.contention_overhead;
  if (!std::isfinite(f.interference) || f.interference < 0 || f.interference >= 1)
    return InvalidArgument("--interference " + FormatDouble(f.interference) +
                           ": expected a fraction from 0 (none) up to, not including, 1");
  c.interference = f.interference;
  if (!f.autoscale.empty()) {
    auto a = ParseAutoscale(f.autoscale, static_cast<int>(setup.cluster.nodes().size()), f.autoscale_window,
                            f.autoscale_by);
    if (!a.ok()) return a.status();
    if (!(f.boot_delay_s >= 0 && f.boot_delay_s <= 1e6))
      return InvalidArgument("--boot-delay: expected seconds from 0 to 1e6, got " + FormatDouble(f.boot_delay_s));
    c.autoscale = *a;
    c.autoscale.boot_delay_s = f.boot_delay_s;
  } else if (f.boot_delay_s != 0 || f.autoscale_window != 15 || f.autoscale_by != "goodput") {
    return InvalidArgument("--boot-delay, --autoscale-window and --autoscale-by apply with --autoscale only");
  }
  // Failures must come slower than a job can restart, or nothing
  // progresses: the cluster's mean time between failures (per-node MTBF /
  // nodes) must be at least a minute.
  const size_t nodes = setup.cluster.nodes().size();
  const double cluster_mtbf_s = f.node_mtbf_h * 3600 / static_cast<double>(nodes);
  if (f.node_mtbf_h > 0 && cluster_mtbf_s < 60) {
    return InvalidArgument("--node-mtbf-h " + FormatDouble(f.node_mtbf_h) + ": with " + std::to_string(nodes) +
                           " nodes a node fails every " + FormatDouble(cluster_mtbf_s) +
                           " s; at least 60 s between failures (per-node MTBF >= 60 s x nodes) is accepted");
  }
  c.failures.node_mtbf_s = f.node_mtbf_h * 3600;
  c.failures.repair_s = f.repair_h * 3600;
  c.failures.checkpoint_interval_s = f.checkpoint_interval_s;
  c.reconfig.storage_gbs_per_node = f.storage_gbs;
  // -1 (the flags' default) means "the workload's default".
  if ((f.restart_overhead_s != -1 && !seconds_ok(f.restart_overhead_s)) ||
      (f.start_overhead_s != -1 && !seconds_ok(f.start_overhead_s))) {
    return InvalidArgument("--restart-overhead and --start-overhead: expected finite seconds >= 0 (at most 1e9)");
  }
  if (f.arena_iteration_divisor < 1) {
    return InvalidArgument("--arena-iteration-divisor: expected an integer >= 1, got " +
                           std::to_string(f.arena_iteration_divisor));
  }
  c.reconfig.restart_overhead_s =
      f.restart_overhead_s >= 0 ? f.restart_overhead_s : (artifact ? 0 : app_defaults ? 30 : 10);
  c.reconfig.start_overhead_s = f.start_overhead_s >= 0 ? f.start_overhead_s : (app_defaults && !artifact ? 30 : 0);
  c.reconfig.baselines_pay_full_search = artifact;
  c.reconfig.checkpoints = !artifact;
  if (artifact) c.reconfig.debt_round_s = ToSeconds(c.round);
  c.reference_gpu = f.reference_gpu;
  if (!f.reference_gpu.empty() && setup.cluster.FindType(f.reference_gpu) < 0) {
    std::vector<std::string> have;
    for (size_t t = 0; t < setup.cluster.types().size(); ++t) have.push_back(setup.cluster.TypeName(t));
    return InvalidArgument("--reference-gpu " + f.reference_gpu + ": not in the cluster; it has " + Join(have, ", "));
  }
  if (setup.truth != "estimator" && setup.truth != "arena-db") {
    return InvalidArgument("--truth " + f.truth + ": expected estimator or arena-db");
  }
  auto mode = ParsePlanMode(f.baseline_parallelism);
  if (!mode.ok()) return InvalidArgument("--baseline-parallelism: " + mode.status().message());
  auto placement =
      ParsePlacementRule(!f.placement.empty() ? f.placement : setup.ddl_paper ? "lwf-kappa:kappa=2" : "consolidate");
  if (!placement.ok()) return InvalidArgument("--placement: " + placement.status().message());
  c.placement = *placement;
  return setup;
}

namespace {

// A one-line progress bar, redrawn in place, on a terminal only.
class ProgressBar {
 public:
  explicit ProgressBar(std::ostream& err, std::string label) : err_(err), label_(std::move(label)) {}
  ~ProgressBar() {
    if (drawn_) err_ << "\r\033[K" << std::flush;
  }
  void Update(const SimProgress& p) {
    int pct = p.total > 0 ? static_cast<int>(100.0 * p.finished / p.total) : 100;
    int fill = pct / 4;
    err_ << "\r" << label_ << " [" << std::string(fill, '#') << std::string(25 - fill, '.') << "] " << pct << "% "
         << p.finished << "/" << p.total << " jobs, t=" << FormatDuration(p.now) << "\033[K" << std::flush;
    drawn_ = true;
  }

 private:
  std::ostream& err_;
  std::string label_;
  bool drawn_ = false;
};

}  // namespace

Result<SimFlags> ParseSimFlags(const std::vector<std::string>& args) {
  SimFlags flags;
  CLI::App app{"tessel simulate"};
  flags.Add(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(e.what());
  }
  return flags;
}

// Under --setting arena-artifact, whether a policy's lookups pass the
// artifact's data-parallel memory check (sjtu-epcc/arena, ae-eurosys):
// - arena and the policies that search plans price each plan by its own
//   memory: no data-parallel check;
// - fcfs: never checked. baselines/fcfs_sched.py:236-248 drops an arriving
//   job only when `_is_alloc_feasible(..., force_opt=True)` fails, and
//   places with `force_opt=True` (:170, :217); db_querier.py:93 skips the
//   out-of-memory check under force_opt (the profile database holds the
//   optimal plan's times only);
// - every other baseline (gavel, elasticflow, sia, ...): checked on every
//   lookup (ArenaDpMemoryGate).
bool ArtifactChecksMemory(const Policy& policy) {
  if (policy.traits().searches_plans) return false;
  return policy.name() != "fcfs";
}

PolicyContext MakePolicyContext(const SimFlags& f) {
  PolicyContext ctx;
  ctx.baseline_plan_mode = ParsePlanMode(f.baseline_parallelism).value();
  ctx.seed = f.seed;
  ctx.arena_artifact = f.setting == "arena-artifact";
  ctx.ddl_paper = f.setting == kDdlPaperSetting;
  return ctx;
}

Result<SimResult> RunPolicy(const SimSetup& setup, const SimFlags& f, const std::string& policy_spec,
                            std::ostream& err) {
  auto policy = PolicyRegistry::Builtin().Create(policy_spec, MakePolicyContext(f));
  if (!policy.ok()) return policy.status();
  return RunPolicy(setup, f, **policy, policy_spec, err);
}

Result<SimResult> RunPolicy(const SimSetup& setup, const SimFlags& f, Policy& the_policy, const std::string& policy_spec,
                            std::ostream& err) {
  Policy* const policy = &the_policy;
  if (setup.ddl_paper) {
    auto config = DdlPaperConfig(setup.cluster, *policy, setup.config.placement, setup.config.horizon);
    if (!config.ok()) return config.status();
    return RunDdlPaper(setup.cluster, setup.workload, *config, setup.config, policy_spec);
  }
  EstimatorThroughput estimator(setup.cluster, policy->traits().plan_mode);
  // Jobs of profiled models (model/profiled_model.h) run at their measured
  // times under every truth, and the belief knows them too.
  ProfiledThroughput belief(setup.cluster, estimator);
  ThroughputModel* truth = &belief;
  std::unique_ptr<ArenaDbThroughput> db, dp_db;
  std::unique_ptr<ProfiledThroughput> profiled_db, dp_profiled;
  std::unique_ptr<ArenaDpMemoryGate> gate;
  if (setup.truth == "arena-db") {
    std::string path = (std::filesystem::path(DataDir(f.data)) / "arena/database/prof_database.json").string();
    auto loaded = ArenaDbThroughput::Load(path, setup.cluster, estimator);
    if (!loaded.ok()) return Status(loaded.status().code(), "--truth arena-db: " + loaded.status().message());
    db = std::move(*loaded);
    if (setup.arena_artifact) db->AnswerAsTheArtifactsQuerier();
    profiled_db = std::make_unique<ProfiledThroughput>(setup.cluster, *db);
    truth = profiled_db.get();
  }
  // What the policy believes: the estimator, or under the artifact's
  // setting the measured truth, behind its memory check for baselines.
  ThroughputModel* believed = &belief;
  if (setup.arena_artifact) {
    believed = truth;
    if (ArtifactChecksMemory(*policy)) {
      // The baselines decide on the artifact's data-parallel queries (the
      // querier's entries without its scale factors); jobs run at the
      // optimal plan's, the truth's.
      dp_db = db->ArtifactDataParallelView();
      dp_profiled = std::make_unique<ProfiledThroughput>(setup.cluster, *dp_db);
      std::string path = (std::filesystem::path(DataDir(f.data)) / "arena/database/dp_mem.json").string();
      auto loaded = ArenaDpMemoryGate::Load(path, setup.cluster, *dp_profiled);
      if (!loaded.ok()) return Status(loaded.status().code(), "--setting arena-artifact: " + loaded.status().message());
      gate = std::move(*loaded);
      believed = gate.get();
    }
  }
  RefusalCounter counted(*believed);
  Simulator sim(setup.cluster, setup.workload, *policy, counted, *truth, setup.config);
  sim.set_apps(setup.apps.get());
  std::ofstream log;
  if (!f.event_log.empty()) {
    log.open(f.event_log, std::ios::binary);
    if (!log) return Unavailable("--event-log: cannot write " + f.event_log);
    sim.set_event_log(&log);
  }
  std::ofstream decisions;
  if (!f.decision_log.empty()) {
    decisions.open(f.decision_log, std::ios::binary | std::ios::app);
    if (!decisions) return Unavailable("--decision-log: cannot write " + f.decision_log);
    sim.set_decision_log(&decisions, policy_spec.find(',') == std::string::npos ? policy_spec : "\"" + policy_spec + "\"");
  }
  std::unique_ptr<ProgressBar> bar;
  if (!f.no_progress && &err == &std::cerr && isatty(STDERR_FILENO)) {
    bar = std::make_unique<ProgressBar>(err, policy_spec);
    sim.set_progress([b = bar.get()](const SimProgress& p) { b->Update(p); }, 2048);
  }
  auto result = sim.Run();
  bar.reset();
  if (!result.ok()) return result.status();
  result->summary.policy = policy_spec;
  if (db) result->summary.truth_fallbacks += db->fallback_answers();
  result->summary.memory_refusals = counted.refusals();
  result->summary.jobs_memory_refused = counted.jobs_refused();
  return result;
}

}  // namespace tessel
