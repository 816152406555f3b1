#include "workload/job_spec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "core/json_text.h"
#include "core/sim_time.h"
#include "core/strings.h"
#include "hardware/gpu.h"
#include "model/catalog.h"

namespace tessel {

namespace {

// Records where each YAML document starts; ignores everything else.
class DocumentStarts : public YAML::EventHandler {
 public:
  explicit DocumentStarts(std::vector<YAML::Mark>* starts) : starts_(starts) {}
  void OnDocumentStart(const YAML::Mark& mark) override { starts_->push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::vector<YAML::Mark>* starts_;
};

namespace fs = std::filesystem;

constexpr size_t kMaxNameChars = 64;
constexpr size_t kMaxProblems = 20;  // reported; the rest are counted
const char* const kNameRule =
    "1-64 characters of [A-Za-z0-9._-] starting with a letter or digit";

const std::vector<std::string>& KnownFields() {
  static const std::vector<std::string> kFields = {
      "checkpoint_dir", "command",  "deadline", "elastic",  "env",   "framework", "global_batch", "gpu_types",
      "gpus",           "iterations", "max_gpus", "min_gpus", "model", "name",      "priority",     "workdir"};
  return kFields;
}

// The byte offset of the first invalid UTF-8 sequence in `s`, if any
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
std::optional<size_t> InvalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::nullopt;
}

int LineAt(std::string_view s, size_t offset) {
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + offset, '\n'));
}

// A value as shown in messages: double-quoted, control bytes escaped,
// long values cut.
std::string Quote(std::string_view s) {
  constexpr size_t kMaxShown = 60;
  size_t shown = std::min(s.size(), kMaxShown);
  while (shown < s.size() && shown > 0 && (static_cast<unsigned char>(s[shown]) & 0xC0) == 0x80) {
    --shown;  // never cut a UTF-8 sequence
  }
  std::string out = "\"";
  for (size_t i = 0; i < shown; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < s.size()) out += "...";
  return out + "\"";
}

// UnknownNameMessage, with "did you mean" only for short printable names
// (edit distances of long names cost too much).
std::string UnknownName(const std::string& kind, const std::string& name,
                        const std::vector<std::string>& known) {
  std::string shown = Quote(name);
  if (shown == "\"" + name + "\"") return UnknownNameMessage(kind, name, known);
  return "unknown " + kind + " " + shown + "; known: " + Join(known, ", ");
}

// One problem as one line of the error: control bytes escaped (messages
// quote user values, and a newline would split the problem), cut at a
// UTF-8 boundary past kMaxProblemBytes.
std::string OneLine(std::string_view message) {
  constexpr size_t kMaxProblemBytes = 2000;
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(message[i]);
    if (out.size() >= kMaxProblemBytes && (c & 0xC0) != 0x80) return out + "...";
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameChars) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    unsigned char c = static_cast<unsigned char>(ch);
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool ValidEnvKey(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    unsigned char c = static_cast<unsigned char>(ch);
    return (c < 0x80 && std::isalnum(c)) || c == '_';
  });
}

// "a list", "a mapping", "nothing" (null) or the quoted scalar.
std::string Describe(const YAML::Node& n) {
  if (n.IsSequence()) return n.size() == 0 ? "an empty list" : "a list";
  if (n.IsMap()) return n.size() == 0 ? "an empty mapping" : "a mapping";
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  return Quote(n.Scalar());
}

// The absolute, lexically normal form of `p` against `base`, without a
// trailing separator.
fs::path Resolve(const fs::path& base, const std::string& p) {
  fs::path out = (base / p).lexically_normal();
  if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
  return out;
}

// Empty when `p` is an executable regular file, else why not.
std::string NotExecutable(const fs::path& p) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return "does not exist";
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(p.c_str(), X_OK) != 0) return "is not executable";
  return "";
}

// Whether FindModel's answer is a published catalog model (not one
// registered at run time by another spec).
bool IsCatalogModel(const ModelSpec* m) {
  const auto& catalog = ModelCatalog();
  return m >= catalog.data() && m < catalog.data() + catalog.size();
}

// Collects every problem of one spec; each field reader reports through it.
class SpecParser {
 public:
  SpecParser(std::string file, fs::path base) : file_(std::move(file)), base_(std::move(base)) {}

  Result<DaemonJobSpec> Parse(std::string_view text);

