// The CPU backend's table: the bodies of this folder; they run synchronously on the calling
// thread (OpenMP and oneDNN parallelise inside a call).
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/dnnl_context.h"

namespace xlate::cpu {

const OpBackend& op_backend() {
  static const OpBackend backend = [] {
    OpBackend table;
    table.name = "CPU";
    table.lexical_constraints = true;
    table.synchronize = [] {};
    table.int8_available = &int8_available;
    table.plan_counts = &primitive_counts;
    XLATE_FOR_EACH_OP(XLATE_SET_OP_BODY)
    XLATE_FOR_EACH_OPTIONAL_OP(XLATE_SET_OP_BODY)
    return table;
  }();
  return backend;
}

}  // namespace xlate::cpu
