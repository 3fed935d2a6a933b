// Whole searches of one batch through DeviceBeamSearch, for tests: every sentence joins at the
// first step and the search is stepped until each is returned (ContinuousDecoder without its
// admission and handles).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "engine/decoding/device_beam_search.h"
#include "engine/transformer.h"
#include "engine/transformer_decoder.h"

namespace xlate::testing {

// Sentence s in slot s of `decoder` (which holds max_lengths.size() slots of options.beam_size
// rows and the longest max length in positions); per sentence, up to n_best hypotheses.
inline std::vector<std::vector<Hypothesis>> search_to_end(
    DeviceIncrementalDecoder& decoder, const std::vector<int>& max_lengths,
    const SearchOptions& options, int sync_interval = 1,
    const std::vector<Constraints>& constraints = {}) {
  const int sentences = static_cast<int>(max_lengths.size());
  std::vector<std::vector<Hypothesis>> results(max_lengths.size());
  if (sentences == 0) return results;
  const int longest = *std::max_element(max_lengths.begin(), max_lengths.end());
  DeviceBeamSearch search(decoder, sentences, options.beam_size, longest, sync_interval);
  std::vector<int> slots(max_lengths.size());
  std::iota(slots.begin(), slots.end(), 0);
  search.add(slots, max_lengths, options, constraints);
  for (int step = 0; search.live_sentences() > 0; ++step) {
    if (step > longest + sync_interval) {
      ADD_FAILURE() << "the search outlived its longest sentence";
      break;
    }
    for (DeviceBeamSearch::Finished& finished : search.step()) {
      results[finished.slot] = std::move(finished.hypotheses);
    }
  }
  return results;
}

// `sources` (token ids, end token included) encoded by `model` into the slots of a decoder of
// their own, then search_to_end.
inline std::vector<std::vector<Hypothesis>> search_sources(
    const TransformerModel& model, const std::vector<std::vector<int32_t>>& sources,
    const std::vector<int>& max_lengths, const SearchOptions& options, int sync_interval = 1,
    const std::vector<Constraints>& constraints = {}) {
  if (sources.empty()) return {};
  size_t longest = 1;
  for (const auto& source : sources) longest = std::max(longest, source.size());
  const auto count = static_cast<int64_t>(sources.size());
  std::vector<int32_t> tokens(sources.size() * longest, model.config().pad_id), lengths;
  for (size_t s = 0; s < sources.size(); ++s) {
    std::copy(sources[s].begin(), sources[s].end(), tokens.begin() + s * longest);
    lengths.push_back(static_cast<int32_t>(sources[s].size()));
  }
  const Tensor source_lengths = Tensor::from_vector(lengths, {count});
  const Tensor encoded =
      model.encode(Tensor::from_vector(tokens, {count, int64_t(longest)}), source_lengths);
  const int longest_output = *std::max_element(max_lengths.begin(), max_lengths.end());
  TransformerDecoder decoder(
      model, TransformerDecoder::Slots{count, int64_t(longest), options.beam_size, longest_output},
      model.kv_cache_pool(count * (options.beam_size * KvCachePool::blocks_for(longest_output) +
                                   KvCachePool::blocks_for(longest))));
  std::vector<int32_t> slots(sources.size());
  std::iota(slots.begin(), slots.end(), 0);
  decoder.set_sources(encoded, source_lengths, slots);
  return search_to_end(decoder, max_lengths, options, sync_interval, constraints);
}

}  // namespace xlate::testing
