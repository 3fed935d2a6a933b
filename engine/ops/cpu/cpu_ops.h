// The CPU bodies of the ops (engine/ops/backend.h), one file each in this folder; their arguments
// are already checked. They compute on float32 tensors; the backend's table reaches them through
// WidenedOp (widened_op.h), which gives them float16 / bfloat16 tensors widened, except the
// bodies that read 16-bit tensors themselves (cpu_backend.cc names them).
#pragma once

#include <stdexcept>
#include <string>

#include "engine/ops/backend.h"

namespace xlate::cpu {
XLATE_FOR_EACH_OP(XLATE_DECLARE_OP_BODY)
XLATE_FOR_EACH_OPTIONAL_OP(XLATE_DECLARE_OP_BODY)
// The CPU's runtime entries of OpBackend (cpu_runtime.cc).
std::shared_ptr<void> allocate(size_t bytes);
void fill_zero(void* data, size_t bytes);
void copy(void* to, const void* from, size_t bytes);
void convert(void* out, DType out_dtype, const void* inp, DType inp_dtype, int64_t count);
// The CPU's OpBackend::int8_available (quantized_linear_cpu.cc) and
// bfloat16_weights_available (linear_cpu.cc).
absl::Status int8_available();
absl::Status bfloat16_weights_available();
// The largest magnitude of a quantised int8 weight on this processor (oneDNN's effective ISA):
// 127, or 63 without VNNI, whose 16-bit pair sums would saturate (quantized_linear_cpu.cc).
float int8_weight_levels();
// The int8 halves of pack_linear_weight and packed_linear_forward (linear_cpu.cc has the op
// bodies and the float32 halves), in quantized_linear_cpu.cc.
PackedWeight quantize_linear_weight(const Tensor& weight);
void quantized_linear_forward(Tensor& out, const Tensor& inp, const PackedWeight& weight,
                              const Tensor& bias, Activation activation);
// packed_weight_rows of an int8 weight: each row's int8 values times its scale.
void quantized_weight_rows(Tensor& out, const Tensor& tokens, const PackedWeight& weight);

// Calls row(i, n) for each token i of `tokens` (int32) with its id n, which must lie in
// [0, outputs): std::out_of_range naming it otherwise (packed_weight_rows' tokens).
template <typename Row>
void for_each_token_row(const Tensor& tokens, int64_t outputs, Row&& row) {
  const int32_t* ids = tokens.data<int32_t>();
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    if (ids[i] < 0 || ids[i] >= outputs) {
      throw std::out_of_range("packed_weight_rows: token " + std::to_string(ids[i]) +
                              " outside [0, " + std::to_string(outputs) + ")");
    }
    row(i, static_cast<int64_t>(ids[i]));
  }
}
}  // namespace xlate::cpu
