#include "engine/placement_flags.h"

#include "absl/strings/ascii.h"
#include "engine/backend/cuda_backend.h"

namespace xlate {
namespace {

absl::StatusOr<DType> parse_dtype(const std::string& text) {
  const std::string name = absl::AsciiStrToLower(text);
  if (name == "float32" || name == "f32") return DType::kFloat32;
  if (name == "float16" || name == "f16") return DType::kFloat16;
  if (name == "bfloat16" || name == "bf16") return DType::kBFloat16;
  return absl::InvalidArgumentError(
      "--compute_type must be auto, float32, float16 or bfloat16, not \"" + text + "\"");
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
    const bool usable = cuda_backend::built() && cuda_backend::device_count() > 0;
    resolved.placement.device = usable ? Device::kCUDA : Device::kCPU;
    if (!usable) {
      resolved.note = cuda_backend::built()
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
  } else {
    absl::StatusOr<DType> parsed = parse_dtype(compute_type);
    if (!parsed.ok()) return parsed.status();
    resolved.placement.dtype = *parsed;
  }
  if (absl::Status valid = check_placement(resolved.placement); !valid.ok()) {
    return absl::Status(valid.code(), "--device " + device + " --compute_type " + compute_type +
                                          ": " + std::string(valid.message()));
  }
  if (resolved.placement.device == Device::kCUDA) {
    resolved.note = "running on " + cuda_backend::device_description() + " in " +
                    dtype_label(resolved.placement.dtype);
  }
  return resolved;
}

std::string device_label(Device device) { return device == Device::kCUDA ? "cuda" : "cpu"; }

std::string dtype_label(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kFloat32: break;
  }
  return "float32";
}

}  // namespace xlate
