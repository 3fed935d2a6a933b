#include <cmath>
#include <vector>

#include "engine/ops/cpu/avx512_kernels.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

namespace {

// The row's largest value as log_softmax_top_k finds it: AVX-512's one-pass maximum where the
// CPU has it, else eight running maxima (a loop the compiler vectorises, unlike std::fmax's).
float row_maximum(const float* row, int64_t vocabulary) {
  static const RowMaxAndFloorFunction max_and_floor_avx512 = row_max_and_floor_avx512();
  if (max_and_floor_avx512 != nullptr) return max_and_floor_avx512(row, vocabulary, 1).max;
  float lanes[8];
  for (float& lane : lanes) lane = -INFINITY;
  int64_t v = 0;
  for (; v + 8 <= vocabulary; v += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] = row[v + j] > lanes[j] ? row[v + j] : lanes[j];
  }
  for (; v < vocabulary; ++v) lanes[0] = row[v] > lanes[0] ? row[v] : lanes[0];
  float maximum = lanes[0];
  for (float lane : lanes) maximum = lane > maximum ? lane : maximum;
  return maximum;
}

}  // namespace

// The log-probabilities of given tokens, shifted as log_softmax_top_k shifts its values (the
// row's maximum, the log of its sum of exponentials, the row offset), so that a token scores
// here what it scores among the top k. Rows without a wanted token are skipped; the others run
// in parallel (each costs two passes over the vocabulary, a constrained sentence's beam rows
// every step).
void gather_log_probs(Tensor& values, const Tensor& logits, const Tensor& row_offsets,
                      const Tensor& tokens) {
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  const int64_t width = tokens.dim(1);
  static const SumExpShiftedFunction sum_exp_avx512 = sum_exp_shifted_avx512();
#pragma omp parallel if (rows > 1)
  {
    std::vector<float> exps(sum_exp_avx512 ? 0 : static_cast<size_t>(vocabulary));
    std::vector<int32_t> unused;
#pragma omp for schedule(dynamic, 1)
    for (int64_t n = 0; n < rows; ++n) {
      const int32_t* wanted = tokens.data<int32_t>() + n * width;
      float* out = values.data<float>() + n * width;
      bool any = false;
      for (int64_t j = 0; j < width; ++j) any = any || wanted[j] >= 0;
      if (!any) {
        for (int64_t j = 0; j < width; ++j) out[j] = -INFINITY;
        continue;
      }
      const float* row = logits.data<float>() + n * vocabulary;
      const float maximum = row_maximum(row, vocabulary);
      const float sum = sum_exp_avx512 ? sum_exp_avx512(row, maximum, vocabulary, INFINITY, unused)
                                       : exp_shifted_sum(exps.data(), row, maximum, vocabulary);
      const float offset = row_offsets.data<float>()[n];
      const float shift = offset - maximum - std::log(sum);
      for (int64_t j = 0; j < width; ++j) {
        out[j] = wanted[j] >= 0 ? row[wanted[j]] + shift : -INFINITY;
      }
    }
  }
}

}  // namespace xlate::cpu
