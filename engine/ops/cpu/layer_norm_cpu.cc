#include <cmath>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {
namespace {

// One row for training: the same maths, two exact passes in float32, with the row's mean and
// 1/sqrt(var + eps) kept for layer_norm_backward.
void add_layer_norm_row_saving(float* y, float* mean, float* rstd, const float* a, const float* b,
                               const float* gamma, const float* beta, float eps,
                               int64_t channels) {
  float sum = 0.f;
  for (int64_t c = 0; c < channels; ++c) sum += a[c] + b[c];
  const float mu = sum / static_cast<float>(channels);
  float squares = 0.f;
  for (int64_t c = 0; c < channels; ++c) squares += (a[c] + b[c] - mu) * (a[c] + b[c] - mu);
  const float inverse = 1.f / std::sqrt(squares / static_cast<float>(channels) + eps);
  for (int64_t c = 0; c < channels; ++c) y[c] = (a[c] + b[c] - mu) * inverse * gamma[c] + beta[c];
  *mean = mu;
  *rstd = inverse;
}

}  // namespace

void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps,
                            LayerNormStatistics* saved) {
  const int64_t channels = inp.dim(-1);
  const int64_t rows = inp.numel() / channels;
  const float* a = inp.data<float>();
  const float* b = residual.data<float>();
  float* y = out.data<float>();
  if (saved != nullptr) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      add_layer_norm_row_saving(y + r * channels, saved->mean.data<float>() + r,
                                saved->rstd.data<float>() + r, a + r * channels, b + r * channels,
                                gamma.data<float>(), beta.data<float>(), eps, channels);
    }
    return;
  }
#pragma omp parallel for if (rows > 16)
  for (int64_t r = 0; r < rows; ++r) {
    add_layer_norm_row(y + r * channels, a + r * channels, b + r * channels, gamma.data<float>(),
                       beta.data<float>(), eps, channels);
  }
}

}  // namespace xlate::cpu
