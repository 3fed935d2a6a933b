#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/embedding.h"

namespace xlate::kernels {
namespace {

// One thread per output element of [N*T, C].
template <typename T>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* table,
                                         const T* positions, int64_t steps, int64_t channels,
                                         int64_t vocabulary, float scale, int64_t position_offset,
                                         int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int64_t row = i / channels, c = i % channels;
  const int32_t token = tokens[row];
  const float embedded =
      token >= 0 && token < vocabulary ? to_float(table[token * channels + c]) * scale : 0.f;
  const int64_t position = position_offset + row % steps;
  out[i] = from_float<T>(embedded + to_float(positions[position * channels + c]));
}

}  // namespace

void embedding_forward(void* out, const int32_t* tokens, const void* table, const void* positions,
                       int64_t rows, int64_t steps, int64_t channels, int64_t vocabulary,
                       float scale, int64_t position_offset, ElementType type, Stream stream) {
  const int64_t count = rows * steps * channels;
  if (count == 0) return;
  constexpr int kThreads = 256;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    embedding_forward_kernel<T><<<grid_size(count, kThreads), kThreads, 0, stream>>>(
        static_cast<T*>(out), tokens, static_cast<const T*>(table),
        static_cast<const T*>(positions), steps, channels, vocabulary, scale, position_offset,
        count);
  });
  check_last_launch("embedding_forward_kernel");
}

}  // namespace xlate::kernels