 private:
  // One top-level field: its key's line and its value.
  struct Field {
    std::string name;
    int line = 0;
    YAML::Node value;
  };

  void Problem(int line, const std::string& field, const std::string& message) {
    std::string where = line > 0 ? file_ + ":" + std::to_string(line) : file_;
    problems_.push_back({line > 0 ? line : INT_MAX, where + ": " + field + ": " + message});
  }
  // A whole-document problem ("<file>[:line]: message"), ending the parse.
  Status Fail(int line, const std::string& message) const {
    return InvalidArgument(file_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + message);
  }

  static int LineOf(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

  std::optional<std::string> String(const std::string& field, int line, const YAML::Node& n,
                                    const std::string& expect);
  std::optional<int64_t> Integer(const Field& f, int64_t lo, int64_t hi, const std::string& expect);
  std::optional<bool> Bool(const Field& f);
  std::optional<fs::path> Directory(const Field& f, bool must_exist);

  void ReadModel(const Field& f, DaemonJobSpec* spec);
  void ReadCommand(const Field& f, DaemonJobSpec* spec);
  void ReadGpuTypes(const Field& f, DaemonJobSpec* spec);
  void ReadEnv(const Field& f, DaemonJobSpec* spec);
  void ReadFramework(const Field& f, DaemonJobSpec* spec);

  std::string file_;
  fs::path base_;
  std::vector<std::pair<int, std::string>> problems_;  // (line, message)
};

std::optional<std::string> SpecParser::String(const std::string& field, int line,
                                              const YAML::Node& n, const std::string& expect) {
  if (!n.IsScalar()) {
    Problem(line, field, "must be " + expect + ", got " + Describe(n));
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  // Double-quoted escapes can produce what the raw text check cannot see.
  if (s.find('\0') != std::string::npos) {
    Problem(line, field, "must not contain NUL bytes");
    return std::nullopt;
  }
  if (InvalidUtf8At(s)) {
    Problem(line, field, "must be valid UTF-8");
    return std::nullopt;
  }
  return s;
}

std::optional<int64_t> SpecParser::Integer(const Field& f, int64_t lo, int64_t hi,
                                           const std::string& expect) {
  auto s = String(f.name, f.line, f.value, expect);
  if (!s) return std::nullopt;
  std::string_view t = *s;
  bool negative = false;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    Problem(f.line, f.name, "must be " + expect + ", got " + Quote(*s));
    return std::nullopt;
  }
  uint64_t magnitude = 0;
  bool overflow = std::from_chars(t.data(), t.data() + t.size(), magnitude).ec != std::errc();
  int64_t v = 0;
  bool too_small = false, too_big = false;
  if (negative) {
    // -magnitude >= lo, computed without overflowing.
    uint64_t limit = lo >= 0 ? 0 : static_cast<uint64_t>(-(lo + 1)) + 1;
    too_small = overflow || lo > 0 || magnitude > limit;
    if (!too_small) v = magnitude == 0 ? 0 : -static_cast<int64_t>(magnitude - 1) - 1;
  } else {
    too_big = overflow || magnitude > static_cast<uint64_t>(hi);
    if (!too_big) v = static_cast<int64_t>(magnitude);
    too_small = !too_big && v < lo;
  }
  // A field that may be negative states its range in `expect`; the others
  // name only their lower bound there, so the upper one is added.
  if (too_big && lo > 0) {
    Problem(f.line, f.name,
            "must be " + expect + ", at most " + std::to_string(hi) + ", got " + Quote(*s));
    return std::nullopt;
  }
  if (too_small || too_big) {
    Problem(f.line, f.name, "must be " + expect + ", got " + Quote(*s));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> SpecParser::Bool(const Field& f) {
  auto s = String(f.name, f.line, f.value, "true or false");
  if (!s) return std::nullopt;
  if (*s == "true" || *s == "True" || *s == "TRUE") return true;
  if (*s == "false" || *s == "False" || *s == "FALSE") return false;
  Problem(f.line, f.name, "must be true or false, got " + Quote(*s));
  return std::nullopt;
}

std::optional<fs::path> SpecParser::Directory(const Field& f, bool must_exist) {
  auto s = String(f.name, f.line, f.value, "a path");
  if (!s) return std::nullopt;
  if (s->empty()) {
    Problem(f.line, f.name, "must be a non-empty path");
    return std::nullopt;
  }
  fs::path p = Resolve(base_, *s);
  if (must_exist) {
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      Problem(f.line, f.name, Quote(p.string()) + " does not exist (relative paths start at " +
                                  Quote(base_.string()) + ")");
      return std::nullopt;
    }
    if (!fs::is_directory(p, ec)) {
      Problem(f.line, f.name, Quote(p.string()) + " is not a directory");
      return std::nullopt;
    }
  }
  return p;
}

void SpecParser::ReadModel(const Field& f, DaemonJobSpec* spec) {
  const std::string known_hint =
      " (or a mapping with a shape: name, layers, hidden, heads, seq_len, ...)";
  if (f.value.IsScalar()) {
    auto name = String(f.name, f.line, f.value, "a catalog model name or a mapping with a shape");
    if (!name) return;
    auto found = FindModel(*name);
    if (found.ok() && !IsCatalogModel(*found)) {
      Problem(f.line, f.name,
              Quote(*name) + " was defined by another job spec; give its shape here as a mapping");
    } else if (!found.ok()) {
      Problem(f.line, f.name, UnknownName("model", *name, ModelNames()) + known_hint);
    } else {
      spec->model = **found;
    }
    return;
  }
  if (!f.value.IsMap()) {
    Problem(f.line, f.name,
            "must be a catalog model name or a mapping with a shape, got " + Describe(f.value));
    return;
  }
  Result<ModelSpec> m = LoadModelYamlNode(f.value, file_, "model");
  if (!m.ok()) {
    problems_.push_back({f.line, m.status().message()});
    return;
  }
  if (!ValidName(m->name)) {
    Problem(LineOf(f.value["name"]), "model.name", "must be " + std::string(kNameRule) +
                                                       ", got " + Quote(m->name));
    return;
  }
  if (auto existing = FindModel(m->name); existing.ok() && !SameModelShape(**existing, *m)) {
    Problem(LineOf(f.value["name"]), "model.name",
            Quote(m->name) +
                (IsCatalogModel(*existing)
                     ? " names a catalog model with a different shape"
                     : " is taken by a different shape (from " + (*existing)->source + ")") +
                "; choose another name");
    return;
  }
  YAML::Emitter out;
  out << f.value;
  spec->model = std::move(*m);
  spec->model_yaml = out.c_str();
}

void SpecParser::ReadCommand(const Field& f, DaemonJobSpec* spec) {
  const std::string expect = "a non-empty list of strings (an argv, never run through a shell)";
  if (!f.value.IsSequence() || f.value.size() == 0) {
    std::string hint = f.value.IsScalar() ? "; write it as a list, e.g. [python3, train.py]" : "";
    Problem(f.line, f.name, "must be " + expect + ", got " + Describe(f.value) + hint);
    return;
  }
  std::vector<std::string> argv;
  bool ok = true;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const YAML::Node& n = f.value[i];
    int line = LineOf(n) > 0 ? LineOf(n) : f.line;
    auto s = String("command[" + std::to_string(i) + "]", line, n, "a string");
    if (!s) {
      ok = false;
      continue;
    }
    argv.push_back(*s);
  }
  if (!ok) return;
  const std::string& program = argv[0];
  int line0 = LineOf(f.value[0]) > 0 ? LineOf(f.value[0]) : f.line;
  if (program.empty()) {
    Problem(line0, "command[0]", "must name a program, got \"\"");
    return;
  }
  fs::path resolved;
  if (program.find('/') != std::string::npos) {
    resolved = Resolve(base_, program);
    if (std::string why = NotExecutable(resolved); !why.empty()) {
      if (fs::path(program).is_relative()) {
        why += " (relative paths start at " + Quote(base_.string()) + ")";
      }
      if (StartsWith(why, "is not executable")) {
        why += "; to run a script, name its interpreter first, e.g. [python3, " + program + "]";
      }
      Problem(line0, "command[0]", Quote(resolved.string()) + " " + why);
      return;
    }
  } else {
    const char* env_path = std::getenv("PATH");
    std::string path = env_path != nullptr ? env_path : "";
    for (const std::string& dir : Split(path, ':')) {
      if (dir.empty() || dir[0] != '/') continue;  // never the current directory
      fs::path candidate = fs::path(dir) / program;
      if (NotExecutable(candidate).empty()) {
        resolved = candidate.lexically_normal();
        break;
      }
    }
    if (resolved.empty()) {
      Problem(line0, "command[0]", Quote(program) + " is not an executable on PATH (" + path +
                                       "); give an absolute path or one relative to the spec's folder");
      return;
    }
  }
  argv[0] = resolved.string();
  spec->command = std::move(argv);
}

void SpecParser::ReadGpuTypes(const Field& f, DaemonJobSpec* spec) {
  if (!f.value.IsSequence() || f.value.size() == 0) {
    Problem(f.line, f.name,
            "must be a non-empty list of GPU type names (omit it for any type), got " +
                Describe(f.value));
    return;
  }
  std::vector<std::string> types;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const YAML::Node& n = f.value[i];
    int line = LineOf(n) > 0 ? LineOf(n) : f.line;
    std::string field = "gpu_types[" + std::to_string(i) + "]";
    auto s = String(field, line, n, "a GPU type name");
    if (!s) continue;
    auto gpu = FindGpu(*s);
    if (!gpu.ok()) {
      Problem(line, field, UnknownName("gpu", *s, GpuNames()));
      continue;
    }
    const std::string& name = (*gpu)->name;
    if (std::find(types.begin(), types.end(), name) != types.end()) {
      Problem(line, field, Quote(*s) + " is listed twice");
      continue;
    }
    types.push_back(name);
  }
  spec->gpu_types = std::move(types);
}

