// Backward of the scaled token embedding and of learned positions, without atomics: dout in
// float32, float16 or bfloat16 storage, the sums and the tables' gradients float32. Every
// reduction runs in an order fixed by the shapes alone (no atomics), so a training
// step is bit-reproducible on a device; the CPU body of the op in engine/ops/cpu/ is the
// reference (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// dtable[V, C] += scale · dout rows by token: the (token, row) pairs are sorted by token with a
// stable radix sort (CUB), then each token's rows are summed in row order by one block.
// dpositions[T.., C] (may be null) += Σ_n dout[n, t]. workspace:
// embedding_backward_workspace_bytes(N·T, V) bytes.
size_t embedding_backward_workspace_bytes(int64_t count, int64_t vocabulary);
void embedding_backward(float* dtable, float* dpositions, const void* dout,
                        const int32_t* tokens, int64_t rows, int64_t steps, int64_t channels,
                        int64_t vocabulary, float scale, void* workspace, ElementType type,
                        Stream stream);

}  // namespace xlate::kernels
