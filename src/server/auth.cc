#include "server/auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/strings.h"

namespace tessel {

namespace {

constexpr const char* kTokenAlphabet = "A-Z a-z 0-9 - . _ ~ + / =";

bool IsTokenChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
}

bool IsValidUser(std::string_view u) {
  if (u.empty() || u.size() > kMaxUserLength) return false;
  char first = u[0];
  if (!((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z') || first == '_')) return false;
  for (char c : u)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return false;
  return true;
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

// What is wrong with a token, without quoting it; "" when it is valid.
std::string TokenProblem(std::string_view token) {
  if (token.size() < kMinTokenLength || token.size() > kMaxTokenLength)
    return "token is " + std::to_string(token.size()) + " characters; must be " + std::to_string(kMinTokenLength) +
           " to " + std::to_string(kMaxTokenLength) + " characters of " + kTokenAlphabet;
  for (size_t i = 0; i < token.size(); ++i)
    if (!IsTokenChar(token[i]))
      return "token has a character outside " + std::string(kTokenAlphabet) + " (at character " +
             std::to_string(i + 1) + ")";
  return "";
}

}  // namespace

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Walks a's length whatever b is; b's bytes are read cyclically so an
  // empty or shorter b costs the same.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  if (b.empty()) {
    volatile unsigned char sink = 0;
    for (char c : a) sink = sink | static_cast<unsigned char>(c);
    (void)sink;
    return a.empty();
  }
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i % b.size()]);
  return diff == 0;
}

Result<TokenStore> TokenStore::Parse(std::string_view text, const std::string& source) {
  TokenStore store;
  std::vector<std::string> errors;
  std::vector<int> line_of;  // entries_[i] came from line line_of[i]
  std::vector<std::string> lines = Split(text, '\n');
  for (size_t n = 0; n < lines.size(); ++n) {
    const int line_no = static_cast<int>(n) + 1;
    std::string_view line = lines[n];
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    std::vector<std::string_view> words = Words(line);
    if (words.empty() || words[0][0] == '#') continue;
    std::string where = source + ":" + std::to_string(line_no) + ": ";
    if (words.size() < 2 || words.size() > 3) {
      errors.push_back(where + "expected 'TOKEN USER [admin]', got " + std::to_string(words.size()) +
                       (words.size() == 1 ? " word" : " words"));
    } else if (std::string p = TokenProblem(words[0]); !p.empty()) {
      errors.push_back(where + p);
    } else if (!IsValidUser(words[1])) {
      errors.push_back(where + "user must be 1 to " + std::to_string(kMaxUserLength) +
                       " characters of A-Z a-z 0-9 . _ -, starting with a letter or '_' (got " +
                       std::to_string(words[1].size()) + " characters)");
    } else if (words.size() == 3 && words[2] != "admin") {
      errors.push_back(where + "the third word, if any, must be 'admin'");
    } else {
      int duplicate_of = 0;
      for (size_t i = 0; i < store.entries_.size(); ++i)
        if (store.entries_[i].token == words[0]) duplicate_of = line_of[i];
      if (duplicate_of > 0) {
        errors.push_back(where + "duplicate token (also on line " + std::to_string(duplicate_of) +
                         "); each token must be unique");
      } else {
        store.entries_.push_back({std::string(words[0]), Caller{std::string(words[1]), words.size() == 3}});
        line_of.push_back(line_no);
      }
    }
  }
  if (!errors.empty()) return InvalidArgument(Join(errors, "\n"));
  if (store.entries_.empty())
    return InvalidArgument(source + ": no tokens; expected lines 'TOKEN USER [admin]' ('#' starts a comment)");
  return store;
}

Result<TokenStore> TokenStore::Load(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot open tokens file '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return NotFound("cannot stat tokens file '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("tokens file '" + path + "' is not a regular file");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return PermissionDenied("tokens file '" + path + "' is accessible by group or others (mode " + mode +
                            "); it holds credentials, so only its owner may read it: chmod 600 '" + path + "'");
  }
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return NotFound("cannot read tokens file '" + path + "': " + std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return Parse(text, path);
}

std::optional<Caller> TokenStore::Lookup(std::string_view token) const {
  // Every entry is compared (no return on a match), each in time that
  // depends only on token.size().
  const Entry* found = nullptr;
  for (const Entry& e : entries_) {
    bool eq = ConstantTimeEquals(token, e.token);
    if (eq && found == nullptr) found = &e;
  }
  if (found == nullptr) return std::nullopt;
  return found->caller;
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  size_t i = 0;
  while (i < authorization.size() && authorization[i] == ' ') ++i;
  if (authorization.size() - i <= kScheme.size()) return std::nullopt;
  for (size_t k = 0; k < kScheme.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(authorization[i + k])) != kScheme[k]) return std::nullopt;
  i += kScheme.size();
  if (authorization[i] != ' ') return std::nullopt;
  while (i < authorization.size() && authorization[i] == ' ') ++i;
  std::string_view token = authorization.substr(i);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

}  // namespace tessel
