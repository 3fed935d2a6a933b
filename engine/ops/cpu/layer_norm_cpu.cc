#include <cmath>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"
#include "engine/ops/cpu/widened_op.h"
#include "rules/dropout_mask.h"

namespace xlate::cpu {
namespace {

// `value` as the caller's `stored` type holds it: rounded to nearest even in 16 bits.
float as_stored(float value, DType stored) {
  switch (stored) {
    case DType::kBFloat16: return bfloat16_to_float(float_to_bfloat16(value));
    case DType::kFloat16: return half_to_float(float_to_half(value));
    default: return value;
  }
}

// One row for training: the sum of the dropped-out inp and the residual, kept in `sum` (which
// may alias `a`: each column is read before it is written) as the caller stores it (`stored`:
// a 16-bit sum is rounded here, so that the row normalised, and the statistics the backward
// reads, are those of the stored sum, as on CUDA), then the same maths in two exact passes in
// float32, with the row's mean and 1/sqrt(var + eps) kept for layer_norm_backward.
void add_layer_norm_row_training(float* y, float* sum, float* mean, float* rstd, const float* a,
                                 const float* b, const float* gamma, const float* beta, float eps,
                                 int64_t channels, const rules::DropoutMask& dropout,
                                 int64_t offset, DType stored) {
  float total = 0.f;
  for (int64_t c = 0; c < channels; ++c) {
    sum[c] = as_stored(dropout.apply(a[c], offset + c) + b[c], stored);
    total += sum[c];
  }
  const float mu = total / static_cast<float>(channels);
  float squares = 0.f;
  for (int64_t c = 0; c < channels; ++c) squares += (sum[c] - mu) * (sum[c] - mu);
  const float inverse = 1.f / std::sqrt(squares / static_cast<float>(channels) + eps);
  for (int64_t c = 0; c < channels; ++c) y[c] = (sum[c] - mu) * inverse * gamma[c] + beta[c];
  *mean = mu;
  *rstd = inverse;
}

// The body on float32 tensors; `stored` is the dtype the caller keeps the training sum in.
void add_layer_norm_float32(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps,
                            LayerNormTraining* training, DType stored) {
  const int64_t channels = inp.dim(-1);
  const int64_t rows = inp.numel() / channels;
  const float* a = inp.data<float>();
  const float* b = residual.data<float>();
  float* y = out.data<float>();
  if (training != nullptr) {
    const rules::DropoutMask dropout =
        rules::DropoutMask::of(training->dropout, training->dropout_key);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      add_layer_norm_row_training(y + r * channels, training->sum.data<float>() + r * channels,
                                  training->mean.data<float>() + r,
                                  training->rstd.data<float>() + r, a + r * channels,
                                  b + r * channels, gamma.data<float>(), beta.data<float>(), eps,
                                  channels, dropout, r * channels, stored);
    }
    return;
  }
#pragma omp parallel for if (rows > 16)
  for (int64_t r = 0; r < rows; ++r) {
    add_layer_norm_row(y + r * channels, a + r * channels, b + r * channels, gamma.data<float>(),
                       beta.data<float>(), eps, channels);
  }
}

}  // namespace

void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps,
                            LayerNormTraining* training) {
  const DType stored = training != nullptr ? training->sum.dtype() : out.dtype();
  WidenedOp<&add_layer_norm_float32>::call(out, inp, residual, gamma, beta, eps, training, stored);
}

}  // namespace xlate::cpu
