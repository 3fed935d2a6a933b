#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda_check.h"
#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/embedding_backward.h"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 128;

// The workspace: row ids 0..count-1, the sorted tokens, the sorted row ids, then CUB's own.
struct Workspace {
  int32_t* row_ids;
  int32_t* sorted_tokens;
  int32_t* sorted_rows;
  void* sort_storage;
  size_t sort_bytes;
};

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

int key_bits(int64_t vocabulary) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < vocabulary) ++bits;
  return bits;
}

size_t sort_storage_bytes(int64_t count, int64_t vocabulary) {
  size_t bytes = 0;
  XLATE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<int>(count), 0, key_bits(vocabulary)));
  return bytes;
}

Workspace carve(void* base, int64_t count, int64_t vocabulary) {
  char* at = static_cast<char*>(base);
  const size_t ids = aligned(static_cast<size_t>(count) * sizeof(int32_t));
  Workspace w;
  w.row_ids = reinterpret_cast<int32_t*>(at);
  w.sorted_tokens = reinterpret_cast<int32_t*>(at + ids);
  w.sorted_rows = reinterpret_cast<int32_t*>(at + 2 * ids);
  w.sort_storage = at + 3 * ids;
  w.sort_bytes = sort_storage_bytes(count, vocabulary);
  return w;
}

__global__ void iota_kernel(int32_t* ids, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) ids[i] = static_cast<int32_t>(i);
}

// One block per sorted position; the block at the first position of a token's run adds that
// token's rows, in row order (the sort is stable), to its table row. Rounded multiply and add
// (no fused multiply-add), as the CPU body computes.
__global__ void table_gradient_kernel(float* dtable, const float* dout,
                                      const int32_t* sorted_tokens, const int32_t* sorted_rows,
                                      int64_t count, int64_t channels, float scale) {
  const int64_t first = blockIdx.x;
  const int32_t token = sorted_tokens[first];
  if (first > 0 && sorted_tokens[first - 1] == token) return;
  float* target = dtable + static_cast<int64_t>(token) * channels;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    float sum = target[c];
    for (int64_t p = first; p < count && sorted_tokens[p] == token; ++p) {
      const int64_t row = sorted_rows[p];
      sum = __fadd_rn(sum, __fmul_rn(scale, dout[row * channels + c]));
    }
    target[c] = sum;
  }
}

// dpositions[t, c] += dout[0, t, c] + dout[1, t, c] + ..., in sentence order.
__global__ void positions_gradient_kernel(float* dpositions, const float* dout, int64_t rows,
                                          int64_t steps, int64_t channels) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= steps * channels) return;
  float sum = dpositions[i];
  for (int64_t n = 0; n < rows; ++n) sum += dout[n * steps * channels + i];
  dpositions[i] = sum;
}

}  // namespace

size_t embedding_backward_workspace_bytes(int64_t count, int64_t vocabulary) {
  return 3 * aligned(static_cast<size_t>(count) * sizeof(int32_t)) +
         sort_storage_bytes(count, vocabulary);
}

void embedding_backward(float* dtable, float* dpositions, const float* dout,
                        const int32_t* tokens, int64_t rows, int64_t steps, int64_t channels,
                        int64_t vocabulary, float scale, void* workspace, Stream stream) {
  const int64_t count = rows * steps;
  if (count == 0) return;
  Workspace w = carve(workspace, count, vocabulary);
  iota_kernel<<<grid_size(count, 256), 256, 0, stream>>>(w.row_ids, count);
  check_last_launch("iota_kernel");
  XLATE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      w.sort_storage, w.sort_bytes, tokens, w.sorted_tokens, w.row_ids, w.sorted_rows,
      static_cast<int>(count), 0, key_bits(vocabulary), stream));
  table_gradient_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(
      dtable, dout, w.sorted_tokens, w.sorted_rows, count, channels, scale);
  check_last_launch("table_gradient_kernel");
  if (dpositions == nullptr) return;
  positions_gradient_kernel<<<grid_size(steps * channels, 256), 256, 0, stream>>>(
      dpositions, dout, rows, steps, channels);
  check_last_launch("positions_gradient_kernel");
}

}  // namespace xlate::kernels
