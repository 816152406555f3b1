// SHA-256 (FIPS 180-4) and base64 (RFC 4648, with padding): what a
// Content-Security-Policy source of the form 'sha256-<base64>' names
// (report.html's hashes of its inline scripts). Pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessel {

// The 32-byte digest of `data`.
std::array<uint8_t, 32> Sha256(std::string_view data);
// Lower-case hexadecimal, 64 characters.
std::string Sha256Hex(std::string_view data);
// Standard base64 alphabet, '=' padding.
std::string Base64(std::string_view bytes);

}  // namespace tessel
