#include "trainer/layers/linear.h"

#include "engine/ops/cpu/sgemm.h"

namespace xlate::trainer {

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    bool relu) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = inp.numel() / inputs;
  cpu::sgemm(cpu::Transpose::kNo, cpu::Transpose::kYes, rows, outputs, inputs, 1.f,
             inp.data<float>(), inputs, weight.data<float>(), inputs, 0.f, out.data<float>(),
             outputs);
  if (!bias.defined() && !relu) return;
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < rows; ++m) {
    float* row = out.data<float>() + m * outputs;
    if (b != nullptr) {
      for (int64_t n = 0; n < outputs; ++n) row[n] += b[n];
    }
    if (relu) {
      for (int64_t n = 0; n < outputs; ++n) row[n] = row[n] > 0.f ? row[n] : 0.f;
    }
  }
}

}  // namespace xlate::trainer
