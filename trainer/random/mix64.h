// The SplitMix64 finaliser: a bijection of 64-bit words whose outputs look independent. The
// trainer's reproducible randomness (data order seeds, dropout masks) is built on it.
#pragma once

#include <cstdint>

namespace xlate::trainer {

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace xlate::trainer
