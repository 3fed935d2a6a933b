// Column sums over rows in a fixed order: the rows are cut into blocks of kColumnSumBlockRows
// (the CPU bodies' block size, so both add in the same order); stage one sums each block's rows
// in row order into partials[block, C], stage two adds the blocks in order to the sums.
#pragma once

#include <cstdint>

#include "kernels/device_math.cuh"

namespace xlate::kernels {

constexpr int64_t kColumnSumBlockRows = 256;
constexpr int kColumnSumThreads = 128;
// Rows (stage two: blocks) whose values a thread loads before adding them in order: one
// thread's sum is a chain of dependent additions, and with a load before each the kernels ran
// at a third of the memory's bandwidth (H200: the layer norm's dgamma, 114 us for [25k, 512]).
constexpr int kColumnSumRowsInFlight = 8;

inline int64_t column_sum_blocks(int64_t rows) {
  return (rows + kColumnSumBlockRows - 1) / kColumnSumBlockRows;
}

// partials[block, c] = Σ_{m in block} value(m, c), from 0.
template <typename Value>
__global__ void column_partials_kernel(float* partials, int64_t rows, int64_t columns,
                                       Value value) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * kColumnSumBlockRows;
  const int64_t end = begin + kColumnSumBlockRows < rows ? begin + kColumnSumBlockRows : rows;
  float sum = 0.f;
  int64_t m = begin;
  for (; m + kColumnSumRowsInFlight <= end; m += kColumnSumRowsInFlight) {
    float values[kColumnSumRowsInFlight];  // loaded together, added in row order
#pragma unroll
    for (int u = 0; u < kColumnSumRowsInFlight; ++u) values[u] = value(m + u, c);
#pragma unroll
    for (int u = 0; u < kColumnSumRowsInFlight; ++u) sum += values[u];
  }
  for (; m < end; ++m) sum += value(m, c);
  partials[blockIdx.y * columns + c] = sum;
}

// sums[c] += partials[0, c] + partials[1, c] + ..., in that order. (A template so that every
// .cu file that includes this has its own instance: kernels are not linked across files.)
template <typename Sum>
__global__ void add_column_partials_kernel(Sum* sums, const Sum* partials, int64_t blocks,
                                           int64_t columns) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  Sum sum = sums[c];
  int64_t block = 0;
  for (; block + kColumnSumRowsInFlight <= blocks; block += kColumnSumRowsInFlight) {
    Sum values[kColumnSumRowsInFlight];
#pragma unroll
    for (int u = 0; u < kColumnSumRowsInFlight; ++u) {
      values[u] = partials[(block + u) * columns + c];
    }
#pragma unroll
    for (int u = 0; u < kColumnSumRowsInFlight; ++u) sum += values[u];
  }
  for (; block < blocks; ++block) sum += partials[block * columns + c];
  sums[c] = sum;
}

// Both stages on `stream`; partials: column_sum_blocks(rows) · columns floats.
template <typename Value>
void add_column_sums_of(float* sums, int64_t rows, int64_t columns, Value value, float* partials,
                        Stream stream) {
  if (rows == 0 || columns == 0) return;
  const int64_t blocks = column_sum_blocks(rows);
  const dim3 grid(grid_size(columns, kColumnSumThreads), static_cast<unsigned>(blocks));
  column_partials_kernel<<<grid, kColumnSumThreads, 0, stream>>>(partials, rows, columns, value);
  add_column_partials_kernel<float><<<grid_size(columns, kColumnSumThreads), kColumnSumThreads, 0,
                               stream>>>(sums, partials, blocks, columns);
}

}  // namespace xlate::kernels
