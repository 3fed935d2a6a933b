// TranslatedFiles (server/translated_files.h): files kept for download under unguessable ids,
// until they expire or make room, on a fake clock.
#include "server/translated_files.h"

#include <gtest/gtest.h>

#include <set>

namespace xlate::server {
namespace {

TEST(TranslatedFiles, AFileIsServedUntilItExpires) {
  absl::Time now = absl::FromUnixSeconds(1000);
  TranslatedFiles files(100, absl::Minutes(30), [&now] { return now; });
  const std::optional<std::string> id = files.Put({"a.docx", "application/x", "content"});
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->size(), 32u);
  std::optional<TranslatedFiles::File> file = files.Get(*id);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->name, "a.docx");
  EXPECT_EQ(file->content, "content");
  EXPECT_FALSE(files.Get("0123456789abcdef0123456789abcdef").has_value());
  now += absl::Minutes(29);
  EXPECT_TRUE(files.Get(*id).has_value());
  now += absl::Minutes(1);
  EXPECT_FALSE(files.Get(*id).has_value());
  EXPECT_EQ(files.bytes(), 0);
}

TEST(TranslatedFiles, TheOldestMakeRoomWithinTheBudget) {
  absl::Time now = absl::FromUnixSeconds(1000);
  TranslatedFiles files(10, absl::Hours(1), [&now] { return now; });
  const auto first = files.Put({"1", "t", "aaaa"});
  const auto second = files.Put({"2", "t", "bbbb"});
  const auto third = files.Put({"3", "t", "cccc"});  // 12 bytes: the first goes
  EXPECT_FALSE(files.Get(*first).has_value());
  EXPECT_TRUE(files.Get(*second).has_value());
  EXPECT_TRUE(files.Get(*third).has_value());
  EXPECT_EQ(files.bytes(), 8);
  EXPECT_FALSE(files.Put({"big", "t", std::string(11, 'x')}).has_value());
  // Ids do not repeat.
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.insert(*files.Put({"", "t", ""}));
  EXPECT_EQ(ids.size(), 100u);
}

}  // namespace
}  // namespace xlate::server
