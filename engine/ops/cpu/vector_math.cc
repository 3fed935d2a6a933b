#include "engine/ops/cpu/vector_math.h"

#include <cmath>

// Clones for AVX-512 (x86-64-v4) and AVX2+FMA (x86-64-v3) machines, chosen by CPU features at
// load time. ("arch=haswell" would be chosen by CPU model and never on AMD processors.)
#define XLATE_VECTORIZED \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace xlate::cpu {

XLATE_VECTORIZED float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

XLATE_VECTORIZED void axpy(float* y, float a, const float* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

XLATE_VECTORIZED void scale_add(float* y, float a, const float* x, const float* b, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + b[i];
}

XLATE_VECTORIZED float max_of(const float* x, int64_t n) {
  float best = -INFINITY;
#pragma omp simd reduction(max : best)
  for (int64_t i = 0; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

XLATE_VECTORIZED float exp_shifted_sum(float* y, const float* x, float shift, int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    y[i] = expf(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

XLATE_VECTORIZED void subtract(float* y, const float* x, float shift, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] - shift;
}

XLATE_VECTORIZED void scale(float* y, float a, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] *= a;
}

XLATE_VECTORIZED void add_layer_norm_row(float* y, const float* a, const float* b,
                                         const float* gamma, const float* beta, float eps,
                                         int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    y[i] = a[i] + b[i];
    sum += y[i];
  }
  const float mean = sum / static_cast<float>(n);
  float squares = 0.f;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < n; ++i) {
    const float centered = y[i] - mean;
    squares += centered * centered;
  }
  const float rstd = 1.f / std::sqrt(squares / static_cast<float>(n) + eps);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = (y[i] - mean) * rstd * gamma[i] + beta[i];
}

XLATE_VECTORIZED void attend_head(float* out, const float* query, const float* keys,
                                  const float* values, const int32_t* rows, int64_t count,
                                  int64_t row_stride, int64_t head_dim, float scale,
                                  float* scores) {
  float best = -INFINITY;
  for (int64_t s = 0; s < count; ++s) {
    const float* key = keys + static_cast<int64_t>(rows[s]) * row_stride;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t d = 0; d < head_dim; ++d) sum += query[d] * key[d];
    scores[s] = sum * scale;
    best = scores[s] > best ? scores[s] : best;
  }
  float total = 0.f;
  for (int64_t s = 0; s < count; ++s) {
    scores[s] = expf(scores[s] - best);
    total += scores[s];
  }
#pragma omp simd
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.f;
  const float normaliser = count > 0 ? 1.f / total : 0.f;
  for (int64_t s = 0; s < count; ++s) {
    const float weight = scores[s] * normaliser;
    const float* value = values + static_cast<int64_t>(rows[s]) * row_stride;
#pragma omp simd
    for (int64_t d = 0; d < head_dim; ++d) out[d] += weight * value[d];
  }
}

}  // namespace xlate::cpu
