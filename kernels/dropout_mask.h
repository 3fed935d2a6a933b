// The dropout mask as a pure function of (key, element index): a counter-based hash, so the
// backward pass recomputes the mask instead of storing it, a resumed run (same key) draws the
// same masks, and the CPU and CUDA backends draw identical ones. CUDA-free; callable from device
// code.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/mix64.h"

namespace xlate::kernels {

// An element is kept when the top 24 bits of its hash, as a fraction of 2^24, are >= p.
XLATE_HOST_DEVICE inline uint32_t dropout_threshold(float p) {
  return static_cast<uint32_t>(static_cast<double>(p) * (1 << 24));
}

XLATE_HOST_DEVICE inline bool dropout_keeps(uint64_t key, int64_t index, uint32_t threshold) {
  return static_cast<uint32_t>(mix64(key ^ mix64(static_cast<uint64_t>(index))) >> 40) >=
         threshold;
}

}  // namespace xlate::kernels
