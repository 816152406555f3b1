#include "cli/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "cli/sim_flags.h"
#include "core/csv.h"
#include "core/sha256.h"
#include "policy/policy.h"
#include "sim/report.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tessel {
namespace {

// Flags a sweep sets itself, or that make no sense per cell.
const std::set<std::string> kReserved = {"cluster", "trace", "seed", "out", "event-log", "decision-log",
                                         "json", "no-progress", "help"};

// What the table reports, from each run's summary.
const char* const kMetrics[] = {"avg_jct_s",      "median_jct_s",  "p95_jct_s",       "p99_jct_s",
                                "avg_queueing_s", "makespan_s",    "gpu_utilization", "useful_utilization",
                                "jobs_finished",  "jobs_unfinished", "restarts",      "avg_finish_time_fairness"};

std::string Line(const std::string& source, const YAML::Node& n) {
  return source + ":" + std::to_string(n.Mark().line + 1) + ": ";
}

Result<std::vector<std::string>> Scalars(const YAML::Node& n, const std::string& source, const std::string& field) {
  std::vector<std::string> v;
  if (n.IsScalar()) {
    v.push_back(n.as<std::string>());
  } else if (n.IsSequence()) {
    for (const YAML::Node& item : n) {
      if (!item.IsScalar()) return InvalidArgument(Line(source, item) + field + ": expected a scalar or a list of scalars");
      v.push_back(item.as<std::string>());
    }
  } else {
    return InvalidArgument(Line(source, n) + field + ": expected a scalar or a list of scalars");
  }
  if (v.empty()) return InvalidArgument(Line(source, n) + field + ": the list is empty");
  std::set<std::string> seen;
  for (const std::string& x : v)
    if (!seen.insert(x).second) return InvalidArgument(Line(source, n) + field + ": '" + x + "' is listed twice");
  return v;
}

Status WriteAtomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  // Unique per process and thread: two sweeps (or array tasks) may share the folder.
  tmp += ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Unavailable("cannot write " + tmp.string());
    f << text;
    f.flush();
    if (!f) return Unavailable("cannot write " + tmp.string() + " (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Unavailable("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
  return Status::Ok();
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.precision(10);
  o << v;
  return o.str();
}

json CellJson(const SweepCell& c) {
  json o = json::object();
  for (const auto& [k, v] : c.options) o[k] = v;
  return {{"id", c.Id()}, {"key", c.Key()},     {"policy", c.policy}, {"cluster", c.cluster},
          {"trace", c.trace}, {"seed", c.seed}, {"options", o}};
}

// A metric over a group's seeds: mean, sample standard deviation and the
// 95% CI half-width (Student's t); NaN where there are too few values.
struct SeedStats {
  double mean = NAN, sd = NAN, ci95 = NAN;
  size_t n = 0;
};

SeedStats SeedStatsOf(const std::vector<double>& values) {
  SeedStats st;
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  st.n = v.size();
  if (v.empty()) return st;
  double sum = 0;
  for (double x : v) sum += x;
  st.mean = sum / v.size();
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - st.mean) * (x - st.mean);
    st.sd = std::sqrt(ss / (v.size() - 1));
    st.ci95 = StudentT975(static_cast<int>(v.size()) - 1) * st.sd / std::sqrt(static_cast<double>(v.size()));
  }
  return st;
}

}  // namespace

std::string SweepCell::Key() const {
  std::string k = "policy=" + policy + "\ncluster=" + cluster + "\ntrace=" + trace + "\nseed=" + std::to_string(seed);
  for (const auto& [name, value] : options) k += "\n--" + name + "=" + value;
  return k;
}

std::string SweepCell::Id() const { return Sha256Hex(Key()).substr(0, 16); }

std::string SweepCell::GroupKey() const {
  std::string k = "policy=" + policy + "\ncluster=" + cluster + "\ntrace=" + trace;
  for (const auto& [name, value] : options) k += "\n--" + name + "=" + value;
  return k;
}

std::vector<std::string> SweepCell::FlagArgs() const {
  std::vector<std::string> a = {"--cluster", cluster, "--seed", std::to_string(seed)};
  if (!trace.empty()) a.insert(a.end(), {"--trace", trace});
  for (const auto& [name, value] : options) a.insert(a.end(), {"--" + name, value});
  a.push_back("--no-progress");
  return a;
}

