// Copying blocks of rows from global into shared memory, as float, for kernels that stage their
// operands (the attention kernels). Each thread issues kStageLoadsInFlight loads before it
// stores any: a thread that stored each value before loading the next paid a global load's
// latency per element, which bound the attention kernels' staging (H200: ~30 us a block).
#pragma once

#include <cstdint>

#include "kernels/device_math.cuh"

namespace xlate::kernels {

constexpr int kStageLoadsInFlight = 8;

// A count of floats rounded up to a multiple of 4: regions of a kernel's shared memory that
// start there can be read as float4 (host side, laying out the regions).
inline int round_up_4(int64_t floats) { return static_cast<int>((floats + 3) / 4 * 4); }

// For r < rows, c < width: dst[r·dst_pitch + c] (kTransposed: dst[c·dst_pitch + r]) =
// float(src[row_offset(r) + c]), by all the block's threads; the caller synchronises after.
template <bool kTransposed, typename T, typename RowOffset>
__device__ __forceinline__ void stage_rows(float* dst, int dst_pitch, const T* src,
                                           RowOffset row_offset, int rows, int width) {
  const int count = rows * width;
  for (int base = threadIdx.x; base < count; base += kStageLoadsInFlight * blockDim.x) {
    float values[kStageLoadsInFlight];
    int at[kStageLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kStageLoadsInFlight; ++u) {
      const int i = base + u * static_cast<int>(blockDim.x);
      at[u] = -1;
      if (i < count) {
        const int r = i / width, c = i - r * width;
        values[u] = to_float(src[row_offset(r) + c]);
        at[u] = kTransposed ? c * dst_pitch + r : r * dst_pitch + c;
      }
    }
#pragma unroll
    for (int u = 0; u < kStageLoadsInFlight; ++u) {
      if (at[u] >= 0) dst[at[u]] = values[u];
    }
  }
}

}  // namespace xlate::kernels
