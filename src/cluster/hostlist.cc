#include "cluster/hostlist.h"

#include <cstdio>

namespace tessel {
namespace {

bool IsDigits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string Padded(unsigned long long value, size_t width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*llu", static_cast<int>(width), value);
  return buf;
}

// The values of one bracket group's body, e.g. "1-3,05" -> 1 2 3 05.
Status ExpandGroup(std::string_view expr, std::string_view body, size_t at,
                   std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string_view::npos) comma = body.size();
    std::string_view item = body.substr(start, comma - start);
    size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!IsDigits(lo) || !IsDigits(hi)) {
      return InvalidArgument("hostlist '" + std::string(expr) + "': '" + std::string(item) +
                             "' at position " + std::to_string(at + start) +
                             " is not a number or range lo-hi");
    }
    unsigned long long a = std::stoull(std::string(lo));
    unsigned long long b = std::stoull(std::string(hi));
    if (a > b) {
      return InvalidArgument("hostlist '" + std::string(expr) + "': range '" + std::string(item) +
                             "' runs backwards");
    }
    if (b - a >= kMaxHostlistSize || out.size() + (b - a + 1) > kMaxHostlistSize) {
      return InvalidArgument("hostlist '" + std::string(expr) + "': more than " +
                             std::to_string(kMaxHostlistSize) + " hosts");
    }
    for (unsigned long long v = a; v <= b; ++v) out.push_back(Padded(v, lo.size()));
    start = comma + 1;
  }
  return Status::Ok();
}

// Expands one term ("r[1-2]n[3,5]") onto `hosts`.
Status ExpandTerm(std::string_view expr, std::string_view term, size_t at,
                  std::vector<std::string>& hosts) {
  std::vector<std::string> partial = {""};
  size_t i = 0;
  while (i < term.size()) {
    size_t open = term.find('[', i);
    std::string literal(
        term.substr(i, open == std::string_view::npos ? term.size() - i : open - i));
    for (auto& p : partial) p += literal;
    if (open == std::string_view::npos) break;
    size_t close = term.find(']', open);
    if (close == std::string_view::npos) {
      return InvalidArgument("hostlist '" + std::string(expr) + "': '[' at position " +
                             std::to_string(at + open) + " is not closed");
    }
    std::vector<std::string> values;
    TESSEL_RETURN_IF_ERROR(
        ExpandGroup(expr, term.substr(open + 1, close - open - 1), at + open + 1, values));
    if (partial.size() * values.size() + hosts.size() > kMaxHostlistSize) {
      return InvalidArgument("hostlist '" + std::string(expr) + "': more than " +
                             std::to_string(kMaxHostlistSize) + " hosts");
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * values.size());
    for (const auto& p : partial) {
      for (const auto& v : values) next.push_back(p + v);
    }
    partial = std::move(next);
    i = close + 1;
  }
  for (auto& p : partial) hosts.push_back(std::move(p));
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view expression) {
  std::vector<std::string> hosts;
  if (expression.empty() || expression == "(null)") return hosts;
  int depth = 0;
  size_t term_start = 0;
  for (size_t i = 0; i <= expression.size(); ++i) {
    char c = i < expression.size() ? expression[i] : ',';
    if (c == '[') {
      if (++depth > 1) {
        return InvalidArgument("hostlist '" + std::string(expression) +
                               "': nested '[' at position " + std::to_string(i));
      }
    } else if (c == ']') {
      if (--depth < 0) {
        return InvalidArgument("hostlist '" + std::string(expression) + "': ']' at position " +
                               std::to_string(i) + " has no '['");
      }
    } else if (c == ',' && depth == 0) {
      std::string_view term = expression.substr(term_start, i - term_start);
      if (term.empty()) {
        return InvalidArgument("hostlist '" + std::string(expression) +
                               "': empty host name at position " + std::to_string(term_start));
      }
      TESSEL_RETURN_IF_ERROR(ExpandTerm(expression, term, term_start, hosts));
      term_start = i + 1;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      return InvalidArgument("hostlist '" + std::string(expression) + "': whitespace at position " +
                             std::to_string(i));
    }
  }
  if (depth != 0) {
    return InvalidArgument("hostlist '" + std::string(expression) + "': '[' is not closed");
  }
  return hosts;
}

}  // namespace tessel
