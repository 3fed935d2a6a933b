// Inverted dropout whose mask is a pure function of (key, element index): a counter-based hash,
// so the backward pass recomputes the mask instead of storing it, and a resumed run (same seed,
// step and site) draws exactly the same masks.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace xlate::trainer {

// The key of one dropout site in one micro-batch: mixes the run's seed, the step, the
// micro-batch, the rank and the site (layer and position in the layer).
uint64_t dropout_key(uint64_t seed, int64_t step, int64_t micro_batch, int rank, int64_t site);

// out = inp · keep / (1 - p), keep drawn with probability 1 - p. p = 0 copies. May alias.
void dropout_forward(Tensor& out, const Tensor& inp, float p, uint64_t key);

// dinp = dout · keep / (1 - p) with the same mask as the forward. May alias.
void dropout_backward(Tensor& dinp, const Tensor& dout, float p, uint64_t key);

}  // namespace xlate::trainer
