#include "trainer/training/precision_setup.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "engine/ops/backend.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"

namespace xlate::trainer {
namespace {

// A small linear layer (bias and ReLU) on zeros stored in `storage` on `device`, forward, then
// backward when `backward` (the weight and bias gradients float32, as the trainer's), waited for.
void run_small_linear(Device device, DType storage, bool backward) {
  const Tensor inp = Tensor::zeros({16, 32}, storage, device);
  const Tensor weight = Tensor::zeros({16, 32}, storage, device);
  const Tensor bias = Tensor::zeros({16}, storage, device);
  Tensor out = Tensor::empty({16, 16}, storage, device);
  linear_forward(out, inp, weight, bias, Activation::kRelu);
  if (backward) {
    Tensor dinp = Tensor::empty({16, 32}, storage, device);
    Tensor dweight = Tensor::zeros({16, 32}, DType::kFloat32, device);
    Tensor dbias = Tensor::zeros({16}, DType::kFloat32, device);
    linear_backward(dinp, dweight, dbias, out, inp, weight, GradientWrite::kAccumulate);
  }
  op_backend(device).synchronize();
}

}  // namespace

std::string precision_note(TrainingPrecision precision, int compute_capability,
                           DType activations, Device device) {
  if (precision == TrainingPrecision::kFloat32) return "";
  const char* type = precision == TrainingPrecision::kFloat16 ? "float16" : "bfloat16";
  const std::string stored =
      activations == DType::kFloat32
          ? " (float32 weights, activations and gradients"
          : absl::StrCat(" (float32 weights and gradients, activations stored in ", type);
  if (device == Device::kCPU) {
    // bfloat16 products run in oneDNN where it has them (the same check as compute type
    // bfloat16's); float16's, and bfloat16's elsewhere, multiply float32 copies of the values.
    const bool native = precision == TrainingPrecision::kBFloat16 &&
                        bfloat16_weights_available(Device::kCPU).ok();
    return absl::StrCat(stored, "; matrix products of ", type, " inputs summed in float32, on ",
                        native ? "the CPU by oneDNN's bf16 matmul)"
                               : "the CPU as float32 products of the 16-bit values)");
  }
  return absl::StrCat(stored, "; matrix products with ", type,
                      compute_capability >= 70 ? " inputs on tensor cores)"
                      : activations == DType::kFloat32
                          ? " copies of their inputs at the float32 rate: no tensor cores)"
                          : " inputs at the float32 rate: no tensor cores)");
}

kernels::Float32Math float32_math(TrainingPrecision precision) {
  switch (precision) {
    case TrainingPrecision::kFloat16: return kernels::Float32Math::kFloat16Inputs;
    case TrainingPrecision::kBFloat16: return kernels::Float32Math::kBFloat16Inputs;
    case TrainingPrecision::kFloat32: break;
  }
  return kernels::Float32Math::kExact;
}

PrecisionScope::PrecisionScope(Device device, TrainingPrecision precision)
    : device_(device),
      active_(precision != TrainingPrecision::kFloat32) {
  if (!active_) return;
  previous_ = op_backend(device).float32_math();
  op_backend(device).set_float32_math(float32_math(precision));
}

PrecisionScope::~PrecisionScope() {
  if (active_) op_backend(device_).set_float32_math(previous_);
}

absl::Status check_precision_runs(Device device, TrainingPrecision precision,
                                  DType activation_dtype) {
  if (precision == TrainingPrecision::kFloat32) return absl::OkStatus();
  const char* where = device == Device::kCUDA ? "this GPU" : "this CPU";
  const char* inputs = precision == TrainingPrecision::kFloat16 ? "float16" : "bfloat16";
  const PrecisionScope scope(device, precision);
  try {
    run_small_linear(device, DType::kFloat32, /*backward=*/false);
  } catch (const std::exception& error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--precision ", precision_name(precision), ": ", where, " (",
        op_backend(device).device_description(), ") cannot run float32 products with ", inputs,
        " inputs (", error.what(), "); use --precision fp32"));
  }
  if (activation_dtype == DType::kFloat32) return absl::OkStatus();
  try {
    run_small_linear(device, activation_dtype, /*backward=*/true);
  } catch (const std::exception& error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--activations 16bit: ", where, " (", op_backend(device).device_description(),
        ") cannot run a linear layer on ", inputs, " activations (", error.what(),
        "); use --activations fp32"));
  }
  return absl::OkStatus();
}

}  // namespace xlate::trainer
