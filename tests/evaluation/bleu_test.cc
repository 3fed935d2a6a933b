// Corpus BLEU on small cases worked out by hand (docs/bleu.md has the definitions).
#include "evaluation/bleu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace xlate::evaluation {
namespace {

BleuScore score_of(const std::vector<std::string>& hypotheses,
                   const std::vector<std::string>& references, const BleuOptions& options) {
  absl::StatusOr<BleuScore> score = corpus_bleu(hypotheses, references, options);
  EXPECT_TRUE(score.ok()) << score.status();
  return score.ok() ? *score : BleuScore{};
}

BleuOptions floor_smoothing() {
  BleuOptions options;
  options.smoothing = BleuOptions::Smoothing::kFloor;
  return options;
}

TEST(Bleu, PerfectMatchIs100) {
  const BleuScore score =
      score_of({"The cat sat on the mat.", "Ein Mann mit einem Hut."},
               {"The cat sat on the mat.", "Ein Mann mit einem Hut."}, BleuOptions::sacrebleu());
  EXPECT_DOUBLE_EQ(score.score, 100.0);
  EXPECT_DOUBLE_EQ(score.brevity_penalty, 1.0);
  EXPECT_EQ(score.hypothesis_length, 13);  // "." is a token of its own
  EXPECT_EQ(score.reference_length, 13);
  for (double p : score.precisions) EXPECT_DOUBLE_EQ(p, 100.0);
}

// "a b c x" against "a b c y": 3/4 unigrams, 2/3 bigrams, 1/2 trigrams, 0/1 4-grams.
TEST(Bleu, NoFourGramMatchUnderEachSmoothing) {
  const std::vector<std::string> hypotheses{"a b c x"};
  const std::vector<std::string> references{"a b c y"};

  // exp: the first order without a match counts 1/2 a match, p4 = 100 / (2 * 1) = 50, so
  // BLEU = 100 * (3/4 * 2/3 * 1/2 * 1/2)^(1/4) = 100 * 2^(-3/4).
  const BleuScore exp = score_of(hypotheses, references, BleuOptions::sacrebleu());
  EXPECT_NEAR(exp.score, 100.0 * std::pow(2.0, -0.75), 1e-9);
  EXPECT_NEAR(exp.precisions[0], 75.0, 1e-12);
  EXPECT_NEAR(exp.precisions[1], 200.0 / 3.0, 1e-12);
  EXPECT_NEAR(exp.precisions[2], 50.0, 1e-12);
  EXPECT_NEAR(exp.precisions[3], 50.0, 1e-12);
  EXPECT_EQ(exp.matches[3], 0);
  EXPECT_EQ(exp.totals[3], 1);

  // none: a zero precision makes BLEU 0.
  EXPECT_EQ(score_of(hypotheses, references, BleuOptions::tokenised(false)).score, 0.0);

  // floor 0.1: p4 = 100 * 0.1 / 1 = 10, BLEU = 100 * (3/4 * 2/3 * 1/2 * 1/10)^(1/4).
  EXPECT_NEAR(score_of(hypotheses, references, floor_smoothing()).score,
              100.0 * std::pow(0.025, 0.25), 1e-9);
}

TEST(Bleu, ExpSmoothingHalvesAgainForEachFurtherOrderWithoutMatch) {
  // "a b x y" against "a b c d": 2/4, 1/3, 0/2, 0/1 -> p3 = 100 / (2 * 2), p4 = 100 / (4 * 1).
  const BleuScore score = score_of({"a b x y"}, {"a b c d"}, BleuOptions::sacrebleu());
  EXPECT_NEAR(score.precisions[2], 25.0, 1e-12);
  EXPECT_NEAR(score.precisions[3], 25.0, 1e-12);
  EXPECT_NEAR(score.score, 100.0 * std::pow(0.5 * (1.0 / 3.0) * 0.25 * 0.25, 0.25), 1e-9);
}

TEST(Bleu, BrevityPenalty) {
  // 4 words against 6, every n-gram matches: BLEU = 100 * exp(1 - 6/4).
  const BleuScore score = score_of({"a b c d"}, {"a b c d e f"}, BleuOptions::sacrebleu());
  EXPECT_NEAR(score.brevity_penalty, std::exp(-0.5), 1e-15);
  EXPECT_NEAR(score.score, 100.0 * std::exp(-0.5), 1e-9);
  EXPECT_NEAR(score.ratio, 4.0 / 6.0, 1e-15);
  // Longer than the reference: no penalty.
  EXPECT_DOUBLE_EQ(score_of({"a b c d e f"}, {"a b c d"}, BleuOptions::sacrebleu())
                       .brevity_penalty, 1.0);
}

TEST(Bleu, CountsAreClippedByTheReference) {
  // "the" four times against one "the": 1 unigram match of 4, nothing longer.
  const BleuScore score = score_of({"the the the the"}, {"the cat"}, BleuOptions::sacrebleu());
  EXPECT_EQ(score.matches[0], 1);
  EXPECT_EQ(score.totals[0], 4);
  EXPECT_EQ(score.matches[1], 0);
}

TEST(Bleu, StatisticsAreSummedOverTheCorpusBeforeDividing) {
  // Sentence 1 matches 2/2 unigrams, sentence 2 0/2: corpus p1 = 2/4, not a mean of ratios.
  const BleuScore score = score_of({"a b", "x y"}, {"a b", "c d"}, BleuOptions::sacrebleu());
  EXPECT_NEAR(score.precisions[0], 50.0, 1e-12);
  EXPECT_EQ(score.totals[1], 2);
  EXPECT_EQ(score.matches[1], 1);
  EXPECT_EQ(score.totals[2], 0);  // no trigram anywhere: p3 = p4 = 0 and BLEU = 0
  EXPECT_EQ(score.score, 0.0);
}

TEST(Bleu, EmptyHypothesisScoresZero) {
  const BleuScore score = score_of({""}, {"a b"}, BleuOptions::sacrebleu());
  EXPECT_EQ(score.score, 0.0);
  EXPECT_EQ(score.brevity_penalty, 0.0);
  EXPECT_EQ(score.hypothesis_length, 0);
  EXPECT_EQ(score.reference_length, 2);
}

TEST(Bleu, EmptyCorpusScoresZero) {
  const BleuScore score = score_of({}, {}, BleuOptions::sacrebleu());
  EXPECT_EQ(score.score, 0.0);
  EXPECT_EQ(score.ratio, 0.0);
}

TEST(Bleu, LowercaseOption) {
  const std::vector<std::string> hypotheses{"\u00dcBER DIE STRASSE GEHT DER HUND"};
  const std::vector<std::string> references{"\u00fcber die Strasse geht der Hund"};
  EXPECT_EQ(score_of(hypotheses, references, BleuOptions::tokenised(false)).matches[0], 0);
  EXPECT_DOUBLE_EQ(score_of(hypotheses, references, BleuOptions::tokenised(true)).score, 100.0);
  // Lowercasing happens before the entities are unescaped, as in sacreBLEU.
  EXPECT_DOUBLE_EQ(
      score_of({"A &QUOT;B&QUOT; C D"}, {"a \"b\" c d"}, BleuOptions::tokenised(true)).score,
      100.0);
}

TEST(Bleu, TokenisationNoneKeepsPunctuationAttached) {
  BleuOptions options = BleuOptions::tokenised(false);
  options.tokenization = BleuOptions::Tokenization::kNone;
  const BleuScore score = score_of({"a b c d."}, {"a b c d ."}, options);
  EXPECT_EQ(score.hypothesis_length, 4);
  EXPECT_EQ(score.reference_length, 5);
}

TEST(Bleu, MismatchedCountsNameBoth) {
  absl::StatusOr<BleuScore> score =
      corpus_bleu({"a", "b", "c"}, {"a", "b"}, BleuOptions::sacrebleu());
  ASSERT_FALSE(score.ok());
  EXPECT_EQ(score.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(score.status().message(), "the hypotheses have 3 lines but the references have 2");
}

TEST(Bleu, InvalidUtf8NamesTheLine) {
  absl::StatusOr<BleuScore> score =
      corpus_bleu({"ok", "bad \xff here"}, {"ok", "fine"}, BleuOptions::sacrebleu());
  ASSERT_FALSE(score.ok());
  EXPECT_EQ(score.status().message(), "hypothesis line 2: invalid UTF-8 at byte 4");
  score = corpus_bleu({"ok"}, {"\xc3"}, BleuOptions::sacrebleu());
  ASSERT_FALSE(score.ok());
  EXPECT_EQ(score.status().message(), "reference line 1: invalid UTF-8 at byte 0");
}

TEST(Bleu, SentenceStatisticsAddUpToCorpusBleu) {
  BleuStatistics total;
  for (const auto& [h, r] : std::vector<std::pair<std::string, std::string>>{
           {"a b c x", "a b c y"}, {"Hello, world!", "Hello world!"}}) {
    absl::StatusOr<BleuStatistics> s = sentence_bleu_statistics(h, r, BleuOptions::sacrebleu());
    ASSERT_TRUE(s.ok());
    total.add(*s);
  }
  const BleuScore corpus = score_of({"a b c x", "Hello, world!"}, {"a b c y", "Hello world!"},
                                    BleuOptions::sacrebleu());
  EXPECT_EQ(bleu_from_statistics(total, BleuOptions::sacrebleu()).score, corpus.score);
}

TEST(Bleu, FormatsLikeSacreBleu) {
  BleuScore score;
  score.score = 34.1249;
  score.precisions = {65.33, 40.08, 27.04, 18.96};
  score.brevity_penalty = 0.98123;
  score.ratio = 0.98141;
  score.hypothesis_length = 61234;
  score.reference_length = 62394;
  EXPECT_EQ(format_bleu(score),
            "BLEU = 34.12 65.3/40.1/27.0/19.0 (BP = 0.981 ratio = 0.981 hyp_len = 61234 "
            "ref_len = 62394)");
}

TEST(Bleu, SignatureUsesSacreBleuFieldNames) {
  EXPECT_EQ(bleu_signature(BleuOptions::sacrebleu()), "case:mixed|tok:13a|smooth:exp");
  EXPECT_EQ(bleu_signature(BleuOptions::tokenised(true)), "case:lc|tok:13a|smooth:none");
  EXPECT_EQ(bleu_signature(floor_smoothing()), "case:mixed|tok:13a|smooth:floor[0.10]");
}

}  // namespace
}  // namespace xlate::evaluation
