#include "policy/policy.h"

#include "core/strings.h"

namespace tessel {

std::string PolicyOptions::GetString(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

Result<double> PolicyOptions::GetDouble(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  return ParseDouble(it->second, "policy option " + key);
}

Result<bool> PolicyOptions::GetBool(const std::string& key, bool fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  std::string v = ToLower(it->second);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return InvalidArgument("policy option " + key + ": expected true or false, got '" + it->second + "'");
}

Status PolicyRegistry::Register(PolicyInfo info) {
  for (const PolicyInfo& p : policies_) {
    if (p.name == info.name) return InvalidArgument("policy '" + info.name + "' is registered twice");
  }
  policies_.push_back(std::move(info));
  return Status::Ok();
}

std::vector<std::string> PolicyRegistry::SplitList(std::string_view text) const {
  std::vector<std::string> specs;
  for (const std::string& raw : Split(text, ',')) {
    std::string piece = Trim(raw);
    if (piece.empty()) continue;
    std::string name = ToLower(Trim(piece.substr(0, piece.find(':'))));
    bool is_policy = false;
    for (const PolicyInfo& p : policies_) is_policy |= p.name == name;
    bool continues = !specs.empty() && specs.back().find('=') != std::string::npos &&
                     piece.find(':') == std::string::npos;
    if (!is_policy && continues) {
      specs.back() += "," + piece;
    } else {
      specs.push_back(piece);
    }
  }
  return specs;
}

Result<std::unique_ptr<Policy>> PolicyRegistry::Create(std::string_view spec, const PolicyContext& ctx) const {
  std::vector<std::string> parts = Split(spec, ':');
  std::string name = ToLower(Trim(parts.empty() ? "" : parts[0]));
  const PolicyInfo* info = nullptr;
  std::vector<std::string> names;
  for (const PolicyInfo& p : policies_) {
    names.push_back(p.name);
    if (p.name == name) info = &p;
  }
  if (!info) return NotFound(UnknownNameMessage("policy", name, names));
  std::map<std::string, std::string> values;
  for (size_t i = 1; i < parts.size(); ++i) {
    size_t eq = parts[i].find('=');
    if (eq == std::string::npos) {
      return InvalidArgument("policy " + name + ": option '" + parts[i] + "' must be key=value");
    }
    std::string key = Trim(parts[i].substr(0, eq));
    bool known = false;
    std::vector<std::string> keys;
    for (const std::string& o : info->options) {
      std::string k = o.substr(0, o.find('='));
      keys.push_back(k);
      known |= k == key;
    }
    if (!known) {
      return InvalidArgument("policy " + name + ": unknown option '" + key + "'" +
                             (keys.empty() ? "; it takes no options" : "; known: " + Join(keys, ", ")));
    }
    values[key] = Trim(parts[i].substr(eq + 1));
  }
  return info->factory(PolicyOptions(std::move(values)), ctx);
}

}  // namespace tessel