Result<SweepSpec> ParseSweep(const std::string& text, const std::string& source, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  if (!root.IsMap()) return InvalidArgument(source + ": expected a mapping (policies, clusters, traces, seeds, options)");
  SweepSpec spec;
  bool have_policies = false;
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "name") {
        if (!v.IsScalar() || v.as<std::string>().empty()) return InvalidArgument(Line(source, v) + "name: expected a non-empty name");
        spec.name = v.as<std::string>();
        for (char c : spec.name)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
            return InvalidArgument(Line(source, v) + "name: letters, digits, '-', '_' and '.' only, got '" + spec.name + "'");
      } else if (key == "policies") {
        auto p = Scalars(v, source, "policies");
        if (!p.ok()) return p.status();
        for (const std::string& s : *p) {
          auto made = PolicyRegistry::Builtin().Create(s, PolicyContext{});
          if (!made.ok()) return InvalidArgument(Line(source, v) + "policies: " + s + ": " + made.status().message());
        }
        spec.policies = *p;
        have_policies = true;
      } else if (key == "clusters") {
        auto c = Scalars(v, source, "clusters");
        if (!c.ok()) return c.status();
        spec.clusters = *c;
      } else if (key == "traces") {
        auto t = Scalars(v, source, "traces");
        if (!t.ok()) return t.status();
        spec.traces.clear();
        for (const std::string& path : *t) {
          fs::path p(path);
          if (p.is_relative() && !base_dir.empty()) p = fs::path(base_dir) / p;
          std::error_code ec;
          if (!fs::exists(p, ec)) return InvalidArgument(Line(source, v) + "traces: " + path + ": no such file or folder");
          spec.traces.push_back(fs::absolute(p).lexically_normal().string());
        }
      } else if (key == "seeds") {
        spec.seeds.clear();
        if (v.IsScalar()) {
          long long n = 0;
          try {
            n = v.as<long long>();
          } catch (const YAML::Exception&) {
            return InvalidArgument(Line(source, v) + "seeds: expected a count (1 to 1000) or a list of seeds");
          }
          if (n < 1 || n > 1000) return InvalidArgument(Line(source, v) + "seeds: expected a count from 1 to 1000, got " + std::to_string(n));
          for (long long s = 1; s <= n; ++s) spec.seeds.push_back(static_cast<uint64_t>(s));
        } else {
          auto s = Scalars(v, source, "seeds");
          if (!s.ok()) return s.status();
          std::set<uint64_t> seen;
          for (const std::string& text_seed : *s) {
            uint64_t seed = 0;
            try {
              size_t used = 0;
              seed = std::stoull(text_seed, &used);
              if (used != text_seed.size() || text_seed[0] == '-') throw std::invalid_argument("");
            } catch (const std::exception&) {
              return InvalidArgument(Line(source, v) + "seeds: '" + text_seed + "' is not a non-negative integer");
            }
            if (!seen.insert(seed).second) return InvalidArgument(Line(source, v) + "seeds: " + text_seed + " is listed twice");
            spec.seeds.push_back(seed);
          }
        }
      } else if (key == "options") {
        if (!v.IsMap()) return InvalidArgument(Line(source, v) + "options: expected a mapping of simulate flags to values");
        for (const auto& opt : v) {
          std::string flag = opt.first.as<std::string>();
          if (flag.rfind("--", 0) == 0) flag = flag.substr(2);
          std::replace(flag.begin(), flag.end(), '_', '-');
          if (kReserved.count(flag)) {
            return InvalidArgument(Line(source, opt.first) + "options: " + flag +
                                   ": set by the sweep itself (clusters, traces, seeds) or per run; not an option here");
          }
          auto values = Scalars(opt.second, source, "options." + flag);
          if (!values.ok()) return values.status();
          for (const std::string& value : *values)
            if (value.find('\n') != std::string::npos)
              return InvalidArgument(Line(source, opt.second) + "options." + flag + ": a value spans lines");
          spec.options.emplace_back(flag, *values);
        }
      } else {
        return InvalidArgument(Line(source, kv.first) + "unknown field '" + key +
                               "'; expected name, policies, clusters, traces, seeds, options");
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!have_policies) return InvalidArgument(source + ": policies: required (a list of policy specs, see `tessel policies`)");
  return spec;
}

Result<SweepSpec> LoadSweepFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseSweep(*text, path, fs::path(path).parent_path().string());
}

