#include "workload/job_spec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "hardware/gpu.h"
#include "model/catalog.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

// A folder laid out as a user's would be:
//   $DIR/train.sh            executable       $DIR/notexec.sh   not executable
//   $DIR/jobs/               the spec's folder (base_dir)
//   $DIR/jobs/run.sh         executable       $DIR/jobs/data    a plain file
//   $DIR/bin/tessel-fake-trainer             on PATH in these tests
class JobSpecTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = (fs::path(testing::TempDir()) / "tessel_spec_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = new std::string(fs::canonical(tmpl).string());
    fs::create_directories(Dir() + "/jobs");
    fs::create_directories(Dir() + "/bin");
    auto write = [](const std::string& path, mode_t mode) {
      std::ofstream(path) << "#!/bin/sh\nexit 0\n";
      chmod(path.c_str(), mode);
    };
    write(Dir() + "/train.sh", 0755);
    write(Dir() + "/notexec.sh", 0644);
    write(Dir() + "/jobs/run.sh", 0755);
    write(Dir() + "/jobs/data", 0644);
    write(Dir() + "/bin/tessel-fake-trainer", 0755);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(Dir(), ec);
    delete dir_;
  }
  void SetUp() override {
    const char* path = std::getenv("PATH");
    saved_path_ = path != nullptr ? path : "";
    // A relative entry first: it must be skipped, never searched.
    setenv("PATH", ("bin:" + Dir() + "/bin:/usr/bin:/bin").c_str(), 1);
  }
  void TearDown() override { setenv("PATH", saved_path_.c_str(), 1); }

  static const std::string& Dir() { return *dir_; }
  static std::string Base() { return Dir() + "/jobs"; }
  // `s` with $DIR replaced by the test folder.
  static std::string Expand(std::string s) {
    for (size_t at; (at = s.find("$DIR")) != std::string::npos;) s.replace(at, 4, Dir());
    return s;
  }
  static Result<DaemonJobSpec> Parse(const std::string& yaml) {
    return ParseJobSpec(Expand(yaml), "jobs/a.yaml", Base());
  }

 private:
  static std::string* dir_;
  std::string saved_path_;
};

std::string* JobSpecTest::dir_ = nullptr;

// The required fields, valid; cases append to or replace lines of it.
const std::string kGood =
    "name: tiny-a\n"
    "model: gpt3-125m\n"
    "global_batch: 32\n"
    "iterations: 200\n"
    "command: [$DIR/train.sh, --layers, \"2\"]\n";

std::string WithLine(const std::string& key, const std::string& line) {
  // kGood with the line of `key` replaced (or `line` appended when absent).
  std::string out;
  bool replaced = false;
  for (const std::string& l : Split(kGood, '\n')) {
    if (l.empty()) continue;
    if (StartsWith(l, key + ":")) {
      if (!line.empty()) out += line + "\n";
      replaced = true;
    } else {
      out += l + "\n";
    }
  }
  if (!replaced) out += line + "\n";
  return out;
}

TEST_F(JobSpecTest, CatalogModelWithDefaults) {
  auto spec = Parse(kGood);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "tiny-a");
  EXPECT_EQ(spec->file, "jobs/a.yaml");
  EXPECT_EQ(spec->model.name, "gpt3-125m");
  EXPECT_EQ(spec->model.tf.layers, 12);
  EXPECT_EQ(spec->model_yaml, "");
  EXPECT_EQ(spec->global_batch, 32);
  EXPECT_EQ(spec->iterations, 200);
  EXPECT_EQ(spec->command, (std::vector<std::string>{Dir() + "/train.sh", "--layers", "2"}));
  EXPECT_EQ(spec->workdir, Base());
  EXPECT_EQ(spec->checkpoint_dir, "");
  EXPECT_EQ(spec->gpus, 1);
  EXPECT_EQ(spec->min_gpus, 1);
  EXPECT_EQ(spec->max_gpus, 1);
  EXPECT_TRUE(spec->gpu_types.empty());
  EXPECT_FALSE(spec->elastic);
  EXPECT_EQ(spec->priority, 0);
  EXPECT_TRUE(spec->env.empty());

  auto job = ToJobSpec(*spec);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->model, "gpt3-125m");
  EXPECT_EQ(job->global_batch, 32);
  EXPECT_EQ(job->iterations, 200.0);
  EXPECT_EQ(job->duration_s, std::nullopt);
  EXPECT_EQ(job->requested_gpus, 1);
  EXPECT_EQ(job->requested_gpu_type, "");
  EXPECT_EQ(job->min_gpus, 1);
  EXPECT_EQ(job->max_gpus, 1);
  EXPECT_EQ(job->origin, "jobs/a.yaml");
}

