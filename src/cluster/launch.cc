#include "cluster/launch.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cluster/framework_args.h"
#include "core/json_text.h"
#include "hardware/gpu.h"

#ifndef TESSEL_DEFAULT_PYTHON_DIR
#define TESSEL_DEFAULT_PYTHON_DIR ""
#endif

namespace tessel {

int LaunchSpec::tasks() const {
  int n = 0;
  for (const auto& [node, gpus] : nodes) n += gpus;
  return n;
}

std::string PlanJson(const LaunchSpec& s) {
  nlohmann::ordered_json j;
  j["gpu_type"] = s.gpu_type;
  j["gpus"] = s.tasks();
  j["nodes"] = static_cast<int>(s.nodes.size());
  nlohmann::ordered_json placement = nlohmann::ordered_json::array();
  for (const auto& [node, gpus] : s.nodes) placement.push_back({{"node", node}, {"gpus", gpus}});
  j["placement"] = placement;
  j["dp"] = s.plan.dp;
  j["tp"] = s.plan.tp;
  j["pp"] = s.plan.pp;
  j["micro_batch"] = s.plan.micro_batch;
  j["num_micro_batches"] = s.plan.num_micro_batches;
  j["global_batch"] = s.global_batch;
  j["recompute"] = RecomputeName(s.plan.recompute);
  j["zero_stage"] = s.plan.zero;
  j["precision"] = PrecisionName(s.plan.precision);
  j["virtual_stages"] = s.plan.virtual_stages;
  return JsonText(j);
}

std::map<std::string, std::string> LaunchEnvironment(const LaunchSpec& s) {
  std::map<std::string, std::string> env = s.user_env;
  auto set = [&](const std::string& k, const std::string& v) { env[k] = v; };
  set("TESSEL_JOB_ID", std::to_string(s.job_id));
  set("TESSEL_JOB_NAME", s.job_name);
  set("TESSEL_LAUNCH", std::to_string(s.launch));
  set("TESSEL_WORLD_SIZE", std::to_string(s.profile ? 1 : s.tasks()));
  set("TESSEL_GPU_TYPE", s.gpu_type);
  set("TESSEL_DP", std::to_string(s.plan.dp));
  set("TESSEL_TP", std::to_string(s.plan.tp));
  set("TESSEL_PP", std::to_string(s.plan.pp));
  set("TESSEL_VIRTUAL_STAGES", std::to_string(s.plan.virtual_stages));
  set("TESSEL_MICRO_BATCH", std::to_string(s.plan.micro_batch));
  set("TESSEL_NUM_MICRO_BATCHES", std::to_string(s.plan.num_micro_batches));
  set("TESSEL_GLOBAL_BATCH", std::to_string(s.global_batch));
  set("TESSEL_RECOMPUTE", RecomputeName(s.plan.recompute));
  set("TESSEL_ZERO_STAGE", std::to_string(s.plan.zero));
  set("TESSEL_PRECISION", PrecisionName(s.plan.precision));
  set("TESSEL_TOTAL_ITERATIONS", std::to_string(s.total_iterations));
  set("TESSEL_CHECKPOINT_DIR", s.checkpoint_dir);
  char interval[32];
  std::snprintf(interval, sizeof interval, "%g", s.checkpoint_interval_s);
  set("TESSEL_CHECKPOINT_INTERVAL_S", interval);
  set("TESSEL_METRICS_FILE", s.metrics_file);
  set("TESSEL_PLAN_JSON", PlanJson(s));
  set("MASTER_ADDR", s.rendezvous_addr);
  set("MASTER_PORT", std::to_string(s.rendezvous_port));
  if (s.profile) {
    set("TESSEL_PROFILE", "1");
    set("TESSEL_PROFILE_STEPS", std::to_string(s.profile_steps));
    set("TESSEL_PROFILE_LAYERS", std::to_string(s.profile_layers));
  }
  return env;
}

std::string LaunchFileJson(const LaunchSpec& s) {
  nlohmann::ordered_json j;
  j["argv"] = s.argv;
  j["workdir"] = s.workdir;
  nlohmann::ordered_json env = nlohmann::ordered_json::object();
  for (const auto& [k, v] : LaunchEnvironment(s)) env[k] = v;
  j["env"] = env;
  if (!s.python_dir.empty()) j["prepend"] = {{"PYTHONPATH", s.python_dir}};
  return JsonText(j, 2) + "\n";
}

Result<LaunchFiles> RenderLaunch(const LaunchSpec& spec, const std::string& launch_path) {
  LaunchFiles files;
  if (spec.framework == JobFramework::kTessel) {
    files.launch_text = LaunchFileJson(spec);
    return files;
  }
  FrameworkInputs in;
  in.plan = spec.plan;
  in.model_layers = spec.model_layers;
  in.total_iterations = spec.total_iterations;
  in.checkpoint_dir = spec.checkpoint_dir;
  std::string config_path = FrameworkConfigPath(spec.framework, launch_path);
  Result<FrameworkArgs> args = RenderFrameworkArgs(spec.framework, in, config_path);
  if (!args.ok()) return args.status();
  LaunchSpec with_args = spec;
  with_args.argv.insert(with_args.argv.end(), args->argv.begin(), args->argv.end());
  files.launch_text = LaunchFileJson(with_args);
  if (!args->config_text.empty()) {
    files.config_path = config_path;
    files.config_text = std::move(args->config_text);
  }
  return files;
}

std::string JobPythonDir() {
  const char* dir = std::getenv("TESSEL_PYTHON_DIR");
  return dir != nullptr && *dir != '\0' ? dir : TESSEL_DEFAULT_PYTHON_DIR;
}

std::string PrependToPathList(const std::string& dir, const char* current) {
  if (current == nullptr || *current == '\0') return dir;
  return dir + ":" + current;
}

Result<ExecRequest> ParseLaunchFile(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) {
    return InvalidArgument(path + ": not a tessel launch file: " + what);
  };
  if (j.is_discarded() || !j.is_object()) return bad("expected a JSON object");
  ExecRequest r;
  auto argv = j.find("argv");
  // execve() takes C strings: a NUL inside one would silently cut it short.
  auto c_string = [](const nlohmann::json& v) {
    return v.is_string() && v.get_ref<const std::string&>().find('\0') == std::string::npos;
  };
  constexpr const char* kArgv = "argv: a non-empty list of strings without NUL bytes, the first an absolute path";
  if (argv == j.end() || !argv->is_array() || argv->empty()) return bad(kArgv);
  for (const auto& a : *argv) {
    if (!c_string(a)) return bad(kArgv);
    r.argv.push_back(a.get<std::string>());
  }
  if (!r.argv[0].starts_with("/")) return bad(kArgv);
  auto wd = j.find("workdir");
  if (wd == j.end() || !c_string(*wd) || !wd->get_ref<const std::string&>().starts_with("/")) {
    return bad("workdir: an absolute path");
  }
  r.workdir = wd->get<std::string>();
  auto env = j.find("env");
  constexpr const char* kEnv = "env: an object of strings (names without '=', nothing with NUL bytes)";
  if (env == j.end() || !env->is_object()) return bad(kEnv);
  for (const auto& [k, v] : env->items()) {
    if (!c_string(v) || k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
      return bad(kEnv);
    }
    r.env[k] = v.get<std::string>();
  }
  if (auto prepend = j.find("prepend"); prepend != j.end()) {
    constexpr const char* kPrepend = "prepend: an object of strings (names without '=', nothing with NUL bytes)";
    if (!prepend->is_object()) return bad(kPrepend);
    for (const auto& [k, v] : prepend->items()) {
      if (!c_string(v) || k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
        return bad(kPrepend);
      }
      r.prepend[k] = v.get<std::string>();
    }
  }
  return r;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string BatchScript(const std::string& tessel_binary, const std::vector<std::string>& srun_args,
                        const std::string& launch_file, const std::string& exit_file) {
  // A job whose nodes hold different GPU counts is a heterogeneous Slurm
  // job: srun must name every component (cluster/slurm_client.h).
  std::string srun = "srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))}";
  for (const std::string& a : srun_args) srun += " " + ShellQuote(a);
  std::string tmp = exit_file + ".tmp";
  return "#!/bin/sh\n"
         "# Written by tessel serve. Holds only the daemon's own paths: the job's argv,\n"
         "# environment and working directory are in the launch file, which\n"
         "# `tessel job-exec` exec()s on every task without a shell.\n" +
         srun + " " + ShellQuote(tessel_binary) + " job-exec " + ShellQuote(launch_file) +
         "\n"
         "rc=$?\n"
         "echo \"$rc\" > " + ShellQuote(tmp) + " && mv " + ShellQuote(tmp) + " " + ShellQuote(exit_file) +
         "\n"
         "exit \"$rc\"\n";
}

}  // namespace tessel
