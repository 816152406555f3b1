#include "core/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace tessel {
namespace {

std::string Bytes(const std::array<uint8_t, 32>& d) { return std::string(d.begin(), d.end()); }

// FIPS 180-4's examples (NIST CSRC "SHA256.pdf"), and lengths around the
// one- and two-block padding boundary checked against coreutils' sha256sum.
TEST(Sha256, KnownDigests) {
  struct Case {
    const char* name;
    std::string input;
    const char* hex;
  };
  const Case cases[] = {
      {"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"two_blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"55_bytes", std::string(55, 'a'), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {"56_bytes", std::string(56, 'a'), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {"64_bytes", std::string(64, 'a'), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {"million_a", std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const Case& c : cases) EXPECT_EQ(Sha256Hex(c.input), c.hex) << c.name;
}

TEST(Sha256, Base64OfDigestIsWhatCspNames) {
  // echo -n 'alert(1)' | openssl dgst -sha256 -binary | base64
  EXPECT_EQ(Base64(Bytes(Sha256("alert(1)"))), "bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI=");
}

TEST(Sha256, Base64Padding) {
  // RFC 4648 section 10.
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
}

}  // namespace
}  // namespace tessel