TEST_F(JobSpecTest, CatalogNamesAreCanonicalised) {
  auto spec = Parse(WithLine("model", "model: GPT3-125M"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model.name, "gpt3-125m");
  spec = Parse(WithLine("model", "model: bert_1.3B"));  // Arena's spelling
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model.name, "bert__1.3B");
}

TEST_F(JobSpecTest, EveryFieldSet) {
  auto spec = Parse(
      "name: big.run_2\n"
      "model: llama2-7b\n"
      "global_batch: 512\n"
      "iterations: 9000000000\n"
      "command:\n"
      "  - run.sh\n"  // no '/': looked up on PATH, not in the spec's folder
      "  - --flag\n"
      "workdir: ..\n"
      "checkpoint_dir: ckpt/\n"
      "gpus: 8\n"
      "elastic: true\n"
      "min_gpus: 4\n"
      "max_gpus: 16\n"
      "gpu_types: [A100, v100-32g]\n"
      "priority: -3\n"
      "env: {NCCL_DEBUG: INFO, SEED: 7, EMPTY: \"\"}\n");
  // run.sh is not on PATH: only tessel-fake-trainer is.
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            Expand("jobs/a.yaml:6: command[0]: \"run.sh\" is not an executable on PATH "
                   "(bin:$DIR/bin:/usr/bin:/bin); give an absolute path or one relative to the "
                   "spec's folder"));

  spec = Parse(
      "name: big.run_2\n"
      "model: llama2-7b\n"
      "global_batch: 512\n"
      "iterations: 9000000000\n"
      "command:\n"
      "  - tessel-fake-trainer\n"
      "  - --flag\n"
      "workdir: ..\n"
      "checkpoint_dir: ckpt/\n"
      "gpus: +8\n"
      "elastic: True\n"
      "min_gpus: 4\n"
      "max_gpus: 16\n"
      "gpu_types: [A100, v100-32g]\n"
      "priority: -2147483648\n"
      "env: {NCCL_DEBUG: INFO, SEED: 7, EMPTY: \"\"}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->iterations, 9'000'000'000);
  EXPECT_EQ(spec->command, (std::vector<std::string>{Dir() + "/bin/tessel-fake-trainer", "--flag"}));
  EXPECT_EQ(spec->workdir, Dir());
  EXPECT_EQ(spec->checkpoint_dir, Base() + "/ckpt");
  EXPECT_EQ(spec->gpus, 8);
  EXPECT_TRUE(spec->elastic);
  EXPECT_EQ(spec->min_gpus, 4);
  EXPECT_EQ(spec->max_gpus, 16);
  EXPECT_EQ(spec->gpu_types, (std::vector<std::string>{(*FindGpu("A100"))->name, "v100-32g"}));
  EXPECT_EQ(spec->priority, INT_MIN);
  EXPECT_EQ(spec->env, (std::map<std::string, std::string>{
                           {"EMPTY", ""}, {"NCCL_DEBUG", "INFO"}, {"SEED", "7"}}));

  auto job = ToJobSpec(*spec);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->requested_gpus, 8);
  EXPECT_EQ(job->requested_gpu_type, "");  // two types: any
  EXPECT_EQ(job->min_gpus, 4);
  EXPECT_EQ(job->max_gpus, 16);
  EXPECT_EQ(job->priority, INT_MIN);

  spec->gpu_types = {"v100-32g"};
  EXPECT_EQ(ToJobSpec(*spec)->requested_gpu_type, "v100-32g");
}

