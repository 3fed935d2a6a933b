// Training precision as a GPU runs it, on the GPU or the CPU: the note the log prints, the
// products' float32 math, a scope that sets it on this thread's worker, and the start-up probe
// that refuses a precision the device cannot run (naming it) before the first step.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "engine/dtype.h"
#include "engine/tensor.h"
#include "kernels/element_type.h"
#include "trainer/training/training_options.h"

namespace xlate::trainer {

// " (float32 weights and gradients, activations stored in bfloat16; matrix products with
// bfloat16 inputs on tensor cores)" and the like, for the log; "" in float32.
std::string precision_note(TrainingPrecision precision, int compute_capability,
                           DType activations, Device device);

kernels::Float32Math float32_math(TrainingPrecision precision);

// The training precision's products on this thread's worker (CUDA's, or the CPU's) for as long
// as it lives (the validation translator, on the same thread, computes exactly outside it).
class PrecisionScope {
 public:
  PrecisionScope(Device device, TrainingPrecision precision);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Device device_;
  bool active_;
  kernels::Float32Math previous_ = kernels::Float32Math::kExact;
};

// One small product in `precision` on the device, and with 16-bit activations a linear layer's
// forward and backward in that storage: a cuBLASLt (or oneDNN) that has no algorithm for them
// on this device is refused at start, naming it, not mid-step.
absl::Status check_precision_runs(Device device, TrainingPrecision precision,
                                  DType activation_dtype);

}  // namespace xlate::trainer