std::vector<SweepCell> ExpandSweep(const SweepSpec& spec) {
  // Option combinations, the first option slowest.
  std::vector<std::vector<std::pair<std::string, std::string>>> combos = {{}};
  for (const auto& [flag, values] : spec.options) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& c : combos)
      for (const std::string& v : values) {
        auto d = c;
        d.emplace_back(flag, v);
        next.push_back(std::move(d));
      }
    combos = std::move(next);
  }
  std::vector<SweepCell> cells;
  for (const std::string& cluster : spec.clusters)
    for (const std::string& trace : spec.traces)
      for (uint64_t seed : spec.seeds)
        for (const auto& combo : combos)
          for (const std::string& policy : spec.policies) cells.push_back({policy, cluster, trace, seed, combo});
  return cells;
}

Status CheckSweepFlags(const std::vector<SweepCell>& cells) {
  std::set<std::vector<std::string>> seen;
  for (const SweepCell& c : cells) {
    std::vector<std::string> args = c.FlagArgs();
    if (!seen.insert(args).second) continue;
    auto flags = ParseSimFlags(args);
    if (!flags.ok()) return InvalidArgument("options: " + flags.status().message() + " (the flags of `tessel simulate`)");
  }
  return Status::Ok();
}

Status WriteSweepPlan(const std::string& dir, const SweepSpec& spec, const std::vector<SweepCell>& cells,
                      int cells_per_task) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "cells", ec);
  if (ec) return Unavailable("--out " + dir + ": " + ec.message());
  json list = json::array();
  for (const SweepCell& c : cells) list.push_back(CellJson(c));
  json plan = {{"name", spec.name}, {"cells_per_task", cells_per_task}, {"cells", list}};
  return WriteAtomically(fs::path(dir) / "sweep.json", plan.dump(1) + "\n");
}

Result<std::vector<SweepCell>> ReadSweepPlan(const std::string& dir, int* cells_per_task, std::string* name) {
  const std::string path = (fs::path(dir) / "sweep.json").string();
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  json plan = json::parse(*text, nullptr, false);
  if (plan.is_discarded() || !plan.is_object() || !plan.contains("cells") || !plan["cells"].is_array())
    return InvalidArgument(path + ": not a sweep plan (written by `tessel sweep`)");
  std::vector<SweepCell> cells;
  try {
    for (const json& c : plan["cells"]) {
      SweepCell cell{c.at("policy").get<std::string>(), c.at("cluster").get<std::string>(),
                     c.at("trace").get<std::string>(), c.at("seed").get<uint64_t>(), {}};
      // The key keeps the options' order; re-read them from it.
      std::istringstream key(c.at("key").get<std::string>());
      std::string line;
      while (std::getline(key, line)) {
        if (line.rfind("--", 0) != 0) continue;
        size_t eq = line.find('=');
        cell.options.emplace_back(line.substr(2, eq - 2), line.substr(eq + 1));
      }
      if (cell.Id() != c.at("id").get<std::string>()) return InvalidArgument(path + ": cell " + c.at("id").get<std::string>() + " does not match its key");
      cells.push_back(std::move(cell));
    }
    if (cells_per_task) *cells_per_task = plan.value("cells_per_task", 1);
    if (name) *name = plan.value("name", std::string("sweep"));
  } catch (const json::exception& e) {
    return InvalidArgument(path + ": " + e.what());
  }
  return cells;
}

bool SweepCellDone(const std::string& dir, const SweepCell& cell) {
  auto text = ReadTextFile((fs::path(dir) / "cells" / (cell.Id() + ".json")).string());
  if (!text.ok()) return false;
  json r = json::parse(*text, nullptr, false);
  return r.is_object() && r.value("key", std::string()) == cell.Key() && r.contains("summary");
}

Status RunSweepCell(const std::string& dir, const SweepCell& cell) {
  auto flags = ParseSimFlags(cell.FlagArgs());
  if (!flags.ok()) return flags.status();
  auto setup = ResolveSim(*flags);
  if (!setup.ok()) return setup.status();
  std::ostringstream quiet;
  auto result = RunPolicy(*setup, *flags, cell.policy, quiet);
  if (!result.ok()) return result.status();
  json r = CellJson(cell);
  r["summary"] = json::parse(SummaryJson(result->summary, /*wall_time=*/false));
  return WriteAtomically(fs::path(dir) / "cells" / (cell.Id() + ".json"), r.dump(1) + "\n");
}

