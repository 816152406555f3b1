#include "goodput/app_profile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/csv.h"
#include "core/strings.h"

namespace tessel::goodput {

namespace fs = std::filesystem;

namespace {

// One GPU type's throughput table, indexed for O(log n) lookups.
struct ThroughputTable {
  struct Point {
    double bsz = 0, step = 0, sync = 0;
  };
  // Points sorted by bsz, with duplicate bsz averaged.
  using Series = std::vector<Point>;
  struct ReplicaLevel {
    int replicas = 0;
    Series series;
  };
  struct NodeLevel {
    int nodes = 0;
    std::vector<ReplicaLevel> levels;  // ascending replicas
  };

  std::string source;               // the placements file (for messages)
  int gpus_per_node = 0;            // largest digit in the placements
  double min_bsz = 0, max_bsz = 0;  // local_bsz range of the placements rows
  // Canonical placement string (smallest rotation) -> its rows.
  std::map<std::string, Series, std::less<>> placements;
  // (nodes -> replicas -> bsz) grid of placement means and scalability rows.
  std::vector<NodeLevel> grid;  // ascending nodes
};
using Table = ThroughputTable;

}  // namespace

struct AppProfile::Table : ThroughputTable {};

AppSettings DefaultAppSettings(std::string_view app) {
  AppSettings s;
  if (app == "bert") {
    s.max_epochs = 2;
  } else if (app == "cifar10") {
    s.max_epochs = 100;
  } else if (app == "ncf") {
    s.max_epochs = 10;
    s.fixed_batch = 32768;
    s.max_replicas = 1;
  } else if (app == "imagenet") {
    s.max_epochs = 90;
  } else if (app == "deepspeech2") {
    s.max_epochs = 80;
  } else if (app == "yolov3") {
    s.max_epochs = 50;
    s.max_local_bsz = 8;
  } else if (app == "gpt_pmp") {
    s.max_epochs = 10;  // our choice: Sia's artifact does not state it
  }
  return s;
}

namespace {

// Sia's node kinds -> catalog GPU names, with a preference rank among the
// suffixes that map to the same GPU (lower wins).
struct NodeKind {
  std::string_view suffix;
  std::string_view gpu;
  int rank;
};
constexpr NodeKind kNodeKinds[] = {
    {"aws", "t4", 0},           {"", "t4", 1},          {"azure", "v100-32g", 0},
    {"dgx-ext", "a100-40g", 0}, {"dgx", "a100-40g", 1}, {"quad", "rtx6000", 0},
    {"rtx", "rtx2080ti", 0},
};

const NodeKind* FindNodeKind(std::string_view suffix) {
  for (const auto& k : kNodeKinds)
    if (k.suffix == suffix) return &k;
  return nullptr;
}

Status MissingColumns(const CsvTable& t, std::initializer_list<std::string_view> cols) {
  for (auto c : cols) {
    if (!t.HasColumn(c)) {
      std::vector<std::string> want(cols.begin(), cols.end());
      return InvalidArgument(t.source() + ": missing column '" + std::string(c) +
                             "' (expected columns " + Join(want, ",") + ")");
    }
  }
  return Status::Ok();
}

// A number that must be > 0 (or >= 0 when `allow_zero`).
Result<double> ReadPositive(const CsvTable& t, const CsvRow& row, std::string_view col,
                            std::string_view what, bool allow_zero = false) {
  auto v = t.GetDouble(row, col);
  if (!v.ok()) return v.status();
  if (allow_zero ? *v < 0 : *v <= 0) {
    return InvalidArgument(t.Where(row, col) + ": expected " +
                           (allow_zero ? "a non-negative " : "a positive ") + std::string(what) +
                           ", got '" + t.Get(row, col) + "'");
  }
  return *v;
}

// A positive whole number written as an integer or as "20.0".
Result<int> ReadCount(const CsvTable& t, const CsvRow& row, std::string_view col,
                      std::string_view what) {
  auto v = t.GetDouble(row, col);
  if (!v.ok()) return v.status();
  if (*v < 1 || *v != std::floor(*v) || *v > 1e6) {
    return InvalidArgument(t.Where(row, col) + ": expected a positive whole " + std::string(what) +
                           ", got '" + t.Get(row, col) + "'");
  }
  return static_cast<int>(*v);
}

// The lexicographically smallest rotation.
std::string SmallestRotation(const std::string& s) {
  std::string best = s;
  for (size_t i = 1; i < s.size(); ++i) {
    std::string rot = s.substr(i) + s.substr(0, i);
    if (rot < best) best = std::move(rot);
  }
  return best;
}

// Sorts by bsz and averages points at equal bsz.
Table::Series Consolidate(std::vector<Table::Point> pts) {
  std::sort(pts.begin(), pts.end(),
            [](const Table::Point& a, const Table::Point& b) { return a.bsz < b.bsz; });
  Table::Series out;
  size_t i = 0;
  while (i < pts.size()) {
    size_t j = i;
    Table::Point sum{pts[i].bsz, 0, 0};
    while (j < pts.size() && pts[j].bsz == pts[i].bsz) {
      sum.step += pts[j].step;
      sum.sync += pts[j].sync;
      ++j;
    }
    double n = static_cast<double>(j - i);
    out.push_back({sum.bsz, sum.step / n, sum.sync / n});
    i = j;
  }
  return out;
}

// Linear interpolation in bsz, clamped at the ends. `s` is non-empty.
StepTime InterpSeries(const Table::Series& s, double bsz) {
  if (bsz <= s.front().bsz) return {s.front().step, s.front().sync};
  if (bsz >= s.back().bsz) return {s.back().step, s.back().sync};
  auto hi = std::upper_bound(s.begin(), s.end(), bsz,
                             [](double b, const Table::Point& p) { return b < p.bsz; });
  auto lo = hi - 1;
  double w = (bsz - lo->bsz) / (hi->bsz - lo->bsz);
  return {lo->step + w * (hi->step - lo->step), lo->sync + w * (hi->sync - lo->sync)};
}

StepTime Lerp(const StepTime& a, const StepTime& b, double w) {
  return {a.step_s + w * (b.step_s - a.step_s), a.sync_s + w * (b.sync_s - a.sync_s)};
}

// Finds the bracketing entries of a sorted vector by key, clamped: returns
// (lo, hi, weight of hi).
template <typename T, typename Key>
void Bracket(const std::vector<T>& v, double x, Key key, size_t* lo, size_t* hi, double* w) {
  if (x <= key(v.front())) {
    *lo = *hi = 0;
    *w = 0;
    return;
  }
  if (x >= key(v.back())) {
    *lo = *hi = v.size() - 1;
    *w = 0;
    return;
  }
  auto it =
      std::upper_bound(v.begin(), v.end(), x, [&](double a, const T& e) { return a < key(e); });
  *hi = static_cast<size_t>(it - v.begin());
  *lo = *hi - 1;
  double k0 = key(v[*lo]), k1 = key(v[*hi]);
  *w = (x - k0) / (k1 - k0);
}

StepTime InterpNodeLevel(const Table::NodeLevel& nl, double replicas, double bsz) {
  size_t lo, hi;
  double w;
  Bracket(
      nl.levels, replicas, [](const Table::ReplicaLevel& r) { return double(r.replicas); }, &lo,
      &hi, &w);
  StepTime a = InterpSeries(nl.levels[lo].series, bsz);
  if (lo == hi) return a;
  return Lerp(a, InterpSeries(nl.levels[hi].series, bsz), w);
}

StepTime InterpGrid(const std::vector<Table::NodeLevel>& grid, double nodes, double replicas,
                    double bsz) {
  size_t lo, hi;
  double w;
  Bracket(
      grid, nodes, [](const Table::NodeLevel& n) { return double(n.nodes); }, &lo, &hi, &w);
  StepTime a = InterpNodeLevel(grid[lo], replicas, bsz);
  if (lo == hi) return a;
  return Lerp(a, InterpNodeLevel(grid[hi], replicas, bsz), w);
}

// Reads placements[-<node>].csv (and scalability[-<node>].csv if present).
Result<Table> LoadTable(const std::string& placements_path, const std::string& scalability_path) {
  auto pt = CsvTable::ReadFile(placements_path);
  if (!pt.ok()) return pt.status();
  TESSEL_RETURN_IF_ERROR(MissingColumns(*pt, {"placement", "local_bsz", "step_time", "sync_time"}));
  if (pt->rows().empty())
    return InvalidArgument(placements_path +
                           ": no rows (expected placement,local_bsz,step_time,sync_time)");

  Table out;
  out.source = placements_path;
  out.min_bsz = INFINITY;
  out.max_bsz = -INFINITY;

  struct Key {
    int nodes, replicas;
    double bsz;
    auto operator<=>(const Key&) const = default;
  };
  std::map<std::string, std::vector<Table::Point>> by_placement;
  std::map<Key, std::vector<Table::Point>> by_key;  // placements rows, for the means

  for (const CsvRow& row : pt->rows()) {
    std::string p = pt->Get(row, "placement");
    bool digits =
        !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '1' && c <= '9'; });
    if (!digits) {
      return InvalidArgument(pt->Where(row, "placement") +
                             ": expected per-node GPU counts as digits 1-9 (e.g. 22), got '" + p +
                             "'");
    }
    auto bsz = ReadPositive(*pt, row, "local_bsz", "batch size");
    if (!bsz.ok()) return bsz.status();
    auto step = ReadPositive(*pt, row, "step_time", "time in seconds");
    if (!step.ok()) return step.status();
    auto sync = ReadPositive(*pt, row, "sync_time", "time in seconds", /*allow_zero=*/true);
    if (!sync.ok()) return sync.status();

