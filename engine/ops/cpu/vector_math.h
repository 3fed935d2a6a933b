// Row primitives of the CPU backend, compiled for AVX2+FMA with a portable fallback chosen at
// load time (GCC target_clones). n is a count of floats.
#pragma once

#include <cstdint>

namespace xlate::cpu {

float dot(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
void axpy(float* y, float a, const float* x, int64_t n);
// y[i] = a * x[i] + b[i]
void scale_add(float* y, float a, const float* x, const float* b, int64_t n);
float max_abs(const float* x, int64_t n);
// The first i with x[i] > threshold, or n: whole blocks below the threshold are passed over with
// one vector comparison each (the top-k scan, where almost every logit is turned away).
int64_t first_above(const float* x, int64_t n, float threshold);
// q[i] = round(x[i] * inverse_scale) as int8 (ties away from zero); |x[i]| * inverse_scale must
// be <= 127.
void quantize_row(int8_t* q, const float* x, float inverse_scale, int64_t n);
// One output row of an int8 product, in place: y holds int32 sums on entry and
// sum[i] * row_scale * column_scales[i] + bias[i] (bias may be null), then max(0, ·) when relu,
// as floats on return.
void dequantize_row_in_place(float* y, float row_scale, const float* column_scales,
                             const float* bias, bool relu, int64_t n);
// y[i] = y[i] · sigmoid(y[i]) (swish), and y[i] = y[i] · Φ(y[i]) with the exact error function
// (GELU): what oneDNN's eltwise_swish and eltwise_gelu_erf compute, for the int8 product.
void swish_in_place(float* y, int64_t n);
void gelu_in_place(float* y, int64_t n);
// y[i] = exp(x[i] - shift); returns the sum of y. y may alias x.
float exp_shifted_sum(float* y, const float* x, float shift, int64_t n);
// y[i] = x[i] - shift; y may alias x.
void subtract(float* y, const float* x, float shift, int64_t n);
// y[i] *= a
void scale(float* y, float a, int64_t n);
// y = LayerNorm(a + b) * gamma + beta over one row of n; y may alias a or b.
void add_layer_norm_row(float* y, const float* a, const float* b, const float* gamma,
                        const float* beta, float eps, int64_t n);

// Row stride and per-head width of a key or value tensor, in floats.
struct HeadLayout {
  int64_t row_stride;
  int64_t head_dim;
};

// One head of attention for one query: out[d] = sum_s softmax(scale * q·k_s)_s v_s[d], where
// k_s = keys + rows[s] * key.row_stride (values likewise), s < count, d < value.head_dim.
// scores: scratch of count floats; on return it holds the unnormalised weights
// e^(scale·q·k_s - max), which attention_forward's `weights` output reads. count == 0 writes zeros.
void attend_head(float* out, const float* query, const float* keys, const float* values,
                 const int32_t* rows, int64_t count, HeadLayout key, HeadLayout value,
                 float scale, float* scores);

}  // namespace xlate::cpu
