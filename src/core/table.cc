#include "core/table.h"

#include <algorithm>
#include <cctype>

namespace tessel {

namespace {
bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' ||
          c == 'e' || c == '%' || c == 'x')) {
      return false;
    }
  }
  return std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.';
}
}  // namespace

std::string TextTable::Render() const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) w[i] = header_[i].size();
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r, bool head) {
    std::string out;
    for (size_t i = 0; i < w.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      std::string pad(w[i] - cell.size(), ' ');
      bool right = !head && LooksNumeric(cell);
      out += right ? pad + cell : cell + pad;
      if (i + 1 < w.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_, true);
  size_t total = 0;
  for (size_t x : w) total += x + 2;
  out += std::string(total > 2 ? total - 2 : total, '-') + "\n";
  for (const auto& r : rows_) out += line(r, false);
  return out;
}

}  // namespace tessel
