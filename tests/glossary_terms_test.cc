// find_terms (document/glossary_terms.h): the constraints a sentence's glossary terms become, and
// the note of each term left out, naming the limit it passed.
#include "document/glossary_terms.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

const char* const kTargets[] = {"Hund",  "Katze", "Mann",   "Frau",   "Kind",  "Haus",
                                "Baum",  "Auto",  "Wasser", "Strand", "Ball",  "Straße",
                                "Stadt", "Berg",  "Boot",   "Fahrrad", "Tisch"};

TEST(GlossaryTerms, EachLimitLeavesTermsOutWithANote) {
  auto tokenizer = Tokenizer::Load(testing::tiny_model_dir() + "/spm.model");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // 17 terms in one sentence: the first 16 distinct targets are constraints.
  std::vector<GlossaryEntry> entries;
  std::string sentence;
  for (int i = 0; i < 17; ++i) {
    entries.push_back({absl::StrCat("w", i), kTargets[i]});
    absl::StrAppend(&sentence, i ? " " : "", "w", i);
  }
  entries.push_back({"again", "Hund"});  // a target already constrained counts once
  absl::StrAppend(&sentence, " again");
  auto glossary = Glossary::FromEntries(entries, "entries");
  ASSERT_TRUE(glossary.ok()) << glossary.status();
  auto terms = find_terms(*glossary, false, {sentence}, **tokenizer, {200}, {0}, {});
  ASSERT_TRUE(terms.ok()) << terms.status();
  const SentenceTerms& found = terms->front();
  ASSERT_EQ(found.uses.size(), 18u);
  EXPECT_EQ(found.constraints.size(), static_cast<size_t>(rules::kMaxConstraints));
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(found.uses[i].constrained) << i;
  EXPECT_FALSE(found.uses[16].constrained);
  EXPECT_EQ(found.uses[16].note,
            "the sentence has more than 16 glossary targets; the first 16 are applied");
  EXPECT_TRUE(found.uses[17].constrained);
  EXPECT_EQ(found.uses[17].target, "Hund");

  // More than 64 target tokens in all, and a target longer than the output limit.
  std::string long_target;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&long_target, i ? " " : "", "Hund Katze");
  auto long_glossary = Glossary::FromEntries({{"dog", "Hund"}, {"cat", long_target}}, "entries");
  ASSERT_TRUE(long_glossary.ok());
  auto long_terms = find_terms(*long_glossary, false, {"a dog and a cat", "a dog"}, **tokenizer,
                               {500, 1}, {0, 0}, {});
  ASSERT_TRUE(long_terms.ok());
  EXPECT_TRUE((*long_terms)[0].uses[0].constrained);
  EXPECT_EQ((*long_terms)[0].uses[1].note,
            "the sentence's glossary targets would have more than 64 tokens");
  EXPECT_FALSE((*long_terms)[1].uses[0].constrained);
  EXPECT_NE((*long_terms)[1].uses[0].note.find("do not fit the sentence's output limit of 0"),
            std::string::npos)
      << (*long_terms)[1].uses[0].note;
}

// The QA round: a target the search cannot write (one the repetition guard forbids: a
// max-length hallucination) or the vocabulary cannot spell (the sentence damaged, "⁇") is
// refused by name; so are control and bidirectional characters in any term.
TEST(GlossaryTerms, TargetsTheSearchCannotWriteAreRefusedByName) {
  auto tokenizer = Tokenizer::Load(testing::tiny_model_dir() + "/spm.model");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  TermTokenRules rules;
  rules.unk_id = (*tokenizer)->id_of("<unk>");
  rules.no_repeat_ngram_size = 1;
  auto repeated = Glossary::FromEntries({{"money", "Geld Geld"}}, "entries");
  ASSERT_TRUE(repeated.ok());
  auto refused = find_terms(*repeated, false, {"money"}, **tokenizer, {200}, {0}, rules);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "glossary target \"Geld Geld\" repeats a sequence of 1 token(s), which "
                "options.no_repeat_ngram_size 1 forbids"),
            std::string::npos)
      << refused.status();
  auto once = Glossary::FromEntries({{"money", "Geld"}}, "entries");
  ASSERT_TRUE(once.ok());
  const auto allowed = find_terms(*once, false, {"money"}, **tokenizer, {200}, {0}, rules);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_TRUE(allowed->front().uses.front().constrained);

  // "銀行🏦": no piece of the tiny model's vocabulary spells it.
  auto unspellable =
      Glossary::FromEntries({{"bank", "\xe9\x8a\x80\xe8\xa1\x8c\xf0\x9f\x8f\xa6"}}, "entries");
  ASSERT_TRUE(unspellable.ok());
  refused = find_terms(*unspellable, false, {"the bank"}, **tokenizer, {200}, {0}, rules);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot spell"), std::string::npos)
      << refused.status();

  for (const char* target : {"Bank\xe2\x80\xae", "Ba\x07nk", "Ba\nnk"}) {
    auto controlled = Glossary::FromEntries({{"bank", target}}, "entries");
    ASSERT_FALSE(controlled.ok()) << target;
    EXPECT_NE(controlled.status().message().find("a control or bidirectional formatting"),
              std::string::npos)
        << controlled.status();
  }
}

}  // namespace
}  // namespace xlate