void SpecParser::ReadEnv(const Field& f, DaemonJobSpec* spec) {
  if (!f.value.IsMap()) {
    Problem(f.line, f.name, "must be a mapping of NAME: value, got " + Describe(f.value));
    return;
  }
  for (const auto& kv : f.value) {
    int line = LineOf(kv.first) > 0 ? LineOf(kv.first) : f.line;
    auto key = String("env", line, kv.first, "a mapping of NAME: value with plain keys");
    if (!key) continue;
    std::string field = "env." + *key;
    if (!ValidEnvKey(*key)) {
      Problem(line, "env", "variable names must match [A-Za-z_][A-Za-z0-9_]*, got " + Quote(*key));
    } else if (StartsWith(*key, "TESSEL_") || StartsWith(*key, "SLURM_")) {
      Problem(line, field, "names starting with TESSEL_ or SLURM_ are reserved for the daemon");
    } else if (spec->env.count(*key)) {
      Problem(line, field, "duplicate key");
    } else if (auto value = String(field, line, kv.second, "a string"); value) {
      spec->env[*key] = *value;
    }
  }
}

void SpecParser::ReadFramework(const Field& f, DaemonJobSpec* spec) {
  const std::string expect = "one of " + Join(SpecFrameworkNames(), ", ") +
                             " (leave it out for tessel's own environment contract)";
  auto s = String(f.name, f.line, f.value, expect);
  if (!s) return;
  std::optional<JobFramework> fw = FindSpecFramework(*s);
  if (!fw) {
    Problem(f.line, f.name, "must be " + expect + ", got " + Quote(*s));
    return;
  }
  spec->framework = *fw;
  // torchtitan reads the first --job.config_file on its command line
  // (torchtitan/config/manager.py, _maybe_load_toml): one in the command
  // would hide the plan's.
  if (*fw == JobFramework::kTorchtitan) {
    for (size_t i = 1; i < spec->command.size(); ++i) {
      const std::string& a = spec->command[i];
      for (const char* key : {"--job.config_file", "--job.config-file"}) {
        if (a == key || StartsWith(a, std::string(key) + "=")) {
          Problem(f.line, f.name,
                  "torchtitan reads only the first --job.config_file, and command[" + std::to_string(i) +
                      "] passes one: the plan's would be ignored; pass those settings as --section.option "
                      "flags instead");
          return;
        }
      }
    }
  }
}

