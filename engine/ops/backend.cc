// The registration of the backends' tables by device.
#include "engine/ops/backend.h"

#include <stdexcept>
#include <string>

namespace xlate {

const OpBackend* find_op_backend(Device device) {
  switch (device) {
    case Device::kCPU:
      return &cpu::op_backend();
    case Device::kCUDA:
#if XLATE_HAVE_CUDA
      return &cuda::op_backend();
#else
      return nullptr;
#endif
  }
  return nullptr;
}

const OpBackend& op_backend(Device device) {
  const OpBackend* backend = find_op_backend(device);
  if (backend == nullptr) {
    throw std::logic_error(std::string("this build of xlate has no ") +
                           (device == Device::kCUDA ? "CUDA" : "CPU") +
                           " backend (nvcc was not found when it was built)");
  }
  return *backend;
}

int device_count(Device device) {
  const OpBackend* backend = find_op_backend(device);
  return backend == nullptr ? 0 : backend->device_count();
}

absl::Status int8_available(Device device) {
  const OpBackend* backend = find_op_backend(device);
  if (backend == nullptr || backend->int8_available == nullptr) {
    return absl::FailedPreconditionError(
        std::string("int8 matrix products are implemented on the CPU only, not on the ") +
        (backend == nullptr ? "missing" : backend->name) + " backend");
  }
  return backend->int8_available();
}

absl::Status bfloat16_weights_available(Device device) {
  const OpBackend* backend = find_op_backend(device);
  if (backend == nullptr || backend->bfloat16_weights_available == nullptr) {
    return absl::FailedPreconditionError(
        std::string("packed bfloat16 weights are implemented on the CPU only, not on the ") +
        (backend == nullptr ? "missing" : backend->name) + " backend");
  }
  return backend->bfloat16_weights_available();
}

}  // namespace xlate
