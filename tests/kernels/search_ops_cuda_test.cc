// The search's device ops on CUDA against the CPU backend: decode_positions, and steps of
// beam_search_step over random candidates (sentences with their own beams and settings, end
// tokens among the candidates, sentences that finish, one already done). Skipped without a GPU.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/gpu_required.h"
#include "engine/backend/cuda_backend.h"
#include "engine/ops/ops.h"

namespace xlate {
namespace {

class SearchOpsCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
  }
};

void expect_equal(const Tensor& gpu, const Tensor& cpu, const std::string& what,
                  double tolerance = 0) {
  const Tensor actual = gpu.to(Device::kCPU);
  ASSERT_EQ(actual.numel(), cpu.numel()) << what;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    if (cpu.dtype() == DType::kInt32) {
      ASSERT_EQ(actual.data<int32_t>()[i], cpu.data<int32_t>()[i]) << what << " at " << i;
    } else {
      const float expected = cpu.data<float>()[i], got = actual.data<float>()[i];
      if (std::isinf(expected)) {
        ASSERT_EQ(got, expected) << what << " at " << i;
      } else {
        ASSERT_NEAR(got, expected, tolerance * std::max(1.f, std::fabs(expected)))
            << what << " at " << i;
      }
    }
  }
}

// Rows at different positions writing scattered slots through their block tables, as in
// continuous decoding.
TEST_F(SearchOpsCuda, DecodePositionsMatchTheCpu) {
  const int64_t rows = 7, capacity = 9, width = 12, length = 2, block = 4, blocks_per_slot = 3;
  const Tensor slots = Tensor::from_vector(std::vector<int32_t>{8, 0, 3, 5, 1, 6, 2}, {rows});
  const Tensor positions = Tensor::from_vector(std::vector<int32_t>{0, 4, 1, 7, 2, 0, 3}, {rows});
  std::vector<int32_t> block_ids(capacity * blocks_per_slot);
  for (size_t i = 0; i < block_ids.size(); ++i) {
    block_ids[i] = static_cast<int32_t>((i * 7 + 3) % block_ids.size());  // scattered, distinct
  }
  const Tensor slot_blocks = Tensor::from_vector(block_ids, {capacity, blocks_per_slot});
  for (int64_t steps : {1, 3}) {
    Tensor table = Tensor::from_vector(std::vector<int32_t>(capacity * width, -1), {capacity, width});
    Tensor table_gpu = table.to(Device::kCUDA);
    Tensor cache_rows = Tensor::empty({rows * steps}, DType::kInt32);
    Tensor lengths = Tensor::empty({rows}, DType::kInt32);
    Tensor cache_rows_gpu = Tensor::empty({rows * steps}, DType::kInt32, Device::kCUDA);
    Tensor lengths_gpu = Tensor::empty({rows}, DType::kInt32, Device::kCUDA);
    decode_positions(table, cache_rows, lengths, slots, positions, slot_blocks, length, block);
    decode_positions(table_gpu, cache_rows_gpu, lengths_gpu, slots.to(Device::kCUDA),
                     positions.to(Device::kCUDA), slot_blocks.to(Device::kCUDA), length, block);
    expect_equal(table_gpu, table, "row_table");
    expect_equal(cache_rows_gpu, cache_rows, "cache_rows");
    expect_equal(lengths_gpu, lengths, "key_lengths");
    // Row 3 (slot 5) decodes position 7 + 2: its block 2, row 1 of it.
    EXPECT_EQ(table.data<int32_t>()[3 * width + 9], block_ids[5 * blocks_per_slot + 2] * block + 1);
  }
}

