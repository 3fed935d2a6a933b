// Matrix products of the engine's linear layers through cuBLASLt, in float32, float16 or
// bfloat16 storage with float32 accumulation, the bias and ReLU applied in the gemm's epilogue
// (no extra pass over the output).
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/element_type.h"

namespace xlate::kernels {

enum class GemmEpilogue { kNone, kRelu, kBias, kBiasRelu };

// One per stream: owns the cuBLASLt handle, a workspace and the per-shape plans (descriptors
// and the heuristic's algorithm), so a repeated shape costs no planning.
class GemmContext {
 public:
  explicit GemmContext(Stream stream, size_t workspace_bytes = size_t{32} << 20);
  ~GemmContext();
  GemmContext(const GemmContext&) = delete;
  GemmContext& operator=(const GemmContext&) = delete;

  // out[M, N] = epilogue(inp[M, K] · weight[N, K]ᵀ + bias[N]); all row-major, one element type;
  // bias is ignored (may be nullptr) for kNone and kRelu.
  void linear_forward(void* out, const void* inp, const void* weight, const void* bias,
                      int64_t m, int64_t n, int64_t k, GemmEpilogue epilogue, ElementType type);

 private:
  struct Plan;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace xlate::kernels
