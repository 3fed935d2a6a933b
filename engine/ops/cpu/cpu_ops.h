// The CPU bodies of the ops (engine/ops/backend.h), one file each in this folder; their arguments
// are already checked. Float tensors are float32.
#pragma once

#include "engine/ops/backend.h"

namespace xlate::cpu {
XLATE_FOR_EACH_OP(XLATE_DECLARE_OP_BODY)
XLATE_FOR_EACH_OPTIONAL_OP(XLATE_DECLARE_OP_BODY)
// The CPU's OpBackend::int8_available (quantized_linear_cpu.cc).
absl::Status int8_available();
}  // namespace xlate::cpu
