// Row kernels of the CPU backend hand-vectorised for AVX-512, where the portable ones
// (vector_math.h) leave time on the table: attention's heads (on the shipped model, attention went
// from 15% to 8% of a decoding run) and the softmax's sum of exponentials. Each is looked up once
// and is null on a CPU without AVX-512F, whose callers use the portable kernel.
#pragma once

#include <cstdint>

#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

using AttendHeadFunction = void (*)(float* out, const float* query, const float* keys,
                                    const float* values, const int32_t* rows, int64_t count,
                                    HeadLayout key, HeadLayout value, float scale, float* scores);

// attend_head's contract, the same results up to the order of float additions (a score's sum is
// reduced as a tree), for key and value heads of 32, 64 or 128 floats on a CPU with AVX-512F;
// nullptr for any other width or CPU (callers use attend_head then).
AttendHeadFunction attend_head_avx512(int64_t key_dim, int64_t value_dim);

using SumExpShiftedFunction = float (*)(const float* x, float shift, int64_t n);

// The sum of exp(x[i] - shift) for i < n, exp_shifted_sum's (the same exponentials, summed in
// another order) without writing them; nullptr on a CPU without AVX-512F.
SumExpShiftedFunction sum_exp_shifted_avx512();

}  // namespace xlate::cpu