TEST_F(JobSpecTest, RelativeCommandResolvesAgainstTheSpecsFolder) {
  auto spec = Parse(WithLine("command", "command: [../train.sh, ../train.py]"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  // Only argv[0] is resolved; arguments are passed as written.
  EXPECT_EQ(spec->command, (std::vector<std::string>{Dir() + "/train.sh", "../train.py"}));
  spec = Parse(WithLine("command", "command: [./run.sh]"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->command[0], Base() + "/run.sh");
  // A relative base_dir resolves against the current directory.
  fs::path cwd = fs::current_path();
  fs::current_path(Dir());
  auto rel = ParseJobSpec(Expand(WithLine("command", "command: [./run.sh]")), "a.yaml", "jobs");
  fs::current_path(cwd);
  ASSERT_TRUE(rel.ok()) << rel.status().message();
  EXPECT_EQ(rel->command[0], Base() + "/run.sh");
  EXPECT_EQ(rel->workdir, Base());
}

TEST_F(JobSpecTest, MissingSpecFolderIsReportedForTheDefaultWorkdir) {
  auto spec = ParseJobSpec(Expand(kGood), "a.yaml", Dir() + "/gone");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            Expand("a.yaml: workdir: defaults to the spec's folder \"$DIR/gone\", which is not a "
                   "directory; set workdir"));
  EXPECT_TRUE(ParseJobSpec(Expand(kGood + "workdir: $DIR\n"), "a.yaml", Dir() + "/gone").ok());
}

TEST_F(JobSpecTest, ShapeModelIsRegisteredForTheEstimator) {
  std::string yaml = WithLine(
      "model", "model: {name: spec-tiny-gpt, layers: 2, hidden: 64, heads: 4, seq_len: 32, vocab: 256}");
  auto spec = Parse(yaml);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model.name, "spec-tiny-gpt");
  EXPECT_EQ(spec->model.tf.layers, 2);
  EXPECT_EQ(spec->model.tf.hidden, 64);
  EXPECT_EQ(spec->model.tf.vocab, 256);
  EXPECT_EQ(spec->model.source, "jobs/a.yaml");
  EXPECT_FALSE(spec->model_yaml.empty());
  EXPECT_FALSE(FindModel("spec-tiny-gpt").ok());  // parsing registers nothing

  auto job = ToJobSpec(*spec);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->model, "spec-tiny-gpt");
  auto found = FindModel(job->model);
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(SameModelShape(**found, spec->model));
  // The same shape again (another submission) is fine.
  EXPECT_TRUE(Parse(yaml).ok());
  EXPECT_TRUE(ToJobSpec(*Parse(yaml)).ok());
  // Named, not given a shape: refused, since only the catalog is known by name.
  auto by_name = Parse(WithLine("model", "model: spec-tiny-gpt"));
  ASSERT_FALSE(by_name.ok());
  EXPECT_EQ(by_name.status().message(),
            "jobs/a.yaml:2: model: \"spec-tiny-gpt\" was defined by another job spec; give its "
            "shape here as a mapping");
  // A different shape under that name.
  auto other = Parse(WithLine(
      "model", "model: {name: spec-tiny-gpt, layers: 3, hidden: 64, heads: 4, seq_len: 32, vocab: 256}"));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "jobs/a.yaml:2: model.name: \"spec-tiny-gpt\" is taken by a different shape (from "
            "jobs/a.yaml); choose another name");
}