Result<DaemonJobSpec> SpecParser::Parse(std::string_view text) {
  if (text.size() > kMaxJobSpecBytes) {
    return Fail(0, "the spec is " + std::to_string(text.size()) + " bytes; at most " +
                       std::to_string(kMaxJobSpecBytes) + " are accepted");
  }
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Fail(LineAt(text, nul), "the spec must be text; found a NUL byte");
  }
  if (auto bad = InvalidUtf8At(text)) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "0x%02x", static_cast<unsigned char>(text[*bad]));
    return Fail(LineAt(text, *bad), std::string("the spec must be UTF-8 text; found byte ") + buf);
  }
  // Documents are counted first, at most two, by yaml-cpp's event parser:
  // YAML::LoadAll never returns on some inputs (a stray ',' outside a flow
  // collection yields empty documents forever, yaml-cpp 0.7), so a document
  // that starts where the previous one did is a syntax error here.
  std::vector<YAML::Mark> starts;
  YAML::Node root;
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    DocumentStarts counter(&starts);
    while (starts.size() < 2 && parser.HandleNextDocument(counter)) {
      if (starts.size() == 2 && starts[1].pos == starts[0].pos) {
        return Fail(starts[1].line + 1, "YAML syntax error: unexpected character at column " +
                                            std::to_string(starts[1].column + 1));
      }
    }
    if (starts.size() > 1) {
      return Fail(starts[1].line + 1, "expected one YAML document, found more (remove the '---')");
    }
    root = YAML::Load(std::string(text));
  } catch (const YAML::DeepRecursion& e) {
    return Fail(e.mark.line + 1, "YAML nested too deeply");
  } catch (const YAML::ParserException& e) {
    return Fail(e.mark.line + 1, "YAML syntax error: " + e.msg);
  }
  const std::string expected = "expected a mapping with name, model, global_batch, iterations, command";
  if (!root || root.IsNull()) return Fail(0, "the spec is empty; " + expected);
  if (!root.IsMap()) {
    return Fail(LineOf(root), expected + ", got " + Describe(root));
  }

  std::map<std::string, Field> fields;
  for (const auto& kv : root) {
    int line = LineOf(kv.first);
    if (!kv.first.IsScalar()) {
      Problem(line, "(key)", "keys must be plain field names, got " + Describe(kv.first));
      continue;
    }
    const std::string& key = kv.first.Scalar();
    const auto& known = KnownFields();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string shown = Quote(key);
      Problem(line, shown.substr(1, shown.size() - 2), "unknown field; known: " + Join(known, ", "));
    } else if (auto it = fields.find(key); it != fields.end()) {
      Problem(line, key, "duplicate key (first at line " + std::to_string(it->second.line) + ")");
    } else {
      fields[key] = Field{key, line, kv.second};
    }
  }
  auto get = [&](const std::string& key) -> const Field* {
    auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
  };
  auto missing = [&](const std::string& key, const std::string& expect) {
    Problem(0, key, "required (" + expect + ")");
  };

  DaemonJobSpec spec;
  spec.file = file_;
  spec.workdir = base_.string();

  if (const Field* f = get("name")) {
    if (auto s = String(f->name, f->line, f->value, kNameRule)) {
      if (ValidName(*s)) {
        spec.name = *s;
      } else {
        Problem(f->line, f->name, "must be " + std::string(kNameRule) + ", got " + Quote(*s));
      }
    }
  } else {
    missing("name", kNameRule);
  }
  if (const Field* f = get("model")) {
    ReadModel(*f, &spec);
  } else {
    missing("model", "a catalog model name or a mapping with a shape");
  }
  if (const Field* f = get("global_batch")) {
    if (auto v = Integer(*f, 1, INT_MAX, "an integer >= 1")) spec.global_batch = static_cast<int>(*v);
  } else {
    missing("global_batch", "an integer >= 1");
  }
  if (const Field* f = get("iterations")) {
    if (auto v = Integer(*f, 1, INT64_MAX, "an integer >= 1")) spec.iterations = *v;
  } else {
    missing("iterations", "an integer >= 1");
  }
  if (const Field* f = get("command")) {
    ReadCommand(*f, &spec);
  } else {
    missing("command", "a non-empty list of strings");
  }
  if (const Field* f = get("workdir")) {
    if (auto p = Directory(*f, /*must_exist=*/true)) spec.workdir = p->string();
  } else if (std::error_code ec; !fs::is_directory(base_, ec)) {
    Problem(0, "workdir", "defaults to the spec's folder " + Quote(base_.string()) +
                              ", which is not a directory; set workdir");
  }
  if (const Field* f = get("checkpoint_dir")) {
    if (auto p = Directory(*f, /*must_exist=*/false)) spec.checkpoint_dir = p->string();
  }
  bool elastic_ok = true;
  if (const Field* f = get("elastic")) {
    auto b = Bool(*f);
    elastic_ok = b.has_value();
    spec.elastic = b.value_or(false);
  }
  // GPU counts: each must parse before their relations are checked.
  bool counts_ok = elastic_ok;
  auto gpu_count = [&](const char* key, int* out) -> const Field* {
    const Field* f = get(key);
    if (f == nullptr) return nullptr;
    if (auto v = Integer(*f, 1, INT_MAX, "an integer >= 1")) {
      *out = static_cast<int>(*v);
    } else {
      counts_ok = false;
    }
    return f;
  };
  const Field* gpus = gpu_count("gpus", &spec.gpus);
  spec.min_gpus = spec.max_gpus = spec.gpus;
  const Field* min_gpus = gpu_count("min_gpus", &spec.min_gpus);
  const Field* max_gpus = gpu_count("max_gpus", &spec.max_gpus);
  for (const Field* f : {min_gpus, max_gpus}) {
    if (f != nullptr && elastic_ok && !spec.elastic) {
      Problem(f->line, f->name, "only valid with elastic: true");
      counts_ok = false;
    }
  }
  if (counts_ok) {
    if (min_gpus != nullptr && max_gpus != nullptr && spec.min_gpus > spec.max_gpus) {
      Problem(min_gpus->line, "min_gpus",
              std::to_string(spec.min_gpus) + " is greater than max_gpus " +
                  std::to_string(spec.max_gpus));
    } else if (spec.gpus < spec.min_gpus || spec.gpus > spec.max_gpus) {
      // Only a stated bound can be violated: each defaults to gpus.
      bool below = spec.gpus < spec.min_gpus;
      const Field* at = gpus != nullptr ? gpus : (below ? min_gpus : max_gpus);
      Problem(at->line, "gpus",
              std::to_string(spec.gpus) + (gpus != nullptr ? "" : " (the default)") +
                  (below ? " is less than min_gpus " + std::to_string(spec.min_gpus)
                         : " is greater than max_gpus " + std::to_string(spec.max_gpus)));
    }
  }
  if (const Field* f = get("gpu_types")) ReadGpuTypes(*f, &spec);
  if (const Field* f = get("priority")) {
    if (auto v = Integer(*f, INT_MIN, INT_MAX, "an integer from -2147483648 to 2147483647")) {
      spec.priority = static_cast<int>(*v);
    }
  }
  if (const Field* f = get("env")) ReadEnv(*f, &spec);
  if (const Field* f = get("deadline")) {
    const std::string expect = "a duration after submission from 1 s to 1e9 s (e.g. 36h, 90m, 3600)";
    if (auto s = String(f->name, f->line, f->value, expect)) {
      auto d = ParseDuration(*s, "deadline");
      if (!d.ok() || *d < Seconds(1) || *d > Seconds(1e9)) {
        Problem(f->line, f->name, "must be " + expect + ", got " + Quote(*s));
      } else {
        spec.deadline_s = static_cast<int64_t>(ToSeconds(*d));
      }
    }
  }

  if (const Field* f = get("framework")) ReadFramework(*f, &spec);

  if (!problems_.empty()) {
    std::stable_sort(problems_.begin(), problems_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> lines;
    for (const auto& [line, message] : problems_) {
      if (lines.size() == kMaxProblems) {
        lines.push_back(file_ + ": ... and " + std::to_string(problems_.size() - kMaxProblems) +
                        " more problems");
        break;
      }
      lines.push_back(OneLine(message));
    }
    return InvalidArgument(Join(lines, "\n"));
  }
  return spec;
}

}  // namespace

