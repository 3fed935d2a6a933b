#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

void embedding_backward(Tensor& dtable, Tensor& dpositions, const Tensor& dout,
                        const Tensor& tokens, float scale) {
  const int64_t rows = tokens.dim(0), steps = tokens.dim(1), channels = dout.dim(-1);
  const int32_t* ids = tokens.data<int32_t>();
  // Serial over rows (several rows may share a token); M·C multiply-adds are cheap next to
  // the matrix products, and the order is fixed.
  for (int64_t m = 0; m < rows * steps; ++m) {
    float* target = dtable.data<float>() + static_cast<int64_t>(ids[m]) * channels;
    const float* gradient = dout.data<float>() + m * channels;
    for (int64_t c = 0; c < channels; ++c) target[c] += scale * gradient[c];
  }
  if (!dpositions.defined()) return;
  for (int64_t m = 0; m < rows * steps; ++m) {
    float* target = dpositions.data<float>() + (m % steps) * channels;
    const float* gradient = dout.data<float>() + m * channels;
    for (int64_t c = 0; c < channels; ++c) target[c] += gradient[c];
  }
}

}  // namespace xlate::cpu
