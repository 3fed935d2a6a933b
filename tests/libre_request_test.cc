// LibreTranslate requests (server/libre_request.h): the fields of JSON and form bodies with
// LibreTranslate's messages, and the bounds a JSON body is held to while it is read.
#include "server/libre_request.h"

#include <gtest/gtest.h>

#include <string>

namespace xlate::server {
namespace {

TEST(LibreRequest, ReadsJsonFieldsAsLibreTranslateDoes) {
  auto one = read_libre_json(
      R"({"q": "A dog.", "source": "en", "target": "de", "format": "html", "api_key": "k",
          "alternatives": 2, "client_extra": {"x": [1, 2]}})",
      256, true);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->texts, std::vector<std::string>{"A dog."});
  EXPECT_FALSE(one->q_is_list);
  EXPECT_EQ(one->source, "en");
  EXPECT_EQ(one->target, "de");
  EXPECT_EQ(one->format, "html");
  EXPECT_EQ(one->api_key, "k");
  EXPECT_EQ(one->alternatives, 2);
  auto list = read_libre_json(R"({"q": ["a", "", "b"], "alternatives": "1"})", 256, false);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->q_is_list);
  EXPECT_EQ(list->texts, (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(list->format, "text");
  // The last of a repeated field counts, as in a parsed object.
  auto repeated = read_libre_json(R"({"q": ["a", "b"], "q": "c"})", 256, false);
  ASSERT_TRUE(repeated.ok()) << repeated.status();
  EXPECT_EQ(repeated->texts, std::vector<std::string>{"c"});
  EXPECT_FALSE(repeated->q_is_list);
}

TEST(LibreRequest, WrongFieldsGetLibreTranslatesMessages) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"source": "en", "target": "de"})", "missing q parameter"},
      {R"({"q": null, "source": "en", "target": "de"})", "missing q parameter"},
      {R"({"q": 5, "source": "en", "target": "de"})", "q must be a string or strings"},
      {R"({"q": {"a": "b"}, "source": "en", "target": "de"})", "q must be a string or strings"},
      {R"({"q": ["a", 1], "source": "en", "target": "de"})", "q must be a string or strings"},
      {R"({"q": ["a", ["b"]], "source": "en", "target": "de"})", "q must be a string or strings"},
      {R"({"q": "a", "target": "de"})", "missing source parameter"},
      {R"({"q": "a", "source": 1, "target": "de"})", "source must be a string"},
      {R"({"q": "a", "source": "en", "target": "de", "format": "pdf"})",
       "format must be text or html"},
      {R"({"q": "a", "source": "en", "target": "de", "alternatives": 1.5})",
       "alternatives must be a whole number"},
      {R"(["q", "a"])", "the body is not a JSON object"},
      {R"("q")", "the body is not a JSON object"},
      {R"({"q": "a", )", "the body is not JSON"},
      {"{\"q\": \"\xff\"}", "the body is not valid UTF-8 (byte 7)"},
  };
  for (const auto& [body, message] : cases) {
    const auto read = read_libre_json(body, 256, true);
    ASSERT_FALSE(read.ok()) << body;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_NE(read.status().message().find("Invalid request: "), std::string::npos) << body;
    EXPECT_NE(read.status().message().find(message), std::string::npos)
        << body << ": " << read.status();
  }
}

// The QA round's bodies: 8,000 and 100,000-deep arrays (a core for seconds to minutes) and a
// 4 MiB list of 1.4 million empty strings or arrays (250-310 MiB each), refused at the first
// value past a bound.
TEST(LibreRequest, JsonBodiesAreBoundedWhileRead) {
  for (const int depth : {4, 8000, 100000}) {
    const std::string body =
        R"({"q": )" + std::string(depth, '[') + std::string(depth, ']') + "}";
    const auto read = read_libre_json(body, 256, false);
    ASSERT_FALSE(read.ok()) << depth;
    EXPECT_NE(read.status().message().find("q must be a string or strings"), std::string::npos)
        << read.status();
  }
  // Nesting in a field this server does not read is bounded too.
  const std::string deep_unread = R"({"q": "a", "x": [[[[1]]]]})";
  const auto unread = read_libre_json(deep_unread, 256, false);
  ASSERT_FALSE(unread.ok());
  EXPECT_NE(unread.status().message().find("nest deeper than 3 levels"), std::string::npos)
      << unread.status();
  EXPECT_TRUE(read_libre_json(R"({"q": "a", "x": [[1]]})", 256, false).ok());

  std::string strings = R"({"q": [)";
  for (int i = 0; i < 1'390'000; ++i) strings += i ? R"(,"")" : R"("")";
  strings += "]}";
  const auto many = read_libre_json(strings, 256, false);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find(
                "q holds more than 256 texts; the limit is 256 (--max_entries_per_request)"),
            std::string::npos)
      << many.status();
  // Exactly the limit is read.
  std::string at_limit = R"({"q": [)";
  for (int i = 0; i < 256; ++i) at_limit += i ? R"(,"x")" : R"("x")";
  at_limit += "]}";
  const auto limit = read_libre_json(at_limit, 256, false);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->texts.size(), 256u);
}

TEST(LibreRequest, FormsReadTheSameFieldsWithTheSameBound) {
  using Pairs = std::vector<std::pair<absl::string_view, absl::string_view>>;
  auto one = read_libre_form(Pairs{{"q", "Two men."}, {"source", "en"}, {"target", "de"}}, 256,
                             true);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FALSE(one->q_is_list);
  EXPECT_EQ(one->texts, std::vector<std::string>{"Two men."});
  auto two = read_libre_form(Pairs{{"q", "a"}, {"q", "b"}}, 256, false);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_TRUE(two->q_is_list);
  EXPECT_EQ(two->texts, (std::vector<std::string>{"a", "b"}));
  const auto over = read_libre_form(Pairs{{"q", "a"}, {"q", "b"}, {"q", "c"}}, 2, false);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("q holds more than 2 texts"), std::string::npos);
  EXPECT_FALSE(read_libre_form(Pairs{{"q", "a"}}, 256, true).ok());  // no source
}

}  // namespace
}  // namespace xlate::server
