// The CPU backend's table: the bodies of this folder; they run synchronously on the calling
// thread (OpenMP and oneDNN parallelise inside a call).
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/dnnl_context.h"
#include "engine/ops/cpu/product_inputs.h"
#include "engine/ops/cpu/widened_op.h"

namespace xlate::cpu {

const OpBackend& op_backend() {
  static const OpBackend backend = [] {
    OpBackend table;
    table.name = "CPU";
    // float16 / bfloat16 tensors: stored in 16 bits, computed in float32 (widened_op.h).
    table.reduced_precision_storage = true;
    table.lexical_constraints = true;
    table.synchronize = [] {};
    table.int8_available = &int8_available;
    table.bfloat16_weights_available = &bfloat16_weights_available;
    table.plan_counts = &primitive_counts;
    table.device_count = [] { return 1; };
    table.device_description = [] { return std::string("the CPU"); };
    table.compute_capability = [] { return 0; };
    table.allocate = &allocate;
    table.allocate_host_staging = &allocate;
    table.fill_zero = &fill_zero;
    table.copy_from_host = &copy;
    table.copy_to_host = &copy;
    table.copy_within = &copy;
    table.convert = &convert;
    table.memory = [] { return DeviceMemory(); };
    table.wait_seconds = [] { return 0.0; };
    table.set_float32_math = &set_float32_math;
    table.float32_math = &float32_math;
#define XLATE_SET_WIDENED_OP_BODY(op) table.op = &WidenedOp<&op>::call;
    XLATE_FOR_EACH_OP(XLATE_SET_WIDENED_OP_BODY)
#undef XLATE_SET_WIDENED_OP_BODY
    // Bodies that read 16-bit tensors themselves: the layer norm rounds its kept sum before
    // normalising it (the statistics are the stored sum's); the products read bfloat16 directly.
    table.add_layer_norm_forward = &add_layer_norm_forward;
    table.linear_forward = &linear_forward;
    table.linear_backward = &linear_backward;
    table.cross_entropy_forward_backward = &cross_entropy_forward_backward;  // row by row
    XLATE_FOR_EACH_OPTIONAL_OP(XLATE_SET_OP_BODY)
    return table;
  }();
  return backend;
}

}  // namespace xlate::cpu
