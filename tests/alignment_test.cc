// Alignments (engine/alignment.h) on the tiny fixture model with real sentences: the
// teacher-forced pass equals the attention of step-by-step decoding, pairs batched with padding
// equal pairs alone, the layer/head choice, and the Translator and ContinuousDecoder paths.
#include "engine/alignment.h"

#include <cmath>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

#include "engine/continuous_decoder.h"
#include "engine/translator.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

class AlignmentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = Translator::Load(testing::tiny_model_dir());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    translator_ = loaded->release();
  }
  static void TearDownTestSuite() {
    delete translator_;
    translator_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(translator_, nullptr); }

  const TransformerModel& model() const { return translator_->model(); }
  // The token ids of the first `count` sample sentences.
  std::vector<std::vector<int32_t>> sources(size_t count) const {
    std::ifstream file(testing::sample_text());
    std::vector<std::vector<int32_t>> ids;
    for (std::string line; ids.size() < count && std::getline(file, line);) {
      auto encoded = translator_->tokenizer().encode(line);
      EXPECT_TRUE(encoded.ok()) << encoded.status();
      ids.push_back(*encoded);
    }
    EXPECT_EQ(ids.size(), count);
    return ids;
  }
  // Targets of different lengths (empty included), made of ids from the sources.
  static std::vector<std::vector<int32_t>> targets_for(
      const std::vector<std::vector<int32_t>>& sources) {
    std::vector<std::vector<int32_t>> targets;
    for (size_t i = 0; i < sources.size(); ++i) {
      const size_t length = i == 1 ? 0 : std::min(sources[i].size(), 3 + 2 * i);
      targets.emplace_back(sources[i].rbegin(), sources[i].rbegin() + length);
    }
    return targets;
  }
  static std::vector<const std::vector<int32_t>*> pointers(
      const std::vector<std::vector<int32_t>>& vectors) {
    std::vector<const std::vector<int32_t>*> result;
    for (const auto& v : vectors) result.push_back(&v);
    return result;
  }

  static Translator* translator_;
};

Translator* AlignmentTest::translator_ = nullptr;

// The claim alignment.h rests on: one teacher-forced pass gives, at position t, the attention
// that step t of an incremental decode (one token at a time through the KV cache) computed.
TEST_F(AlignmentTest, TeacherForcedPassEqualsStepByStepDecoding) {
  const std::vector<std::vector<int32_t>> source = sources(1);
  const std::vector<int32_t> target = {source[0].rbegin(), source[0].rbegin() + 5};
  const AttentionMaps maps = cross_attention_maps(model(), pointers(source), {&target})[0];
  const ModelConfig& config = model().config();
  ASSERT_EQ(maps.layers, config.decoder_layers);
  ASSERT_EQ(maps.heads, config.decoder_heads);
  ASSERT_EQ(maps.target_tokens, 5);
  ASSERT_EQ(maps.source_tokens, static_cast<int64_t>(source[0].size() + 1));

  std::vector<int32_t> source_ids = source[0];
  source_ids.push_back(config.eos_id);
  const int64_t source_tokens = static_cast<int64_t>(source_ids.size());
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{int32_t(source_tokens)}, {1});
  const Tensor encoded = model().encode(Tensor::from_vector(source_ids, {1, source_tokens}),
                                        lengths);
  DecoderState state = model().start_decoding(encoded, lengths, 1, 5);
  int32_t fed = config.decoder_start_id;
  for (int64_t t = 0; t < 5; ++t) {
    const std::vector<Tensor> step =
        model().cross_attention(state, Tensor::from_vector(std::vector<int32_t>{fed}, {1, 1}));
    for (int64_t layer = 0; layer < maps.layers; ++layer) {
      for (int64_t head = 0; head < maps.heads; ++head) {
        double total = 0;
        for (int64_t s = 0; s < source_tokens; ++s) {
          const float expected = step[layer].data<float>()[head * source_tokens + s];
          EXPECT_NEAR(maps.row(layer, head, t)[s], expected, 1e-5)
              << "layer " << layer << " head " << head << " target " << t << " source " << s;
          total += maps.row(layer, head, t)[s];
        }
        EXPECT_NEAR(total, 1.0, 1e-5);
      }
    }
    fed = target[t];
  }
}

