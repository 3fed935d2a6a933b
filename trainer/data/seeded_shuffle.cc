#include "trainer/data/seeded_shuffle.h"

#include <utility>

#include "rules/mix64.h"

namespace xlate::trainer {

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  return rules::mix64(rules::mix64(seed) ^ stream);
}

uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  // Draws below `threshold` = 2^64 mod bound are rejected, so the accepted range
  // [threshold, 2^64) holds a whole number of copies of [0, bound).
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t draw = rng();
    if (draw >= threshold) return draw % bound;
  }
}

void shuffle_in_place(std::vector<int64_t>* values, std::mt19937_64& rng) {
  for (size_t i = values->size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(uniform_below(rng, i));
    std::swap((*values)[i - 1], (*values)[j]);
  }
}

}  // namespace xlate::trainer
