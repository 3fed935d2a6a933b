// The dropout mask as a pure function of (key, element index): a counter-based hash, so the
// backward pass recomputes the mask instead of storing it, a resumed run (same key) draws the
// same masks, and the CPU and CUDA backends draw identical ones. CUDA-free; callable from device
// code.
#pragma once

#include <cstdint>

#include "rules/host_device.h"
#include "rules/mix64.h"

namespace xlate::rules {

// An element is kept when the top 24 bits of its hash, as a fraction of 2^24, are >= p.
XLATE_HOST_DEVICE inline uint32_t dropout_threshold(float p) {
  return static_cast<uint32_t>(static_cast<double>(p) * (1 << 24));
}

XLATE_HOST_DEVICE inline bool dropout_keeps(uint64_t key, int64_t index, uint32_t threshold) {
  return static_cast<uint32_t>(mix64(key ^ mix64(static_cast<uint64_t>(index))) >> 40) >=
         threshold;
}

// Inverted dropout with probability p under `key`, for kernels that drop elements on their way
// through (the residual layer norm): x / (1 - p) where kept, 0 where dropped. p = 0 keeps every
// element unchanged (threshold 0, scale 1).
struct DropoutMask {
  uint64_t key = 0;
  uint32_t threshold = 0;
  float keep_scale = 1.f;

  static DropoutMask of(float p, uint64_t key) {
    return p > 0.f ? DropoutMask{key, dropout_threshold(p), 1.f / (1.f - p)} : DropoutMask{};
  }
  XLATE_HOST_DEVICE float apply(float x, int64_t index) const {
#if defined(__CUDA_ARCH__)
    // Rounded here, never fused into an add that follows: the same bits as the CPU's product.
    const float kept = __fmul_rn(x, keep_scale);
#else
    const float kept = x * keep_scale;
#endif
    return dropout_keeps(key, index, threshold) ? kept : 0.f;
  }
};

}  // namespace xlate::rules