// Pairs batched (padded sources and targets, an empty target, passes split by size) give each
// pair's maps alone.
TEST_F(AlignmentTest, BatchedPairsEqualEachPairAlone) {
  const std::vector<std::vector<int32_t>> source = sources(5);
  const std::vector<std::vector<int32_t>> targets = targets_for(source);
  const std::vector<AttentionMaps> together =
      cross_attention_maps(model(), pointers(source), pointers(targets));
  ASSERT_EQ(together.size(), source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    const AttentionMaps alone =
        cross_attention_maps(model(), {&source[i]}, {&targets[i]})[0];
    EXPECT_EQ(together[i].target_tokens, static_cast<int64_t>(targets[i].size()));
    EXPECT_EQ(together[i].source_tokens, static_cast<int64_t>(source[i].size() + 1));
    ASSERT_EQ(together[i].weights.size(), alone.weights.size()) << "pair " << i;
    for (size_t k = 0; k < alone.weights.size(); ++k) {
      ASSERT_NEAR(together[i].weights[k], alone.weights[k], 1e-5) << "pair " << i << " at " << k;
    }
  }
  EXPECT_TRUE(together[1].weights.empty());
}

TEST_F(AlignmentTest, TheSearchsEncodingsGiveTheMapsTheEncoderWould) {
  // ContinuousDecoder keeps each aligned sentence's encoder output from its search and hands
  // it to the alignment pass, which then runs no encoder.
  const std::vector<std::vector<int32_t>> source = sources(4);
  const std::vector<std::vector<int32_t>> targets = targets_for(source);
  std::vector<Tensor> encodings;
  for (const std::vector<int32_t>& ids : source) {
    std::vector<int32_t> tokens = ids;
    tokens.push_back(model().config().eos_id);
    const int64_t length = static_cast<int64_t>(tokens.size());
    const Tensor lengths =
        Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(length)}, {1});
    encodings.push_back(model()
                            .encode(Tensor::from_vector(tokens, {1, length}), lengths)
                            .reshape({length, model().config().d_model}));
  }
  std::vector<const Tensor*> given;
  for (const Tensor& encoding : encodings) given.push_back(&encoding);
  const std::vector<AttentionMaps> encoded =
      cross_attention_maps(model(), pointers(source), pointers(targets));
  const std::vector<AttentionMaps> reused =
      cross_attention_maps(model(), pointers(source), pointers(targets), given);
  for (size_t i = 0; i < source.size(); ++i) {
    ASSERT_EQ(reused[i].weights.size(), encoded[i].weights.size()) << "pair " << i;
    for (size_t k = 0; k < encoded[i].weights.size(); ++k) {
      ASSERT_NEAR(reused[i].weights[k], encoded[i].weights[k], 1e-5) << "pair " << i;
    }
  }
}

