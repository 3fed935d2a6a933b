// Backward of the linear layer and of ReLU (engine/ops/training_ops.h) through sgemm.
#include <algorithm>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/sgemm.h"

namespace xlate::cpu {
namespace {

// sums[N] += Σ_m x[m, :] in fixed row blocks summed in order: the result never depends on the
// number of threads.
void add_column_sums(float* sums, const float* x, int64_t rows, int64_t columns) {
  constexpr int64_t kBlockRows = 256;
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  std::vector<float> partial(static_cast<size_t>(blocks * columns), 0.f);
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    float* out = partial.data() + block * columns;
    const int64_t end = std::min(rows, (block + 1) * kBlockRows);
    for (int64_t m = block * kBlockRows; m < end; ++m) {
      const float* row = x + m * columns;
      for (int64_t c = 0; c < columns; ++c) out[c] += row[c];
    }
  }
  for (int64_t block = 0; block < blocks; ++block) {
    const float* in = partial.data() + block * columns;
    for (int64_t c = 0; c < columns; ++c) sums[c] += in[c];
  }
}

}  // namespace

void linear_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& inp, const Tensor& weight, GradientWrite write) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = dout.numel() / outputs;
  if (dinp.defined()) {
    sgemm(Transpose::kNo, Transpose::kNo, rows, inputs, outputs, 1.f, dout.data<float>(),
          outputs, weight.data<float>(), inputs, write == GradientWrite::kAccumulate ? 1.f : 0.f,
          dinp.data<float>(), inputs);
  }
  sgemm(Transpose::kYes, Transpose::kNo, outputs, inputs, rows, 1.f, dout.data<float>(), outputs,
        inp.data<float>(), inputs, 1.f, dweight.data<float>(), inputs);
  if (dbias.defined()) add_column_sums(dbias.data<float>(), dout.data<float>(), rows, outputs);
}

void relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& out) {
  const int64_t count = dout.numel();
  const float* gradient = dout.data<float>();
  const float* activation = out.data<float>();
  float* result = dinp.data<float>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) result[i] = activation[i] > 0.f ? gradient[i] : 0.f;
}

}  // namespace xlate::cpu