TEST_F(JobSpecTest, ToJobSpecReportsANameTakenAfterParsing) {
  auto spec = Parse(WithLine(
      "model", "model: {name: spec-race, layers: 2, hidden: 64, heads: 4, seq_len: 32}"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ModelSpec first = spec->model;
  first.tf.layers = 4;
  first.source = "other.yaml";
  ASSERT_TRUE(RegisterModel(first).ok());
  auto job = ToJobSpec(*spec);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(JobSpecTest, BlockStyleShapeModelAndResnet) {
  auto spec = Parse(WithLine("model",
                             "model:\n"
                             "  name: spec-block-moe\n"
                             "  layers: 4\n"
                             "  hidden: 128\n"
                             "  heads: 4\n"
                             "  seq_len: 64\n"
                             "  experts: 4"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model.tf.experts, 4);
  EXPECT_EQ(spec->model.tf.top_k, 2);
  spec = Parse(WithLine("model", "model: {name: spec-resnet, kind: resnet, depth: 50}"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model.kind, ModelKind::kCnn);
}

TEST_F(JobSpecTest, FrameworkIsOneOfThreeAndDefaultsToTesselsContract) {
  EXPECT_EQ(Parse(kGood)->framework, JobFramework::kTessel);
  for (JobFramework f : {JobFramework::kMegatron, JobFramework::kTorchtitan, JobFramework::kDeepspeed}) {
    auto spec = Parse(kGood + "framework: " + JobFrameworkName(f) + "\n");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    EXPECT_EQ(spec->framework, f);
    auto back = DaemonJobSpecFromJson(DaemonJobSpecToJson(*spec));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->framework, f);
  }
  // Megatron's and DeepSpeed's own flags in the command are fine: argparse
  // keeps the last, which is the plan's.
  auto spec = Parse(WithLine("command", "command: [$DIR/train.sh, --deepspeed_config, x.json]") +
                    "framework: deepspeed\n");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_NE(DaemonJobSpecToJson(*Parse(kGood + "framework: torchtitan\n")).find(R"("framework":"torchtitan")"),
            std::string::npos);
  std::string stored = DaemonJobSpecToJson(*Parse(kGood));
  stored.insert(stored.size() - 1, R"(,"framework":"jax")");
  auto bad = DaemonJobSpecFromJson(stored);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "stored job spec 'tiny-a': unknown framework \"jax\"");
}

TEST_F(JobSpecTest, JsonRoundTrip) {
  for (const std::string& yaml :
       {kGood, WithLine("model", "model: {name: spec-json, layers: 2, hidden: 64, heads: 4, seq_len: 32}") +
                   "gpus: 2\nelastic: true\nmax_gpus: 4\ngpu_types: [a100-80g]\nenv: {A: b}\n"
                   "checkpoint_dir: /ckpt\npriority: 5\ndeadline: 36h\n"}) {
    auto spec = Parse(yaml);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    std::string json = DaemonJobSpecToJson(*spec);
    auto back = DaemonJobSpecFromJson(json);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(DaemonJobSpecToJson(*back), json);
    EXPECT_TRUE(SameModelShape(back->model, spec->model));
    EXPECT_EQ(back->model.name, spec->model.name);
    EXPECT_EQ(back->model_yaml, spec->model_yaml);
  }
  EXPECT_EQ(DaemonJobSpecToJson(*Parse(kGood)),
            Expand(R"({"name":"tiny-a","file":"jobs/a.yaml","model":"gpt3-125m","global_batch":32,)"
                   R"("iterations":200,"command":["$DIR/train.sh","--layers","2"],"workdir":"$DIR/jobs",)"
                   R"("checkpoint_dir":"","gpus":1,"min_gpus":1,"max_gpus":1,"gpu_types":[],)"
                   R"("elastic":false,"priority":0,"env":{}})"));
  EXPECT_EQ(Parse(kGood + "deadline: 90m\n")->deadline_s, 5400);
  EXPECT_EQ(Parse(kGood + "deadline: 3600\n")->deadline_s, 3600);
  EXPECT_EQ(Parse(kGood)->deadline_s, 0);
  EXPECT_EQ(DaemonJobSpecFromJson("{").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DaemonJobSpecFromJson(R"({"name": 3})").status().code(), StatusCode::kInvalidArgument);
}

struct BadCase {
  const char* name;
  std::string yaml;      // $DIR expands
  std::string expected;  // the whole message; $DIR expands
};

// A literal's bytes, NULs included.
template <size_t N>
std::string Bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

const char* const kKnownFields =
    "known: checkpoint_dir, command, deadline, elastic, env, framework, global_batch, gpu_types, gpus, "
    "iterations, max_gpus, min_gpus, model, name, priority, workdir";

std::vector<BadCase> BadCases() {
  const std::string mapping = "expected a mapping with name, model, global_batch, iterations, command";
  return {
      // The document as a whole.
      {"Empty", "", "jobs/a.yaml: the spec is empty; " + mapping},
      {"OnlyComments", "# nothing\n\n", "jobs/a.yaml: the spec is empty; " + mapping},
      {"List", "- a\n- b\n", "jobs/a.yaml:1: " + mapping + ", got a list"},
      {"Scalar", "hello\n", "jobs/a.yaml:1: " + mapping + ", got \"hello\""},
      {"TwoDocuments", kGood + "---\nname: b\n",
       "jobs/a.yaml:6: expected one YAML document, found more (remove the '---')"},
      // yaml-cpp's LoadAll never returns on a stray ',' (found by fuzzing).
      {"StrayCommaDoesNotHang", ",,\x01\"", "jobs/a.yaml:1: YAML syntax error: unexpected character at column 1"},
      {"SyntaxError", "name: [x\nmodel: y\n",
       "jobs/a.yaml:2: YAML syntax error: end of sequence flow not found"},
      {"TooLarge", "#" + std::string(kMaxJobSpecBytes, 'x') + "\n",
       "jobs/a.yaml: the spec is " + std::to_string(kMaxJobSpecBytes + 2) + " bytes; at most " +
           std::to_string(kMaxJobSpecBytes) + " are accepted"},
      {"NulByte", Bytes("name: a\nmodel: b\x00x\n"), "jobs/a.yaml:2: the spec must be text; found a NUL byte"},
      {"NotUtf8", Bytes("name: a\n# caf\xe9\n"), "jobs/a.yaml:2: the spec must be UTF-8 text; found byte 0xe9"},
      {"Overlong", Bytes("name: \xc0\xaf\n"), "jobs/a.yaml:1: the spec must be UTF-8 text; found byte 0xc0"},
      {"Surrogate", Bytes("name: \xed\xa0\x80\n"), "jobs/a.yaml:1: the spec must be UTF-8 text; found byte 0xed"},
      {"EscapedNul", WithLine("name", "name: \"a\\0b\""), "jobs/a.yaml:1: name: must not contain NUL bytes"},
      {"DeepNesting", "name: " + std::string(5000, '['), "jobs/a.yaml:1: YAML nested too deeply"},
      {"DeepBlockNesting", "name:\n" + Repeat("- ", 3000) + "x\n", "jobs/a.yaml:2: YAML nested too deeply"},
      // Keys.
      {"MissingRequired", "priority: 1\n",
       "jobs/a.yaml: name: required (1-64 characters of [A-Za-z0-9._-] starting with a letter or digit)\n"
       "jobs/a.yaml: model: required (a catalog model name or a mapping with a shape)\n"
       "jobs/a.yaml: global_batch: required (an integer >= 1)\n"
       "jobs/a.yaml: iterations: required (an integer >= 1)\n"
       "jobs/a.yaml: command: required (a non-empty list of strings)"},
      {"UnknownKey", kGood + "gpu: 2\n", "jobs/a.yaml:6: gpu: unknown field; " + std::string(kKnownFields)},
      {"DuplicateKey", kGood + "name: b\n", "jobs/a.yaml:6: name: duplicate key (first at line 1)"},
      {"NonScalarKey", kGood + "? [a]\n: 1\n", "jobs/a.yaml:6: (key): keys must be plain field names, got a list"},
      // Integers.
      {"NotAnInteger", WithLine("global_batch", "global_batch: abc"),
       "jobs/a.yaml:3: global_batch: must be an integer >= 1, got \"abc\""},
      {"Zero", WithLine("global_batch", "global_batch: 0"),
       "jobs/a.yaml:3: global_batch: must be an integer >= 1, got \"0\""},
      {"Negative", WithLine("iterations", "iterations: -5"),
       "jobs/a.yaml:4: iterations: must be an integer >= 1, got \"-5\""},
      {"Fraction", WithLine("iterations", "iterations: 2.0"),
       "jobs/a.yaml:4: iterations: must be an integer >= 1, got \"2.0\""},
      {"Hex", WithLine("global_batch", "global_batch: 0x10"),
       "jobs/a.yaml:3: global_batch: must be an integer >= 1, got \"0x10\""},
      {"Exponent", WithLine("global_batch", "global_batch: 1e3"),
       "jobs/a.yaml:3: global_batch: must be an integer >= 1, got \"1e3\""},
      {"IntOverflow", kGood + "gpus: 4294967297\n",
       "jobs/a.yaml:6: gpus: must be an integer >= 1, at most 2147483647, got \"4294967297\""},
      {"Int64Overflow", WithLine("iterations", "iterations: 99999999999999999999"),
       "jobs/a.yaml:4: iterations: must be an integer >= 1, at most 9223372036854775807, got "
       "\"99999999999999999999\""},
      {"PriorityOverflow", kGood + "priority: -2147483649\n",
       "jobs/a.yaml:6: priority: must be an integer from -2147483648 to 2147483647, got \"-2147483649\""},
      {"PlusMinus", kGood + "gpus: +-5\n", "jobs/a.yaml:6: gpus: must be an integer >= 1, got \"+-5\""},
      {"DeadlineNotADuration", kGood + "deadline: tomorrow\n",
       "jobs/a.yaml:6: deadline: must be a duration after submission from 1 s to 1e9 s (e.g. 36h, 90m, 3600), "
       "got \"tomorrow\""},
      {"DeadlineZero", kGood + "deadline: 0\n",
       "jobs/a.yaml:6: deadline: must be a duration after submission from 1 s to 1e9 s (e.g. 36h, 90m, 3600), "
       "got \"0\""},
      {"MinusZero", kGood + "gpus: -0\n", "jobs/a.yaml:6: gpus: must be an integer >= 1, got \"-0\""},
      {"Infinity", kGood + "gpus: .inf\n", "jobs/a.yaml:6: gpus: must be an integer >= 1, got \".inf\""},
      {"NaN", kGood + "priority: .nan\n",
       "jobs/a.yaml:6: priority: must be an integer from -2147483648 to 2147483647, got \".nan\""},
      {"ListForScalar", kGood + "gpus: [1, 2]\n", "jobs/a.yaml:6: gpus: must be an integer >= 1, got a list"},
      {"MapForScalar", kGood + "gpus: {a: 1}\n", "jobs/a.yaml:6: gpus: must be an integer >= 1, got a mapping"},
      {"NullValue", kGood + "gpus:\n", "jobs/a.yaml:6: gpus: must be an integer >= 1, got nothing"},
      // Name.
      {"NameWithSpace", WithLine("name", "name: a b"),
       "jobs/a.yaml:1: name: must be 1-64 characters of [A-Za-z0-9._-] starting with a letter or "
       "digit, got \"a b\""},
      {"NameTooLong", WithLine("name", "name: " + std::string(65, 'a')),
       "jobs/a.yaml:1: name: must be 1-64 characters of [A-Za-z0-9._-] starting with a letter or "
       "digit, got \"" + std::string(60, 'a') + "...\""},
      {"NameDotDot", WithLine("name", "name: .."),
       "jobs/a.yaml:1: name: must be 1-64 characters of [A-Za-z0-9._-] starting with a letter or "
       "digit, got \"..\""},
      {"NameList", WithLine("name", "name: [a]"),
       "jobs/a.yaml:1: name: must be 1-64 characters of [A-Za-z0-9._-] starting with a letter or "
       "digit, got a list"},
      // Model.
      {"UnknownModel", WithLine("model", "model: gpt3-12m"),
       "jobs/a.yaml:2: model: " + UnknownNameMessage("model", "gpt3-12m", ModelNames()) +
           " (or a mapping with a shape: name, layers, hidden, heads, seq_len, ...)"},
      {"LongUnknownModel", WithLine("model", "model: " + std::string(100, 'q')),
       "jobs/a.yaml:2: model: unknown model \"" + std::string(60, 'q') + "...\"; known: " +
           Join(ModelNames(), ", ") +
           " (or a mapping with a shape: name, layers, hidden, heads, seq_len, ...)"},
      {"ShapeValueWithNewline",
       WithLine("model", "model: {name: t, layers: \"a\\nb\", hidden: 64, heads: 4, seq_len: 32}"),
       "jobs/a.yaml:2: model.layers: expected a positive integer, got 'a\\x0ab'"},
      {"ModelList", WithLine("model", "model: [gpt3-125m]"),
       "jobs/a.yaml:2: model: must be a catalog model name or a mapping with a shape, got a list"},
      {"ShapeBadValue", WithLine("model", "model: {name: t, layers: abc, hidden: 64, heads: 4, seq_len: 32}"),
       "jobs/a.yaml:2: model.layers: expected a positive integer, got 'abc'"},
      {"ShapeMissingField", WithLine("model", "model: {name: t, layers: 2, heads: 4, seq_len: 32}"),
       "jobs/a.yaml:2: model: missing required field 'hidden' (a positive integer)"},
      {"ShapeUnknownField", WithLine("model", "model:\n  name: t\n  layerz: 2\n"),
       "jobs/a.yaml:4: model.layerz: unknown field; known: channels, classes, depth, description, "
       "dropout, experts, family, ffn_hidden, gated_ffn, heads, hidden, image, kind, kv_heads, layers, "
       "memory_format, moe_every, name, optimizer, precision, seq_len, tied_embeddings, top_k, vocab, width_factor"},
      {"ShapeInvalid", WithLine("model", "model: {name: t, layers: 2, hidden: 64, heads: 0, seq_len: 32}"),
       "jobs/a.yaml:2: model: model 't': heads: must be a positive integer"},
      {"ShapeBadName", WithLine("model", "model: {name: 'a/b', layers: 2, hidden: 64, heads: 4, seq_len: 32}"),
       "jobs/a.yaml:2: model.name: must be 1-64 characters of [A-Za-z0-9._-] starting with a letter "
       "or digit, got \"a/b\""},
      {"ShapeTakesCatalogName",
       WithLine("model", "model: {name: gpt3-125m, layers: 2, hidden: 64, heads: 4, seq_len: 32}"),
       "jobs/a.yaml:2: model.name: \"gpt3-125m\" names a catalog model with a different shape; "
       "choose another name"},
      {"ShapeTakesAlias", WithLine("model", "model: {name: bloom, layers: 2, hidden: 64, heads: 4, seq_len: 32}"),
       "jobs/a.yaml:2: model.name: \"bloom\" names a catalog model with a different shape; choose "
       "another name"},
      // Command.
      {"CommandString", WithLine("command", "command: python3 train.py"),
       "jobs/a.yaml:5: command: must be a non-empty list of strings (an argv, never run through a "
       "shell), got \"python3 train.py\"; write it as a list, e.g. [python3, train.py]"},
      {"CommandEmpty", WithLine("command", "command: []"),
       "jobs/a.yaml:5: command: must be a non-empty list of strings (an argv, never run through a "
       "shell), got an empty list"},
      {"CommandNested", WithLine("command", "command:\n  - $DIR/train.sh\n  - [a]"),
       "jobs/a.yaml:7: command[1]: must be a string, got a list"},
      {"CommandEmptyProgram", WithLine("command", "command: [\"\"]"),
       "jobs/a.yaml:5: command[0]: must name a program, got \"\""},
      {"CommandMissing", WithLine("command", "command: [/nonexistent/train]"),
       "jobs/a.yaml:5: command[0]: \"/nonexistent/train\" does not exist"},
      {"CommandRelativeMissing", WithLine("command", "command: [./train.sh]"),
       "jobs/a.yaml:5: command[0]: \"$DIR/jobs/train.sh\" does not exist (relative paths start at "
       "\"$DIR/jobs\")"},
      {"CommandNotExecutable", WithLine("command", "command: [../notexec.sh]"),
       "jobs/a.yaml:5: command[0]: \"$DIR/notexec.sh\" is not executable (relative paths start at "
       "\"$DIR/jobs\"); to run a script, name its interpreter first, e.g. [python3, ../notexec.sh]"},
      {"CommandDirectory", WithLine("command", "command: [$DIR/bin]"),
       "jobs/a.yaml:5: command[0]: \"$DIR/bin\" is a directory"},
      {"CommandNotOnPath", WithLine("command", "command: [no-such-trainer]"),
       "jobs/a.yaml:5: command[0]: \"no-such-trainer\" is not an executable on PATH "
       "(bin:$DIR/bin:/usr/bin:/bin); give an absolute path or one relative to the spec's folder"},
      // Paths.
      {"WorkdirMissing", kGood + "workdir: nope\n",
       "jobs/a.yaml:6: workdir: \"$DIR/jobs/nope\" does not exist (relative paths start at \"$DIR/jobs\")"},
      {"WorkdirFile", kGood + "workdir: data\n", "jobs/a.yaml:6: workdir: \"$DIR/jobs/data\" is not a directory"},
      {"CheckpointEmpty", kGood + "checkpoint_dir: \"\"\n", "jobs/a.yaml:6: checkpoint_dir: must be a non-empty path"},
      // GPU counts and elasticity.
      {"MinWithoutElastic", kGood + "min_gpus: 1\n", "jobs/a.yaml:6: min_gpus: only valid with elastic: true"},
      {"MaxWithElasticFalse", kGood + "elastic: false\nmax_gpus: 4\n",
       "jobs/a.yaml:7: max_gpus: only valid with elastic: true"},
      {"ElasticYes", kGood + "elastic: yes\n", "jobs/a.yaml:6: elastic: must be true or false, got \"yes\""},
      {"MinAboveMax", kGood + "elastic: true\nmin_gpus: 4\nmax_gpus: 2\n",
       "jobs/a.yaml:7: min_gpus: 4 is greater than max_gpus 2"},
      {"GpusAboveMax", kGood + "elastic: true\ngpus: 8\nmax_gpus: 4\n",
       "jobs/a.yaml:7: gpus: 8 is greater than max_gpus 4"},
      {"GpusBelowMin", kGood + "elastic: true\ngpus: 2\nmin_gpus: 4\nmax_gpus: 8\n",
       "jobs/a.yaml:7: gpus: 2 is less than min_gpus 4"},
      {"DefaultGpusBelowMin", kGood + "elastic: true\nmin_gpus: 2\nmax_gpus: 8\n",
       "jobs/a.yaml:7: gpus: 1 (the default) is less than min_gpus 2"},
      // GPU types.
      {"GpuTypesScalar", kGood + "gpu_types: a100-80g\n",
       "jobs/a.yaml:6: gpu_types: must be a non-empty list of GPU type names (omit it for any "
       "type), got \"a100-80g\""},
      {"GpuTypesUnknown", kGood + "gpu_types: [a1000]\n",
       "jobs/a.yaml:6: gpu_types[0]: " + FindGpu("a1000").status().message()},
      {"GpuTypesTwice", kGood + "gpu_types: [v100-32g, V100-32G]\n",
       "jobs/a.yaml:6: gpu_types[1]: \"V100-32G\" is listed twice"},
      // Environment.
      {"EnvList", kGood + "env: [A]\n", "jobs/a.yaml:6: env: must be a mapping of NAME: value, got a list"},
      {"EnvBadName", kGood + "env: {1X: a}\n",
       "jobs/a.yaml:6: env: variable names must match [A-Za-z_][A-Za-z0-9_]*, got \"1X\""},
      {"EnvReserved", kGood + "env:\n  TESSEL_JOB: a\n  SLURM_JOB_ID: b\n",
       "jobs/a.yaml:7: env.TESSEL_JOB: names starting with TESSEL_ or SLURM_ are reserved for the daemon\n"
       "jobs/a.yaml:8: env.SLURM_JOB_ID: names starting with TESSEL_ or SLURM_ are reserved for the daemon"},
      {"EnvDuplicate", kGood + "env: {A: 1, A: 2}\n", "jobs/a.yaml:6: env.A: duplicate key"},
      {"EnvValueList", kGood + "env: {A: [1]}\n", "jobs/a.yaml:6: env.A: must be a string, got a list"},
      // Framework.
      {"FrameworkUnknown", kGood + "framework: megatron-lm\n",
       "jobs/a.yaml:6: framework: must be one of megatron, torchtitan, deepspeed (leave it out for tessel's own "
       "environment contract), got \"megatron-lm\""},
      {"FrameworkTesselIsTheDefaultNotAName", kGood + "framework: tessel\n",
       "jobs/a.yaml:6: framework: must be one of megatron, torchtitan, deepspeed (leave it out for tessel's own "
       "environment contract), got \"tessel\""},
      {"FrameworkCaseMatters", kGood + "framework: Megatron\n",
       "jobs/a.yaml:6: framework: must be one of megatron, torchtitan, deepspeed (leave it out for tessel's own "
       "environment contract), got \"Megatron\""},
      {"FrameworkList", kGood + "framework: [megatron]\n",
       "jobs/a.yaml:6: framework: must be one of megatron, torchtitan, deepspeed (leave it out for tessel's own "
       "environment contract), got a list"},
      {"TorchtitanWithItsOwnConfigFile",
       WithLine("command", "command: [$DIR/train.sh, --job.config_file, my.toml]") + "framework: torchtitan\n",
       "jobs/a.yaml:6: framework: torchtitan reads only the first --job.config_file, and command[1] passes one: "
       "the plan's would be ignored; pass those settings as --section.option flags instead"},
      {"TorchtitanWithItsOwnConfigFileAfterEquals",
       "framework: torchtitan\n" + WithLine("command", "command: [$DIR/train.sh, --job.config-file=my.toml]"),
       "jobs/a.yaml:1: framework: torchtitan reads only the first --job.config_file, and command[1] passes one: "
       "the plan's would be ignored; pass those settings as --section.option flags instead"},
      // Several problems: all reported, in line order.
      {"AllErrorsInLineOrder",
       "gpus: 0\nname: ok\nmodel: nope-model\nglobal_batch: x\ncommand: [$DIR/train.sh]\nwat: 1\n",
       "jobs/a.yaml:1: gpus: must be an integer >= 1, got \"0\"\n"
       "jobs/a.yaml:3: model: " + UnknownNameMessage("model", "nope-model", ModelNames()) +
           " (or a mapping with a shape: name, layers, hidden, heads, seq_len, ...)\n"
           "jobs/a.yaml:4: global_batch: must be an integer >= 1, got \"x\"\n"
           "jobs/a.yaml:6: wat: unknown field; " + std::string(kKnownFields) + "\n"
           "jobs/a.yaml: iterations: required (an integer >= 1)"},
  };
}

TEST_F(JobSpecTest, BadSpecsSayWhereAndWhat) {
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.name);
    auto spec = Parse(c.yaml);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message(), Expand(c.expected));
  }
}

