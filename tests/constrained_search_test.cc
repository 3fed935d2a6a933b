// Lexically constrained beam search (rules/beam_search.h, dynamic beam allocation): with
// a beam wide enough to prune nothing it finds the brute-force best outputs that contain the
// constraints; at beam 4 every finished hypothesis contains them; sentences without constraints
// decode exactly as without any beside them; the continuous decoder admits constrained
// sentences among others and refuses constraints beyond its limits by name.
#include <algorithm>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "engine/continuous_decoder.h"
#include "engine/decoding/device_beam_search.h"
#include "tests/brute_force_search.h"
#include "tests/random_tensor.h"
#include "tests/search_to_end.h"

namespace xlate {
namespace {

constexpr int kEnd = 3;

bool contains(const std::vector<int32_t>& tokens, const std::vector<int32_t>& part) {
  return std::search(tokens.begin(), tokens.end(), part.begin(), part.end()) != tokens.end();
}

bool contains_all(const std::vector<int32_t>& tokens, const Constraints& constraints) {
  return std::all_of(constraints.begin(), constraints.end(),
                     [&](const std::vector<int32_t>& c) { return contains(tokens, c); });
}

std::string text(const std::vector<int32_t>& tokens) {
  std::string out;
  for (int32_t t : tokens) out += std::to_string(t) + " ";
  return out;
}

std::vector<std::vector<Hypothesis>> search(const TransformerModel& model,
                                            const std::vector<std::vector<int32_t>>& sources,
                                            const std::vector<int>& max_lengths,
                                            const SearchOptions& options,
                                            const std::vector<Constraints>& constraints) {
  return testing::search_sources(model, sources, max_lengths, options, 1, constraints);
}

// Beam 300 keeps every live prefix of a 6-token vocabulary up to length 3 (125), and at the last
// step (length 4, where only hypotheses that met the constraints finish) the best 150 or more
// of the bank that met them, so the constrained search must return the best complete outputs
// that contain the constraints, as enumeration finds them: single tokens, a two-token term, and
// a term that overlaps itself (4 4 5 inside 4 4 4 5 needs the matcher's fallback). Without the
// banks (every candidate in one) the last step's 300 would be taken by likelier hypotheses
// that miss the constraints.
TEST(ConstrainedSearch, ExhaustiveBeamFindsTheBestOutputsWithTheConstraints) {
  const std::vector<Constraints> cases = {{{5}}, {{1}, {5}}, {{4, 5}}, {{4, 4, 5}}, {{5, 1}, {0}}};
  int compared = 0;
  for (uint64_t seed : {31u, 32u, 33u}) {
    const auto model = tiny_random_model(6, seed, 1.f);
    const testing::Encoded encoded = testing::encode(*model, {4, 5, 4, kEnd});
    const int max_length = 4;
    for (float alpha : {0.f, 0.6f}) {
      const std::vector<Hypothesis> all = testing::enumerate_all(*model, encoded, max_length, alpha);
      for (const Constraints& constraints : cases) {
        std::vector<Hypothesis> truth;
        for (const Hypothesis& h : all) {
          if (contains_all(h.tokens, constraints)) truth.push_back(h);
        }
        ASSERT_GE(truth.size(), 3u);
        SearchOptions options;
        options.beam_size = 300;
        options.length_penalty = alpha;
        options.n_best = 3;
        const auto found = search(*model, {{4, 5, 4, kEnd}}, {max_length}, options, {constraints});
        ASSERT_EQ(found[0].size(), 3u);
        for (size_t k = 0; k < 3; ++k) {
          const std::string where = "seed " + std::to_string(seed) + " α " +
                                    std::to_string(alpha) + " constraint " +
                                    text(constraints[0]) + " rank " + std::to_string(k);
          EXPECT_EQ(found[0][k].tokens, truth[k].tokens) << where;
          EXPECT_NEAR(found[0][k].score, truth[k].score, 1e-4) << where;
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 30);
}

// Random constraints of 1-3 tokens, 1-3 per sentence, at beam 4 with every hypothesis kept:
// each contains every constraint of its sentence, and the sentences without constraints in the
// same batch come out exactly as in a batch without any.
TEST(ConstrainedSearch, EveryHypothesisHoldsItsConstraintsAndTheOthersAreUnchanged) {
  const auto model = tiny_random_model(40, 7, 1.5f);
  const std::vector<std::vector<int32_t>> sources = {
      {4, 5, 3}, {5, 4, 4, 5, 3}, {4, 9, 3}, {5, 5, 4, 4, 4, 5, 3}, {4, 4, 5, 3}, {7, 8, 3}};
  const std::vector<int> max_lengths(sources.size(), 15);
  std::mt19937 random(5);
  std::uniform_int_distribution<int32_t> token(4, 39), count(1, 3);
  int checked = 0;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<Constraints> constraints(sources.size());
    for (size_t s = 1; s < sources.size(); s += 2) {  // every other sentence
      for (int c = count(random); c > 0; --c) {
        std::vector<int32_t> term;
        for (int t = count(random); t > 0; --t) term.push_back(token(random));
        constraints[s].push_back(term);
      }
    }
    for (int beam : {1, 4}) {
      SearchOptions options;
      options.beam_size = beam;
      options.n_best = beam;
      options.length_penalty = 0.6f;
      const auto plain = search(*model, sources, max_lengths, options, {});
      const auto constrained = search(*model, sources, max_lengths, options, constraints);
      for (size_t s = 0; s < sources.size(); ++s) {
        if (constraints[s].empty()) {
          ASSERT_EQ(constrained[s].size(), plain[s].size()) << "sentence " << s;
          for (size_t j = 0; j < plain[s].size(); ++j) {
            EXPECT_EQ(constrained[s][j].tokens, plain[s][j].tokens) << "sentence " << s;
            EXPECT_EQ(constrained[s][j].score, plain[s][j].score) << "sentence " << s;
          }
          continue;
        }
        ASSERT_FALSE(constrained[s].empty()) << "sentence " << s;
        for (const Hypothesis& h : constrained[s]) {
          EXPECT_TRUE(contains_all(h.tokens, constraints[s]))
              << "trial " << trial << " beam " << beam << " sentence " << s << ": "
              << text(h.tokens);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 8 * 3);
}

// The continuous decoder: constrained and unconstrained sentences admitted into one decode,
// constraints held; bad constraints refused naming the limit, nothing admitted.
TEST(ConstrainedSearch, ContinuousDecoderAdmitsConstraintsAndRefusesBadOnes) {
  const auto model = tiny_random_model(40, 9, 1.5f);
  ContinuousDecoderOptions decoder_options;
  decoder_options.max_sentences = 4;
  auto decoder = ContinuousDecoder::Create(*model, decoder_options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  TranslationOptions options;
  options.max_extra_length = 10;
  const std::vector<std::vector<int32_t>> sources = {{4, 5}, {6, 7, 8}};
  const std::vector<Constraints> constraints = {{{30, 31}, {12}}, {}};
  auto handles = (*decoder)->Admit(sources, options, constraints);
  ASSERT_TRUE(handles.ok()) << handles.status();
  auto later = (*decoder)->Admit({{9, 10}}, options, {{{20}}});
  ASSERT_TRUE(later.ok()) << later.status();
  std::map<int64_t, std::vector<Hypothesis>> results;
  while ((*decoder)->live_sentences() > 0) {
    for (ContinuousDecoder::Finished& sentence : (*decoder)->Step()) {
      ASSERT_TRUE(sentence.status.ok()) << sentence.status;
      results[sentence.handle] = sentence.hypotheses;
    }
  }
  EXPECT_TRUE(contains_all(results[(*handles)[0]][0].tokens, constraints[0]))
      << text(results[(*handles)[0]][0].tokens);
  EXPECT_TRUE(contains(results[(*later)[0]][0].tokens, {20}));

  const std::vector<std::pair<Constraints, std::string>> bad = {
      {{{}}, "empty constraint"},
      {{{kEnd}}, "the end or padding token"},
      {{{40}}, "outside [0, 40)"},
      {Constraints(17, {5}), "the limit is 16"},
      {{std::vector<int32_t>(65, 5)}, "the limit is 64"},
      {{std::vector<int32_t>(13, 5)}, "cannot all fit"},
  };
  for (const auto& [constraint, expected] : bad) {
    auto refused = (*decoder)->Admit({{4, 5}}, options, {constraint});
    ASSERT_FALSE(refused.ok()) << expected;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << expected;
    EXPECT_NE(refused.status().message().find(expected), std::string::npos)
        << refused.status().message();
  }
  EXPECT_EQ((*decoder)->free_slots(), 4);
  auto mismatched = (*decoder)->Admit(sources, options, {{{5}}});
  EXPECT_FALSE(mismatched.ok());
}

// Every sentence of `sources` admitted at once into a fresh decoder holding `max_beam` beams,
// each with its options and constraints, decoded to the end: hypotheses per sentence.
std::vector<std::vector<Hypothesis>> decode_all(const TransformerModel& model, int max_beam,
                                                const std::vector<std::vector<int32_t>>& sources,
                                                const std::vector<TranslationOptions>& options,
                                                const std::vector<Constraints>& constraints) {
  ContinuousDecoderOptions limits;
  limits.max_sentences = static_cast<int>(sources.size());
  limits.max_beam_size = max_beam;
  auto decoder = ContinuousDecoder::Create(model, limits);
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  auto handles = (*decoder)->Admit(sources, options, constraints);
  EXPECT_TRUE(handles.ok()) << handles.status();
  std::map<int64_t, std::vector<Hypothesis>> finished;
  while ((*decoder)->live_sentences() > 0) {
    for (ContinuousDecoder::Finished& sentence : (*decoder)->Step()) {
      finished[sentence.handle] = std::move(sentence.hypotheses);
    }
  }
  std::vector<std::vector<Hypothesis>> out;
  for (int64_t handle : *handles) out.push_back(finished[handle]);
  return out;
}

// constrained_beam_size: a sentence with constraints searches with that beam, exactly as it
// would with beam_size set to it; a sentence without keeps beam_size, beside it. Beams wider
// than the decoder holds, or narrower than n_best, are refused by name.
TEST(ConstrainedSearch, AConstrainedSentenceSearchesWithItsOwnBeam) {
  const auto model = tiny_random_model(40, 11, 1.5f);
  const std::vector<std::vector<int32_t>> sources = {{4, 5, 6}, {7, 8, 9, 10}};
  TranslationOptions options;
  options.max_extra_length = 8;
  options.n_best = 4;
  options.constrained_beam_size = 8;
  TranslationOptions wide = options, narrow = options;
  wide.beam_size = 8;
  wide.constrained_beam_size = 0;
  narrow.constrained_beam_size = 0;
  int differs = 0;
  for (int32_t token = 12; token < 20; ++token) {
    const Constraints constraint = {{token, token + 1}};
    const auto both = decode_all(*model, 8, sources, {options, options}, {constraint, {}});
    const auto alone_wide = decode_all(*model, 8, {sources[0]}, {wide}, {constraint});
    const auto alone_narrow = decode_all(*model, 8, {sources[0]}, {narrow}, {constraint});
    const auto plain = decode_all(*model, 8, {sources[1]}, {narrow}, {{}});
    ASSERT_EQ(both[0].size(), alone_wide[0].size()) << token;
    for (size_t k = 0; k < both[0].size(); ++k) {
      EXPECT_EQ(both[0][k].tokens, alone_wide[0][k].tokens) << token << " hypothesis " << k;
      EXPECT_EQ(both[0][k].score, alone_wide[0][k].score) << token << " hypothesis " << k;
      EXPECT_TRUE(contains_all(both[0][k].tokens, constraint)) << token;
    }
    ASSERT_EQ(both[1].size(), plain[0].size());
    for (size_t k = 0; k < plain[0].size(); ++k) {
      EXPECT_EQ(both[1][k].tokens, plain[0][k].tokens) << token << " hypothesis " << k;
    }
    bool same_as_narrow = both[0].size() == alone_narrow[0].size();
    for (size_t k = 0; same_as_narrow && k < both[0].size(); ++k) {
      same_as_narrow = both[0][k].tokens == alone_narrow[0][k].tokens;
    }
    differs += !same_as_narrow;
  }
  EXPECT_GT(differs, 0) << "the wider beam never changed an n-best list: the test shows nothing";

  ContinuousDecoderOptions limits;
  limits.max_sentences = 2;
  auto decoder = ContinuousDecoder::Create(*model, limits);  // 4 beams per sentence
  ASSERT_TRUE(decoder.ok());
  auto refused = (*decoder)->Admit({sources[0]}, options, {{{12}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("constrained_beam_size = 8 is out of range: this "
                                            "decoder holds at most 4"),
            std::string::npos)
      << refused.status();
  TranslationOptions too_narrow = options;
  too_narrow.constrained_beam_size = 2;
  EXPECT_NE(too_narrow.Validate().message().find("constrained_beam_size = 2"), std::string::npos)
      << too_narrow.Validate();
}

}  // namespace
}  // namespace xlate
