// Element type conversion on the device (float32 <-> float16 <-> bfloat16, round to nearest
// even), used to store weights in the compute dtype chosen at run time.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

void convert(void* out, ElementType out_type, const void* inp, ElementType inp_type, int64_t count,
             Stream stream);

}  // namespace xlate::kernels
