// Matrix products of bfloat16 operands summed in float32, through oneDNN's matmul primitive:
// the CPU's products of 16-bit training (the 16-bit activations' tensors, or float32 ones
// rounded to bfloat16 under kernels::Float32Math::kBFloat16Inputs), as a GPU's tensor cores
// compute them. oneDNN runs them with AVX512_BF16's dot products where the processor has them,
// and emulates them on other AVX-512 processors; elsewhere bfloat16_matmul_available() is false
// and the callers widen the operands to float32 instead (the same products, slower).
#pragma once

#include <cstdint>

#include "engine/dtype.h"
#include "engine/ops/cpu/sgemm.h"
#include "engine/ops/ops.h"

namespace xlate::cpu {

bool bfloat16_matmul_available();
// How this processor runs them, for logs: "AVX512_BF16 instructions", "emulated on AVX-512" or
// "widened to float32".
const char* bfloat16_matmul_note();

// A row-major matrix as stored, read transposed when `transpose`.
struct MatmulOperand {
  const void* data;
  Transpose transpose;
};

// c[m, n] (= or, when `accumulate`, +=) act(op(a)[m, k] · op(b)[k, n] + bias[n]), a and b
// bfloat16, c and bias of their DType (bfloat16 or float32; bias may be null), c row-major.
// Rounded once into c. Products of many rows run in chunks of kMaxPlanRows (dnnl_context.h):
// of m, or of k when a is transposed (a weight's gradient, summed over the batch's rows).
struct BFloat16Matmul {
  int64_t m = 0, n = 0, k = 0;
  MatmulOperand a{nullptr, Transpose::kNo}, b{nullptr, Transpose::kNo};
  void* c = nullptr;
  DType c_type = DType::kFloat32;
  bool accumulate = false;
  const void* bias = nullptr;
  DType bias_type = DType::kFloat32;
  Activation activation = Activation::kNone;
};
void bfloat16_matmul(const BFloat16Matmul& product);

}  // namespace xlate::cpu
