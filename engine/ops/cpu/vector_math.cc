#include "engine/ops/cpu/vector_math.h"

#include <cmath>

// Clones for AVX-512 (x86-64-v4) and AVX2+FMA (x86-64-v3) machines, chosen by CPU features at
// load time. ("arch=haswell" would be chosen by CPU model and never on AMD processors.)
// ThreadSanitizer instruments the clones' ifunc resolvers, which the dynamic loader runs before
// the sanitizer's runtime is up (a crash at load): a TSan build keeps the default code only.
#if defined(__SANITIZE_THREAD__)
#define XLATE_VECTORIZED
#else
#define XLATE_VECTORIZED \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

namespace xlate::cpu {
namespace {

// exp(x) for x <= 0-ish softmax arguments, written so that loops of it vectorise: x = n ln2 + r
// with |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial (relative error < 2e-7; its
// coefficients are multiplied, never divided by: a division here was the loop's slowest
// instruction), 2^n by building the float's exponent bits. Inputs below -87 give ~1e-38 instead
// of 0, harmless next to the softmax maximum exp(0) = 1.
inline float exp_approx(float x) {
  x = x < -87.f ? -87.f : (x > 88.f ? 88.f : x);
  const float n = __builtin_rintf(x * 1.44269504f);
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  const float p =
      1.f +
      r * (1.f + r * (0.5f + r * (1.f / 6 + r * (1.f / 24 + r * (1.f / 120 + r * (1.f / 720))))));
  // A NaN input (a diverged run's score) stays NaN through p, so the result is NaN and the loss
  // says so; its exponent must not be converted to an integer (undefined behaviour).
  const int32_t bits = ((x == x ? static_cast<int32_t>(n) : 0) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

}  // namespace

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

XLATE_VECTORIZED float max_abs(const float* x, int64_t n) {
  float best = 0.f;
#pragma omp simd reduction(max : best)
  for (int64_t i = 0; i < n; ++i) best = __builtin_fabsf(x[i]) > best ? __builtin_fabsf(x[i]) : best;
  return best;
}

XLATE_VECTORIZED int64_t first_above(const float* x, int64_t n, float threshold) {
  constexpr int64_t kBlock = 32;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int above = 0;
#pragma omp simd reduction(| : above)
    for (int64_t j = 0; j < kBlock; ++j) above |= x[i + j] > threshold;
    if (above) break;
  }
  for (; i < n; ++i) {
    if (x[i] > threshold) return i;
  }
  return n;
}

XLATE_VECTORIZED void quantize_row(int8_t* q, const float* x, float inverse_scale, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] * inverse_scale;
    q[i] = static_cast<int8_t>(static_cast<int32_t>(v + (v < 0.f ? -0.5f : 0.5f)));
  }
}

XLATE_VECTORIZED void dequantize_row_in_place(float* y, float row_scale,
                                              const float* column_scales, const float* bias,
                                              bool relu, int64_t n) {
  // One branch-free loop per case: the conditions inside kept the loop scalar. The int32 is read
  // through memcpy (the same 4 bytes the float then overwrites), which is not type punning.
  const float floor = relu ? 0.f : -INFINITY;
  auto sum_at = [y](int64_t i) {
    int32_t sum;
    __builtin_memcpy(&sum, y + i, sizeof(sum));
    return static_cast<float>(sum);
  };
  if (bias != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float v = sum_at(i) * row_scale * column_scales[i] + bias[i];
      y[i] = v > floor ? v : floor;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float v = sum_at(i) * row_scale * column_scales[i];
      y[i] = v > floor ? v : floor;
    }
  }
}

void swish_in_place(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / (1.f + std::exp(-y[i]));
}

void gelu_in_place(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * (1.f + std::erf(y[i] * 0.70710678118654752f));
}

XLATE_VECTORIZED float exp_shifted_sum(float* y, const float* x, float shift, int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    y[i] = exp_approx(x[i] - shift);
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
                                  HeadLayout key_layout, HeadLayout value_layout, float scale,
                                  float* scores) {
  float best = -INFINITY;
  for (int64_t s = 0; s < count; ++s) {
    const float* key = keys + static_cast<int64_t>(rows[s]) * key_layout.row_stride;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t d = 0; d < key_layout.head_dim; ++d) sum += query[d] * key[d];
    scores[s] = sum * scale;
    best = scores[s] > best ? scores[s] : best;
  }
  float total = 0.f;
#pragma omp simd reduction(+ : total)
  for (int64_t s = 0; s < count; ++s) {
    scores[s] = exp_approx(scores[s] - best);
    total += scores[s];
  }
  const int64_t value_dim = value_layout.head_dim;
#pragma omp simd
  for (int64_t d = 0; d < value_dim; ++d) out[d] = 0.f;
  const float normaliser = count > 0 ? 1.f / total : 0.f;
  for (int64_t s = 0; s < count; ++s) {
    const float weight = scores[s] * normaliser;
    const float* value = values + static_cast<int64_t>(rows[s]) * value_layout.row_stride;
#pragma omp simd
    for (int64_t d = 0; d < value_dim; ++d) out[d] += weight * value[d];
  }
}

}  // namespace xlate::cpu
