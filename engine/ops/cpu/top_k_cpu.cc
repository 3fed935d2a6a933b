#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "engine/ops/cpu/avx512_kernels.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {
namespace {

using Entry = std::pair<float, int32_t>;  // (logit, id)

// a ranks before b: larger logit first, then the smaller id. A function object, so that the
// heap operations inline it (a function pointer made every comparison an indirect call).
struct RanksBefore {
  bool operator()(const Entry& a, const Entry& b) const {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
};
constexpr RanksBefore ranks_before;

// The k best (row[v], v) of a row, best first. A heap of the k best so far, its worst on top.
// Once it is full, a later id ranks before the worst only with a strictly larger logit (ties go
// to the smaller id), so first_above skips, a vector block at a time, everything that cannot.
void best_of_row(std::vector<Entry>& heap, const float* row, int64_t vocabulary, int k) {
  heap.clear();
  int64_t v = 0;
  for (; v < vocabulary && static_cast<int>(heap.size()) < k; ++v) {
    heap.push_back({row[v], static_cast<int32_t>(v)});
    std::push_heap(heap.begin(), heap.end(), ranks_before);
  }
  while (v < vocabulary) {
    v += first_above(row + v, vocabulary - v, heap.front().first);
    if (v == vocabulary) break;
    std::pop_heap(heap.begin(), heap.end(), ranks_before);
    heap.back() = {row[v], static_cast<int32_t>(v)};
    std::push_heap(heap.begin(), heap.end(), ranks_before);
    ++v;
  }
  std::sort_heap(heap.begin(), heap.end(), ranks_before);
}

// The k best of `candidates` (ids into row, ascending), best first.
void best_of_candidates(std::vector<Entry>& best, const float* row,
                        const std::vector<int32_t>& candidates, int k) {
  best.clear();
  for (int32_t id : candidates) best.push_back({row[id], id});
  std::partial_sort(best.begin(), best.begin() + k, best.end(), ranks_before);
  best.resize(static_cast<size_t>(k));
}

}  // namespace

// The reference of the CUDA kernel's fused log-softmax + top-k: the k best ids ranked by
// (logit desc, id asc), as the kernel ranks them, with their float32 log-probabilities
// (max-shifted, log of the sum of exponentials) plus the row offset. Rows run in parallel.
// With AVX-512 and k <= 32, two passes over a row: its maximum and a floor under its k-th best,
// then the sum of exponentials, collecting the few ids at or above the floor to rank.
void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k) {
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  static const SumExpShiftedFunction sum_exp_avx512 = sum_exp_shifted_avx512();
  static const RowMaxAndFloorFunction max_and_floor_avx512 = row_max_and_floor_avx512();
  const bool by_floor = sum_exp_avx512 != nullptr && max_and_floor_avx512 != nullptr && k <= 32;
#pragma omp parallel if (rows > 1)
  {
    std::vector<float> exps(sum_exp_avx512 ? 0 : static_cast<size_t>(vocabulary));
    std::vector<Entry> best;
    best.reserve(static_cast<size_t>(k));
    std::vector<int32_t> candidates;
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      const float* row = logits.data<float>() + n * vocabulary;
      float sum;
      if (by_floor) {
        const RowMaxAndFloor bounds = max_and_floor_avx512(row, vocabulary, k);
        candidates.clear();
        sum = sum_exp_avx512(row, bounds.max, vocabulary, bounds.floor, candidates);
        // Fewer than k only for a row shorter than k or holding NaNs: the heap's scan then.
        if (candidates.size() >= static_cast<size_t>(k)) {
          best_of_candidates(best, row, candidates, k);
        } else {
          best_of_row(best, row, vocabulary, k);
        }
      } else {
        best_of_row(best, row, vocabulary, k);
        const float maximum = best.front().first;  // no pass of its own
        sum = sum_exp_avx512 ? sum_exp_avx512(row, maximum, vocabulary, INFINITY, candidates)
                             : exp_shifted_sum(exps.data(), row, maximum, vocabulary);
      }
      const float offset = row_offsets.defined() ? row_offsets.data<float>()[n] : 0.f;
      const float shift = offset - best.front().first - std::log(sum);
      for (int j = 0; j < k; ++j) {
        top_values.data<float>()[n * k + j] = best[j].first + shift;
        top_indices.data<int32_t>()[n * k + j] = best[j].second;
      }
    }
  }
}

}  // namespace xlate::cpu