// Both guards over random histories (repeats common: a vocabulary of 12) on float32 and
// float16 logits, rows with and without guards: the kernel equals the CPU's rules exactly
// (it only scales or bans, so float16 rounds the CPU's float32 result once).
TEST_F(SearchOpsCuda, PenalizeRepeatsMatchesTheCpu) {
  std::mt19937 generator(17);
  const int64_t rows = 9, vocabulary = 12, width = 40, table_rows = width * rows;
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocabulary) - 1);
  std::vector<int32_t> table(static_cast<size_t>(table_rows)), history(rows * width);
  for (int32_t& t : table) t = token(generator);
  std::vector<int32_t> order(static_cast<size_t>(table_rows));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), generator);
  std::copy(order.begin(), order.begin() + rows * width, history.begin());
  const std::vector<int32_t> lengths = {1, 5, 40, 17, 0, 33, 2, 40, 9};
  const std::vector<float> penalties = {1.5f, 1.f, 1.2f, 0.7f, 2.f, 1.f, 1.3f, 3.f, 1.f};
  const std::vector<int32_t> ngrams = {0, 2, 3, 1, 2, 0, 4, 2, 0};
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> values(rows * vocabulary);
  for (float& v : values) v = normal(generator);
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    SCOPED_TRACE(dtype == DType::kFloat32 ? "float32" : "float16");
    Tensor cpu = Tensor::from_vector(values, {rows, vocabulary}).to_dtype(dtype).to_float32();
    Tensor gpu = Tensor::from_vector(values, {rows, vocabulary}).to_dtype(dtype).on(Device::kCUDA);
    const Tensor tokens = Tensor::from_vector(table, {table_rows});
    const Tensor rows_table = Tensor::from_vector(history, {rows, width});
    const Tensor length_tensor = Tensor::from_vector(lengths, {rows});
    const Tensor penalty_tensor = Tensor::from_vector(penalties, {rows});
    const Tensor ngram_tensor = Tensor::from_vector(ngrams, {rows});
    penalize_repeats(cpu, tokens, rows_table, length_tensor, penalty_tensor, ngram_tensor);
    penalize_repeats(gpu, tokens.on(Device::kCUDA), rows_table.on(Device::kCUDA),
                     length_tensor.on(Device::kCUDA), penalty_tensor.on(Device::kCUDA),
                     ngram_tensor.on(Device::kCUDA));
    const Tensor expected = cpu.to_dtype(dtype).to_float32();
    expect_equal(gpu.to(Device::kCPU).to_float32(), expected, "logits");
  }
}

// The wanted tokens' scores on float32 and bfloat16 logits of a wide row (several blocks'
// worth of threads), rows without any wanted token among them: as the CPU's to float32's
// rounding of a sum in another order.
TEST_F(SearchOpsCuda, GatherLogProbsMatchesTheCpu) {
  std::mt19937 generator(23);
  const int64_t rows = 5, vocabulary = 3000, width = 4;
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> values(rows * vocabulary);
  for (float& v : values) v = normal(generator);
  const std::vector<int32_t> wanted = {0, 2999, -1, 17, -1, -1, -1, -1, 5, 5, 6, 7,
                                       1000, -1, 2, -1, 42, 43, 44, 45};
  const Tensor offsets = Tensor::from_vector(std::vector<float>{0.f, -1.f, -2.f, -3.f, 0.5f}, {rows});
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(dtype == DType::kFloat32 ? "float32" : "bfloat16");
    const Tensor cpu_logits = Tensor::from_vector(values, {rows, vocabulary}).to_dtype(dtype).to_float32();
    const Tensor tokens = Tensor::from_vector(wanted, {rows, width});
    Tensor cpu = Tensor::empty({rows, width}, DType::kFloat32);
    gather_log_probs(cpu, cpu_logits, offsets, tokens);
    Tensor gpu = Tensor::empty({rows, width}, DType::kFloat32, Device::kCUDA);
    gather_log_probs(gpu, Tensor::from_vector(values, {rows, vocabulary}).to_dtype(dtype).on(Device::kCUDA),
                     offsets.on(Device::kCUDA), tokens.on(Device::kCUDA));
    expect_equal(gpu, cpu, "wanted scores", 1e-5);
  }
}

// Random candidates of N·B rows: K distinct ids per row, best first, the end token (3) often
// among them, scores falling with the step like cumulative log-probabilities.
TopK random_candidates(int64_t rows, int k, int step, std::mt19937& generator) {
  TopK top{Tensor::empty({rows, k}, DType::kFloat32), Tensor::empty({rows, k}, DType::kInt32)};
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<int32_t> ids(40);
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin() + 1, ids.end(), generator);
    if (uniform(generator) < 0.5f) std::swap(ids[3], ids[static_cast<int>(uniform(generator) * 4)]);
    float value = -static_cast<float>(step) - uniform(generator);
    for (int j = 0; j < k; ++j) {
      top.values.data<float>()[r * k + j] = value;
      top.indices.data<int32_t>()[r * k + j] = ids[j];
      value -= 0.01f + uniform(generator);
    }
  }
  return top;
}

