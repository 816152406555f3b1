// Authentication for the daemon's HTTP API: the tokens file and the lookup
// from a bearer token to the Caller it stands for.
//
// The tokens file (`tessel serve --tokens FILE`) has one token per line:
//
//   # comment
//   TOKEN USER [admin]
//
// TOKEN: 16 to 512 characters of A-Z a-z 0-9 - . _ ~ + / = (RFC 6750's
// token68 alphabet; e.g. `openssl rand -hex 32`); unique in the file.
// USER: 1 to 64 characters of A-Z a-z 0-9 . _ -, starting with a letter or
// '_' (a POSIX login name); a user may have several tokens (rotation).
// A third word, if present, must be `admin` (sees and cancels every job).
// Blank lines and lines starting with '#' are ignored; so is trailing
// whitespace (CRLF files load).
//
// A tokens file that group or others may read or write is refused, not
// warned about: a leaked token is a leaked identity, and `chmod 600 FILE`
// is the fix the error names. Errors name file:line and what is accepted and
// never quote a word of the file (a misplaced token would leak).
//
// Thread-safety: a loaded TokenStore is immutable; Lookup may be called from
// any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/service.h"

namespace tessel {

inline constexpr size_t kMinTokenLength = 16;
inline constexpr size_t kMaxTokenLength = 512;
inline constexpr size_t kMaxUserLength = 64;

class TokenStore {
 public:
  TokenStore() = default;

  // Reads and parses `path`. NotFound when it cannot be opened,
  // PermissionDenied when group or others have any access to it,
  // InvalidArgument (file:line: what is wrong; what is accepted) otherwise.
  static Result<TokenStore> Load(const std::string& path);
  // Parses the text of a tokens file; `source` names it in errors. No
  // permission check (that is Load's).
  static Result<TokenStore> Parse(std::string_view text, const std::string& source);

  // The caller a bearer token stands for; nullopt for an unknown token.
  // Compares `token` with every stored token, each comparison in time that
  // depends only on token's length (no early exit on the first differing
  // byte, none on a match), so response times do not reveal how much of a
  // guess was right.
  std::optional<Caller> Lookup(std::string_view token) const;

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string token;
    Caller caller;
  };
  std::vector<Entry> entries_;
};

// The token in an `Authorization: Bearer <token>` header value; nullopt when
// the header is absent, of another scheme, or empty. The scheme is matched
// case-insensitively (RFC 7235).
std::optional<std::string_view> BearerToken(std::string_view authorization);

// True when every byte of `a` equals `b`'s, in time that depends only on
// a.size() (b's length and content do not change the work done).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace tessel
