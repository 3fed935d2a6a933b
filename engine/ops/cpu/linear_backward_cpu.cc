// Backward of the linear layer and of ReLU (engine/ops/training_ops.h) through sgemm.
#include <algorithm>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/bfloat16_matmul.h"
#include "engine/ops/cpu/product_inputs.h"
#include "engine/ops/cpu/sgemm.h"
#include "engine/ops/cpu/widened_op.h"

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

// linear_backward on float32 tensors, its operands read as the thread's products read them.
void linear_backward_float32(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                             const Tensor& inp, const Tensor& weight, GradientWrite write) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = dout.numel() / outputs;
  const Tensor gradient = product_input(dout);
  if (dinp.defined()) {
    const Tensor w = product_input(weight);
    sgemm(Transpose::kNo, Transpose::kNo, rows, inputs, outputs, 1.f, gradient.data<float>(),
          outputs, w.data<float>(), inputs, write == GradientWrite::kAccumulate ? 1.f : 0.f,
          dinp.data<float>(), inputs);
  }
  const Tensor x = product_input(inp);
  sgemm(Transpose::kYes, Transpose::kNo, outputs, inputs, rows, 1.f, gradient.data<float>(),
        outputs, x.data<float>(), inputs, 1.f, dweight.data<float>(), inputs);
  // The bias's gradient is a sum, not a product: of dout as it is.
  if (dbias.defined()) add_column_sums(dbias.data<float>(), dout.data<float>(), rows, outputs);
}

}  // namespace

void linear_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& inp, const Tensor& weight, GradientWrite write) {
  const bool sixteen_bit = dout.dtype() == DType::kBFloat16;
  if (!bfloat16_matmul_available() ||
      !(sixteen_bit || (dout.dtype() == DType::kFloat32 &&
                        float32_math() == kernels::Float32Math::kBFloat16Inputs))) {
    WidenedOp<&linear_backward_float32>::call(dinp, dweight, dbias, dout, inp, weight, write);
    return;
  }
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = dout.numel() / outputs;
  // bfloat16 operands as stored, or float32 ones rounded to bfloat16 copies.
  const Tensor gradient = sixteen_bit ? dout : dout.to_dtype(DType::kBFloat16);
  const Tensor x = sixteen_bit ? inp : inp.to_dtype(DType::kBFloat16);
  if (dinp.defined()) {
    const Tensor w = sixteen_bit ? weight : weight.to_dtype(DType::kBFloat16);
    BFloat16Matmul product;  // dinp[rows, K] = dout[rows, N] · weight[N, K]
    product.m = rows;
    product.n = inputs;
    product.k = outputs;
    product.a = {gradient.raw_data(), Transpose::kNo};
    product.b = {w.raw_data(), Transpose::kNo};
    product.c = dinp.raw_data();
    product.c_type = dinp.dtype();
    product.accumulate = write == GradientWrite::kAccumulate;
    bfloat16_matmul(product);
  }
  BFloat16Matmul product;  // dweight[N, K] += dout[rows, N]ᵀ · inp[rows, K]
  product.m = outputs;
  product.n = inputs;
  product.k = rows;
  product.a = {gradient.raw_data(), Transpose::kYes};
  product.b = {x.raw_data(), Transpose::kNo};
  product.c = dweight.raw_data();
  product.c_type = DType::kFloat32;
  product.accumulate = true;
  bfloat16_matmul(product);
  if (dbias.defined()) {
    const Tensor summed = dout.to_float32();  // the bias's gradient sums dout as stored
    add_column_sums(dbias.data<float>(), summed.data<float>(), rows, outputs);
  }
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
