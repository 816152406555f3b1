#include "workload/gen_trace.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <cmath>
#include <iterator>
#include <numbers>
#include <random>
#include <string_view>

#include "core/strings.h"
#include "hardware/gpu.h"
#include "model/profiled_model.h"
#include "workload/model_mapping.h"

namespace tessel {

namespace {

// One GPU-count class of a profile: how many jobs of the source trace fell
// in it, and the log-normal fit of their durations (median = exp(mean of
// ln duration), sigma = standard deviation of ln duration). Counts between
// classes are folded into the class below (12 GPUs into 8, 24 into 16, 128
// into 64).
struct GpuClass {
  int gpus;
  long long jobs;
  double median_s;
  double sigma;
};

struct Profile {
  std::string_view name;
  double jobs_per_hour;  // the trace's jobs / its submission span
  std::vector<GpuClass> classes;
};

// Measured from ../shared/data: pollux/philly.csv (82,247 jobs over
// 2,613.5 h) and itp/cluster01..10.csv (69,351 jobs over 1,437.0 h).
const std::vector<Profile>& Profiles() {
  static const std::vector<Profile> kProfiles = {
      {"philly",
       31.47,
       {{1, 76627, 1117, 1.97},
        {2, 1818, 21, 3.27},
        {4, 1870, 17409, 2.78},
        {8, 1650, 23622, 2.79},
        {16, 206, 42152, 3.34},
        {32, 67, 14262, 2.47},
        {64, 9, 3071, 3.64}}},
      {"itp",
       48.26,
       {{1, 57682, 10131, 1.09},
        {2, 1483, 3478, 1.15},
        {4, 2371, 8325, 1.62},
        {8, 7009, 18320, 1.53},
        {16, 381, 31780, 1.98},
        {32, 354, 75007, 1.80},
        {64, 71, 31372, 1.73}}},
  };
  return kProfiles;
}

// Durations outside [1 s, 30 days] are clamped (the log-normal's tails run
// past anything the traces hold).
constexpr double kMinDurationS = 1;
constexpr double kMaxDurationS = 30 * 86400.0;

// Uniform in (0, 1): 53 random bits, offset by half a step so neither end
// is reachable (log(0) cannot happen).
double Uniform(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
}

double Exponential(std::mt19937_64& rng, double mean) { return -mean * std::log(Uniform(rng)); }

// Box-Muller; draws two uniforms per call, uses one normal.
double StandardNormal(std::mt19937_64& rng) {
  double u1 = Uniform(rng), u2 = Uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Wang et al. (ICDCS 2020)'s job set (gen_trace.h, the ddl profile):
// online/job_master.py of HKBU-HPML/dl-scheduling (d5398bd).
constexpr std::string_view kDdlProfile = "ddl";
constexpr int kDdlJobs = 160;
struct DdlClass {
  int gpus;
  int share;  // jobs of 160 (their job_dist, cumulative 40/47/60/75/79/80 x 2)
};
constexpr DdlClass kDdlClasses[] = {{1, 80}, {2, 14}, {4, 26}, {8, 30}, {16, 8}, {32, 2}};
// Their SUPPORT_NETS order.
constexpr std::string_view kDdlModels[] = {"ddl-vgg16", "ddl-resnet50", "ddl-inception3", "ddl-lstm-ptb"};
constexpr int kDdlMinIterations = 10;  // randint(1 * scale, 6 * scale), scale 10
constexpr int kDdlMaxIterations = 60;
constexpr double kDdlWindowS = 12;  // ARRIVAL_MAX = 1200 * scale ms

// Jobs per class for `jobs` jobs: the shares by largest remainder, ties to
// the earlier (smaller) class.
std::vector<int> DdlClassCounts(int jobs) {
  const int n = static_cast<int>(std::size(kDdlClasses));
  std::vector<int> counts(n);
  std::vector<std::pair<long long, int>> remainders;  // (remainder x 160, class)
  int assigned = 0;
  for (int k = 0; k < n; ++k) {
    long long scaled = static_cast<long long>(jobs) * kDdlClasses[k].share;
    counts[k] = static_cast<int>(scaled / kDdlJobs);
    assigned += counts[k];
    remainders.emplace_back(scaled % kDdlJobs, k);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; assigned < jobs; ++i, ++assigned) ++counts[remainders[i].second];
  return counts;
}

std::string JobId(int i) {
  std::string n = std::to_string(i);
  if (n.size() < 5) n.insert(0, 5 - n.size(), '0');
  return "gen-" + n;
}

}  // namespace

std::vector<std::string> GenTraceProfileNames() {
  std::vector<std::string> out;
  for (const Profile& p : Profiles()) out.emplace_back(p.name);
  out.emplace_back(kDdlProfile);
  return out;
}

int GenTraceDefaultJobs(std::string_view profile) {
  return ToLower(profile) == kDdlProfile ? kDdlJobs : GenTraceOptions{}.jobs;
}

namespace {

// The ddl profile (gen_trace.h). `types`: the resolved --gpu-types.
Result<Workload> GenerateDdl(const GenTraceOptions& opts, const std::vector<std::string>& types) {
  // Their rate, 160 jobs per 12 s, unless told.
  const double rate = opts.arrival_rate_per_hour > 0 ? opts.arrival_rate_per_hour
                                                     : kDdlJobs * 3600.0 / kDdlWindowS;
  const double window_ms = opts.jobs * 3600.0 / rate * 1e3;
  // The same bound as the Poisson profiles' arrivals (a rate of 1e-300 per
  // hour made the window infinite and every arrival 0).
  if (!(window_ms / 1e3 <= kMaxInputSeconds)) {
    return InvalidArgument("arrival rate " + FormatDouble(rate) + " per hour spreads " + std::to_string(opts.jobs) +
                           " jobs over " + FormatDouble(window_ms / 1e3) +
                           " s, beyond the largest time a trace may give (1e10 s)");
  }
  Workload w;
  w.name = "gen-ddl-seed" + std::to_string(opts.seed);
  std::mt19937_64 rng(opts.seed);
  // Uniform over 0 .. n-1.
  auto pick = [&rng](size_t n) {
    return std::min(n - 1, static_cast<size_t>(Uniform(rng) * static_cast<double>(n)));
  };
  // Drawn class by class, as their generator writes job files; draw order
  // per job: model, iterations, arrival, type.
  const std::vector<int> counts = DdlClassCounts(opts.jobs);
  for (size_t k = 0; k < counts.size(); ++k) {
    for (int c = 0; c < counts[k]; ++c) {
      const ProfiledModel* model = FindProfiledModel(kDdlModels[pick(std::size(kDdlModels))]);
      assert(model != nullptr && "the ddl profile's models are profiled models");
      const int span = kDdlMaxIterations - kDdlMinIterations + 1;
      double iterations = kDdlMinIterations + static_cast<int>(pick(static_cast<size_t>(span)));
      double arrival_ms = std::floor(Uniform(rng) * window_ms);
      JobSpec j;
      j.submit = static_cast<SimTime>(arrival_ms) * (kMicrosPerSecond / 1000);
      j.requested_gpus = std::min(kDdlClasses[k].gpus, opts.max_job_gpus);
      j.model = model->name;
      j.global_batch = model->per_gpu_batch * j.requested_gpus;
      j.iterations = std::max(1.0, std::round(iterations * opts.duration_scale));
      if (!types.empty()) j.requested_gpu_type = types[pick(types.size())];
      j.min_gpus = opts.elastic ? 1 : j.requested_gpus;
      j.max_gpus = opts.elastic ? std::max(j.requested_gpus, std::min(4 * j.requested_gpus, opts.max_job_gpus))
                                : j.requested_gpus;
      w.jobs.push_back(std::move(j));
    }
  }
  SortBySubmit(w, /*rebase=*/true);
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    w.jobs[i].id = JobId(static_cast<int>(i));
    w.jobs[i].origin = w.name + " #" + std::to_string(i);
  }
  std::vector<std::string> mix;
  for (size_t k = 0; k < counts.size(); ++k)
    mix.push_back(std::to_string(counts[k]) + " x " + std::to_string(kDdlClasses[k].gpus));
  w.notes.push_back(w.name + ": " + std::to_string(opts.jobs) +
                    " jobs of Wang et al. (ICDCS 2020)'s setting: GPUs " + Join(mix, ", ") +
                    "; models uniform over " + Join(ProfiledModelNames(), ", ") + "; " +
                    std::to_string(kDdlMinIterations) + "-" + std::to_string(kDdlMaxIterations) +
                    " iterations" +
                    (opts.duration_scale != 1.0 ? " (x " + FormatDouble(opts.duration_scale) + ")" : std::string()) +
                    "; arrivals uniform over " + FormatDouble(window_ms / 1e3) + " s");
  return w;
}


// Deadlines for a share of the jobs (GenTraceOptions::deadline_fraction),
// from their own random stream; `alone_s` is each job's time alone.
void AddDeadlines(const GenTraceOptions& opts, Workload& w, const std::function<double(const JobSpec&)>& alone_s) {
  if (!(opts.deadline_fraction > 0)) return;
  std::mt19937_64 rng(opts.seed ^ 0x6465616431696e65ULL);  // "deadline"
  int given = 0;
  for (JobSpec& j : w.jobs) {
    const double u = Uniform(rng), slack = opts.deadline_min + (opts.deadline_max - opts.deadline_min) * Uniform(rng);
    if (u >= opts.deadline_fraction) continue;
    j.deadline = j.submit + Seconds(std::round(slack * alone_s(j) * 1e3) / 1e3);  // whole ms
    ++given;
  }
  w.notes.push_back(w.name + ": " + std::to_string(given) + " jobs with a deadline of submit + U(" +
                    FormatDouble(opts.deadline_min) + ", " + FormatDouble(opts.deadline_max) +
                    ") x their duration alone");
}

}  // namespace

Result<Workload> GenerateTrace(const GenTraceOptions& opts) {
  const Profile* profile = nullptr;
  const bool ddl = ToLower(opts.profile) == kDdlProfile;
  for (const Profile& p : Profiles())
    if (ToLower(opts.profile) == p.name) profile = &p;
  if (profile == nullptr && !ddl) {
    return InvalidArgument(UnknownNameMessage("trace profile", opts.profile,
                                              GenTraceProfileNames()));
  }
  if (opts.jobs < 0 || opts.jobs > kMaxGeneratedJobs) {
    // Bounded before anything is allocated (a billion jobs took 16 GB).
    return InvalidArgument("jobs: expected an integer from 0 to " + std::to_string(kMaxGeneratedJobs) + ", got " +
                           std::to_string(opts.jobs));
  }
  if (!(opts.arrival_rate_per_hour >= 0) || !std::isfinite(opts.arrival_rate_per_hour)) {
    return InvalidArgument("arrival rate: expected jobs per hour > 0 (or 0 for the profile's), got " +
                           FormatDouble(opts.arrival_rate_per_hour));
  }
  if (!(opts.duration_scale > 0) || !std::isfinite(opts.duration_scale)) {
    return InvalidArgument("duration scale: expected a number > 0, got " +
                           FormatDouble(opts.duration_scale));
  }
  if (opts.max_job_gpus < 1) {
    return InvalidArgument("max job GPUs: expected an integer >= 1, got " +
                           std::to_string(opts.max_job_gpus));
  }
  std::vector<std::string> types;
  for (const std::string& t : opts.gpu_types) {
    auto g = FindGpu(t);
    if (!g.ok()) return InvalidArgument("gpu types: " + g.status().message());
    types.push_back((*g)->name);
  }
  if (!(opts.deadline_fraction >= 0 && opts.deadline_fraction <= 1)) {
    return InvalidArgument("deadlines: expected a share of the jobs from 0 to 1, got " +
                           FormatDouble(opts.deadline_fraction));
  }
  if (!(opts.deadline_min > 0) || !(opts.deadline_max >= opts.deadline_min) || !(opts.deadline_max <= 1e3)) {
    return InvalidArgument("deadline range: expected 0 < LO <= HI <= 1000 (multiples of a job's duration), got " +
                           FormatDouble(opts.deadline_min) + "," + FormatDouble(opts.deadline_max));
  }
  if (ddl) {
    auto w = GenerateDdl(opts, types);
    if (w.ok()) {
      AddDeadlines(opts, *w, [](const JobSpec& j) {
        const ProfiledModel* m = FindProfiledModel(j.model);
        return m == nullptr ? 0.0 : j.iterations.value_or(0) * (m->forward_s + m->backward_s);
      });
    }
    return w;
  }

  const double rate = opts.arrival_rate_per_hour > 0 ? opts.arrival_rate_per_hour
                                                     : profile->jobs_per_hour;
  long long total_weight = 0;
  for (const GpuClass& c : profile->classes) total_weight += c.jobs;

  Workload w;
  w.name = "gen-" + std::string(profile->name) + "-seed" + std::to_string(opts.seed);
  std::mt19937_64 rng(opts.seed);
  double t = 0;
  for (int i = 0; i < opts.jobs; ++i) {
    // Draw order per job is fixed: arrival, class, duration, type.
    if (i > 0) t += Exponential(rng, 3600.0 / rate);
    if (!(t <= kMaxInputSeconds)) {
      // A tiny rate (1e-300 per hour) would push arrivals past any
      // representable time; refuse rather than write a wrapped submit.
      return InvalidArgument("arrival rate " + FormatDouble(rate) + " per hour puts job " + std::to_string(i) +
                             " at " + FormatDouble(t) + " s, beyond the largest time a trace may give (1e10 s)");
    }
    double pick = Uniform(rng) * static_cast<double>(total_weight);
    const GpuClass* cls = &profile->classes.back();
    for (const GpuClass& c : profile->classes) {
      if (pick < static_cast<double>(c.jobs)) {
        cls = &c;
        break;
      }
      pick -= static_cast<double>(c.jobs);
    }
    double duration = cls->median_s * std::exp(cls->sigma * StandardNormal(rng));
    duration = std::round(std::clamp(duration * opts.duration_scale, kMinDurationS, kMaxDurationS));

    JobSpec j;
    j.id = JobId(i);
    j.submit = Seconds(std::round(t));
    j.requested_gpus = std::min(cls->gpus, opts.max_job_gpus);
    j.duration_s = duration;
    MappedModel m = MapModel(opts.seed, j.id, j.requested_gpus, duration);
    j.model = std::move(m.model);
    j.global_batch = m.global_batch;
    if (!types.empty()) {
      size_t k = static_cast<size_t>(Uniform(rng) * static_cast<double>(types.size()));
      j.requested_gpu_type = types[std::min(k, types.size() - 1)];
    }
    j.min_gpus = opts.elastic ? 1 : j.requested_gpus;
    j.max_gpus = opts.elastic ? std::max(j.requested_gpus,
                                         std::min(4 * j.requested_gpus, opts.max_job_gpus))
                              : j.requested_gpus;
    j.origin = w.name + " #" + std::to_string(i);
    w.jobs.push_back(std::move(j));
  }
  w.notes.push_back(w.name + ": " + std::to_string(opts.jobs) + " jobs, Poisson arrivals at " +
                    FormatDouble(rate) + " jobs/hour, GPU counts and log-normal durations of the " +
                    std::string(profile->name) + " profile" +
                    (opts.duration_scale != 1.0
                         ? " (durations x " + FormatDouble(opts.duration_scale) + ")"
                         : std::string()));
  w.notes.push_back(w.name + ": " + ModelMappingNote(opts.seed, w.jobs.size()));
  AddDeadlines(opts, w, [](const JobSpec& j) { return j.duration_s.value_or(0); });
  return w;
}

}  // namespace tessel
