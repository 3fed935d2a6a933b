#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/embedding.h"

namespace xlate::kernels {
namespace {

// One thread per output element of [N*T, C].
template <typename T>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* table,
                                         const T* positions, const int32_t* row_positions,
                                         EmbeddingShape shape, float scale, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int64_t channels = shape.channels;
  const int64_t flat = i / channels, c = i % channels;
  const int64_t row = flat / shape.steps, step = flat % shape.steps;
  const int32_t token = tokens[flat];
  const float embedded = token >= 0 && token < shape.vocabulary
                             ? to_float(table[token * channels + c]) * scale
                             : 0.f;
  int64_t position = shape.position_offset + step + (row_positions ? row_positions[row] : 0);
  position = position < 0 ? 0 : (position >= shape.positions ? shape.positions - 1 : position);
  out[i] = from_float<T>(embedded + to_float(positions[position * channels + c]));
}

}  // namespace

void embedding_forward(void* out, const int32_t* tokens, const void* table, const void* positions,
                       const int32_t* row_positions, const EmbeddingShape& shape, float scale,
                       ElementType type, Stream stream) {
  const int64_t count = shape.rows * shape.steps * shape.channels;
  if (count == 0) return;
  constexpr int kThreads = 256;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    embedding_forward_kernel<T><<<grid_size(count, kThreads), kThreads, 0, stream>>>(
        static_cast<T*>(out), tokens, static_cast<const T*>(table),
        static_cast<const T*>(positions), row_positions, shape, scale, count);
  });
  check_last_launch("embedding_forward_kernel");
}

}  // namespace xlate::kernels