    int replicas = 0;
    for (char c : p) {
      replicas += c - '0';
      out.gpus_per_node = std::max(out.gpus_per_node, c - '0');
    }
    out.min_bsz = std::min(out.min_bsz, *bsz);
    out.max_bsz = std::max(out.max_bsz, *bsz);
    Table::Point pnt{*bsz, *step, *sync};
    by_placement[SmallestRotation(p)].push_back(pnt);
    by_key[Key{static_cast<int>(p.size()), replicas, *bsz}].push_back(pnt);
  }
  for (auto& [p, pts] : by_placement) out.placements.emplace(p, Consolidate(std::move(pts)));

  // The grid: one point per placements key (its mean), plus every
  // scalability row; points that share a key are averaged.
  std::map<std::pair<int, int>, std::vector<Table::Point>> grid_pts;
  for (auto& [k, pts] : by_key) {
    Table::Point mean{k.bsz, 0, 0};
    for (const auto& q : pts) {
      mean.step += q.step;
      mean.sync += q.sync;
    }
    mean.step /= static_cast<double>(pts.size());
    mean.sync /= static_cast<double>(pts.size());
    grid_pts[{k.nodes, k.replicas}].push_back(mean);
  }
  std::error_code ec;
  if (!scalability_path.empty() && fs::exists(scalability_path, ec)) {
    auto st = CsvTable::ReadFile(scalability_path);
    if (!st.ok()) return st.status();
    TESSEL_RETURN_IF_ERROR(
        MissingColumns(*st, {"num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"}));
    for (const CsvRow& row : st->rows()) {
      auto nodes = ReadCount(*st, row, "num_nodes", "node count");
      if (!nodes.ok()) return nodes.status();
      auto replicas = ReadCount(*st, row, "num_replicas", "replica count");
      if (!replicas.ok()) return replicas.status();
      if (*replicas < *nodes) {
        return InvalidArgument(
            st->Where(row, "num_replicas") +
            ": expected at least one replica per node (num_replicas >= num_nodes = " +
            std::to_string(*nodes) + "), got " + std::to_string(*replicas));
      }
      auto bsz = ReadPositive(*st, row, "local_bsz", "batch size");
      if (!bsz.ok()) return bsz.status();
      auto step = ReadPositive(*st, row, "step_time", "time in seconds");
      if (!step.ok()) return step.status();
      auto sync = ReadPositive(*st, row, "sync_time", "time in seconds", /*allow_zero=*/true);
      if (!sync.ok()) return sync.status();
      grid_pts[{*nodes, *replicas}].push_back({*bsz, *step, *sync});
    }
  }
  for (auto& [nr, pts] : grid_pts) {
    if (out.grid.empty() || out.grid.back().nodes != nr.first)
      out.grid.push_back(Table::NodeLevel{nr.first, {}});
    out.grid.back().levels.push_back(Table::ReplicaLevel{nr.second, Consolidate(std::move(pts))});
  }
  return out;
}

