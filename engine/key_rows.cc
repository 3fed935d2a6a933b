#include "engine/key_rows.h"

namespace xlate {

Tensor batch_major_key_rows(const std::vector<int32_t>& batch_of_row, int64_t steps) {
  const int64_t rows = static_cast<int64_t>(batch_of_row.size());
  std::vector<int32_t> table(static_cast<size_t>(rows * steps));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t s = 0; s < steps; ++s) {
      table[r * steps + s] = static_cast<int32_t>(batch_of_row[r] * steps + s);
    }
  }
  return Tensor::from_vector(table, {rows, steps});
}

Tensor batch_major_key_rows(int64_t rows, int64_t steps) {
  std::vector<int32_t> batch_of_row(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) batch_of_row[r] = static_cast<int32_t>(r);
  return batch_major_key_rows(batch_of_row, steps);
}

}  // namespace xlate