TEST_F(JobSpecTest, ManyProblemsAreCountedNotAllListed) {
  std::string yaml = kGood;
  for (int i = 0; i < 5000; ++i) yaml.append("k").append(std::to_string(i)).append(": 1\n");
  auto spec = Parse(yaml);
  ASSERT_FALSE(spec.ok());
  std::vector<std::string> lines = Split(spec.status().message(), '\n');
  ASSERT_EQ(lines.size(), 21u);
  EXPECT_EQ(lines[0], "jobs/a.yaml:6: k0: unknown field; " + std::string(kKnownFields));
  EXPECT_EQ(lines[20], "jobs/a.yaml: ... and 4980 more problems");
}

TEST_F(JobSpecTest, LargestAcceptedSpecParses) {
  std::string yaml = Expand(WithLine("command", "command: [$DIR/train.sh"));
  yaml.pop_back();  // the newline
  while (yaml.size() < kMaxJobSpecBytes - 16) yaml += ", --x";
  yaml += "]\n";
  auto spec = ParseJobSpec(yaml, "big.yaml", Base());
  ASSERT_TRUE(spec.ok()) << spec.status().message().substr(0, 300);
  EXPECT_GT(spec->command.size(), 40000u);
}

// Random corruptions of a good spec never crash or hang; each is either
// accepted or an InvalidArgument.
TEST_F(JobSpecTest, MutatedSpecsNeverCrash) {
  const std::string good =
      Expand(WithLine("model", "model: {name: fuzz-m, layers: 2, hidden: 64, heads: 4, seq_len: 32}") +
             "gpus: 2\nenv: {A: b}\ngpu_types: [a100-80g]\nelastic: true\nmax_gpus: 4\n");
  ASSERT_TRUE(ParseJobSpec(good, "m.yaml", Base()).ok());
  const std::string alphabet = Bytes("[]{}:-,'\"#&*!|>%@`?\\ \n\t0a\x00\xff\xc3");
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 1: if (at < s.size()) s.erase(at, 1); break;
        case 2: if (at < s.size()) s[at] = alphabet[rng() % alphabet.size()]; break;
        case 3: s = s.substr(0, at); break;
      }
    }
    auto spec = ParseJobSpec(s, "m.yaml", Base());
    if (!spec.ok()) {
      EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << s;
      // Messages travel as JSON: they must be UTF-8 whatever the input was.
      EXPECT_NO_THROW(nlohmann::json(spec.status().message()).dump()) << s;
    }
  }
}

}  // namespace
}  // namespace tessel
