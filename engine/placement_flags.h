// --device and --compute_type as users write them, resolved against this build and this machine.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/transformer.h"

namespace xlate {

struct ResolvedPlacement {
  Placement placement;
  // One line for the log when the choice is not what was asked literally, e.g.
  // "--device auto: no CUDA device is visible on this machine; running on the CPU"; else empty.
  std::string note;
};

// device: auto | cpu | cuda (auto = CUDA when this build has the backend and a GPU is visible,
// else the CPU). compute_type: auto | float32 | float16 | bfloat16 (also F32, F16, BF16) | int8;
// auto = float16 on CUDA, float32 on the CPU (the only float dtype the CPU backend computes
// in); int8 = int8 weights and products with float32 activations, on the CPU only.
absl::StatusOr<ResolvedPlacement> resolve_placement(const std::string& device,
                                                    const std::string& compute_type);

// "cpu" / "cuda" and "float32" / "float16" / "bfloat16" / "int8", for logs and metrics labels.
std::string device_label(Device device);
std::string compute_type_label(const Placement& placement);

}  // namespace xlate
