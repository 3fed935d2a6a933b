// The backends of the ops of engine/ops/ops.h: one table per device, filled by the backend
// (engine/ops/cpu/cpu_backend.cc; engine/ops/cuda/ops_cuda.cc over kernels/ when the build has
// CUDA) and found by device (engine/ops/backend.cc). ops.cc checks an op's arguments and calls
// the body of the tensors' device through this table; it never branches on the device itself.
// The table holds the device's runtime too (its memory, copies, conversions, statistics and
// math mode): Tensor, the trainer and the placement checks go through it, so the CUDA calls are
// made in the CUDA backend alone. CUDA-free.
//
// Adding an op: declare it in ops.h and check its arguments in ops.cc (which ends by calling
// `backend_of(...).the_op(...)`), add its name to XLATE_FOR_EACH_OP below (the one
// registration), and write its CPU body (ops/cpu/the_op_cpu.cc) and its CUDA body (in
// ops/cuda/). A backend that lacks a body fails to link. A body's signature is the op's own.
// Ops that only some backends have (packed weights) are listed in XLATE_FOR_EACH_OPTIONAL_OP
// instead: a backend without them leaves their entries null (and int8_available says why a
// backend cannot pack int8 weights).
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "kernels/element_type.h"
#include "kernels/runtime/plan_cache.h"

// Every op of ops.h and training_ops.h that a backend implements, by name.
#define XLATE_FOR_EACH_OP(X) \
  X(embedding_forward)       \
  X(linear_forward)          \
  X(add_layer_norm_forward)  \
  X(attention_forward)       \
  X(log_softmax_forward)     \
  X(log_softmax_top_k)       \
  X(gather_log_probs)        \
  X(gather_rows)             \
  X(scatter_rows)            \
  X(decode_positions)        \
  X(penalize_repeats)        \
  X(beam_search_step)        \
  X(linear_backward)         \
  X(relu_backward)           \
  X(layer_norm_backward)     \
  X(attention_backward)      \
  X(dropout_forward)         \
  X(dropout_backward)        \
  X(dropout_relu_backward)   \
  X(cross_entropy_forward)   \
  X(cross_entropy_backward)  \
  X(cross_entropy_forward_backward) \
  X(embedding_backward)      \
  X(sum_of_squares)          \
  X(adam_update)

// Ops a backend may lack (entry null): products with weights packed for inference, float32 and
// the int8 of compute type int8, and rows read back from a float32 packed weight.
#define XLATE_FOR_EACH_OPTIONAL_OP(X) \
  X(pack_linear_weight)               \
  X(packed_linear_forward)            \
  X(packed_weight_rows)

// Declares a backend namespace's body of `op`, with the signature of xlate::op.
#define XLATE_DECLARE_OP_BODY(op) decltype(::xlate::op) op;

namespace xlate {

// A device's memory as its allocator sees it (the calling worker's on CUDA; all zero on the
// CPU, whose memory the process's RSS shows).
struct DeviceMemory {
  size_t in_use = 0;       // bytes handed out and not given back
  size_t peak_in_use = 0;  // the most in_use has been: what the work needed at once
  size_t reserved = 0;     // bytes held from the device (in use + cached): the high-water mark
  size_t free = 0;         // free device memory, every process counted
};

struct OpBackend {
  const char* name = "";
  // Whether float tensors may be stored as float16/bfloat16 (arithmetic is float32 either way);
  // a backend without it takes float32 only.
  bool reduced_precision_storage = false;
  // Largest k of log_softmax_top_k (the CUDA kernel keeps each row's candidates in registers).
  int max_top_k = std::numeric_limits<int>::max();
  // Largest beam of beam_search_step (the CUDA step ranks 2·B candidates in a fixed array).
  int max_beam = std::numeric_limits<int>::max();
  // Whether beam_search_step takes lexical constraints (both backends now).
  bool lexical_constraints = false;
  // Largest d_k and d_v of attention_forward (the CUDA kernel keeps a query's head in its
  // lanes' registers: kernels::kMaxAttentionHeadDim).
  int max_attention_head_dim = std::numeric_limits<int>::max();
  // Waits until the work the calling thread queued on the device is done (a no-op where the
  // ops run synchronously): before another thread's work reads what this thread wrote.
  void (*synchronize)() = nullptr;
  // OK when this backend packs int8 weights (and multiplies by them) on this machine, else why
  // not (the processor lacks what they need); null: the backend has no int8 products.
  absl::Status (*int8_available)() = nullptr;
  // Likewise for packed bfloat16 weights multiplying float32 activations (compute type bfloat16
  // on the CPU: half the weights' memory, products summed in float32).
  absl::Status (*bfloat16_weights_available)() = nullptr;
  // The per-shape plans made so far (cuBLASLt's descriptors and algorithms for the calling
  // thread's stream; oneDNN's primitives, shared by every thread) and the host seconds they
  // took: a training step whose batch shapes are new pays them every step.
  kernels::PlanCacheCounts (*plan_counts)() = nullptr;

