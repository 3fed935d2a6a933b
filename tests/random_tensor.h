// Random test inputs shared by the op tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "engine/tensor.h"

namespace xlate {

// A host float32 tensor of N(0, scale²) samples.
Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& generator, float scale = 1.f);

}  // namespace xlate
