// The device beam search (its state in tensors, advanced by the op beam_search_step) on the CPU
// backend over small random models: a batch of sentences with different source and output
// lengths, and sentences joining at any step, get what each gets searched alone, across beam
// sizes, n-best lists, minimum lengths, length penalties and sync intervals. (Its optimality is
// checked against enumeration in search_test.cc.)
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "engine/decoding/device_beam_search.h"
#include "engine/ops/ops.h"
#include "engine/transformer.h"
#include "engine/transformer_decoder.h"
#include "tests/random_tensor.h"
#include "tests/search_to_end.h"

namespace xlate {
namespace {

struct Batch {
  Tensor encoded, lengths;
};

Batch encode(const TransformerModel& model, const std::vector<std::vector<int32_t>>& sources) {
  size_t longest = 0;
  for (const auto& source : sources) longest = std::max(longest, source.size());
  std::vector<int32_t> tokens(sources.size() * longest, 0), lengths;
  for (size_t s = 0; s < sources.size(); ++s) {
    std::copy(sources[s].begin(), sources[s].end(), tokens.begin() + s * longest);
    lengths.push_back(static_cast<int32_t>(sources[s].size()));
  }
  const int64_t count = static_cast<int64_t>(sources.size());
  Batch batch;
  batch.lengths = Tensor::from_vector(lengths, {count});
  batch.encoded = model.encode(Tensor::from_vector(tokens, {count, int64_t(longest)}),
                               batch.lengths);
  return batch;
}

TEST(DeviceBeamSearch, ABatchEqualsEachSentenceAlone) {
  const std::vector<std::vector<int32_t>> sources = {
      {4, 5, 3}, {5, 4, 4, 5, 3}, {4, 3}, {5, 5, 4, 4, 4, 5, 3}, {4, 4, 5, 3}};
  const std::vector<int> max_lengths = {3, 7, 12, 5, 9};
  int compared = 0;
  for (int vocabulary : {6, 40}) {
    const auto model = tiny_random_model(vocabulary, 11 + vocabulary, 1.5f);
    for (int beam : {1, 2, 4, 6}) {
      for (int n_best : {1, beam}) {
        for (int min_length : {0, 2}) {
          for (float alpha : {0.f, 0.6f}) {
            SearchOptions options;
            options.beam_size = beam;
            options.n_best = n_best;
            options.min_length = min_length;
            options.length_penalty = alpha;
            std::vector<std::vector<Hypothesis>> expected;
            for (size_t s = 0; s < sources.size(); ++s) {
              expected.push_back(
                  testing::search_sources(*model, {sources[s]}, {max_lengths[s]}, options)[0]);
            }
            for (int sync_interval : {1, 3}) {
              const auto actual =
                  testing::search_sources(*model, sources, max_lengths, options, sync_interval);
              ASSERT_EQ(actual.size(), expected.size());
              for (size_t s = 0; s < expected.size(); ++s) {
                const std::string where = "V " + std::to_string(vocabulary) + " beam " +
                                          std::to_string(beam) + " n_best " +
                                          std::to_string(n_best) + " min " +
                                          std::to_string(min_length) + " α " +
                                          std::to_string(alpha) + " sync " +
                                          std::to_string(sync_interval) + " sentence " +
                                          std::to_string(s);
                ASSERT_EQ(actual[s].size(), expected[s].size()) << where;
                ASSERT_FALSE(actual[s].empty()) << where;
                for (size_t j = 0; j < expected[s].size(); ++j) {
                  EXPECT_EQ(actual[s][j].tokens, expected[s][j].tokens) << where << " #" << j;
                  EXPECT_NEAR(actual[s][j].score, expected[s][j].score, 1e-5) << where;
                  EXPECT_NEAR(actual[s][j].log_prob, expected[s][j].log_prob, 1e-5) << where;
                  EXPECT_LE(actual[s][j].tokens.size(), static_cast<size_t>(max_lengths[s]));
                  if (j > 0) {
                    EXPECT_GE(actual[s][j - 1].score, actual[s][j].score) << where;
                  }
                }
                ++compared;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 2 * 4 * 2 * 2 * 2 * 2 * 5);
}

const std::vector<std::vector<int32_t>> kJoiningSources = {
    {4, 5, 3}, {5, 4, 4, 5, 3}, {4, 3}, {5, 5, 4, 4, 4, 5, 3}, {4, 4, 5, 3}, {5, 3}, {4, 5, 5, 3}};

// Four sets of options, sentence i taking settings[i % 4].
std::vector<SearchOptions> joining_settings() {
  std::vector<SearchOptions> settings(4);
  settings[0].beam_size = 4;
  settings[1].beam_size = 1;
  settings[2].beam_size = 3;
  settings[2].n_best = 3;
  settings[2].min_length = 2;
  settings[3].beam_size = 2;
  settings[3].length_penalty = 0.f;
  settings[3].n_best = 2;
  return settings;
}

struct JoiningRun {
  std::vector<std::vector<Hypothesis>> results;           // per sentence
  std::vector<std::vector<std::vector<int32_t>>> prefixes;  // per sentence, as reported
};

// kJoiningSources through one DeviceBeamSearch of 3 slots (beams up to 4, 12 tokens): one
// sentence joins every other step while a slot is free, into the slot a finished one freed.
JoiningRun run_joining(const TransformerModel& model, const std::vector<int>& max_lengths,
                       const std::vector<SearchOptions>& settings, int sync_interval) {
  const int slots = 3, max_beam = 4, longest = 12;
  const auto& sources = kJoiningSources;
  // A pool that holds the three slots' blocks once: sentences that leave must give theirs back
  // for the next to join.
  TransformerDecoder decoder(
      model, TransformerDecoder::Slots{slots, 8, max_beam, longest},
      model.kv_cache_pool(slots * (max_beam * KvCachePool::blocks_for(longest) +
                                   KvCachePool::blocks_for(8))));
  DeviceBeamSearch search(decoder, slots, max_beam, longest, sync_interval);
  std::vector<int> free_slots = {2, 1, 0}, sentence_in(slots, -1);
  JoiningRun run{std::vector<std::vector<Hypothesis>>(sources.size()),
                 std::vector<std::vector<std::vector<int32_t>>>(sources.size())};
  size_t next = 0, returned = 0;
  for (int step = 0; returned < sources.size(); ++step) {
    if (step >= 200) {
      ADD_FAILURE() << "the search did not end";
      break;
    }
    if (step % 2 == 0 && next < sources.size() && !free_slots.empty()) {
      const int slot = free_slots.back();
      free_slots.pop_back();
      const Batch one = encode(model, {sources[next]});
      decoder.set_sources(one.encoded, one.lengths, {slot});
      search.add({slot}, {max_lengths[next]}, settings[next % settings.size()]);
      sentence_in[slot] = static_cast<int>(next++);
    }
    std::vector<DeviceBeamSearch::Finished> finished = search.step();
    for (DeviceBeamSearch::Progress& progress : search.take_progress()) {
      run.prefixes[sentence_in[progress.slot]].push_back(std::move(progress.stable_tokens));
    }
    for (DeviceBeamSearch::Finished& sentence : finished) {
      run.results[sentence_in[sentence.slot]] = std::move(sentence.hypotheses);
      free_slots.push_back(sentence.slot);
      ++returned;
    }
  }
  EXPECT_EQ(search.live_sentences(), 0);
  return run;
}

// What the search gives source `i` decoded alone.
std::vector<Hypothesis> decoded_alone(const TransformerModel& model, size_t i, int max_length,
                                      const SearchOptions& options) {
  return testing::search_sources(model, {kJoiningSources[i]}, {max_length}, options)[0];
}

// Continuous batching: sentences join a running search at different steps, each with its own
// beam and options, into slots that finished sentences freed. Every sentence gets what the
// search gives it decoded alone.
TEST(DeviceBeamSearch, SentencesJoiningAtAnyStepEqualEachAlone) {
  const std::vector<int> max_lengths = {3, 7, 12, 5, 9, 12, 6};
  const std::vector<SearchOptions> settings = joining_settings();
  int compared = 0;
  for (int vocabulary : {6, 40}) {
    const auto model = tiny_random_model(vocabulary, 5 + vocabulary, 1.5f);
    for (int sync_interval : {1, 3}) {
      const JoiningRun run = run_joining(*model, max_lengths, settings, sync_interval);
      for (size_t i = 0; i < kJoiningSources.size(); ++i) {
        const auto expected =
            decoded_alone(*model, i, max_lengths[i], settings[i % settings.size()]);
        const std::string where = "V " + std::to_string(vocabulary) + " sync " +
                                  std::to_string(sync_interval) + " sentence " + std::to_string(i);
        ASSERT_EQ(run.results[i].size(), expected.size()) << where;
        for (size_t j = 0; j < expected.size(); ++j) {
          EXPECT_EQ(run.results[i][j].tokens, expected[j].tokens) << where << " #" << j;
          EXPECT_NEAR(run.results[i][j].score, expected[j].score, 1e-5) << where;
        }
        EXPECT_TRUE(run.prefixes[i].empty()) << where << ": reported without being asked";
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 2 * 2 * 7);
}

// Sentences that ask for stable prefixes (streaming) report them as they grow: each report is a
// prefix of the sentence's final best hypothesis and longer than the one before, beam 1 reports
// every token as it is decoded (looking every step), and the results are each alone's.
TEST(DeviceBeamSearch, StablePrefixesGrowTowardsTheBestHypothesis) {
  const std::vector<int> max_lengths = {12, 7, 12, 9, 12, 12, 10};
  std::vector<SearchOptions> settings = joining_settings();
  for (SearchOptions& options : settings) options.report_stable_prefix = true;
  int reports_before_the_end_with_beams = 0;
  // Small biases keep these models unsure, so that the best live hypothesis often loses later
  // (the prefix of the best alone is not stable).
  for (auto [vocabulary, seed] : {std::pair{6, 11}, {6, 12}, {40, 45}, {40, 46}}) {
    const auto model = tiny_random_model(vocabulary, seed, 0.5f);
    for (int sync_interval : {1, 3}) {
      const JoiningRun run = run_joining(*model, max_lengths, settings, sync_interval);
      for (size_t i = 0; i < kJoiningSources.size(); ++i) {
        const SearchOptions& options = settings[i % settings.size()];
        const std::string where = "V " + std::to_string(vocabulary) + " seed " +
                                  std::to_string(seed) + " sync " +
                                  std::to_string(sync_interval) + " sentence " + std::to_string(i);
        ASSERT_FALSE(run.results[i].empty()) << where;
        const std::vector<int32_t>& best = run.results[i][0].tokens;
        EXPECT_EQ(best, decoded_alone(*model, i, max_lengths[i], options)[0].tokens) << where;
        size_t before = 0;
        for (const std::vector<int32_t>& prefix : run.prefixes[i]) {
          EXPECT_GT(prefix.size(), before) << where;
          ASSERT_LE(prefix.size(), best.size()) << where;
          EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), best.begin())) << where;
          before = prefix.size();
        }
        if (options.beam_size == 1 && sync_interval == 1) {
          // Every step but the last reports its token.
          ASSERT_GE(best.size(), 1u);
          EXPECT_EQ(run.prefixes[i].size(), before) << where;
          EXPECT_GE(before + 1, best.size()) << where;
        }
        if (options.beam_size > 1) reports_before_the_end_with_beams += !run.prefixes[i].empty();
      }
    }
  }
  EXPECT_GT(reports_before_the_end_with_beams, 0);
}

// After a few steps of two sentences, abandon() hands both slots back with no results; the same
// slots then decode new sentences exactly as they decode alone.
TEST(DeviceBeamSearch, AbandonedSlotsDecodeNewSentencesAfresh) {
  const auto model = tiny_random_model(40, 11, 1.5f);
  const int slots = 2, max_beam = 3, longest = 10;
  SearchOptions options;
  options.beam_size = 3;
  options.n_best = 2;
  TransformerDecoder decoder(*model, TransformerDecoder::Slots{slots, 8, max_beam, longest},
                             model->kv_cache_pool(64));
  DeviceBeamSearch search(decoder, slots, max_beam, longest, /*sync_interval=*/4);
  const Batch first = encode(*model, {{4, 5, 3}, {5, 4, 4, 3}});
  decoder.set_sources(first.encoded, first.lengths, {0, 1});
  search.add({0, 1}, {longest, longest}, options);
  for (int step = 0; step < 3; ++step) EXPECT_TRUE(search.step().empty());
  std::vector<int> abandoned = search.abandon();
  std::sort(abandoned.begin(), abandoned.end());
  EXPECT_EQ(abandoned, (std::vector<int>{0, 1}));
  EXPECT_EQ(search.live_sentences(), 0);

  const std::vector<std::vector<int32_t>> sources = {{5, 5, 4, 3}, {4, 3}};
  const Batch second = encode(*model, sources);
  decoder.set_sources(second.encoded, second.lengths, {1, 0});
  search.add({1, 0}, {longest, longest}, options);
  std::vector<std::vector<Hypothesis>> results(2);
  for (int step = 0; search.live_sentences() > 0; ++step) {
    ASSERT_LT(step, 50);
    for (DeviceBeamSearch::Finished& finished : search.step()) {
      results[finished.slot == 1 ? 0 : 1] = std::move(finished.hypotheses);
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto expected = testing::search_sources(*model, {sources[i]}, {longest}, options)[0];
    ASSERT_EQ(results[i].size(), expected.size()) << "sentence " << i;
    for (size_t j = 0; j < expected.size(); ++j) {
      EXPECT_EQ(results[i][j].tokens, expected[j].tokens) << "sentence " << i << " #" << j;
      EXPECT_NEAR(results[i][j].score, expected[j].score, 1e-5) << "sentence " << i << " #" << j;
    }
  }
}

TEST(DeviceBeamSearch, ASearchWithNoSentenceStepsToNothing) {
  const auto model = tiny_random_model(6, 3);
  TransformerDecoder decoder(*model, TransformerDecoder::Slots{2, 4, 4, 4}, model->kv_cache_pool(8));
  DeviceBeamSearch search(decoder, 2, 4, 4, /*sync_interval=*/1);
  EXPECT_TRUE(search.step().empty());
  EXPECT_EQ(search.live_sentences(), 0);
  EXPECT_TRUE(testing::search_to_end(decoder, {}, SearchOptions()).empty());
}

// Rows of a sentence that is done idle until the host drops them: they continue themselves
// with the end token, so the decoder never reads an unwritten token or row.
TEST(DeviceBeamSearch, DoneSentencesIdleTheirRows) {
  BeamSearchTensors t;
  t.sentence_ids = Tensor::from_vector(std::vector<int32_t>{1}, {1});
  t.first_rows = Tensor::from_vector(std::vector<int32_t>{0}, {1});
  t.beams = Tensor::from_vector(std::vector<int32_t>{2, 2}, {2});
  t.n_bests = Tensor::from_vector(std::vector<int32_t>{1, 1}, {2});
  t.min_lengths = Tensor::zeros({2}, DType::kInt32);
  t.max_lengths = Tensor::from_vector(std::vector<int32_t>{5, 5}, {2});
  t.length_penalties = Tensor::zeros({2}, DType::kFloat32);
  t.steps = Tensor::from_vector(std::vector<int32_t>{2, 2}, {2});
  t.done = Tensor::from_vector(std::vector<int32_t>{0, 1}, {2});
  t.finished_count = Tensor::zeros({2}, DType::kInt32);
  t.finished_scores = Tensor::zeros({2, 6}, DType::kFloat32);
  t.finished_log_probs = Tensor::zeros({2, 6}, DType::kFloat32);
  t.finished_last_steps = Tensor::zeros({2, 6}, DType::kInt32);
  t.finished_last_index = Tensor::zeros({2, 6}, DType::kInt32);
  t.history_tokens = Tensor::zeros({5, 4}, DType::kInt32);
  t.history_parents = Tensor::zeros({5, 4}, DType::kInt32);
  t.next_tokens = Tensor::from_vector(std::vector<int32_t>{-7, -7}, {2});
  t.next_scores = Tensor::zeros({2}, DType::kFloat32);
  t.source_rows = Tensor::from_vector(std::vector<int32_t>{-7, -7}, {2});
  const TopK top{Tensor::zeros({2, 5}, DType::kFloat32), Tensor::zeros({2, 5}, DType::kInt32)};
  const int end_token = 3;
  beam_search_step(t, top, end_token);
  EXPECT_EQ(t.next_tokens.data<int32_t>()[0], end_token);
  EXPECT_EQ(t.next_tokens.data<int32_t>()[1], end_token);
  EXPECT_EQ(t.source_rows.data<int32_t>()[0], 0);
  EXPECT_EQ(t.source_rows.data<int32_t>()[1], 1);
  EXPECT_EQ(t.finished_count.data<int32_t>()[1], 0);
  EXPECT_EQ(t.steps.data<int32_t>()[1], 2);
}

}  // namespace
}  // namespace xlate
