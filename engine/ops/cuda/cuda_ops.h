// The CUDA bodies of the ops (engine/ops/backend.h), over kernels/; their arguments are already
// checked and all their tensors are CUDA tensors. CUDA-free header.
#pragma once

#include "engine/ops/backend.h"

namespace xlate::cuda {
XLATE_FOR_EACH_OP(XLATE_DECLARE_OP_BODY)
}  // namespace xlate::cuda
