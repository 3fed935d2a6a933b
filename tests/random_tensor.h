// Random test inputs shared by the op and search tests.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "engine/tensor.h"
#include "engine/transformer.h"

namespace xlate {

// A host float32 tensor of N(0, scale²) samples.
Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& generator, float scale = 1.f);

// Host float32 tensors [..., W_i] with the same leading dimensions, side by side: [..., Σ W_i]
// (the layout of a fused projection's output, or of a cache holding keys and values).
Tensor side_by_side(const std::vector<Tensor>& parts);

// A one-layer model (d_model 8, 2 heads, 16 positions) with random weights and logit biases of
// N(0, bias_scale²) over a `vocabulary`-token vocabulary: with a few tokens the end token
// competes at every step, so searches stop early and finish hypotheses of every length.
std::shared_ptr<TransformerModel> tiny_random_model(int vocabulary, uint64_t seed,
                                                    float bias_scale = 1.f);

}  // namespace xlate
