// The non-GEMM parts of the linear layer's backward pass: the bias gradient and ReLU's, over
// float32, float16 or bfloat16 storage (sums and the bias gradient float32). Every reduction
// runs in an order fixed by the shapes alone (no atomics), so a training step is
// bit-reproducible on a device; the CPU body of the op in engine/ops/cpu/ is the reference
// (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// sums[C] (float32) += Σ_m x[m, :] over rows [M, C] of `type`: partial sums over fixed blocks
// of rows, then the blocks in order. workspace: column_sums_workspace_floats(M, C) floats.
int64_t column_sums_workspace_floats(int64_t rows, int64_t columns);
void add_column_sums(float* sums, const void* x, int64_t rows, int64_t columns,
                     float* workspace, ElementType type, Stream stream);

// dinp[i] = out[i] > 0 ? dout[i] : 0, all of `type`; dinp may alias dout.
void relu_backward(void* dinp, const void* dout, const void* out, int64_t count,
                   ElementType type, Stream stream);

}  // namespace xlate::kernels