struct ValidationFile {
  int batch;
  std::string path;
};

}  // namespace

Result<AppProfile> AppProfile::Load(const std::string& dir) {
  std::string name = fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
  return Load(dir, DefaultAppSettings(name));
}

Result<AppProfile> AppProfile::Load(const std::string& dir, const AppSettings& settings) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return NotFound("application profile directory '" + dir + "' not found");
  if (!fs::is_directory(dir, ec))
    return InvalidArgument("application profile '" + dir + "' is not a directory");

  AppProfile app;
  fs::path base = fs::path(dir).lexically_normal();
  app.name_ = base.filename().string();
  if (app.name_.empty()) app.name_ = base.parent_path().filename().string();

  if (settings.max_epochs && *settings.max_epochs <= 0)
    return InvalidArgument(app.name_ + ": max_epochs must be positive, got " +
                           std::to_string(*settings.max_epochs));
  if (settings.max_local_bsz && *settings.max_local_bsz <= 0)
    return InvalidArgument(app.name_ + ": max_local_bsz must be positive, got " +
                           std::to_string(*settings.max_local_bsz));

  // List the directory once.
  std::vector<ValidationFile> validation_files;
  std::map<std::string, std::string> placements_by_suffix;  // suffix -> path
  std::map<std::string, std::string> scalability_by_suffix;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string f = it->path().filename().string();
    if (!EndsWith(f, ".csv")) continue;
    std::string stem = f.substr(0, f.size() - 4);
    std::string path = it->path().string();
    if (StartsWith(stem, "validation-")) {
      std::string b = stem.substr(11);
      auto v = ParseInt(b, path);
      if (!v.ok() || *v <= 0 || *v > 1'000'000'000) {
        return InvalidArgument(
            path + ": expected validation-<batch>.csv with a positive integer batch, got '" + b +
            "'");
      }
      validation_files.push_back({static_cast<int>(*v), path});
    } else if (stem == "placements" || StartsWith(stem, "placements-")) {
      placements_by_suffix[stem == "placements" ? "" : stem.substr(11)] = path;
    } else if (stem == "scalability" || StartsWith(stem, "scalability-")) {
      scalability_by_suffix[stem == "scalability" ? "" : stem.substr(12)] = path;
    }
  }
  if (ec) return InvalidArgument("cannot list '" + dir + "': " + ec.message());

  // Validation: gradient statistics and progress per batch size.
  if (validation_files.empty())
    return NotFound(
        "no validation-<batch>.csv files in '" + dir +
        "' (expected one per validated batch size: progress,iteration,metric,grad_sqr,grad_var)");
  std::sort(validation_files.begin(), validation_files.end(),
            [](const ValidationFile& a, const ValidationFile& b) { return a.batch < b.batch; });
  for (size_t i = 1; i < validation_files.size(); ++i) {
    if (validation_files[i].batch == validation_files[i - 1].batch)
      return InvalidArgument(validation_files[i].path + ": batch size " +
                             std::to_string(validation_files[i].batch) + " also given by " +
                             validation_files[i - 1].path);
  }
  size_t min_rows = SIZE_MAX;
  for (const auto& vf : validation_files) {
    auto t = CsvTable::ReadFile(vf.path);
    if (!t.ok()) return t.status();
    TESSEL_RETURN_IF_ERROR(MissingColumns(*t, {"progress", "grad_sqr", "grad_var"}));
    if (t->rows().empty())
      return InvalidArgument(
          vf.path +
          ": no rows (expected one row per epoch: progress,iteration,metric,grad_sqr,grad_var)");
    Validation v;
    v.batch = vf.batch;
    for (const CsvRow& row : t->rows()) {
      auto p = ReadPositive(*t, row, "progress", "progress", /*allow_zero=*/true);
      if (!p.ok()) return p.status();
      if (!v.progress.empty() && *p < v.progress.back()) {
        return InvalidArgument(
            t->Where(row, "progress") + ": expected progress non-decreasing by epoch, got " +
            t->Get(row, "progress") + " after " + FormatDouble(v.progress.back(), 10));
      }
      auto sqr = ReadPositive(*t, row, "grad_sqr", "gradient statistic", /*allow_zero=*/true);
      if (!sqr.ok()) return sqr.status();
      auto var = ReadPositive(*t, row, "grad_var", "gradient statistic", /*allow_zero=*/true);
      if (!var.ok()) return var.status();
      v.progress.push_back(*p);
      v.grad_sqr.push_back(*sqr);
      v.grad_var.push_back(*var);
    }
    min_rows = std::min(min_rows, v.progress.size());
    app.validation_.push_back(std::move(v));
  }
  app.init_batch_ = app.validation_.front().batch;
  app.max_batch_ = app.validation_.back().batch;
  app.max_epochs_ = static_cast<int>(min_rows);
  if (settings.max_epochs) app.max_epochs_ = std::min(app.max_epochs_, *settings.max_epochs);
  if (settings.fixed_batch) app.fixed_batch_ = std::clamp(*settings.fixed_batch, app.init_batch_, app.max_batch_);
  if (settings.max_replicas) app.max_replicas_ = std::max(1, *settings.max_replicas);
  app.epoch_progress_.assign(static_cast<size_t>(app.max_epochs_) + 1, 0.0);
  for (int e = 1; e <= app.max_epochs_; ++e) {
    double p = INFINITY;
    for (const auto& v : app.validation_) p = std::min(p, v.progress[static_cast<size_t>(e - 1)]);
    app.epoch_progress_[static_cast<size_t>(e)] = p;
  }

  // Throughput tables, one per GPU type.
  std::map<std::string, std::pair<int, std::string>> chosen;  // gpu -> (rank, suffix)
  for (const auto& [suffix, path] : placements_by_suffix) {
    const NodeKind* kind = FindNodeKind(suffix);
    if (!kind) continue;  // a node kind we do not model
    std::string gpu(kind->gpu);
    auto it = chosen.find(gpu);
    if (it == chosen.end() || kind->rank < it->second.first) chosen[gpu] = {kind->rank, suffix};
  }
  if (chosen.empty())
    return NotFound(
        "no placements.csv or placements-<node>.csv (node: aws, azure, dgx, dgx-ext, quad, rtx) in "
        "'" +
        dir + "' (expected placement,local_bsz,step_time,sync_time)");
  for (const auto& [gpu, rank_suffix] : chosen) {
    const std::string& suffix = rank_suffix.second;
    auto sit = scalability_by_suffix.find(suffix);
    auto table = LoadTable(placements_by_suffix[suffix],
                           sit == scalability_by_suffix.end() ? std::string() : sit->second);
    if (!table.ok()) return table.status();
    auto shared = std::make_shared<AppProfile::Table>();
    static_cast<ThroughputTable&>(*shared) = std::move(*table);
    app.tables_.emplace(gpu, std::move(shared));
  }

  // Local batch limits: the T4 table's if present (Pollux's testbed), else all.
  double lo = INFINITY, hi = -INFINITY;
  auto t4 = app.tables_.find("t4");
  for (auto it = app.tables_.begin(); it != app.tables_.end(); ++it) {
    if (t4 != app.tables_.end() && it != t4) continue;
    lo = std::min(lo, it->second->min_bsz);
    hi = std::max(hi, it->second->max_bsz);
  }
  app.min_local_bsz_ = std::max(1, static_cast<int>(std::ceil(lo)));
  app.max_local_bsz_ = std::max(app.min_local_bsz_, static_cast<int>(std::floor(hi)));
  if (settings.max_local_bsz) {
    app.max_local_bsz_ = *settings.max_local_bsz;
    app.min_local_bsz_ = std::min(app.min_local_bsz_, app.max_local_bsz_);
  }
  return app;
}

