#include <cstring>

#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

void gather_rows(Tensor& out, const Tensor& inp, const Tensor& indices) {
  const size_t row_bytes = inp.nbytes() / static_cast<size_t>(inp.dim(0));
  const char* source = static_cast<const char*>(inp.raw_data());
  char* destination = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < indices.numel(); ++r) {
    std::memcpy(destination + r * row_bytes, source + indices.data<int32_t>()[r] * row_bytes,
                row_bytes);
  }
}

void scatter_rows(Tensor& out, const Columns& inp, const Tensor& indices) {
  const size_t element = dtype_size(out.dtype());
  const int64_t row_size = out.numel() / out.dim(0);
  const size_t row_bytes = static_cast<size_t>(row_size) * element;
  const size_t source_stride = static_cast<size_t>(inp.row_stride(row_size)) * element;
  const char* source =
      static_cast<const char*>(inp.tensor.raw_data()) + static_cast<size_t>(inp.first) * element;
  char* destination = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < indices.numel(); ++r) {
    std::memcpy(destination + indices.data<int32_t>()[r] * row_bytes, source + r * source_stride,
                row_bytes);
  }
}

}  // namespace xlate::cpu
