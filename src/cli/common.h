// Flag groups shared by several commands (model shape, topology, parameter
// file) and their conversion to library types, with errors that name the
// flag.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "hardware/node.h"
#include "model/catalog.h"
#include "perf/params.h"

namespace CLI {
class App;
}

namespace tessel {

// Shape and topology flags are optional: absent means the model's or the
// node type's value; a value given is range-checked (0, negative, NaN or
// absurdly large values are errors, never a silent fall-back to a default).
struct ModelFlags {
  std::string model;
  std::optional<int> layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, experts, top_k;
  std::string ffn_kind;  // "gelu" | "swiglu" | "" (the model's)
  std::string memory_format;  // CNNs: "nchw" | "nhwc" | "" (the model's)
  void Add(CLI::App& app, bool required = true);
  Result<ModelSpec> Resolve() const;
};

struct TopologyFlags {
  std::string gpu;
  std::optional<int> gpus_per_node;
  std::optional<double> network_gbps;
  void Add(CLI::App& app);
  Result<Topology> Resolve() const;
};

struct ParamsFlag {
  std::string path;
  void Add(CLI::App& app);
  // The embedded defaults, or the file's parameters. The returned object
  // lives as long as the process.
  Result<const PerfParams*> Resolve() const;
};

// The flags every job-level command shares (estimate, plan): model, hardware,
// parameters, precision, framework, resolved together.
struct JobInputs {
  ModelSpec model;
  Topology topology;
  const PerfParams* params = nullptr;
  Precision precision = Precision::kBf16;        // --precision, else the model's
  const FrameworkProfile* framework = nullptr;  // --framework, else the default
};

struct JobFlags {
  ModelFlags model;
  TopologyFlags topo;
  ParamsFlag params;
  std::string precision, framework;
  void Add(CLI::App& app);
  Result<JobInputs> Resolve() const;
};

// --seed: a whole number from 0 to 2^64 - 1 (a negative or fractional seed
// is an error naming the range, never wrapped).
void AddSeedOption(CLI::App& app, uint64_t* seed, const std::string& help);

// Where the shared data folder is: --data, else $TESSEL_DATA, else
// ../shared/data from the working directory, else ../shared/data beside the
// checkout the binary was built in.
std::string DataDir(const std::string& flag);
// InvalidArgument unless `dir` (what DataDir chose) is a directory.
Status CheckDataDir(const std::string& dir);

// Output paths checked before any work is done, so a run is never lost to
// a path it cannot write (InvalidArgument naming `flag`):
// a directory to be created (or reused), not an existing file, under an
// existing directory chain that has no file in the way...
Status CheckOutputDir(const std::string& flag, const std::string& path);
// ...and a file to be written: not a directory, in an existing directory.
Status CheckOutputFile(const std::string& flag, const std::string& path);

}  // namespace tessel
