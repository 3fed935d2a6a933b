// Turns a failed CUDA runtime call into std::runtime_error("<call>: <CUDA message>").
// Included only by .cc/.cu files of kernels/.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace xlate::kernels {

inline void throw_on_cuda_error(cudaError_t error, const char* call) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(error));
  }
}

}  // namespace xlate::kernels

#define XLATE_CUDA_CHECK(call) ::xlate::kernels::throw_on_cuda_error((call), #call)
