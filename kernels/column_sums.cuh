// Column sums over rows in a fixed order: the rows are cut into blocks of kColumnSumBlockRows
// (the CPU bodies' block size, so both add in the same order); stage one sums each block's rows
// in row order into partials[block, C], stage two adds the blocks in order to the sums.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/device_math.cuh"

namespace xlate::kernels {

constexpr int64_t kColumnSumBlockRows = 256;
constexpr int kColumnSumThreads = 128;
// Rows (stage two: blocks) whose values a thread loads before adding them in order: one
// thread's sum is a chain of dependent additions, and with a load before each the kernels ran
// at a third of the memory's bandwidth (H200: the layer norm's dgamma, 114 us for [25k, 512]).
constexpr int kColumnSumRowsInFlight = 8;

// Row blocks are grid.y of the first stage (at most 65,535).
constexpr int64_t kMaxColumnSumBlocks = 65535;

inline int64_t column_sum_blocks(int64_t rows) {
  return (rows + kColumnSumBlockRows - 1) / kColumnSumBlockRows;
}

// The sums a column-sum pass adds to: several at once when one pass over the rows gives them
// (the layer norm's γ and β gradients read the same output gradient).
template <int kOutputs>
struct ColumnSumTargets {
  float* sums[kOutputs];
};

// partials[output, block, c] = Σ_{m in block} value(m, c)[output], from 0. A Value has
// kOutputs and `void operator()(int64_t m, int64_t c, float (&values)[kOutputs]) const`.
template <typename Value>
__global__ void column_partials_kernel(float* partials, int64_t rows, int64_t columns,
                                       Value value) {
  constexpr int kOutputs = Value::kOutputs;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * kColumnSumBlockRows;
  const int64_t end = begin + kColumnSumBlockRows < rows ? begin + kColumnSumBlockRows : rows;
  float sum[kOutputs] = {};
  int64_t m = begin;
  for (; m + kColumnSumRowsInFlight <= end; m += kColumnSumRowsInFlight) {
    float values[kColumnSumRowsInFlight][kOutputs];  // loaded together, added in row order
#pragma unroll
    for (int u = 0; u < kColumnSumRowsInFlight; ++u) value(m + u, c, values[u]);
#pragma unroll
    for (int u = 0; u < kColumnSumRowsInFlight; ++u) {
#pragma unroll
      for (int o = 0; o < kOutputs; ++o) sum[o] += values[u][o];
    }
  }
  for (; m < end; ++m) {
    float values[kOutputs];
    value(m, c, values);
#pragma unroll
    for (int o = 0; o < kOutputs; ++o) sum[o] += values[o];
  }
  const int64_t blocks = gridDim.y;
#pragma unroll
  for (int o = 0; o < kOutputs; ++o) partials[(o * blocks + blockIdx.y) * columns + c] = sum[o];
}

// targets.sums[output][c] += partials[output, 0, c] + partials[output, 1, c] + ..., in that
// order; blockIdx.y is the output. (A template so that every .cu file that includes this has
// its own instance: kernels are not linked across files.)
template <int kOutputs>
__global__ void add_column_partials_kernel(ColumnSumTargets<kOutputs> targets,
                                           const float* partials, int64_t blocks,
                                           int64_t columns) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  float* sums = targets.sums[blockIdx.y];
  partials += static_cast<int64_t>(blockIdx.y) * blocks * columns;
  float sum = sums[c];
  int64_t block = 0;
  for (; block + kColumnSumRowsInFlight <= blocks; block += kColumnSumRowsInFlight) {
    float values[kColumnSumRowsInFlight];
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

// Floats of partials that add_column_sums_of needs.
inline int64_t column_sums_partials_floats(int64_t rows, int64_t columns, int outputs) {
  return outputs * column_sum_blocks(rows) * columns;
}

// Both stages on `stream`; partials: column_sums_partials_floats(rows, columns, kOutputs).
template <typename Value>
void add_column_sums_of(ColumnSumTargets<Value::kOutputs> targets, int64_t rows,
                        int64_t columns, Value value, float* partials, Stream stream) {
  if (rows == 0 || columns == 0) return;
  const int64_t blocks = column_sum_blocks(rows);
  if (blocks > kMaxColumnSumBlocks) {  // grid.y's limit: 16,776,960 rows
    throw std::invalid_argument("column sums over " + std::to_string(rows) +
                                " rows: at most " +
                                std::to_string(kMaxColumnSumBlocks * kColumnSumBlockRows));
  }
  const dim3 grid(grid_size(columns, kColumnSumThreads), static_cast<unsigned>(blocks));
  column_partials_kernel<<<grid, kColumnSumThreads, 0, stream>>>(partials, rows, columns, value);
  const dim3 add_grid(grid_size(columns, kColumnSumThreads), Value::kOutputs);
  add_column_partials_kernel<Value::kOutputs>
      <<<add_grid, kColumnSumThreads, 0, stream>>>(targets, partials, blocks, columns);
}

}  // namespace xlate::kernels
