// Seeded randomness that gives the same results on every machine and standard library.
//
// std::mt19937_64's output sequence is fixed by the C++ standard, but std::shuffle and
// std::uniform_int_distribution are not (libstdc++ and libc++ differ), so the batcher uses
// these instead: its batch order is then a function of the seed alone.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace xlate::trainer {

// A well-mixed 64-bit seed for stream `stream` (an epoch) of the run seeded with `seed`.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// A uniform integer in [0, bound), bound >= 1, by rejection (no modulo bias).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound);

// Fisher-Yates shuffle of *values in place.
void shuffle_in_place(std::vector<int64_t>* values, std::mt19937_64& rng);

}  // namespace xlate::trainer
