// Pollux's and Sia's workload files (name,time,application,num_replicas,
// batch_size) with the work of each job taken from the application's
// validation profile; see trace.h.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/strings.h"
#include "model/catalog.h"
#include "workload/importers.h"

namespace tessel::workload_internal {

namespace fs = std::filesystem;

namespace {

// Application -> catalog model. `own` marks the application's own model
// (Pollux §5.1 / Sia Table 3); the others are stand-ins because the catalog
// has no ResNet-18 (its CNN builder makes bottleneck ResNets only), no
// Darknet-53, no RNN (DeepSpeech2) and no recommender (NCF). Stand-ins are
// chosen by kind (CNN for vision, a small transformer for the others), not
// by cost: a simulation will time them as the stand-in.
struct PolluxApp {
  const char* app;
  const char* model;
  bool own;
};
constexpr PolluxApp kPolluxApps[] = {
    {"imagenet", "resnet-50", true},     // ResNet-50 on ImageNet
    {"bert", "bert-base", true},         // BERT-base fine-tuning on SQuAD
    {"cifar10", "resnet-50", false},     // ResNet-18 on CIFAR-10 (32 px)
    {"yolov3", "resnet-50", false},      // YOLOv3 (Darknet-53) on PASCAL VOC
    {"deepspeech2", "bert-base", false},  // DeepSpeech2 (RNN) on CommonVoice
    {"ncf", "bert-base", false},         // NeuMF on MovieLens
    {"gpt_pmp", "gpt3-1.3b", false},     // Sia's pipeline-parallel GPT
};

constexpr int kPolluxMaxGpus = 64;

// The validation profiles of one application: batch size -> path, and the
// last iteration of those read so far.
struct AppProfile {
  std::string dir;
  std::map<long long, std::string> files;
  std::map<long long, double> last_iteration;
};

Result<AppProfile> FindProfile(const std::string& workload_path, const std::string& apps_dir,
                               const std::string& app, const std::string& where) {
  fs::path parent = fs::path(workload_path).parent_path();
  std::vector<fs::path> candidates = {parent / ".." / "apps" / app,
                                      parent / ".." / ".." / "apps" / app};
  if (!apps_dir.empty()) candidates = {fs::path(apps_dir) / app};
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (!fs::is_directory(c, ec)) continue;
    AppProfile p;
    p.dir = c.lexically_normal().string();
    for (const auto& e : fs::directory_iterator(c, ec)) {
      std::string name = e.path().filename().string();
      if (!StartsWith(name, "validation-") || !EndsWith(name, ".csv")) continue;
      std::string bsz = name.substr(11, name.size() - 11 - 4);
      auto v = ParseInt(bsz, name);
      if (v.ok() && *v > 0) p.files[*v] = e.path().string();
    }
    if (p.files.empty()) {
      return NotFound(where + ": no validation-<batch size>.csv in " + p.dir);
    }
    return p;
  }
  std::vector<std::string> looked;
  for (const fs::path& c : candidates) looked.push_back(c.lexically_normal().string());
  return NotFound(where + ": no profile directory for application '" + app + "'; looked for " +
                  Join(looked, " and ") + (apps_dir.empty() ? " (--apps names another)" : ""));
}

// Iterations to finish at batch size `bsz`: the exact profile's last
// iteration, else the nearest batch size's (in log ratio) scaled by
// profile_bsz / bsz. Sets `nearest` when it had to approximate.
Result<double> ProfileIterations(AppProfile& p, long long bsz, bool& nearest) {
  auto pick = p.files.find(bsz);
  nearest = pick == p.files.end();
  if (nearest) {
    double best = INFINITY;
    for (auto it = p.files.begin(); it != p.files.end(); ++it) {
      double d = std::abs(std::log(static_cast<double>(it->first) / bsz));
      if (d < best) {
        best = d;
        pick = it;
      }
    }
  }
  long long file_bsz = pick->first;
  auto cached = p.last_iteration.find(file_bsz);
  if (cached == p.last_iteration.end()) {
    auto table = CsvTable::ReadFile(pick->second);
    if (!table.ok()) return table.status();
    if (!table->HasColumn("iteration") || table->rows().empty()) {
      return InvalidArgument(pick->second + ": expected an 'iteration' column and at least one row");
    }
    auto last = table->GetDouble(table->rows().back(), "iteration");
    if (!last.ok()) return last.status();
    if (*last <= 0) {
      return InvalidArgument(table->Where(table->rows().back(), "iteration") +
                             ": expected a number > 0 at the last row");
    }
    cached = p.last_iteration.emplace(file_bsz, *last).first;
  }
  return cached->second * static_cast<double>(file_bsz) / static_cast<double>(bsz);
}

}  // namespace

