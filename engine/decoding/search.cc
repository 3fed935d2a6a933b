#include "engine/decoding/search.h"

namespace xlate {

std::vector<std::vector<Hypothesis>> Search::search(IncrementalDecoder& decoder,
                                                    const std::vector<int>& max_lengths,
                                                    const SearchOptions& options) const {
  const std::unique_ptr<SearchRun> run = start(decoder, max_lengths, options);
  while (!run->done()) run->step();
  return run->take_results();
}

}  // namespace xlate
