// Row kernels of the CPU backend hand-vectorised for AVX-512, where the portable ones
// (vector_math.h) leave time on the table: attention's heads (on the shipped model, attention went
// from 15% to 8% of a decoding run) and beam search's log-softmax + top-k (the row's maximum and a
// floor under its k-th best, then the sum of exponentials; 5% to 4%). Each is looked up once and
// is null on a CPU without AVX-512F, whose callers use the portable kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

using AttendHeadFunction = void (*)(float* out, const float* query, const float* keys,
                                    const float* values, const int32_t* rows, int64_t count,
                                    HeadLayout key, HeadLayout value, float scale, float* scores);

// attend_head's contract, the same results up to the order of float additions (a score's sum is
// reduced as a tree), for key and value heads of 32, 64 or 128 floats on a CPU with AVX-512F;
// nullptr for any other width or CPU (callers use attend_head then).
AttendHeadFunction attend_head_avx512(int64_t key_dim, int64_t value_dim);

using SumExpShiftedFunction = float (*)(const float* x, float shift, int64_t n, float floor,
                                        std::vector<int32_t>& at_least_floor);

// The sum of exp(x[i] - shift) for i < n, exp_shifted_sum's (the same exponentials, summed in
// another order) without writing them, in the pass that appends to at_least_floor, in order,
// each i with x[i] >= floor (+inf: none); nullptr on a CPU without AVX-512F.
SumExpShiftedFunction sum_exp_shifted_avx512();

struct RowMaxAndFloor {
  float max;    // the largest x[i] (-inf for an empty row)
  float floor;  // at least min(k, 32) of the x[i] are >= it (when n >= k)
};
using RowMaxAndFloorFunction = RowMaxAndFloor (*)(const float* x, int64_t n, int k);

// One pass for a row's top-k (k <= 32): its maximum, and a floor under its k-th largest value,
// the k-th largest of the maxima of 32 disjoint subsets of the row (32 of its values). Only the
// values >= the floor can be among the k best: about k of a row of logits, where a scan that
// keeps a heap of the best so far meets a rising threshold ~k ln(n/k) times. nullptr on a CPU
// without AVX-512F.
RowMaxAndFloorFunction row_max_and_floor_avx512();

}  // namespace xlate::cpu