BatchLimits AppProfile::limits() const {
  BatchLimits l;
  l.init_batch = init_batch_;
  l.max_batch = max_batch_;
  l.min_atomic = min_local_bsz_;
  l.max_atomic = max_local_bsz_;
  return l;
}

std::vector<std::string> AppProfile::gpu_types() const {
  std::vector<std::string> out;
  out.reserve(tables_.size());
  for (const auto& [gpu, t] : tables_) out.push_back(gpu);
  return out;
}

bool AppProfile::HasGpu(std::string_view gpu) const { return tables_.find(gpu) != tables_.end(); }

int AppProfile::gpus_per_node(std::string_view gpu) const {
  auto it = tables_.find(gpu);
  return it == tables_.end() ? 0 : it->second->gpus_per_node;
}

Result<StepTime> AppProfile::Throughput(std::string_view gpu, std::span<const int> placement,
                                        double local_bsz) const {
  auto it = tables_.find(gpu);
  if (it == tables_.end()) {
    return NotFound("application '" + name_ + "' has no throughput profile for GPU '" +
                    std::string(gpu) + "'; profiled: " + Join(gpu_types(), ", "));
  }
  const Table& t = *it->second;
  if (!std::isfinite(local_bsz))
    return InvalidArgument("application '" + name_ + "': local batch size must be finite");

  int nodes = 0, replicas = 0;
  bool single_digits = true;
  for (int c : placement) {
    if (c < 0)
      return InvalidArgument("application '" + name_ + "': negative GPU count " +
                             std::to_string(c) + " in placement");
    if (c == 0) continue;
    ++nodes;
    replicas += c;
    if (c > 9) single_digits = false;
  }
  if (nodes == 0) return InvalidArgument("application '" + name_ + "': empty placement (no GPUs)");

  double bsz = std::clamp(local_bsz, t.min_bsz, t.max_bsz);
  if (single_digits) {
    std::string key;
    key.reserve(static_cast<size_t>(nodes));
    for (int c : placement)
      if (c > 0) key.push_back(static_cast<char>('0' + c));
    key = SmallestRotation(key);
    auto pit = t.placements.find(key);
    if (pit != t.placements.end()) return InterpSeries(pit->second, bsz);
  }
  // The Pollux artifact clamps nodes at 16 before interpolating.
  return InterpGrid(t.grid, std::min(nodes, 16), replicas, bsz);
}

