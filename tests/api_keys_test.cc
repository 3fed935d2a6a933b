// ApiKeys (server/api_keys.h): the file's format and its errors, constant-time admission by
// key, and the two quotas on a fake clock.
#include "server/api_keys.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace xlate::server {
namespace {

constexpr char kAlice[] = "alice-0123456789abcdef";
constexpr char kBob[] = "bob-0123456789abcdef00";

class ApiKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/api_keys_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  absl::StatusOr<std::unique_ptr<ApiKeys>> Load() {
    return ApiKeys::Load(path_, [this] { return now_; });
  }

  std::string path_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

TEST_F(ApiKeysTest, AdmitsListedKeysByNameAndRefusesOthers) {
  Write(std::string("# operators\n\n") + kAlice + "\n" + kBob + "\t0\t0\r\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  auto alice = (*keys)->Admit(kAlice, 10);
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ(*alice, ApiKeys::Name(kAlice));
  EXPECT_EQ(alice->size(), 12u);
  EXPECT_EQ(std::string(kAlice).find(*alice), std::string::npos);
  EXPECT_TRUE((*keys)->Admit(kBob, 10).ok());
  for (const std::string& wrong : {std::string(), std::string("alice-0123456789abcdeX"),
                                   std::string(kAlice) + " "}) {
    const auto refused = (*keys)->Admit(wrong, 10);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << wrong;
  }
  EXPECT_NE((*keys)->Admit("", 1).status().message().find("authorization: Bearer"),
            absl::string_view::npos);
}

TEST_F(ApiKeysTest, VerifyChecksTheKeyWithoutTakingQuota) {
  Write(std::string(kAlice) + "\t1\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE((*keys)->Verify(kAlice).ok());
  EXPECT_EQ((*keys)->Verify(kBob).code(), absl::StatusCode::kUnauthenticated);
  const absl::Status none = (*keys)->Verify("");
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(none.message().find("needs an API key"), std::string::npos) << none;
  // The one request a minute is still there.
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());
  EXPECT_EQ((*keys)->Admit(kAlice, 1).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(ApiKeysTest, MalformedLinesAreNamedWithoutQuotingTheKey) {
  const std::string secret = "secret-0123456789abcdef";
  const std::pair<std::string, std::string> cases[] = {
      {secret + "\tmany\n", "line 1: requests per minute is not a whole number"},
      {"# c\n" + secret + "\t5\t-1\n", "line 2: characters per day is not a whole number"},
      {"short\n", "line 1: the key is shorter than 16 characters"},
      {secret + "\t1\t2\t3\n", "line 1: more than three tab-separated fields"},
      {secret + "\n" + secret + "\n", "line 2: key " + ApiKeys::Name(secret) + " is listed twice"},
      {"# nothing\n\n", "lists no key"},
  };
  for (const auto& [text, message] : cases) {
    Write(text);
    const auto keys = Load();
    ASSERT_FALSE(keys.ok()) << text;
    EXPECT_EQ(keys.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(keys.status().message().find(message), absl::string_view::npos)
        << keys.status().message();
    EXPECT_EQ(keys.status().message().find(secret), absl::string_view::npos);
  }
  EXPECT_EQ(ApiKeys::Load(path_ + ".missing").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ApiKeysTest, RequestsPerMinuteRefillOverTheMinute) {
  Write(std::string(kAlice) + "\t2\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());
  const auto third = (*keys)->Admit(kAlice, 1);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("over its 2 requests per minute; retry in 30 s"),
            absl::string_view::npos)
      << third.status().message();
  now_ += absl::Seconds(29);
  EXPECT_FALSE((*keys)->Admit(kAlice, 1).ok());  // a refusal uses nothing
  now_ += absl::Seconds(1);
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());
  EXPECT_FALSE((*keys)->Admit(kAlice, 1).ok());
}

TEST_F(ApiKeysTest, CharactersPerDayAreCountedAndRefilledOverTheDay) {
  Write(std::string(kAlice) + "\t0\t100\n" + kBob + "\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE((*keys)->Admit(kAlice, 60).ok());
  const auto over = (*keys)->Admit(kAlice, 50);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  // 10 characters missing at 100 a day: 8,640 s.
  EXPECT_NE(over.status().message().find("this request's 50 fit in 8640 s"),
            absl::string_view::npos)
      << over.status().message();
  EXPECT_NE((*keys)->Admit(kAlice, 101).status().message().find("at most 100 a day"),
            absl::string_view::npos);
  EXPECT_TRUE((*keys)->Admit(kAlice, 40).ok());
  EXPECT_TRUE((*keys)->Admit(kBob, 1'000'000).ok());  // no limit of its own
  now_ += absl::Hours(12);
  EXPECT_TRUE((*keys)->Admit(kAlice, 50).ok());
  EXPECT_FALSE((*keys)->Admit(kAlice, 1).ok());
}

TEST_F(ApiKeysTest, ReloadReplacesKeysKeepsUsedQuotaAndSurvivesABadFile) {
  Write(std::string(kAlice) + "\t1\n" + kBob + "\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());
  Write(std::string(kAlice) + "\t1\n");
  ASSERT_TRUE((*keys)->Reload().ok());
  EXPECT_EQ((*keys)->Admit(kBob, 1).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*keys)->Admit(kAlice, 1).status().code(), absl::StatusCode::kResourceExhausted);
  Write("broken\n");
  EXPECT_FALSE((*keys)->Reload().ok());
  now_ += absl::Minutes(1);
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());  // the keys in use stayed
}

// The QA round: raising a used key's limit by reload left it exhausted.
TEST_F(ApiKeysTest, ARaisedLimitAddsWhatItRaisesAndANewOneStartsFull) {
  Write(std::string(kAlice) + "\t1\t10\n" + kBob + "\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE((*keys)->Admit(kAlice, 10).ok());
  EXPECT_TRUE((*keys)->Admit(kBob, 1000).ok());
  EXPECT_EQ((*keys)->Admit(kAlice, 1).status().code(), absl::StatusCode::kResourceExhausted);
  // Alice: 1 -> 3 requests a minute, 10 -> 100 characters a day; Bob: from none to 2 a minute.
  Write(std::string(kAlice) + "\t3\t100\n" + kBob + "\t2\n");
  ASSERT_TRUE((*keys)->Reload().ok());
  EXPECT_TRUE((*keys)->Admit(kAlice, 90).ok());
  EXPECT_TRUE((*keys)->Admit(kAlice, 0).ok());
  EXPECT_EQ((*keys)->Admit(kAlice, 0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*keys)->Admit(kBob, 1).ok());
  EXPECT_TRUE((*keys)->Admit(kBob, 1).ok());
  EXPECT_EQ((*keys)->Admit(kBob, 1).status().code(), absl::StatusCode::kResourceExhausted);
  // Lowered: what is left is capped at the new limit.
  now_ += absl::Minutes(10);
  Write(std::string(kAlice) + "\t1\n" + kBob + "\t2\n");
  ASSERT_TRUE((*keys)->Reload().ok());
  EXPECT_TRUE((*keys)->Admit(kAlice, 0).ok());
  EXPECT_EQ((*keys)->Admit(kAlice, 0).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(ApiKeysTest, SpacesAroundFieldsAreTrimmedAndASpaceInAKeyIsNamed) {
  Write(std::string(" ") + kAlice + " \t 5 \r\n");
  auto keys = Load();
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE((*keys)->Admit(kAlice, 1).ok());
  Write("alice 0123456789abcdef\n");
  const auto spaced = Load();
  ASSERT_FALSE(spaced.ok());
  EXPECT_NE(spaced.status().message().find("line 1: the key holds a space"), std::string::npos)
      << spaced.status();
}

}  // namespace
}  // namespace xlate::server
