// `tessel job-exec FILE`: what srun runs on every task of a job the daemon
// launched. Reads the launch file (cluster/launch.h), sets its environment,
// puts its "prepend" directories first on those path lists (PYTHONPATH),
// gives the task the torch.distributed names of its place (RANK, LOCAL_RANK,
// WORLD_SIZE from srun's SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, unless
// already set: Megatron-LM, torchtitan and DeepSpeed read those), changes to
// its working directory and exec()s its argv — no shell, so no
// user argument is ever interpreted. Exit 127 (and a message naming the
// file) when it cannot.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "cli/commands.h"
#include "cluster/launch.h"

namespace tessel {

CommandAction SetupJobExec(CLI::App& app, CommandIo io) {
  auto file = std::make_shared<std::string>();
  app.add_option("FILE", *file, "Launch file written by tessel serve")->required();
  // Listed in --help as internal; users never call it.
  return [file, io]() -> int {
    std::ifstream f(*file, std::ios::binary);
    if (!f) {
      io.err << "tessel job-exec: cannot read " << *file << ": " << std::strerror(errno) << "\n";
      return 127;
    }
    std::ostringstream text;
    text << f.rdbuf();
    Result<ExecRequest> req = ParseLaunchFile(text.str(), *file);
    if (!req.ok()) {
      io.err << "tessel job-exec: " << req.status().message() << "\n";
      return 127;
    }
    for (const auto& [k, v] : req->env) ::setenv(k.c_str(), v.c_str(), 1);
    // After env: a PYTHONPATH the spec set, else the inherited one, follows.
    for (const auto& [k, dir] : req->prepend) {
      ::setenv(k.c_str(), PrependToPathList(dir, std::getenv(k.c_str())).c_str(), 1);
    }
    for (const auto& [torch_name, slurm_name] : {std::pair{"RANK", "SLURM_PROCID"},
                                                  std::pair{"LOCAL_RANK", "SLURM_LOCALID"},
                                                  std::pair{"WORLD_SIZE", "SLURM_NTASKS"}}) {
      const char* v = std::getenv(slurm_name);
      if (v != nullptr && *v != '\0') ::setenv(torch_name, v, /*overwrite=*/0);
    }
    if (::chdir(req->workdir.c_str()) != 0) {
      io.err << "tessel job-exec: cannot enter " << req->workdir << ": " << std::strerror(errno) << "\n";
      return 127;
    }
    std::vector<char*> argv;
    for (std::string& a : req->argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    io.out.flush();
    io.err.flush();
    ::execv(argv[0], argv.data());
    io.err << "tessel job-exec: cannot run " << req->argv[0] << ": " << std::strerror(errno) << "\n";
    return 127;
  };
}

}  // namespace tessel
