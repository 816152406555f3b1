// The tokens file: exact errors for bad files (never quoting a token), the
// permission check, and lookups.
#include "server/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "testing/test_data.h"

namespace tessel {
namespace {

const std::string kTokA = "tok_alice_0123456789abcdef";
const std::string kTokB = "tok-bob.ABCDEF~+/=0123456789";
const std::string kTokRoot = "0123456789abcdef0123456789abcdef";

std::string WriteFile(const std::string& name, const std::string& text, mode_t mode) {
  std::string path = testing::ProcessTempDir() + "/" + name;
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(TokenStore, ParsesUsersAdminsCommentsAndCrlf) {
  auto s = TokenStore::Parse("# tokens\n\n" + kTokA + " alice\r\n  " + kTokB + "\tbob  \n" + kTokRoot +
                                 " root admin\n# end",
                             "tokens");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->size(), 3u);
  auto a = s->Lookup(kTokA);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->user, "alice");
  EXPECT_FALSE(a->admin);
  auto b = s->Lookup(kTokB);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->user, "bob");
  auto r = s->Lookup(kTokRoot);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->user, "root");
  EXPECT_TRUE(r->admin);
}

TEST(TokenStore, LookupRejectsNearMisses) {
  auto s = TokenStore::Parse(kTokA + " alice\n", "tokens");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->Lookup("").has_value());
  EXPECT_FALSE(s->Lookup(kTokA.substr(0, kTokA.size() - 1)).has_value());  // prefix
  EXPECT_FALSE(s->Lookup(kTokA + "x").has_value());                         // extension
  std::string flipped = kTokA;
  flipped.back() = 'X';
  EXPECT_FALSE(s->Lookup(flipped).has_value());
  EXPECT_FALSE(s->Lookup(kTokA + kTokA).has_value());  // cyclic reading must not match
}

TEST(TokenStore, SeveralTokensPerUser) {
  auto s = TokenStore::Parse(kTokA + " alice\n" + kTokB + " alice\n", "tokens");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Lookup(kTokA)->user, "alice");
  EXPECT_EQ(s->Lookup(kTokB)->user, "alice");
}

TEST(ConstantTimeEquals, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abcabc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", ""));
  EXPECT_FALSE(ConstantTimeEquals("", "abc"));
}

TEST(BearerToken, ParsesTheHeader) {
  EXPECT_EQ(BearerToken("Bearer abc").value_or("?"), "abc");
  EXPECT_EQ(BearerToken("bearer   abc  ").value_or("?"), "abc");
  EXPECT_EQ(BearerToken("BEARER abc").value_or("?"), "abc");
  EXPECT_FALSE(BearerToken("").has_value());
  EXPECT_FALSE(BearerToken("Bearer").has_value());
  EXPECT_FALSE(BearerToken("Bearer   ").has_value());
  EXPECT_FALSE(BearerToken("Basic YWxpY2U6cHc=").has_value());
  EXPECT_FALSE(BearerToken("Bearerabc").has_value());
}

struct BadFile {
  const char* name;
  std::string text;
  std::string error;  // the exact message
};

class BadTokenFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadTokenFile, ExactErrorWithoutTheToken) {
  const BadFile& c = GetParam();
  auto s = TokenStore::Parse(c.text, "t.tok");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), c.error);
  // No word of the file is quoted: neither the tokens nor what was meant to be one.
  for (const std::string& secret : {kTokA, kTokB, kTokRoot, std::string("shorttok"), std::string("bad!token")})
    EXPECT_EQ(s.status().message().find(secret), std::string::npos) << secret;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadTokenFile,
    ::testing::Values(
        BadFile{"empty", "", "t.tok: no tokens; expected lines 'TOKEN USER [admin]' ('#' starts a comment)"},
        BadFile{"only_comments", "# nothing\n\n",
                "t.tok: no tokens; expected lines 'TOKEN USER [admin]' ('#' starts a comment)"},
        BadFile{"one_word", "# c\n" + kTokA + "\n", "t.tok:2: expected 'TOKEN USER [admin]', got 1 word"},
        BadFile{"four_words", kTokA + " alice admin extra\n",
                "t.tok:1: expected 'TOKEN USER [admin]', got 4 words"},
        BadFile{"short_token", "shorttok alice\n",
                "t.tok:1: token is 8 characters; must be 16 to 512 characters of A-Z a-z 0-9 - . _ ~ + / ="},
        BadFile{"long_token", std::string(513, 'a') + " alice\n",
                "t.tok:1: token is 513 characters; must be 16 to 512 characters of A-Z a-z 0-9 - . _ ~ + / ="},
        BadFile{"token_charset", "bad!token0123456789 alice\n",
                "t.tok:1: token has a character outside A-Z a-z 0-9 - . _ ~ + / = (at character 4)"},
        BadFile{"user_charset", kTokA + " al!ce\n",
                "t.tok:1: user must be 1 to 64 characters of A-Z a-z 0-9 . _ -, starting with a letter or '_' "
                "(got 5 characters)"},
        BadFile{"user_starts_with_digit", kTokA + " " + kTokRoot + "\n",
                "t.tok:1: user must be 1 to 64 characters of A-Z a-z 0-9 . _ -, starting with a letter or '_' "
                "(got 32 characters)"},
        BadFile{"user_too_long", kTokA + " " + std::string(65, 'u') + "\n",
                "t.tok:1: user must be 1 to 64 characters of A-Z a-z 0-9 . _ -, starting with a letter or '_' "
                "(got 65 characters)"},
        BadFile{"third_word", kTokA + " alice root\n", "t.tok:1: the third word, if any, must be 'admin'"},
        BadFile{"third_word_is_token", kTokA + " alice " + kTokB + "\n",
                "t.tok:1: the third word, if any, must be 'admin'"},
        BadFile{"duplicate", kTokA + " alice\n# x\n" + kTokA + " bob\n",
                "t.tok:3: duplicate token (also on line 1); each token must be unique"},
        BadFile{"every_error_listed", "shorttok alice\n" + kTokA + " alice extra\n",
                "t.tok:1: token is 8 characters; must be 16 to 512 characters of A-Z a-z 0-9 - . _ ~ + / =\n"
                "t.tok:2: the third word, if any, must be 'admin'"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(TokenStore, LoadRefusesFilesOthersCanRead) {
  std::string path = WriteFile("open.tok", kTokA + " alice\n", 0644);
  auto s = TokenStore::Load(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.status().message(), "tokens file '" + path +
                                      "' is accessible by group or others (mode 0644); it holds credentials, so only "
                                      "its owner may read it: chmod 600 '" +
                                      path + "'");
  EXPECT_EQ(s.status().message().find(kTokA), std::string::npos);
  std::string group = WriteFile("group.tok", kTokA + " alice\n", 0640);
  EXPECT_EQ(TokenStore::Load(group).status().code(), StatusCode::kPermissionDenied);
}

TEST(TokenStore, LoadReadsAPrivateFile) {
  std::string path = WriteFile("private.tok", kTokA + " alice\n" + kTokRoot + " root admin\n", 0600);
  auto s = TokenStore::Load(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->size(), 2u);
  EXPECT_TRUE(s->Lookup(kTokRoot)->admin);
}

TEST(TokenStore, LoadNamesTheFileOnErrors) {
  auto missing = TokenStore::Load("/nonexistent/x.tok");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "cannot open tokens file '/nonexistent/x.tok': No such file or directory");
  std::string path = WriteFile("bad.tok", "# header\nshorttok alice\n", 0600);
  auto bad = TokenStore::Load(path);
  EXPECT_EQ(bad.status().message(),
            path + ":2: token is 8 characters; must be 16 to 512 characters of A-Z a-z 0-9 - . _ ~ + / =");
}

}  // namespace
}  // namespace tessel