TEST_F(AlignmentTest, LayerAndHeadChooseTheWeights) {
  AttentionMaps maps;
  maps.layers = 2;
  maps.heads = 2;
  maps.target_tokens = 1;
  maps.source_tokens = 2;
  //             layer 0: head 0, head 1   layer 1: head 0, head 1
  maps.weights = {0.9f, 0.1f, 0.5f, 0.5f, 0.2f, 0.8f, 0.6f, 0.4f};
  EXPECT_EQ(alignment_of(maps, {0, 1}), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(alignment_of(maps, {-1, 0}), (std::vector<float>{0.2f, 0.8f}));
  const std::vector<float> average = alignment_of(maps, {-2, -1});
  ASSERT_EQ(average.size(), 2u);
  EXPECT_FLOAT_EQ(average[0], 0.7f);
  EXPECT_FLOAT_EQ(average[1], 0.3f);
}

TEST_F(AlignmentTest, OptionsOutsideTheModelAreRefusedNamingTheRange) {
  const ModelConfig& config = model().config();
  EXPECT_TRUE(check_alignment_options({-config.decoder_layers, -1}, config, "alignment.").ok());
  const absl::Status layer = check_alignment_options({config.decoder_layers, -1}, config, "a.");
  EXPECT_EQ(layer.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(layer.message().find(absl::StrCat("a.layer = ", config.decoder_layers,
                                              " is out of range")),
            std::string::npos)
      << layer;
  const absl::Status head = check_alignment_options({0, config.decoder_heads}, config, "a.");
  EXPECT_NE(head.message().find(absl::StrCat("[0, ", config.decoder_heads - 1, "]")),
            std::string::npos)
      << head;
  EXPECT_FALSE(check_alignment_options({0, -2}, config, "a.").ok());

  TranslationOptions options;
  options.alignment = AlignmentOptions{-config.decoder_layers - 1, -1};
  auto translated = translator_->TranslateTokens(sources(1), options);
  EXPECT_EQ(translated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(translated.status().message().find("option alignment.layer"), std::string::npos);
}

// Translator and ContinuousDecoder align the best hypothesis of each sentence alike (the maps
// of its tokens), and only when asked.
TEST_F(AlignmentTest, TranslatorAndContinuousDecoderAlignTheBestHypothesis) {
  const std::vector<std::vector<int32_t>> source = sources(4);
  TranslationOptions options;
  options.n_best = 2;
  options.alignment = AlignmentOptions{0, -1};
  auto translated = translator_->TranslateTokens(source, options);
  ASSERT_TRUE(translated.ok()) << translated.status();
  for (size_t i = 0; i < source.size(); ++i) {
    const Hypothesis& best = (*translated)[i][0];
    const AttentionMaps maps = cross_attention_maps(model(), {&source[i]}, {&best.tokens})[0];
    const std::vector<float> expected = alignment_of(maps, *options.alignment);
    ASSERT_EQ(best.alignment.size(), best.tokens.size() * (source[i].size() + 1));
    for (size_t k = 0; k < expected.size(); ++k) {
      ASSERT_NEAR(best.alignment[k], expected[k], 1e-5) << "sentence " << i;
    }
    EXPECT_TRUE((*translated)[i][1].alignment.empty()) << "only the best is aligned";
  }

  auto decoder = ContinuousDecoder::Create(model(), {});
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  TranslationOptions plain = options;
  plain.alignment.reset();
  auto aligned_handles = (*decoder)->Admit({source[0], source[1]}, options);
  auto plain_handles = (*decoder)->Admit({source[2]}, plain);
  ASSERT_TRUE(aligned_handles.ok() && plain_handles.ok());
  std::map<int64_t, ContinuousDecoder::Finished> finished;
  while ((*decoder)->live_sentences() > 0) {
    for (ContinuousDecoder::Finished& sentence : (*decoder)->Step()) {
      ASSERT_TRUE(sentence.status.ok()) << sentence.status;
      finished[sentence.handle] = std::move(sentence);
    }
  }
  for (size_t i = 0; i < 2; ++i) {
    const Hypothesis& best = finished.at((*aligned_handles)[i]).hypotheses[0];
    EXPECT_EQ(best.tokens, (*translated)[i][0].tokens);
    ASSERT_EQ(best.alignment.size(), (*translated)[i][0].alignment.size());
    for (size_t k = 0; k < best.alignment.size(); ++k) {
      ASSERT_NEAR(best.alignment[k], (*translated)[i][0].alignment[k], 1e-5);
    }
  }
  EXPECT_TRUE(finished.at((*plain_handles)[0]).hypotheses[0].alignment.empty());
}

}  // namespace
}  // namespace xlate
