// Row-major single-precision matrix product, the primitive the training ops' CPU bodies are
// built on: every training batch has another row count, and sgemm needs no per-shape primitive
// (oneDNN's sgemm underneath: JIT kernels, OpenMP threads, and single-threaded when called from
// inside a parallel region).
#pragma once

#include <cstdint>

namespace xlate::cpu {

enum class Transpose { kNo, kYes };

// c[m, n] = alpha · op(a) · op(b) + beta · c, where op(a) is [m, k] and op(b) is [k, n];
// lda/ldb/ldc are the row strides, in floats, of a, b and c as stored.
void sgemm(Transpose transpose_a, Transpose transpose_b, int64_t m, int64_t n, int64_t k,
           float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
           float* c, int64_t ldc);

}  // namespace xlate::cpu
