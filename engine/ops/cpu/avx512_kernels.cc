#include "engine/ops/cpu/avx512_kernels.h"

// GCC 12 warns inside its own AVX-512 headers, whose intrinsics start from _mm512_undefined_ps
// (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {
namespace {

#define XLATE_AVX512 __attribute__((target("avx512f")))

// The first min(count, 16) lanes.
inline __mmask16 first_lanes(int64_t count) {
  return static_cast<__mmask16>((1u << (count < 16 ? count : 16)) - 1u);
}

// r[j] = the sum of v[j]'s 16 lanes, for j < 16: a transposing tree of 15 adds, where 16
// separate horizontal sums would take 60.
XLATE_AVX512 inline __m512 sum_lanes_of_16(const __m512 (&v)[16]) {
  // Pairs: in each 128-bit lane, [x0+x2, y0+y2, x1+x3, y1+y3] of v[2i] = x, v[2i+1] = y.
  __m512 pairs[8];
  for (int i = 0; i < 8; ++i) {
    pairs[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                             _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  // Quads: in each 128-bit lane L, that lane's sums of v[4i], v[4i+1], v[4i+2], v[4i+3].
  __m512 quads[4];
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(pairs[2 * i]), b = _mm512_castps_pd(pairs[2 * i + 1]);
    quads[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Across the four 128-bit lanes: halves (lanes 0+2 and 1+3), then the whole.
  const __m512 halves01 =
      _mm512_add_ps(_mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(1, 0, 1, 0)),
                    _mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 halves23 =
      _mm512_add_ps(_mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(1, 0, 1, 0)),
                    _mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(halves01, halves23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(halves01, halves23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// vector_math.cc's exp_approx, 16 lanes at a time, the same operations but for the last: p · 2^n
// by one vscalefps instead of building 2^n's bits and multiplying (exact alike: the clamp keeps
// n in [-126, 127]).
XLATE_AVX512 inline __m512 exp_approx_16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.f)), _mm512_set1_ps(88.f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f),
                                    _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x));
  __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(1.f / 720), _mm512_set1_ps(1.f / 120));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.f / 24));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.f / 6));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

XLATE_AVX512 RowMaxAndFloor row_max_and_floor(const float* x, int64_t n, int k) {
  // Lane j of `even` (`odd`) is the maximum of x[i] over i = 32m + j (32m + 16 + j): 32 disjoint
  // subsets, whose maxima are 32 of the row's values (-inf for a subset a short row leaves empty).
  const __m512 lowest = _mm512_set1_ps(-INFINITY);
  __m512 even = lowest, odd = lowest;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    even = _mm512_max_ps(even, _mm512_loadu_ps(x + i));
    odd = _mm512_max_ps(odd, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16) {
    even = _mm512_max_ps(even, _mm512_mask_loadu_ps(lowest, first_lanes(n - i), x + i));
  }
  float maxima[32];
  _mm512_storeu_ps(maxima, even);
  _mm512_storeu_ps(maxima + 16, odd);
  // A NaN (in a broken model's logits) would break the ordering nth_element relies on.
  for (float& maximum : maxima) maximum = std::isnan(maximum) ? -INFINITY : maximum;
  const int rank = k < 1 ? 0 : (k > 32 ? 31 : k - 1);
  std::nth_element(maxima, maxima + rank, maxima + 32, [](float a, float b) { return a > b; });
  return {*std::max_element(maxima, maxima + 32), maxima[rank]};
}

// Appends the ids of the valid lanes of `block` (lane 0 is id `first`) whose values are >= the
// floor: rare once a row's floor is near its k-th best, so one branch per 16 lanes.
XLATE_AVX512 inline void collect_at_least(std::vector<int32_t>& ids, __m512 block, __mmask16 valid,
                                          __m512 floor, int64_t first) {
  for (__mmask16 hits = _mm512_mask_cmp_ps_mask(valid, block, floor, _CMP_GE_OQ); hits != 0;
       hits &= static_cast<__mmask16>(hits - 1)) {
    ids.push_back(static_cast<int32_t>(first + __builtin_ctz(hits)));
  }
}

