#include "kernels/attention_backward.h"
#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

constexpr int kRowsPerBlock = 8;  // one warp per row

__global__ void softmax_backward_kernel(float* dscores, const float* probs, int64_t rows,
                                        int64_t width, float scale) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarpSize;
  float* d = dscores + row * width;
  const float* p = probs + row * width;
  float dot = 0.f;
  for (int64_t s = lane; s < width; s += kWarpSize) dot += d[s] * p[s];
  dot = warp_sum(dot);
  for (int64_t s = lane; s < width; s += kWarpSize) d[s] = p[s] * (d[s] - dot) * scale;
}

}  // namespace

void softmax_backward(float* dscores, const float* probs, int64_t rows, int64_t width,
                      float scale, Stream stream) {
  if (rows == 0 || width == 0) return;
  softmax_backward_kernel<<<grid_size(rows, kRowsPerBlock), kRowsPerBlock * kWarpSize, 0,
                            stream>>>(dscores, probs, rows, width, scale);
  check_last_launch("softmax_backward_kernel");
}

}  // namespace xlate::kernels
