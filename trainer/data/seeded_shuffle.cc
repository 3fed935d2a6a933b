#include "trainer/data/seeded_shuffle.h"

#include <utility>

namespace xlate::trainer {
namespace {

// The SplitMix64 finaliser: a bijection of 64-bit words whose outputs look independent.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t stream) { return mix64(mix64(seed) ^ stream); }

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