Result<DaemonJobSpec> ParseJobSpec(std::string_view text, const std::string& file_name,
                                   const std::string& base_dir) {
  try {
    std::error_code ec;
    fs::path base = base_dir.empty() ? fs::current_path(ec) : fs::absolute(base_dir, ec);
    if (ec) return InvalidArgument(file_name + ": cannot resolve the spec's folder " + Quote(base_dir) +
                                   ": " + ec.message());
    SpecParser parser(file_name, Resolve(base, "."));
    return parser.Parse(text);
  } catch (const std::exception& e) {
    // yaml-cpp or the file system threw where we did not expect it.
    return InvalidArgument(file_name + ": cannot parse: " + e.what());
  }
}

Result<JobSpec> ToJobSpec(const DaemonJobSpec& spec) {
  if (!spec.model_yaml.empty()) TESSEL_RETURN_IF_ERROR(RegisterModel(spec.model));
  JobSpec job;
  job.model = spec.model.name;
  job.global_batch = spec.global_batch;
  job.iterations = static_cast<double>(spec.iterations);
  job.requested_gpus = spec.gpus;
  job.requested_gpu_type = spec.gpu_types.size() == 1 ? spec.gpu_types[0] : "";
  job.gpu_type_required = spec.gpu_types.size() == 1;  // a user's constraint, not a trace's history
  job.allowed_gpu_types = spec.gpu_types;
  job.min_gpus = spec.elastic ? spec.min_gpus : spec.gpus;
  job.max_gpus = spec.elastic ? spec.max_gpus : spec.gpus;
  job.priority = spec.priority;
  job.origin = spec.file;
  return job;
}

