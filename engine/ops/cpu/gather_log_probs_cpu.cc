#include <cmath>
#include <vector>

#include "engine/ops/cpu/avx512_kernels.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

// The log-probabilities of given tokens, shifted as log_softmax_top_k shifts its values (the
// row's maximum, the log of its sum of exponentials, the row offset), so that a token scores
// here what it scores among the top k. Rows without a wanted token are skipped.
void gather_log_probs(Tensor& values, const Tensor& logits, const Tensor& row_offsets,
                      const Tensor& tokens) {
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  const int64_t width = tokens.dim(1);
  static const SumExpShiftedFunction sum_exp_avx512 = sum_exp_shifted_avx512();
  std::vector<float> exps(sum_exp_avx512 ? 0 : static_cast<size_t>(vocabulary));
  std::vector<int32_t> unused;
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
    float maximum = row[0];
    for (int64_t v = 1; v < vocabulary; ++v) maximum = std::fmax(maximum, row[v]);
    const float sum = sum_exp_avx512 ? sum_exp_avx512(row, maximum, vocabulary, INFINITY, unused)
                                     : exp_shifted_sum(exps.data(), row, maximum, vocabulary);
    const float offset = row_offsets.data<float>()[n];
    const float shift = offset - maximum - std::log(sum);
    for (int64_t j = 0; j < width; ++j) out[j] = wanted[j] >= 0 ? row[wanted[j]] + shift : -INFINITY;
  }
}

}  // namespace xlate::cpu