// S sentences with their own beams (1 .. max_beam) and settings, all live, rows one after
// another; sentence 1 is already done (its rows idle).
BeamSearchTensors initial_state(int sentences, int max_beam, int steps) {
  std::vector<int32_t> ids(sentences), first_rows, beams, n_bests, min_lengths, max_lengths;
  std::vector<float> alphas;
  int rows = 0;
  for (int s = 0; s < sentences; ++s) {
    ids[s] = s;
    first_rows.push_back(rows);
    beams.push_back(1 + (s * 7) % max_beam);
    n_bests.push_back(1 + s % beams.back());
    min_lengths.push_back(s % 3);
    max_lengths.push_back(2 + s % steps);
    alphas.push_back(s % 2 == 0 ? 0.6f : 0.f);
    rows += beams.back();
  }
  std::vector<int32_t> done(sentences, 0);
  done[1] = 1;
  BeamSearchTensors t;
  t.sentence_ids = Tensor::from_vector(ids, {sentences});
  t.first_rows = Tensor::from_vector(first_rows, {sentences});
  t.beams = Tensor::from_vector(beams, {sentences});
  t.n_bests = Tensor::from_vector(n_bests, {sentences});
  t.min_lengths = Tensor::from_vector(min_lengths, {sentences});
  t.max_lengths = Tensor::from_vector(max_lengths, {sentences});
  t.length_penalties = Tensor::from_vector(alphas, {sentences});
  t.steps = Tensor::zeros({sentences}, DType::kInt32);
  t.done = Tensor::from_vector(done, {sentences});
  t.finished_count = Tensor::zeros({sentences}, DType::kInt32);
  t.finished_scores = Tensor::zeros({sentences, 3 * max_beam}, DType::kFloat32);
  t.finished_log_probs = Tensor::zeros({sentences, 3 * max_beam}, DType::kFloat32);
  t.finished_last_steps = Tensor::zeros({sentences, 3 * max_beam}, DType::kInt32);
  t.finished_last_index = Tensor::zeros({sentences, 3 * max_beam}, DType::kInt32);
  t.history_tokens = Tensor::zeros({steps, sentences * max_beam}, DType::kInt32);
  t.history_parents = Tensor::zeros({steps, sentences * max_beam}, DType::kInt32);
  t.next_tokens = Tensor::zeros({rows}, DType::kInt32);
  t.next_scores = Tensor::zeros({rows}, DType::kFloat32);
  t.source_rows = Tensor::zeros({rows}, DType::kInt32);
  return t;
}

// Every tensor of the state, by name.
std::vector<std::pair<const char*, Tensor*>> tensors_of(BeamSearchTensors& t) {
  return {{"sentence_ids", &t.sentence_ids},
          {"first_rows", &t.first_rows},
          {"beams", &t.beams},
          {"n_bests", &t.n_bests},
          {"min_lengths", &t.min_lengths},
          {"max_lengths", &t.max_lengths},
          {"length_penalties", &t.length_penalties},
          {"steps", &t.steps},
          {"done", &t.done},
          {"finished_count", &t.finished_count},
          {"finished_scores", &t.finished_scores},
          {"finished_log_probs", &t.finished_log_probs},
          {"finished_last_steps", &t.finished_last_steps},
          {"finished_last_index", &t.finished_last_index},
          {"history_tokens", &t.history_tokens},
          {"history_parents", &t.history_parents},
          {"next_tokens", &t.next_tokens},
          {"next_scores", &t.next_scores},
          {"source_rows", &t.source_rows}};
}

TEST_F(SearchOpsCuda, BeamSearchStepsMatchTheCpu) {
  std::mt19937 generator(5);
  for (int max_beam : {1, 4, 15}) {
    const int sentences = 70, steps = 6;  // more sentences than one block of threads
    const int k = std::min(2 * max_beam + 1, 32);
    BeamSearchTensors cpu = initial_state(sentences, max_beam, steps);
    BeamSearchTensors gpu = cpu;
    for (auto& [name, tensor] : tensors_of(gpu)) *tensor = tensor->to(Device::kCUDA);
    for (int step = 0; step < steps; ++step) {
      const TopK top = random_candidates(cpu.next_tokens.numel(), k, step, generator);
      beam_search_step(cpu, top, 3);
      beam_search_step(gpu, TopK{top.values.to(Device::kCUDA), top.indices.to(Device::kCUDA)}, 3);
    }
    const std::string where = "max beam " + std::to_string(max_beam);
    const auto expected = tensors_of(cpu), actual = tensors_of(gpu);
    for (size_t i = 0; i < expected.size(); ++i) {
      expect_equal(*actual[i].second, *expected[i].second, where + " " + expected[i].first, 1e-6);
    }
    // Every sentence whose maximum length the steps reached is done, with hypotheses.
    for (int s = 0; s < sentences; ++s) {
      if (s == 1 || cpu.max_lengths.data<int32_t>()[s] > steps) continue;
      EXPECT_EQ(cpu.done.data<int32_t>()[s], 1) << where << " sentence " << s;
      EXPECT_GE(cpu.finished_count.data<int32_t>()[s], 1) << where << " sentence " << s;
    }
  }
}

}  // namespace
}  // namespace xlate
