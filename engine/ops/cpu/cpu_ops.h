// The CPU bodies of the ops (engine/ops/backend.h), one file each in this folder; their arguments
// are already checked. Float tensors are float32.
#pragma once

#include "engine/ops/backend.h"

namespace xlate::cpu {
XLATE_FOR_EACH_OP(XLATE_DECLARE_OP_BODY)
}  // namespace xlate::cpu