GradStats AppProfile::GradStatsAt(double batch, int epoch) const {
  if (validation_.empty()) return GradStats{};  // a default-constructed profile
  // NaN-safe clamp into [init_batch, max_batch].
  if (!(batch >= init_batch_)) batch = init_batch_;
  if (batch > max_batch_) batch = max_batch_;
  size_t row = static_cast<size_t>(std::clamp(epoch, 0, max_epochs_ - 1));
  auto hi = std::lower_bound(validation_.begin(), validation_.end(), batch,
                             [](const Validation& v, double b) { return v.batch < b; });
  // hi exists: batch <= max_batch.
  if (hi->batch == batch || hi == validation_.begin())
    return GradStats{hi->grad_sqr[row], hi->grad_var[row]};
  auto lo = hi - 1;
  double w = (batch - lo->batch) / static_cast<double>(hi->batch - lo->batch);
  return GradStats{lo->grad_sqr[row] + w * (hi->grad_sqr[row] - lo->grad_sqr[row]),
                   lo->grad_var[row] + w * (hi->grad_var[row] - lo->grad_var[row])};
}

double AppProfile::ProgressAt(int epoch) const {
  if (epoch_progress_.empty()) return 0;
  return epoch_progress_[static_cast<size_t>(std::clamp(epoch, 0, max_epochs_))];
}