  // The runtime. Usable devices (the CPU: 1; CUDA: 0 without a GPU or driver, and a loaded
  // driver that fails throws std::runtime_error), what the device is, and 10 · major + minor of
  // a GPU's compute capability (0 on the CPU).
  int (*device_count)() = nullptr;
  std::string (*device_description)() = nullptr;
  int (*compute_capability)() = nullptr;
  // Memory on the device (64-byte aligned on the CPU); throws std::bad_alloc when it is full.
  std::shared_ptr<void> (*allocate)(size_t bytes) = nullptr;
  // Host memory that copies from this device fill without a staging copy (page-locked on CUDA).
  std::shared_ptr<void> (*allocate_host_staging)(size_t bytes) = nullptr;
  void (*fill_zero)(void* data, size_t bytes) = nullptr;
  // Copies in the calling worker's stream; a copy to the host waits for it.
  void (*copy_from_host)(void* to, const void* host, size_t bytes) = nullptr;
  void (*copy_to_host)(void* host, const void* from, size_t bytes) = nullptr;
  void (*copy_within)(void* to, const void* from, size_t bytes) = nullptr;
  // Float element type conversion of `count` elements in this device's memory.
  void (*convert)(void* out, DType out_dtype, const void* inp, DType inp_dtype,
                  int64_t count) = nullptr;
  DeviceMemory (*memory)() = nullptr;
  // Seconds the calling worker's thread has waited for the device since it began (0 where the
  // ops run synchronously): a training step's time less its waits is the host's own share.
  double (*wait_seconds)() = nullptr;
  // How the calling worker's products of float32 tensors compute (kExact unless set; the CPU's
  // are exact, and refuse another mode): mixed-precision training's float16/bfloat16 inputs.
  void (*set_float32_math)(kernels::Float32Math math) = nullptr;
  kernels::Float32Math (*float32_math)() = nullptr;

#define XLATE_OP_BACKEND_MEMBER(op) decltype(&::xlate::op) op = nullptr;
  XLATE_FOR_EACH_OP(XLATE_OP_BACKEND_MEMBER)
  XLATE_FOR_EACH_OPTIONAL_OP(XLATE_OP_BACKEND_MEMBER)
#undef XLATE_OP_BACKEND_MEMBER
};

// The table of `device`'s backend, or null when this build has none (a CPU-only build registers
// no CUDA table).
const OpBackend* find_op_backend(Device device);
// As find_op_backend; throws std::logic_error naming the device when the build lacks its backend
// (no tensor can exist there, so reaching this is a programming error).
const OpBackend& op_backend(Device device);
inline const OpBackend& backend_of(const Tensor& tensor) { return op_backend(tensor.device()); }
// Usable devices of `device`'s kind: 0 where the build has no backend for it (see
// OpBackend::device_count for what else it may be, and throw).
int device_count(Device device);
// OK when `device`'s backend runs the int8 ops here, else a FailedPrecondition naming why.
absl::Status int8_available(Device device);
// OK when `device`'s backend packs bfloat16 weights here, else a FailedPrecondition naming why.
absl::Status bfloat16_weights_available(Device device);

// The tables the backends fill; cuda::op_backend() is defined only in a build with CUDA.
namespace cpu {
const OpBackend& op_backend();
}
namespace cuda {
const OpBackend& op_backend();
}

}  // namespace xlate

// Inside a backend's namespace, with an OpBackend named `table` in scope, sets each op's entry to
// that namespace's body: XLATE_FOR_EACH_OP(XLATE_SET_OP_BODY).
#define XLATE_SET_OP_BODY(op) table.op = &op;