std::string DaemonJobSpecToJson(const DaemonJobSpec& spec) {
  nlohmann::ordered_json j;
  j["name"] = spec.name;
  j["file"] = spec.file;
  j["model"] = spec.model.name;
  if (!spec.model_yaml.empty()) j["model_yaml"] = spec.model_yaml;
  j["global_batch"] = spec.global_batch;
  j["iterations"] = spec.iterations;
  j["command"] = spec.command;
  j["workdir"] = spec.workdir;
  j["checkpoint_dir"] = spec.checkpoint_dir;
  j["gpus"] = spec.gpus;
  j["min_gpus"] = spec.min_gpus;
  j["max_gpus"] = spec.max_gpus;
  j["gpu_types"] = spec.gpu_types;
  j["elastic"] = spec.elastic;
  j["priority"] = spec.priority;
  j["env"] = spec.env;
  if (spec.deadline_s > 0) j["deadline_s"] = spec.deadline_s;
  if (spec.framework != JobFramework::kTessel) j["framework"] = JobFrameworkName(spec.framework);
  return JsonText(j);
}

Result<DaemonJobSpec> DaemonJobSpecFromJson(std::string_view json) {
  DaemonJobSpec s;
  try {
    nlohmann::json j = nlohmann::json::parse(json);
    s.name = j.at("name").get<std::string>();
    s.file = j.at("file").get<std::string>();
    std::string model = j.at("model").get<std::string>();
    if (j.contains("model_yaml")) s.model_yaml = j.at("model_yaml").get<std::string>();
    s.global_batch = j.at("global_batch").get<int>();
    s.iterations = j.at("iterations").get<int64_t>();
    s.command = j.at("command").get<std::vector<std::string>>();
    s.workdir = j.at("workdir").get<std::string>();
    s.checkpoint_dir = j.at("checkpoint_dir").get<std::string>();
    s.gpus = j.at("gpus").get<int>();
    s.min_gpus = j.at("min_gpus").get<int>();
    s.max_gpus = j.at("max_gpus").get<int>();
    s.gpu_types = j.at("gpu_types").get<std::vector<std::string>>();
    s.elastic = j.at("elastic").get<bool>();
    s.priority = j.at("priority").get<int>();
    s.env = j.at("env").get<std::map<std::string, std::string>>();
    if (j.contains("deadline_s")) s.deadline_s = j.at("deadline_s").get<int64_t>();  // specs stored before it: none
    if (j.contains("framework")) {  // specs stored before it, or without one: tessel's contract
      std::string name = j.at("framework").get<std::string>();
      std::optional<JobFramework> fw = FindSpecFramework(name);
      if (!fw) return InvalidArgument("stored job spec '" + s.name + "': unknown framework " + Quote(name));
      s.framework = *fw;
    }
    if (s.model_yaml.empty()) {
      auto m = FindModel(model);
      if (!m.ok()) return InvalidArgument("stored job spec '" + s.name + "': " + m.status().message());
      s.model = **m;
    } else {
      auto m = LoadModelYaml(s.model_yaml, s.file);
      if (!m.ok()) return InvalidArgument("stored job spec '" + s.name + "': " + m.status().message());
      s.model = std::move(*m);
    }
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("stored job spec is not valid: ") + e.what());
  }
  if (s.command.empty()) return InvalidArgument("stored job spec '" + s.name + "': empty command");
  return s;
}

}  // namespace tessel
