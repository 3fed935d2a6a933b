// The optimiser's kernels: the gradient's squared norm and Adam's update over a flat range.
// float32. Every reduction runs in an order fixed by the shapes alone (no atomics), so a training
// step is bit-reproducible on a device; the CPU body of the op in engine/ops/cpu/ is the
// reference (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// Σ x² in double: partials[b] for fixed blocks of kSquaresBlock elements (the caller adds them in
// order on the host, as the CPU body does).
constexpr int64_t kSquaresBlock = int64_t{1} << 16;
void block_sums_of_squares(double* partials, const float* x, int64_t count, Stream stream);

struct AdamConstants {
  float beta1, beta2, step_size, inverse_sqrt_correction2, epsilon, gradient_scale;
};
void adam_update(float* weights, float* first_moment, float* second_moment,
                 const float* gradients, int64_t count, const AdamConstants& constants,
                 Stream stream);

}  // namespace xlate::kernels
