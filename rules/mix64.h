// The SplitMix64 finaliser: a bijection of 64-bit words whose outputs look independent. The
// trainer's reproducible randomness (data order seeds, dropout masks on every backend) is built
// on it. CUDA-free; callable from device code.
#pragma once

#include <cstdint>

#include "rules/host_device.h"

namespace xlate::rules {

XLATE_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace xlate::rules
