// XLATE_HOST_DEVICE marks a function that CUDA code and host code both call (one definition of
// a rule for both backends); plain `inline` where the compiler is not nvcc. CUDA-free.
#pragma once

#if defined(__CUDACC__)
#define XLATE_HOST_DEVICE __host__ __device__
#else
#define XLATE_HOST_DEVICE
#endif
