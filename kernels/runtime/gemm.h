// Matrix products of the engine's linear layers through cuBLASLt, in float32, float16 or
// bfloat16 storage with float32 accumulation, the bias and ReLU applied in the gemm's epilogue
// (no extra pass over the output).
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/element_type.h"
#include "kernels/runtime/plan_cache.h"

namespace xlate::kernels {

enum class GemmEpilogue { kNone, kRelu, kBias, kBiasRelu };

// A row-major matrix product c[m, n] = alpha · op(a) · op(b) + beta · c, op(a) [m, k] and
// op(b) [k, n], repeated over `batch` matrices `stride_*` elements apart (the heads' products of
// attention's backward pass; the linear layer's gradients with batch 1). lda/ldb/ldc are row
// strides in elements, as stored.
struct MatmulShape {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// Plans kept per kind of product (linear_forward's and matmul's), each a few descriptors of host
// memory. Training meets a new row count nearly every step (batches of whole sentences), so
// without a bound the plans would grow with the run; 1,024 keep every shape of the last tens of
// steps (each step makes a few dozen).
constexpr size_t kDefaultGemmPlanCapacity = 1024;

// One per stream: owns the cuBLASLt handle, a workspace and the per-shape plans (descriptors
// and the heuristic's algorithm, kernels/runtime/plan_cache.h), so a repeated shape costs no planning.
class GemmContext {
 public:
  explicit GemmContext(Stream stream, size_t workspace_bytes = size_t{32} << 20,
                       size_t plan_capacity = kDefaultGemmPlanCapacity);
  ~GemmContext();
  GemmContext(const GemmContext&) = delete;
  GemmContext& operator=(const GemmContext&) = delete;

  // out[M, N] = epilogue(inp[M, K] · weight[N, K]ᵀ + bias[N]); all row-major, one element type;
  // bias is ignored (may be nullptr) for kNone and kRelu.
  void linear_forward(void* out, const void* inp, const void* weight, const void* bias,
                      int64_t m, int64_t n, int64_t k, GemmEpilogue epilogue, ElementType type);

  // How the products of float32 tensors compute from now on (kExact unless set): the reduced
  // modes round the inputs to float16 / bfloat16 (for tensor cores where the GPU has them) and
  // accumulate in float32. Each mode has its own plans.
  void set_float32_math(Float32Math math);
  Float32Math float32_math() const;

  // The general product of MatmulShape, float32 accumulation (and, for float32 tensors, exact
  // float32 inputs unless set_float32_math says otherwise: training's gradients are checked
  // against the CPU in float32), one element type for a, b and c.
  void matmul(void* c, const void* a, const void* b, const MatmulShape& shape, float alpha,
              float beta, ElementType type);

  // Whether kFloat16Inputs rounds by copies (float16 operands, float32 compute) instead of
  // inside cuBLASLt (CUBLAS_COMPUTE_32F_FAST_16F, tensor cores): set at construction from the
  // device, true below compute capability 7.0 (a P100 has no tensor cores); tests set it to
  // run that path on newer GPUs.
  void set_float16_inputs_by_copies(bool by_copies);
  bool float16_inputs_by_copies() const;

  // The 16-bit type that products of float32 tensors round their operands into by copies under
  // the current math: kBFloat16 under kBFloat16Inputs (cuBLASLt's CUBLAS_COMPUTE_32F_FAST_16BF
  // rounded to float16 instead: gemm.cc), kFloat16 under kFloat16Inputs by copies; kFloat32
  // where they make none.
  ElementType rounding_copy_type() const;

  // Where rounding_copy_type() is 16-bit, matmul of float32 tensors first rounds a and b into
  // copies of that type. A caller whose operand feeds several products (a linear layer's output
  // gradient feeds two) rounds it once (convert to rounding_copy_type()) and passes the copies
  // here (laid out as `shape` says): the same product into a float32 c, without copying. Where
  // no copies are made it is a logic error.
  void matmul_of_rounded_copies(void* c, const void* a, const void* b, const MatmulShape& shape,
                                float alpha, float beta);

  // c (float32) = alpha · op(a) · op(b) + beta · c with a and b stored as `operands` (float16 or
  // bfloat16), summed in float32: a weight's gradient from 16-bit activations into the float32
  // gradient.
  void matmul_to_float32(void* c, const void* a, const void* b, const MatmulShape& shape,
                         float alpha, float beta, ElementType operands);

  // Plan lookups and evictions so far, over both kinds; plans held now (<= 2 · capacity).
  PlanCacheCounts plan_counts() const;
  size_t cached_plans() const;

 private:
  struct Plan;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace xlate::kernels
