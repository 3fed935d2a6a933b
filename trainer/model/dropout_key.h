// The key of one dropout site: the mask itself is drawn by the engine's dropout ops
// (engine/ops/training_ops.h) from this key and each element's index, so a resumed run (same
// seed, step and site) and a run on another backend draw exactly the same masks.
#pragma once

#include <cstdint>

namespace xlate::trainer {

// Mixes the run's seed, the step, the micro-batch, the rank and the site (layer and position in
// the layer).
uint64_t dropout_key(uint64_t seed, int64_t step, int64_t micro_batch, int rank, int64_t site);

}  // namespace xlate::trainer