XLATE_AVX512 float sum_exp_shifted(const float* x, float shift, int64_t n, float floor,
                                   std::vector<int32_t>& at_least_floor) {
  const __m512 shift_vector = _mm512_set1_ps(shift), floor_vector = _mm512_set1_ps(floor);
  // Two accumulators: one add's latency no longer paces the loop.
  __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 low = _mm512_loadu_ps(x + i), high = _mm512_loadu_ps(x + i + 16);
    collect_at_least(at_least_floor, low, 0xFFFF, floor_vector, i);
    collect_at_least(at_least_floor, high, 0xFFFF, floor_vector, i + 16);
    even = _mm512_add_ps(even, exp_approx_16(_mm512_sub_ps(low, shift_vector)));
    odd = _mm512_add_ps(odd, exp_approx_16(_mm512_sub_ps(high, shift_vector)));
  }
  for (; i < n; i += 16) {
    const __mmask16 valid = first_lanes(n - i);
    const __m512 block = _mm512_maskz_loadu_ps(valid, x + i);
    collect_at_least(at_least_floor, block, valid, floor_vector, i);
    even = _mm512_mask_add_ps(even, valid, even, exp_approx_16(_mm512_sub_ps(block, shift_vector)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(even, odd));
}

// attend_head for key and value heads of 16·kChunks floats. Scores are taken 16 keys at a time,
// each key's dot product in one register and the 16 reduced together; the weighted sum of
// values stays in registers, kChains keys in flight, and is normalised once at the end, so the
// sum of the exponentials is off the critical path.
template <int kChunks>
XLATE_AVX512 void attend_head_chunks(float* out, const float* query, const float* keys,
                                     const float* values, const int32_t* rows, int64_t count,
                                     HeadLayout key_layout, HeadLayout value_layout, float scale,
                                     float* scores) {
  constexpr int kChains = 2;  // accumulators: 2 x kChunks registers (4 chains measured no faster)
  __m512 q[kChunks];
  for (int c = 0; c < kChunks; ++c) q[c] = _mm512_loadu_ps(query + 16 * c);
  const __m512 scale_vector = _mm512_set1_ps(scale);
  // The scores of keys s..s+15 (lanes past the last key: 0).
  auto block_scores = [&](int64_t s) XLATE_AVX512 {
    const int64_t block = count - s < 16 ? count - s : 16;
    __m512 dots[16];
    for (int64_t j = 0; j < block; ++j) {
      const float* key = keys + static_cast<int64_t>(rows[s + j]) * key_layout.row_stride;
      __m512 dot = _mm512_mul_ps(q[0], _mm512_loadu_ps(key));
      for (int c = 1; c < kChunks; ++c)
        dot = _mm512_fmadd_ps(q[c], _mm512_loadu_ps(key + 16 * c), dot);
      dots[j] = dot;
    }
    for (int64_t j = block; j < 16; ++j) dots[j] = _mm512_setzero_ps();
    return _mm512_mul_ps(sum_lanes_of_16(dots), scale_vector);
  };
  __m512 sums[kChains][kChunks];
  for (int chain = 0; chain < kChains; ++chain)
    for (int c = 0; c < kChunks; ++c) sums[chain][c] = _mm512_setzero_ps();
  auto add_value = [&](int chain, __m512 weight, int64_t s) XLATE_AVX512 {
    const float* value = values + static_cast<int64_t>(rows[s]) * value_layout.row_stride;
    for (int c = 0; c < kChunks; ++c) {
      sums[chain][c] = _mm512_fmadd_ps(weight, _mm512_loadu_ps(value + 16 * c), sums[chain][c]);
    }
  };
  float total = 0.f;
  if (count <= 16) {
    // One block (most decoding steps' key counts): the weights never leave their register, each
    // broadcast from its lane.
    const __mmask16 valid = first_lanes(count);
    const __m512 block = block_scores(0);
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    const __m512 shift =
        _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_mask_max_ps(lowest, valid, lowest, block)));
    const __m512 weights = _mm512_maskz_mov_ps(valid, exp_approx_16(_mm512_sub_ps(block, shift)));
    _mm512_mask_storeu_ps(scores, valid, weights);
    auto weight = [&](int64_t s) XLATE_AVX512 {
      return _mm512_permutexvar_ps(_mm512_set1_epi32(static_cast<int>(s)), weights);
    };
    int64_t s = 0;
    for (; s + kChains <= count; s += kChains) {
      for (int chain = 0; chain < kChains; ++chain) add_value(chain, weight(s + chain), s + chain);
    }
    for (; s < count; ++s) add_value(0, weight(s), s);
    total = _mm512_reduce_add_ps(weights);
  } else {
    __m512 best = _mm512_set1_ps(-INFINITY);
    for (int64_t s = 0; s < count; s += 16) {
      const __mmask16 valid = first_lanes(count - s);
      const __m512 block = block_scores(s);
      _mm512_mask_storeu_ps(scores + s, valid, block);
      best = _mm512_mask_max_ps(best, valid, best, block);
    }
    // The exponentials in registers, masked past the end (a call to exp_shifted_sum did the
    // remainder of every 16 one at a time: most of a decoding step's key counts).
    const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(best));
    __m512 block_sums = _mm512_setzero_ps();
    for (int64_t s = 0; s < count; s += 16) {
      const __mmask16 valid = first_lanes(count - s);
      const __m512 weights =
          exp_approx_16(_mm512_sub_ps(_mm512_maskz_loadu_ps(valid, scores + s), shift));
      _mm512_mask_storeu_ps(scores + s, valid, weights);
      block_sums = _mm512_mask_add_ps(block_sums, valid, block_sums, weights);
    }
    int64_t s = 0;
    for (; s + kChains <= count; s += kChains) {
      for (int chain = 0; chain < kChains; ++chain) {
        add_value(chain, _mm512_set1_ps(scores[s + chain]), s + chain);
      }
    }
    for (; s < count; ++s) add_value(0, _mm512_set1_ps(scores[s]), s);
    total = _mm512_reduce_add_ps(block_sums);
  }
  const __m512 normaliser = _mm512_set1_ps(count > 0 ? 1.f / total : 0.f);
  for (int c = 0; c < kChunks; ++c) {
    __m512 sum = sums[0][c];
    for (int chain = 1; chain < kChains; ++chain) sum = _mm512_add_ps(sum, sums[chain][c]);
    _mm512_storeu_ps(out + 16 * c, _mm512_mul_ps(sum, normaliser));
  }
}

}  // namespace

SumExpShiftedFunction sum_exp_shifted_avx512() {
  return __builtin_cpu_supports("avx512f") ? sum_exp_shifted : nullptr;
}

RowMaxAndFloorFunction row_max_and_floor_avx512() {
  return __builtin_cpu_supports("avx512f") ? row_max_and_floor : nullptr;
}

AttendHeadFunction attend_head_avx512(int64_t key_dim, int64_t value_dim) {
  if (key_dim != value_dim || !__builtin_cpu_supports("avx512f")) return nullptr;
  switch (key_dim) {
    case 32: return attend_head_chunks<2>;
    case 64: return attend_head_chunks<4>;
    case 128: return attend_head_chunks<8>;
    default: return nullptr;
  }
}

}  // namespace xlate::cpu
