// Glossaries: TSV and Cloud Translation's two CSV layouts, errors that name the line, and term
// matching on ICU word boundaries (longest first, case-folded on request).
#include "document/glossary.h"

#include <gtest/gtest.h>

namespace xlate {
namespace {

std::vector<std::string> found(const Glossary& glossary, const std::string& sentence,
                               bool ignore_case) {
  std::vector<std::string> out;
  for (const Glossary::Match& match : glossary.Find(sentence, ignore_case)) {
    out.push_back(sentence.substr(match.begin, match.end - match.begin) + "=" +
                  glossary.entries()[match.entry].target);
  }
  return out;
}

TEST(Glossary, ReadsTsvWithCommentsBlankLinesAndCarriageReturns) {
  const auto glossary = Glossary::Parse(
      "\xEF\xBB\xBF# product names\nserver\tServer\r\n\n  train station \tBahnhof\nserver\tServer\n",
      "terms.tsv", "en", "de");
  ASSERT_TRUE(glossary.ok()) << glossary.status();
  ASSERT_EQ(glossary->entries().size(), 2u);  // the repeated pair is kept once
  EXPECT_EQ(glossary->entries()[1].source, "train station");
  EXPECT_EQ(glossary->entries()[1].target, "Bahnhof");
}

TEST(Glossary, ReadsBothCloudCsvLayouts) {
  const auto unidirectional = Glossary::Parse(
      "\"Acme, Inc.\",Acme AG\nupdate,\"Aktualisierung\"\n\"say \"\"hi\"\"\",sag hallo\n",
      "terms.csv", "en", "de");
  ASSERT_TRUE(unidirectional.ok()) << unidirectional.status();
  ASSERT_EQ(unidirectional->entries().size(), 3u);
  EXPECT_EQ(unidirectional->entries()[0].source, "Acme, Inc.");
  EXPECT_EQ(unidirectional->entries()[2].source, "say \"hi\"");

  const auto sets = Glossary::Parse(
      "fr,en-US,de,pos,description\nchat,cat,Katze,noun,an animal\nchien,,Hund,noun,\n"
      "maison,house,Haus,,\n", "sets.csv", "en", "de");
  ASSERT_TRUE(sets.ok()) << sets.status();
  ASSERT_EQ(sets->entries().size(), 2u);  // the set without an English term is skipped
  EXPECT_EQ(sets->entries()[0].source, "cat");
  EXPECT_EQ(sets->entries()[0].target, "Katze");
  EXPECT_EQ(sets->entries()[1].target, "Haus");

  // Without an extension the content tells: no tab, so CSV.
  const auto told = Glossary::Parse("a,b\n", "inline", "en", "de");
  ASSERT_TRUE(told.ok()) << told.status();
  EXPECT_EQ(told->entries()[0].target, "b");
}

TEST(Glossary, BadFilesAreRefusedNamingTheLine) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"a\tb\nonly one field\n", "x.tsv", "x.tsv line 2: 1 tab-separated fields"},
      {"a\tb\n\tB\n", "x.tsv", "line 2: the source term is empty"},
      {"a\tb\nc\t \n", "x.tsv", "line 2: the target term is empty"},
      {"cat\tKatze\ndog\tHund\ncat\tKater\n", "x.tsv",
       "line 3: the source term \"cat\" is on glossary x.tsv line 1 too"},
      {"a,b\nc,d,e\n", "x.csv", "x.csv line 2: 3 fields"},
      {"a,b\n\"c,d\n", "x.csv", "a quote that is never closed"},
      {"fr,es\nchat,gato\n", "x.csv", "its header names the languages fr, es"},
      {"a\t\xC3\x28\n", "x.tsv", "not valid UTF-8 at byte 2"},
      {"a\t" + std::string(Glossary::kMaxTermBytes + 1, 'b') + "\n", "x.tsv", "the limit is 1000"},
  };
  for (const auto& [content, name, expected] : cases) {
    const auto glossary = Glossary::Parse(content, name, "en", "de");
    ASSERT_FALSE(glossary.ok()) << expected;
    EXPECT_EQ(glossary.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(glossary.status().message().find(expected), std::string::npos)
        << glossary.status().message();
  }
  const auto missing = Glossary::Load("/nonexistent/terms.tsv", "en", "de");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  const auto inline_entries = Glossary::FromEntries({{"a", "b"}, {" ", "c"}}, "glossary_config.entries");
  EXPECT_NE(inline_entries.status().message().find("glossary_config.entries[1]: the source term is empty"),
            std::string::npos)
      << inline_entries.status();
}

