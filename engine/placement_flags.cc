#include "engine/placement_flags.h"

#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/ops/backend.h"

namespace xlate {
namespace {

// The placement's dtype and packed weights for a --compute_type other than auto.
absl::Status parse_compute_type(const std::string& text, Placement& placement) {
  const std::string name = absl::AsciiStrToLower(text);
  if (name == "float32" || name == "f32") {
    placement.dtype = DType::kFloat32;
  } else if (name == "float16" || name == "f16") {
    placement.dtype = DType::kFloat16;
  } else if (name == "bfloat16" || name == "bf16") {
    placement.dtype = DType::kBFloat16;
  } else if (name == "int8") {
    placement.dtype = DType::kFloat32;
    placement.weights = DType::kInt8;
  } else {
    return absl::InvalidArgumentError(
        "--compute_type must be auto, float32, float16, bfloat16 or int8, not \"" + text + "\"");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResolvedPlacement> resolve_placement(const std::string& device,
                                                    const std::string& compute_type) {
  ResolvedPlacement resolved;
  if (device == "cpu") {
    resolved.placement.device = Device::kCPU;
  } else if (device == "cuda") {
    resolved.placement.device = Device::kCUDA;
  } else if (device == "auto") {
    int devices = 0;
    try {
      devices = device_count(Device::kCUDA);
    } catch (const std::runtime_error& error) {
      return absl::FailedPreconditionError(absl::StrCat("--device auto: ", error.what()));
    }
    const bool built = find_op_backend(Device::kCUDA) != nullptr;
    const bool usable = built && devices > 0;
    resolved.placement.device = usable ? Device::kCUDA : Device::kCPU;
    if (!usable) {
      resolved.note = built
                          ? "--device auto: no CUDA device is visible on this machine; running "
                            "on the CPU"
                          : "--device auto: this build has no CUDA backend; running on the CPU";
    }
  } else {
    return absl::InvalidArgumentError("--device must be auto, cpu or cuda, not \"" + device +
                                      "\"");
  }
  if (compute_type == "auto") {
    resolved.placement.dtype =
        resolved.placement.device == Device::kCUDA ? DType::kFloat16 : DType::kFloat32;
  } else if (absl::Status parsed = parse_compute_type(compute_type, resolved.placement);
             !parsed.ok()) {
    return parsed;
  }
  if (resolved.placement.device == Device::kCPU &&
      resolved.placement.dtype == DType::kBFloat16) {
    // The CPU's bfloat16: float32 activations and caches, bfloat16 weights.
    resolved.placement.dtype = DType::kFloat32;
    resolved.placement.weights = DType::kBFloat16;
  }
  if (absl::Status valid = check_placement(resolved.placement); !valid.ok()) {
    return absl::Status(valid.code(), "--device " + device + " --compute_type " + compute_type +
                                          ": " + std::string(valid.message()));
  }
  if (resolved.placement.device == Device::kCUDA) {
    resolved.note = "running on " + op_backend(Device::kCUDA).device_description() + " in " +
                    compute_type_label(resolved.placement);
  }
  return resolved;
}

std::string device_label(Device device) { return device == Device::kCUDA ? "cuda" : "cpu"; }

std::string compute_type_label(const Placement& placement) {
  if (placement.weights == DType::kInt8) return "int8";
  if (placement.weights == DType::kBFloat16) return "bfloat16";
  switch (placement.dtype) {
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt8: return "int8";
    case DType::kFloat32: break;
  }
  return "float32";
}

}  // namespace xlate
