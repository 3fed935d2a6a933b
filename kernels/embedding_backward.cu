#include <cub/device/device_radix_sort.cuh>

#include "kernels/runtime/cuda_check.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/embedding_backward.h"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 256;  // table_gradient_kernel: >= kRowsPerChunk

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

// One block per (sorted position, kThreads channels); the block at the first position of a
// token's run adds that token's rows, in row order (the sort is stable), to its table row.
// Rounded multiply and add (no fused multiply-add), as the CPU body computes. A frequent token's
// run is thousands of rows long (the end-of-sentence id is in every sentence), so the run is
// read in chunks of kRowsPerChunk row ids put in shared memory, and each thread loads
// kRowsInFlight rows' values before adding them in order: the loads overlap, the order of the
// sums stays the CPU's.
constexpr int kRowsPerChunk = 256;
constexpr int kRowsInFlight = 16;
static_assert(kThreads >= kRowsPerChunk, "one thread loads each row id of a chunk");

template <typename T>
__global__ void table_gradient_kernel(float* dtable, const T* dout,
                                      const int32_t* sorted_tokens, const int32_t* sorted_rows,
                                      int64_t count, int64_t channels, float scale) {
  __shared__ int32_t chunk_rows[kRowsPerChunk];
  const int64_t first = blockIdx.x;
  const int32_t token = sorted_tokens[first];
  if (first > 0 && sorted_tokens[first - 1] == token) return;
  float* target = dtable + static_cast<int64_t>(token) * channels;
  for (int64_t start = first; start < count && sorted_tokens[start] == token;
       start += kRowsPerChunk) {
    // This chunk's rows of the run: the run ends where the token changes.
    __syncthreads();  // the last chunk's ids are read by every thread before they are replaced
    const int64_t p = start + threadIdx.x;
    const bool in_run = threadIdx.x < kRowsPerChunk && p < count && sorted_tokens[p] == token;
    if (in_run) chunk_rows[threadIdx.x] = sorted_rows[p];
    // The run's positions in the chunk are a prefix of it: their count is its length.
    const int rows = __syncthreads_count(in_run);
    const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
    if (c < channels) {
      float sum = target[c];
      for (int r = 0; r < rows; r += kRowsInFlight) {
        float value[kRowsInFlight];
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u) {
          value[u] = r + u < rows
                         ? to_float(dout[static_cast<int64_t>(chunk_rows[r + u]) * channels + c])
                         : 0.f;
        }
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u) {
          if (r + u < rows) sum = __fadd_rn(sum, __fmul_rn(scale, value[u]));
        }
      }
      target[c] = sum;
    }
  }
}

// dpositions[t, c] += dout[0, t, c] + dout[1, t, c] + ..., in sentence order.
template <typename T>
__global__ void positions_gradient_kernel(float* dpositions, const T* dout, int64_t rows,
                                          int64_t steps, int64_t channels) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= steps * channels) return;
  float sum = dpositions[i];
  for (int64_t n = 0; n < rows; ++n) sum += to_float(dout[n * steps * channels + i]);
  dpositions[i] = sum;
}

}  // namespace

size_t embedding_backward_workspace_bytes(int64_t count, int64_t vocabulary) {
  return 3 * aligned(static_cast<size_t>(count) * sizeof(int32_t)) +
         sort_storage_bytes(count, vocabulary);
}

void embedding_backward(float* dtable, float* dpositions, const void* dout,
                        const int32_t* tokens, int64_t rows, int64_t steps, int64_t channels,
                        int64_t vocabulary, float scale, void* workspace, ElementType type,
                        Stream stream) {
  const int64_t count = rows * steps;
  if (count == 0) return;
  Workspace w = carve(workspace, count, vocabulary);
  iota_kernel<<<grid_size(count, 256), 256, 0, stream>>>(w.row_ids, count);
  check_last_launch("iota_kernel");
  XLATE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      w.sort_storage, w.sort_bytes, tokens, w.sorted_tokens, w.row_ids, w.sorted_rows,
      static_cast<int>(count), 0, key_bits(vocabulary), stream));
  const dim3 grid(static_cast<unsigned>(count), grid_size(channels, kThreads));
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    table_gradient_kernel<T><<<grid, kThreads, 0, stream>>>(
        dtable, static_cast<const T*>(dout), w.sorted_tokens, w.sorted_rows, count, channels,
        scale);
    check_last_launch("table_gradient_kernel");
    if (dpositions == nullptr) return;
    positions_gradient_kernel<T><<<grid_size(steps * channels, 256), 256, 0, stream>>>(
        dpositions, static_cast<const T*>(dout), rows, steps, channels);
    check_last_launch("positions_gradient_kernel");
  });
}

}  // namespace xlate::kernels
