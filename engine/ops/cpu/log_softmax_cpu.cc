#include <cmath>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

void log_softmax_forward(Tensor& out, const Tensor& inp) {
  const int64_t width = inp.dim(-1);
  const int64_t rows = inp.numel() / width;
  const float* x = inp.data<float>();
  float* y = out.data<float>();
#pragma omp parallel
  {
    std::vector<float> scratch(static_cast<size_t>(width));
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * width;
      const float row_max = max_of(row, width);
      const float sum = exp_shifted_sum(scratch.data(), row, row_max, width);
      subtract(y + r * width, row, row_max + std::log(sum), width);
    }
  }
}

}  // namespace xlate::cpu
