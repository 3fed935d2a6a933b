#include "kernels/adam.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 256;

// One block per kSquaresBlock elements: each thread's strided sum, then a fixed tree.
__global__ void block_sums_of_squares_kernel(double* partials, const float* x, int64_t count) {
  __shared__ double sums[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSquaresBlock;
  const int64_t end = begin + kSquaresBlock < count ? begin + kSquaresBlock : count;
  double sum = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    sum += static_cast<double>(x[i]) * x[i];
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

__global__ void adam_kernel(float* w, float* m, float* v, const float* g, int64_t count,
                            AdamConstants k) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float gi = g[i] * k.gradient_scale;
    const float mi = k.beta1 * m[i] + (1.f - k.beta1) * gi;
    const float vi = k.beta2 * v[i] + (1.f - k.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= k.step_size * mi / (sqrtf(vi) * k.inverse_sqrt_correction2 + k.epsilon);
  }
}

}  // namespace

void block_sums_of_squares(double* partials, const float* x, int64_t count, Stream stream) {
  if (count == 0) return;
  block_sums_of_squares_kernel<<<grid_size(count, kSquaresBlock), kThreads, 0, stream>>>(
      partials, x, count);
  check_last_launch("block_sums_of_squares_kernel");
}

void adam_update(float* weights, float* first_moment, float* second_moment,
                 const float* gradients, int64_t count, const AdamConstants& constants,
                 Stream stream) {
  if (count == 0) return;
  const unsigned blocks = grid_size(count, kThreads) < 65535u ? grid_size(count, kThreads) : 65535u;
  adam_kernel<<<blocks, kThreads, 0, stream>>>(weights, first_moment, second_moment, gradients,
                                               count, constants);
  check_last_launch("adam_kernel");
}

}  // namespace xlate::kernels