Status ImportPollux(const ImportFile& in, Workload& out) {
  const CsvTable& t = in.table;
  std::map<std::string, AppProfile> profiles;
  std::map<std::string, size_t> used;  // application -> jobs
  size_t nearest_jobs = 0;
  for (const CsvRow& row : t.rows()) {
    JobSpec j;
    j.id = t.Get(row, "name");
    if (j.id.empty()) return InvalidArgument(t.Where(row, "name") + ": expected a job name, got an empty value");
    j.origin = Origin(t, row);

    auto submit = GetNonNegative(t, row, "time");
    if (!submit.ok()) return submit.status();
    j.submit = Seconds(*submit);

    std::string app = t.Get(row, "application");
    const PolluxApp* spec = nullptr;
    for (const PolluxApp& a : kPolluxApps)
      if (app == a.app) spec = &a;
    if (spec == nullptr) {
      std::vector<std::string> known;
      for (const PolluxApp& a : kPolluxApps) known.push_back(a.app);
      return InvalidArgument(t.Where(row, "application") + ": " +
                             UnknownNameMessage("application", app, known));
    }
    auto model = FindModel(spec->model);
    if (!model.ok()) return Internal(std::string("pollux app model: ") + model.status().message());
    j.model = (*model)->name;

    auto replicas = GetCount(t, row, "num_replicas");
    if (!replicas.ok() || *replicas < 1) {
      return InvalidArgument(t.Where(row, "num_replicas") + ": expected an integer >= 1, got '" +
                             t.Get(row, "num_replicas") + "'");
    }
    auto bsz = GetCount(t, row, "batch_size");
    if (!bsz.ok() || *bsz < 1) {
      return InvalidArgument(t.Where(row, "batch_size") + ": expected an integer >= 1, got '" +
                             t.Get(row, "batch_size") + "'");
    }
    j.global_batch = static_cast<int>(*bsz);
    j.requested_gpus = static_cast<int>(*replicas);
    j.min_gpus = 1;
    j.max_gpus = std::max(kPolluxMaxGpus, j.requested_gpus);
    j.adaptive_batch = true;
    j.app = app;

    auto it = profiles.find(app);
    if (it == profiles.end()) {
      auto p = FindProfile(in.path, in.opts.apps_dir, app, t.Where(row, "application"));
      if (!p.ok()) return p.status();
      it = profiles.emplace(app, std::move(*p)).first;
    }
    bool nearest = false;
    auto iters = ProfileIterations(it->second, *bsz, nearest);
    if (!iters.ok()) return iters.status();
    j.iterations = *iters;
    if (nearest) ++nearest_jobs;
    ++used[app];
    out.jobs.push_back(std::move(j));
  }
  if (!profiles.empty() && out.apps_dir.empty()) {
    out.apps_dir = fs::path(profiles.begin()->second.dir).parent_path().string();
  }
  for (const auto& [app, n] : used) {
    for (const PolluxApp& a : kPolluxApps) {
      if (app != a.app) continue;
      out.notes.push_back(in.stem + ": " + std::to_string(n) + " " + app + " jobs as " + a.model +
                          (a.own ? "" : " (stand-in: the catalog lacks the app's model)") +
                          "; iterations from " + profiles.at(app).dir);
    }
  }
  if (nearest_jobs > 0) {
    out.notes.push_back(in.stem + ": " + std::to_string(nearest_jobs) +
                        " jobs had no validation profile at their batch size; iterations from "
                        "the nearest batch size's, scaled by the batch ratio");
  }
  return Status::Ok();
}

}  // namespace tessel::workload_internal
