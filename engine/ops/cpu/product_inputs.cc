#include "engine/ops/cpu/product_inputs.h"

#include <cstdint>

#include "engine/dtype.h"

namespace xlate::cpu {
namespace {

thread_local kernels::Float32Math thread_math = kernels::Float32Math::kExact;

}  // namespace

void set_float32_math(kernels::Float32Math math) { thread_math = math; }

kernels::Float32Math float32_math() { return thread_math; }

Tensor product_input(const Tensor& operand) {
  if (thread_math == kernels::Float32Math::kExact) return operand;
  Tensor rounded = Tensor::empty(operand.shape(), DType::kFloat32, operand.device());
  const float* in = operand.data<float>();
  float* out = rounded.data<float>();
  const int64_t count = operand.numel();
  if (thread_math == kernels::Float32Math::kBFloat16Inputs) {
#pragma omp parallel for schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) out[i] = bfloat16_to_float(float_to_bfloat16(in[i]));
  } else {
#pragma omp parallel for schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) out[i] = half_to_float(float_to_half(in[i]));
  }
  return rounded;
}

}  // namespace xlate::cpu