int AppProfile::EpochAt(double progress) const {
  auto it = std::upper_bound(epoch_progress_.begin(), epoch_progress_.end(), progress);
  if (it == epoch_progress_.begin()) return 0;
  return static_cast<int>(it - epoch_progress_.begin()) - 1;
}

Result<AppCatalog> AppCatalog::Load(const std::string& apps_dir) {
  std::error_code ec;
  if (!fs::exists(apps_dir, ec))
    return NotFound("applications directory '" + apps_dir + "' not found");
  if (!fs::is_directory(apps_dir, ec))
    return InvalidArgument("applications directory '" + apps_dir + "' is not a directory");
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(apps_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (n.empty() || n[0] == '.') continue;
    if (it->is_directory(ec)) subdirs.push_back(it->path());
  }
  if (ec) return InvalidArgument("cannot list '" + apps_dir + "': " + ec.message());
  if (subdirs.empty())
    return NotFound("no application directories in '" + apps_dir +
                    "' (expected <app>/ with placements and validation CSVs)");
  std::sort(subdirs.begin(), subdirs.end());
  AppCatalog cat;
  cat.dir_ = apps_dir;
  for (const auto& sd : subdirs) {
    auto app = AppProfile::Load(sd.string());
    if (!app.ok()) {
      return Status(app.status().code(), "application '" + sd.filename().string() + "' in '" +
                                             apps_dir + "': " + app.status().message());
    }
    std::string name = app->name();
    cat.apps_.emplace(std::move(name), std::move(*app));
  }
  return cat;
}

const AppProfile* AppCatalog::Find(std::string_view app) const {
  auto it = apps_.find(app);
  return it == apps_.end() ? nullptr : &it->second;
}

std::vector<std::string> AppCatalog::names() const {
  std::vector<std::string> out;
  out.reserve(apps_.size());
  for (const auto& [n, a] : apps_) out.push_back(n);
  return out;
}

}  // namespace tessel::goodput
