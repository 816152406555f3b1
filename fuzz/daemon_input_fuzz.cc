// What the daemon reads from users: a job spec (YAML, `tessel submit`), the
// body of POST /v1/jobs (JSON), the tokens file, and a launch file (JSON,
// read by `tessel job-exec` on the compute node). The first byte picks
// which. A spec that parses has every field in its documented range.
#include <filesystem>

#include "cluster/launch.h"
#include "fuzz/fuzz_util.h"
#include "server/api_json.h"
#include "server/auth.h"
#include "workload/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  auto in = fuzz::Split(data, size, 4);
  switch (in.choice) {
    case 0: {
      static const std::string base = std::filesystem::temp_directory_path().string();
      auto spec = ParseJobSpec(in.text, "job.yaml", base);
      if (!spec.ok()) {
        FUZZ_CHECK(spec.status().message().find("job.yaml") != std::string::npos,
                   "an error not naming the file: " + spec.status().message());
        break;
      }
      FUZZ_CHECK(!spec->name.empty(), "a spec without a name");
      FUZZ_CHECK(spec->global_batch >= 1, "global_batch < 1");
      FUZZ_CHECK(spec->gpus >= 1, "gpus < 1");
      FUZZ_CHECK(!spec->command.empty() && spec->command[0].starts_with("/"), "command[0] not absolute");
      FUZZ_CHECK(spec->iterations >= 1, "iterations < 1");
      FUZZ_CHECK(spec->min_gpus >= 1 && spec->min_gpus <= spec->gpus && spec->gpus <= spec->max_gpus, "min/max GPUs");
      break;
    }
    case 1: {
      auto r = ParseSubmitRequest(in.text);
      if (r.ok()) FUZZ_CHECK(!r->base_dir.empty() && r->base_dir[0] == '/', "base_dir not absolute");
      break;
    }
    case 2: {
      auto t = TokenStore::Parse(in.text, "tokens");
      if (!t.ok()) break;
      FUZZ_CHECK(!t->Lookup("").has_value(), "the empty token authenticates");
      break;
    }
    case 3: {
      auto r = ParseLaunchFile(std::string(in.text), "launch.json");
      if (!r.ok()) break;
      FUZZ_CHECK(!r->argv.empty() && r->argv[0].starts_with("/"), "a launch without an absolute program");
      FUZZ_CHECK(r->workdir.starts_with("/"), "a launch in a relative directory");
      for (const std::string& a : r->argv) FUZZ_CHECK(a.find('\0') == std::string::npos, "a NUL in argv");
      break;
    }
  }
  return 0;
}