// Terms that fold alike under ignore_case: the one listed last applies, inline entries after
// a named glossary's; without ignore_case each finds its own spelling.
TEST(Glossary, OfTermsThatFoldAlikeTheLastListedApplies) {
  const auto glossary = Glossary::FromEntries({{"bank", "Bank"}, {"BANK", "BANK AG"}}, "test");
  ASSERT_TRUE(glossary.ok()) << glossary.status();
  EXPECT_EQ(found(*glossary, "the Bank", true), std::vector<std::string>{"Bank=BANK AG"});
  EXPECT_EQ(found(*glossary, "the bank and the BANK", false),
            (std::vector<std::string>{"bank=Bank", "BANK=BANK AG"}));
  const auto inline_entries = Glossary::FromEntries({{"Bank", "Ufer"}}, "inline");
  ASSERT_TRUE(inline_entries.ok());
  EXPECT_EQ(found(glossary->With(*inline_entries), "the BANK", true),
            std::vector<std::string>{"BANK=Ufer"});
}

TEST(Glossary, FindsWholeWordsLongestFirst) {
  const auto glossary = Glossary::FromEntries(
      {{"cat", "Katze"}, {"New York", "New York City"}, {"New", "Neu"}, {"Straße", "street"},
       {"e-mail", "E-Mail"}, {"C++", "C++"}},
      "test");
  ASSERT_TRUE(glossary.ok()) << glossary.status();
  EXPECT_EQ(found(*glossary, "The cat sat. Category: cats and a cat.", false),
            (std::vector<std::string>{"cat=Katze", "cat=Katze"}));  // not "category", "cats"
  EXPECT_EQ(found(*glossary, "New York is new. New books.", false),
            (std::vector<std::string>{"New York=New York City", "New=Neu"}));
  EXPECT_EQ(found(*glossary, "Send an e-mail about C++ to Straße 5.", false),
            (std::vector<std::string>{"e-mail=E-Mail", "C++=C++", "Straße=street"}));
  EXPECT_TRUE(found(*glossary, "THE CAT IN NEW YORK", false).empty());
  EXPECT_EQ(found(*glossary, "THE CAT IN NEW YORK, STRASSE", true),
            (std::vector<std::string>{"CAT=Katze", "NEW YORK=New York City", "STRASSE=street"}));
  // Byte offsets into the sentence, past multi-byte characters.
  const std::string sentence = "Über die Straße";
  const auto matches = glossary->Find(sentence, false);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(sentence.substr(matches[0].begin), "Straße");
}

// Terms that overlap in the source: the leftmost wins, then the longest at its place, and the
// search goes on after it, so a term starting inside it is not found there.
TEST(Glossary, OverlappingTermsTakeTheLeftmostThenTheLongest) {
  const auto glossary = Glossary::FromEntries(
      {{"New York", "New York"}, {"York City", "Stadt York"}, {"City Hall", "Rathaus"},
       {"New", "Neu"}, {"Hall", "Halle"}},
      "test");
  ASSERT_TRUE(glossary.ok()) << glossary.status();
  EXPECT_EQ(found(*glossary, "New York City Hall", false),
            (std::vector<std::string>{"New York=New York", "City Hall=Rathaus"}));
  EXPECT_EQ(found(*glossary, "York City Hall", false),
            (std::vector<std::string>{"York City=Stadt York", "Hall=Halle"}));
  EXPECT_EQ(found(*glossary, "New City Hall", false),
            (std::vector<std::string>{"New=Neu", "City Hall=Rathaus"}));
}

TEST(Glossary, InlineEntriesOverrideTheNamedGlossary) {
  const auto named = Glossary::FromEntries({{"server", "Server"}, {"update", "Update"}}, "named");
  const auto inline_entries = Glossary::FromEntries({{"update", "Aktualisierung"}}, "inline");
  ASSERT_TRUE(named.ok() && inline_entries.ok());
  const Glossary merged = named->With(*inline_entries);
  EXPECT_EQ(found(merged, "Restart the server before the update.", false),
            (std::vector<std::string>{"server=Server", "update=Aktualisierung"}));
}

}  // namespace
}  // namespace xlate
