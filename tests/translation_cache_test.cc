// The translation cache (server/translation_cache.h): an entry is found only under a key equal in
// every field that decides a translation, least recently used entries make room, and the bytes
// stay within the bound.
#include "server/translation_cache.h"

#include <functional>

#include <gtest/gtest.h>

namespace xlate::server {
namespace {

std::vector<Hypothesis> hypotheses_of(std::vector<int32_t> tokens) {
  Hypothesis best;
  best.tokens = std::move(tokens);
  best.score = -0.5f;
  best.log_prob = -1.25f;
  return {best};
}

TranslationCache::Key key_of(std::vector<int32_t> source, const TranslationOptions& options = {},
                             std::string partition = "", Constraints constraints = {}) {
  return TranslationCache::KeyOf(std::move(partition), std::move(source), options,
                                 std::move(constraints));
}

TEST(TranslationCache, AnEntryIsFoundUnderAnEqualKeyOnly) {
  TranslationCache cache(1 << 20);
  const TranslationCache::Key key = key_of({5, 6, 7});
  cache.Insert(key, hypotheses_of({9, 8}));
  const auto found = cache.Find(key_of({5, 6, 7}));
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].tokens, (std::vector<int32_t>{9, 8}));
  EXPECT_EQ((*found)[0].score, -0.5f);
  EXPECT_EQ((*found)[0].log_prob, -1.25f);

  // Every field that changes a translation is part of the key: one differing misses.
  const std::vector<std::pair<const char*, std::function<void(TranslationOptions&)>>> changes = {
      {"beam_size", [](TranslationOptions& o) { o.beam_size = 5; }},
      {"length_penalty", [](TranslationOptions& o) { o.length_penalty = 1.f; }},
      {"max_extra_length", [](TranslationOptions& o) { o.max_extra_length = 3; }},
      {"max_output_length", [](TranslationOptions& o) { o.max_output_length = 4; }},
      {"min_output_length", [](TranslationOptions& o) { o.min_output_length = 2; }},
      {"n_best", [](TranslationOptions& o) { o.n_best = 2; }},
      {"return_scores", [](TranslationOptions& o) { o.return_scores = false; }},
      {"alignment", [](TranslationOptions& o) { o.alignment = AlignmentOptions(); }},
      {"forced_start_tokens", [](TranslationOptions& o) { o.forced_start_tokens = {11}; }},
      {"repetition_penalty", [](TranslationOptions& o) { o.repetition_penalty = 1.2f; }},
      {"no_repeat_ngram_size", [](TranslationOptions& o) { o.no_repeat_ngram_size = 3; }},
      {"constrained_beam_size", [](TranslationOptions& o) { o.constrained_beam_size = 8; }},
  };
  for (const auto& [name, change] : changes) {
    TranslationOptions options;
    change(options);
    EXPECT_FALSE(cache.Find(key_of({5, 6, 7}, options)).has_value()) << name;
  }
  EXPECT_FALSE(cache.Find(key_of({5, 6})).has_value()) << "source";
  EXPECT_FALSE(cache.Find(key_of({5, 6, 7}, {}, "key:a")).has_value()) << "partition";
  EXPECT_FALSE(cache.Find(key_of({5, 6, 7}, {}, "", {{4}})).has_value()) << "constraints";
  // Streaming changes no output: a streamed request finds what a unary one stored.
  TranslationOptions streamed;
  streamed.report_stable_prefixes = true;
  EXPECT_TRUE(cache.Find(key_of({5, 6, 7}, streamed)).has_value());
  const TranslationCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.hits, 2);
  EXPECT_EQ(stats.misses, static_cast<int64_t>(changes.size()) + 3);
  EXPECT_EQ(stats.entries, 1);
}

TEST(TranslationCache, TheLeastRecentlyUsedMakeRoomAndTheBytesStayWithinTheBound) {
  TranslationCache probe(1 << 20);
  probe.Insert(key_of({1}), hypotheses_of(std::vector<int32_t>(100, 1)));
  const int64_t entry = probe.stats().bytes;  // entries below are alike in size
  TranslationCache cache(3 * entry);
  for (int32_t i = 1; i <= 3; ++i) {
    EXPECT_EQ(cache.Insert(key_of({i}), hypotheses_of(std::vector<int32_t>(100, i))), 0);
  }
  EXPECT_TRUE(cache.Find(key_of({1})).has_value());  // 1 is now the most recently used
  EXPECT_EQ(cache.Insert(key_of({4}), hypotheses_of(std::vector<int32_t>(100, 4))), 1);
  EXPECT_FALSE(cache.Find(key_of({2})).has_value());  // the least recently used went
  EXPECT_TRUE(cache.Find(key_of({1})).has_value());
  EXPECT_TRUE(cache.Find(key_of({3})).has_value());
  EXPECT_TRUE(cache.Find(key_of({4})).has_value());
  EXPECT_LE(cache.stats().bytes, 3 * entry);
  EXPECT_EQ(cache.stats().evictions, 1);
  // An entry larger than the whole bound is not stored (and evicts nothing).
  EXPECT_EQ(cache.Insert(key_of({5}), hypotheses_of(std::vector<int32_t>(10000, 5))), 0);
  EXPECT_FALSE(cache.Find(key_of({5})).has_value());
  EXPECT_EQ(cache.stats().entries, 3);
}

}  // namespace
}  // namespace xlate::server
