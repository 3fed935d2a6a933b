// How the CPU's matrix products read float32 operands: exactly, or rounded to float16 /
// bfloat16 first (kernels::Float32Math), per calling thread as on CUDA. Mixed-precision
// training sets the rounding (trainer/training/precision_setup.h) so that a CPU run's products
// see the inputs a GPU's tensor cores see: each product is then that of the rounded values,
// summed in float32.
#pragma once

#include "engine/tensor.h"
#include "kernels/element_type.h"

namespace xlate::cpu {

void set_float32_math(kernels::Float32Math math);
kernels::Float32Math float32_math();

// A float32 operand as the calling thread's products read it: `operand` itself under kExact,
// else a float32 copy of its values rounded to the 16-bit type (nearest even).
Tensor product_input(const Tensor& operand);

}  // namespace xlate::cpu
