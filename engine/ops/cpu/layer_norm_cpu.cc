#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps) {
  const int64_t channels = inp.dim(-1);
  const int64_t rows = inp.numel() / channels;
  const float* a = inp.data<float>();
  const float* b = residual.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for if (rows > 16)
  for (int64_t r = 0; r < rows; ++r) {
    add_layer_norm_row(y + r * channels, a + r * channels, b + r * channels, gamma.data<float>(),
                       beta.data<float>(), eps, channels);
  }
}

}  // namespace xlate::cpu
