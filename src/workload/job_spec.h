// Job specs: the YAML document a user submits to `tessel serve`, its
// validation, and what the scheduler makes of it. This is a user-facing
// contract; every field:
//
//   name: tiny-a          # required; 1-64 characters of [A-Za-z0-9._-],
//                         #   starting with a letter or digit
//   model: gpt3-125m      # required; a catalog model name (`tessel catalog`),
//                         #   or a mapping with a shape, the keys of a model
//                         #   YAML file (model/catalog.h LoadModelYaml), e.g.
//                         #   {name: tiny-gpt, layers: 2, hidden: 64, heads: 4,
//                         #    seq_len: 32, vocab: 256}
//   global_batch: 32      # required; an integer >= 1
//   iterations: 200       # required; optimizer steps at global_batch, >= 1
//   command: [/usr/bin/python3, ../train.py, --layers, "2"]
//                         # required; a non-empty list of strings, run as an
//                         #   argv, never through a shell. command[0]: an
//                         #   absolute path, a path relative to the spec's
//                         #   folder (it contains '/'), or a name looked up on
//                         #   the daemon's PATH at submission (empty PATH
//                         #   entries are skipped); it must be an executable
//                         #   file when the spec is submitted.
//   workdir: ..           # optional; default the spec's folder; relative to
//                         #   the spec's folder; must be a directory
//   checkpoint_dir: ckpt  # optional; relative to the spec's folder; need not
//                         #   exist yet; default none (the daemon then uses its
//                         #   state directory)
//   gpus: 2               # optional, default 1; the requested GPU count
//   elastic: false        # optional, true or false
//   min_gpus: 1           # optional, only with elastic: true; default gpus
//   max_gpus: 4           # optional, only with elastic: true; default gpus
//                         #   (min_gpus <= gpus <= max_gpus)
//   gpu_types: [a100-80g, v100-32g]
//                         # optional; catalog GPU names or aliases
//                         #   (`tessel catalog`), each once; default any type
//   priority: 0           # optional integer; higher runs first where the
//                         #   policy uses priorities
//   deadline: 36h         # optional; finish within this long of submission
//                         #   (1 s to 1e9 s; 36h, 90m, 3600): deadline-aware
//                         #   policies (elasticflow, arena-ddl) admit and
//                         #   value it by it; every summary reports it met
//   env: {KEY: value}     # optional extra environment; keys
//                         #   [A-Za-z_][A-Za-z0-9_]*, not starting with
//                         #   TESSEL_ or SLURM_; values scalars (read as text)
//   framework: megatron   # optional; megatron, torchtitan or deepspeed: the
//                         #   plan is also passed as that framework's own
//                         #   arguments or config file (docs/frameworks.md);
//                         #   default none: tessel's environment contract
//                         #   only. With torchtitan the command must not
//                         #   pass its own --job.config_file (torchtitan
//                         #   reads the first one only).
//
// Integers are decimal and must fit their field (int, 64-bit for
// iterations); booleans are true or false. The text must be UTF-8 without
// NUL bytes, at most kMaxJobSpecBytes, one YAML document whose top level is
// a mapping without duplicate keys. Unknown keys are errors (typos).
//
// Thread-safety: the functions are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "workload/job_framework.h"
#include "workload/job.h"

namespace tessel {

// Longer texts are refused before parsing: a real spec is a few KiB, and
// yaml-cpp parses hostile input at well under 1 MB/s.
inline constexpr size_t kMaxJobSpecBytes = 256 << 10;

// A validated spec with every field resolved.
struct DaemonJobSpec {
  std::string name;
  std::string file;         // the spec's file name as submitted (for messages)
  ModelSpec model;          // resolved shape
  std::string model_yaml;   // a shape model's mapping as YAML; "" for catalog models
  int global_batch = 1;
  int64_t iterations = 1;
  std::vector<std::string> command;  // command[0] absolute
  std::string workdir;               // absolute
  std::string checkpoint_dir;        // absolute; "" = none
  int gpus = 1;
  int min_gpus = 1;  // == gpus unless elastic
  int max_gpus = 1;  // == gpus unless elastic
  std::vector<std::string> gpu_types;  // canonical catalog names; empty = any
  bool elastic = false;
  int priority = 0;
  std::map<std::string, std::string> env;
  int64_t deadline_s = 0;  // seconds after submission it should finish by; 0 = none
  JobFramework framework = JobFramework::kTessel;
};

// Parses and validates a spec. `file_name` names it in errors; `base_dir`
// is the spec's folder, against which relative paths resolve (a relative
// base_dir resolves against the current directory). Checks the file system
// (command, workdir) and PATH now. On failure: InvalidArgument whose message
// has one line per problem found, each "<file>:<line>: <field>: <what is
// wrong and what is accepted>" (no line for a missing field), in line order.
// Never throws; rejects oversized or binary text before parsing it.
Result<DaemonJobSpec> ParseJobSpec(std::string_view text, const std::string& file_name,
                                   const std::string& base_dir);

// What policies see. Registers a shape model with the model catalog
// (RegisterModel), so FindModel(job.model) finds it; fails with
// FailedPrecondition if another shape holds that name. Sets model, global
// batch, iterations, requested GPUs (and the type when exactly one is
// listed, else "" for any), min/max GPUs, priority and origin (the file);
// the caller sets id, user and submit time.
Result<JobSpec> ToJobSpec(const DaemonJobSpec& spec);

// The normalised spec as stored (Store's spec_json): a JSON object with the
// resolved fields; a shape model as its YAML mapping. Deterministic.
std::string DaemonJobSpecToJson(const DaemonJobSpec& spec);
// Inverse of DaemonJobSpecToJson, for a daemon reloading its jobs. Resolves
// the model again but does not re-check paths (they were checked at
// submission; a job whose command vanished fails when launched).
Result<DaemonJobSpec> DaemonJobSpecFromJson(std::string_view json);

}  // namespace tessel