int RunSweepLocally(const std::string& dir, const std::vector<SweepCell>& cells, int workers, std::ostream& err,
                    int* failed) {
  std::vector<const SweepCell*> todo;
  for (const SweepCell& c : cells)
    if (!SweepCellDone(dir, c)) todo.push_back(&c);
  std::atomic<size_t> next{0};
  std::atomic<int> ran{0}, bad{0};
  std::mutex err_mu;
  auto work = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) {
      Status s = RunSweepCell(dir, *todo[i]);
      ++ran;
      if (!s.ok()) {
        ++bad;
        std::lock_guard<std::mutex> lock(err_mu);
        err << "error: cell " << todo[i]->Id() << " (" << todo[i]->policy << ", " << todo[i]->cluster << ", seed "
            << todo[i]->seed << "): " << s.message() << "\n";
      }
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(workers, static_cast<int>(todo.size())));
  for (int i = 1; i < n; ++i) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (failed) *failed = bad;
  return ran;
}

double StudentT975(int df) {
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return NAN;
  if (df <= 30) return t[df - 1];
  if (df <= 40) return 2.021;
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

Result<SweepTable> GatherSweep(const std::string& dir, const std::vector<SweepCell>& cells) {
  SweepTable table;
  table.cells = static_cast<int>(cells.size());
  std::vector<std::string> option_names;
  if (!cells.empty())
    for (const auto& [name, value] : cells.front().options) option_names.push_back(name);
  // Per cell: its metrics (NaN where the summary has none).
  std::ostringstream rows;
  rows << "cell,policy,cluster,trace,seed";
  for (const auto& o : option_names) rows << "," << CsvField(o);
  for (const char* m : kMetrics) rows << "," << m;
  rows << "\n";
  struct Group {
    const SweepCell* first;
    std::vector<std::vector<double>> values;
    std::vector<uint64_t> seeds;
    std::vector<SeedStats> stats;  // per metric, once every cell is read
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const SweepCell& c : cells) {
    const std::string path = (fs::path(dir) / "cells" / (c.Id() + ".json")).string();
    auto text = ReadTextFile(path);
    json r = text.ok() ? json::parse(*text, nullptr, false) : json();
    if (!text.ok() || !r.is_object() || r.value("key", std::string()) != c.Key() || !r.contains("summary")) {
      table.missing.push_back(c.Id());
      continue;
    }
    ++table.done;
    const json& s = r["summary"];
    rows << c.Id() << "," << CsvField(c.policy) << "," << CsvField(c.cluster) << "," << CsvField(c.trace) << "," << c.seed;
    for (const auto& [name, value] : c.options) rows << "," << CsvField(value);
    auto [it, inserted] = groups.try_emplace(c.GroupKey(), Group{&c, {}, {}, {}});
    if (inserted) {
      order.push_back(c.GroupKey());
      it->second.values.resize(std::size(kMetrics));
    }
    it->second.seeds.push_back(c.seed);
    for (size_t m = 0; m < std::size(kMetrics); ++m) {
      double v = s.contains(kMetrics[m]) && s[kMetrics[m]].is_number() ? s[kMetrics[m]].get<double>() : NAN;
      rows << "," << Number(v);
      it->second.values[m].push_back(v);
    }
    rows << "\n";
  }
  table.results_csv = rows.str();
  for (auto& [key, g] : groups)
    for (const std::vector<double>& v : g.values) g.stats.push_back(SeedStatsOf(v));
  std::ostringstream t;
  t << "policy,cluster,trace";
  for (const auto& o : option_names) t << "," << CsvField(o);
  t << ",seeds";
  for (const char* m : kMetrics) t << "," << m << "_mean," << m << "_ci95";
  t << "\n";
  json out = json::array();
  for (const std::string& k : order) {
    const Group& g = groups[k];
    const SweepCell& c = *g.first;
    t << CsvField(c.policy) << "," << CsvField(c.cluster) << "," << CsvField(c.trace);
    json row = {{"policy", c.policy}, {"cluster", c.cluster}, {"trace", c.trace}, {"seeds", g.seeds}};
    json opts = json::object();
    for (const auto& [name, value] : c.options) {
      t << "," << CsvField(value);
      opts[name] = value;
    }
    row["options"] = opts;
    t << "," << g.seeds.size();
    json metrics = json::object();
    for (size_t m = 0; m < std::size(kMetrics); ++m) {
      const SeedStats& st = g.stats[m];
      t << "," << Number(st.mean) << "," << Number(st.ci95);
      auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
      metrics[kMetrics[m]] = {{"mean", num(st.mean)}, {"sd", num(st.sd)}, {"ci95", num(st.ci95)}, {"n", st.n}};
    }
    t << "\n";
    row["metrics"] = metrics;
    out.push_back(row);
  }
  table.table_csv = t.str();
  table.table_json = out.dump(1) + "\n";
  // Plots: per metric, a bar per policy in each setting (cluster, trace,
  // options), the mean with its 95% CI as an error bar.
  std::vector<std::string> policies, settings;
  std::map<std::pair<std::string, std::string>, const Group*> by;
  for (const std::string& k : order) {
    const SweepCell& c = *groups[k].first;
    std::string setting = c.cluster;
    if (!c.trace.empty()) setting += " " + fs::path(c.trace).filename().string();
    for (const auto& [name, value] : c.options) setting += " " + name + "=" + value;
    if (std::find(policies.begin(), policies.end(), c.policy) == policies.end()) policies.push_back(c.policy);
    if (std::find(settings.begin(), settings.end(), setting) == settings.end()) settings.push_back(setting);
    by[{setting, c.policy}] = &groups[k];
  }
  struct Plot {
    const char* metric;
    const char* file;
    const char* title;
    const char* ylabel;
    double scale;
  };
  const Plot plots[] = {{"avg_jct_s", "sweep_avg_jct", "Average JCT", "hours", 1.0 / 3600},
                        {"p95_jct_s", "sweep_p95_jct", "p95 JCT", "hours", 1.0 / 3600},
                        {"makespan_s", "sweep_makespan", "Makespan", "hours", 1.0 / 3600},
                        {"gpu_utilization", "sweep_utilization", "GPU utilisation", "fraction of GPUs", 1.0}};
  auto gp_text = [](const std::string& x) {
    std::string q;
    for (char c : x) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return "\"" + q + "\"";
  };
  std::ostringstream gp;
  gp << kPngTerminal << "set style data histograms\nset style histogram errorbars gap 2 lw 1\n"
     << "set style fill solid 0.7 border -1\nset key top left\nset grid ytics\nset xtics rotate by -20\n"
     << "set yrange [0:*]\n";
  for (const Plot& pl : plots) {
    size_t m = std::find_if(std::begin(kMetrics), std::end(kMetrics), [&](const char* x) { return std::string(x) == pl.metric; }) -
               std::begin(kMetrics);
    std::ostringstream dat;
    dat << "setting";
    for (const std::string& p : policies) dat << " " << gp_text(p) << " ci";
    dat << "\n";
    for (const std::string& setting : settings) {
      dat << gp_text(setting);
      for (const std::string& p : policies) {
        auto it = by.find({setting, p});
        double mean = NAN, ci = 0;
        if (it != by.end()) {
          mean = it->second->stats[m].mean;
          if (std::isfinite(it->second->stats[m].ci95)) ci = it->second->stats[m].ci95;
        }
        dat << " " << (std::isfinite(mean) ? Number(mean * pl.scale) : std::string("?")) << " " << Number(ci * pl.scale);
      }
      dat << "\n";
    }
    TESSEL_RETURN_IF_ERROR(WriteAtomically(fs::path(dir) / (std::string(pl.file) + ".dat"), dat.str()));
    gp << "set datafile missing '?'\nset output '" << pl.file << ".png'\nset title '" << pl.title
       << ": mean and 95% CI over seeds'\nset ylabel '" << pl.ylabel << "'\nplot for [i=1:" << policies.size()
       << "] '" << pl.file << ".dat' using (column(2*i)):(column(2*i+1)):xtic(1) title columnhead(2*i)\n";
  }
  TESSEL_RETURN_IF_ERROR(WriteAtomically(fs::path(dir) / "sweep.gp", gp.str()));
  table.plots_warning = RunGnuplot(dir, "sweep.gp");
  TESSEL_RETURN_IF_ERROR(WriteAtomically(fs::path(dir) / "results.csv", table.results_csv));
  TESSEL_RETURN_IF_ERROR(WriteAtomically(fs::path(dir) / "table.csv", table.table_csv));
  TESSEL_RETURN_IF_ERROR(WriteAtomically(fs::path(dir) / "table.json", table.table_json));
  return table;
}

}  // namespace tessel
