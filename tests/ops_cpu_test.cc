// Each CPU op against a naive loop written straight from its definition in engine/ops/ops.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <gtest/gtest.h>

#include "engine/ops/cpu/avx512_kernels.h"
#include "engine/ops/ops.h"
#include "tests/random_tensor.h"

namespace xlate {
namespace {

void expect_near_all(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(actual.data<float>()[i], expected[i], tolerance) << "at flat index " << i;
  }
}

// transformers' definitions: swish x·sigmoid(x), GELU x·Φ(x) with the exact error function.
double reference_activation(Activation activation, double x) {
  switch (activation) {
    case Activation::kRelu: return std::max(x, 0.0);
    case Activation::kSwish: return x / (1.0 + std::exp(-x));
    case Activation::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::kNone: break;
  }
  return x;
}

TEST(OpsCpu, LinearWithBiasAndEachActivationMatchesNaiveProduct) {
  std::mt19937 generator(1);
  const int64_t rows = 7, inputs = 33, outputs = 19;
  Tensor x = random_tensor({rows, inputs}, generator);
  Tensor weight = random_tensor({outputs, inputs}, generator);
  Tensor bias = random_tensor({outputs}, generator);
  for (Activation activation :
       {Activation::kNone, Activation::kRelu, Activation::kSwish, Activation::kGelu}) {
    Tensor out = Tensor::empty({rows, outputs}, DType::kFloat32);
    linear_forward(out, x, weight, bias, activation);
    std::vector<double> expected;
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t n = 0; n < outputs; ++n) {
        double sum = bias.data<float>()[n];
        for (int64_t k = 0; k < inputs; ++k) {
          sum += double(x.data<float>()[m * inputs + k]) * weight.data<float>()[n * inputs + k];
        }
        expected.push_back(reference_activation(activation, sum));
      }
    }
    expect_near_all(out, expected, 1e-4);
  }
}

TEST(OpsCpu, LinearWithoutBias) {
  std::mt19937 generator(2);
  Tensor x = random_tensor({3, 5}, generator);
  Tensor weight = random_tensor({4, 5}, generator);
  Tensor out = Tensor::empty({3, 4}, DType::kFloat32);
  linear_forward(out, x, weight, Tensor(), Activation::kNone);
  std::vector<double> expected;
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 4; ++n) {
      double sum = 0;
      for (int k = 0; k < 5; ++k) sum += double(x.data<float>()[m * 5 + k]) * weight.data<float>()[n * 5 + k];
      expected.push_back(sum);
    }
  expect_near_all(out, expected, 1e-5);
}

TEST(OpsCpu, AddLayerNormMatchesDefinition) {
  std::mt19937 generator(3);
  const int64_t rows = 5, channels = 24;
  Tensor a = random_tensor({rows, channels}, generator);
  Tensor b = random_tensor({rows, channels}, generator);
  Tensor gamma = random_tensor({channels}, generator);
  Tensor beta = random_tensor({channels}, generator);
  Tensor out = Tensor::empty({rows, channels}, DType::kFloat32);
  add_layer_norm_forward(out, a, b, gamma, beta, 1e-5f);
  std::vector<double> expected;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (int64_t c = 0; c < channels; ++c) mean += a.data<float>()[r * channels + c] + b.data<float>()[r * channels + c];
    mean /= channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double v = a.data<float>()[r * channels + c] + b.data<float>()[r * channels + c] - mean;
      variance += v * v;
    }
    variance /= channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double v = a.data<float>()[r * channels + c] + b.data<float>()[r * channels + c];
      expected.push_back((v - mean) / std::sqrt(variance + 1e-5) * gamma.data<float>()[c] + beta.data<float>()[c]);
    }
  }
  expect_near_all(out, expected, 1e-4);
  // In place on the first input, as the model uses it.
  add_layer_norm_forward(a, a, b, gamma, beta, 1e-5f);
  expect_near_all(a, expected, 1e-4);
}

// Attention through a key_rows table (keys of one query row scattered over the key tensor),
// per-row lengths and both mask kinds; its weights output [N, h, T, S] (table positions, 0
// where a query sees nothing) holds the softmax that made `out`.
// Three heads of head_dim; two batches of keys with `lengths` positions of `capacity`.
void expect_attention_matches_naive_softmax(int64_t head_dim, int64_t capacity,
                                            const std::vector<int32_t>& lengths) {
  std::mt19937 generator(4);
  const int heads = 3;
  const int64_t rows = 3, steps = 4, channels = heads * head_dim;
  Tensor query = random_tensor({rows, steps, channels}, generator);
  Tensor keys = random_tensor({2, capacity, channels}, generator);
  Tensor values = random_tensor({2, capacity, channels}, generator);
  const std::vector<int32_t> batch_of_row = {1, 0, 1};
  for (bool causal : {false, true}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim) + (causal ? ", causal" : ""));
    Tensor out = Tensor::empty({rows, steps, channels}, DType::kFloat32);
    // Row n reads positions of batch batch_of_row[n], in reverse storage order, so that a
    // wrong table lookup cannot go unnoticed.
    std::vector<int32_t> key_rows, row_lengths;
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t s = 0; s < capacity; ++s) {
        key_rows.push_back(int32_t(batch_of_row[n] * capacity + (capacity - 1 - s)));
      }
      row_lengths.push_back(lengths[batch_of_row[n]]);
    }
    // Filled with 7 so that positions the op must zero cannot pass by being zero already.
    Tensor weights_out = Tensor::from_vector(std::vector<float>(size_t(rows * heads * steps * capacity), 7.f),
                                             {rows, heads, steps, capacity});
    attention_forward(out, query, keys, values, Tensor::from_vector(key_rows, {rows, capacity}),
                      Tensor::from_vector(row_lengths, {rows}), heads, causal, &weights_out);
    Tensor out_without_weights = Tensor::empty({rows, steps, channels}, DType::kFloat32);
    attention_forward(out_without_weights, query, keys, values,
                      Tensor::from_vector(key_rows, {rows, capacity}),
                      Tensor::from_vector(row_lengths, {rows}), heads, causal);
    std::vector<double> expected, expected_weights(size_t(rows * heads * steps * capacity), 0.);
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t b = batch_of_row[n], length = lengths[b];
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t visible = causal ? length - steps + t + 1 : length;
        for (int64_t h = 0; h < heads; ++h) {
          std::vector<double> weights;
          double total = 0, best = -1e300;
          for (int64_t s = 0; s < visible; ++s) {
            double score = 0;
            for (int64_t d = 0; d < head_dim; ++d) {
              score += double(query.data<float>()[(n * steps + t) * channels + h * head_dim + d]) *
                       keys.data<float>()[(b * capacity + capacity - 1 - s) * channels + h * head_dim + d];
            }
            weights.push_back(score / std::sqrt(double(head_dim)));
            best = std::max(best, weights.back());
          }
          for (double& w : weights) total += (w = std::exp(w - best));
          for (int64_t s = 0; s < visible; ++s) {
            expected_weights[size_t(((n * heads + h) * steps + t) * capacity + s)] =
                weights[s] / total;
          }
          for (int64_t d = 0; d < head_dim; ++d) {
            double sum = 0;
            for (int64_t s = 0; s < visible; ++s) {
              sum += weights[s] / total *
                     values.data<float>()[(b * capacity + capacity - 1 - s) * channels + h * head_dim + d];
            }
            expected.push_back(sum);
          }
        }
      }
    }
    expect_near_all(out, expected, 1e-5);
    expect_near_all(out_without_weights, expected, 1e-5);
    expect_near_all(weights_out, expected_weights, 1e-5);
  }
}

TEST(OpsCpu, AttentionMatchesNaiveSoftmaxWithMasks) {
  expect_attention_matches_naive_softmax(4, 7, {5, 6});
}

TEST(OpsCpu, TheAvx512AttentionKernelServesItsHeadWidthsOnly) {
  if (!__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(cpu::attend_head_avx512(64, 64), nullptr);
    GTEST_SKIP() << "this CPU has no AVX-512F: attention runs the portable attend_head";
  }
  for (int64_t width : {32, 64, 128}) EXPECT_NE(cpu::attend_head_avx512(width, width), nullptr);
  EXPECT_EQ(cpu::attend_head_avx512(48, 48), nullptr);
  EXPECT_EQ(cpu::attend_head_avx512(64, 32), nullptr);
}

// ... and collects, in the same pass, the ids of the values at or above a floor, in order.
TEST(OpsCpu, TheAvx512SumOfExponentialsEqualsThePortableOne) {
  const cpu::SumExpShiftedFunction sum_exp = cpu::sum_exp_shifted_avx512();
  if (sum_exp == nullptr) GTEST_SKIP() << "this CPU has no AVX-512F";
  std::mt19937 generator(9);
  std::uniform_real_distribution<float> logit(-40.f, 12.f);
  // Lengths around the kernel's 16- and 32-wide steps, and a vocabulary; shifts that put the
  // arguments anywhere from far below the clamp at -87 to the row's maximum.
  for (int64_t n : {0, 1, 15, 16, 17, 31, 32, 33, 8000}) {
    for (float shift : {12.f, 60.f}) {
      std::vector<float> x(static_cast<size_t>(n)), exps(static_cast<size_t>(n));
      for (float& value : x) value = logit(generator);
      double expected = 0;
      for (float value : x) expected += std::exp(double(value) - shift);
      const float portable = cpu::exp_shifted_sum(exps.data(), x.data(), shift, n);
      const float floor = n > 0 ? x[static_cast<size_t>(n) / 2] : 0.f;
      std::vector<int32_t> at_least_floor, expected_ids;
      for (int64_t i = 0; i < n; ++i) {
        if (x[static_cast<size_t>(i)] >= floor) expected_ids.push_back(static_cast<int32_t>(i));
      }
      const float vectorised = sum_exp(x.data(), shift, n, floor, at_least_floor);
      EXPECT_EQ(at_least_floor, expected_ids) << n << " values";
      std::vector<int32_t> none;
      EXPECT_EQ(sum_exp(x.data(), shift, n, INFINITY, none), vectorised);
      EXPECT_TRUE(none.empty());
      // A float sum of 8,000 terms is good to a few 1e-6 (the portable sum, one lane in a
      // sanitizer build, more so); one term left out of 17 would be off by percents.
      EXPECT_NEAR(vectorised, expected, 1e-5 * expected + 1e-37) << n << " values, shift " << shift;
      EXPECT_NEAR(vectorised, portable, 2e-5 * portable + 1e-37) << n << " values, shift " << shift;
    }
  }
}

// A diverged run's NaN score stays NaN through the exponential (the trainer then sees a loss that
// is not finite), and computing it is defined behaviour (the sanitizer build checks that): the
// exponent of a NaN is never converted to an integer.
TEST(OpsCpu, TheExponentialOfNaNIsNaN) {
  std::vector<float> x = {0.f, -1.f, NAN, -100.f, 2.f}, y(x.size());
  const float sum = cpu::exp_shifted_sum(y.data(), x.data(), 2.f, static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(sum));
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_NEAR(y[4], 1.f, 1e-6f);
  EXPECT_NEAR(y[0], std::exp(-2.f), 1e-6f);
}

// The floor of the top-k's first pass leaves at least min(k, 32) values at or above it, for rows
// shorter than the kernel's 32 subsets too, and the maximum is the row's.
TEST(OpsCpu, TheAvx512RowFloorLeavesAtLeastKValuesAboveIt) {
  const cpu::RowMaxAndFloorFunction max_and_floor = cpu::row_max_and_floor_avx512();
  if (max_and_floor == nullptr) GTEST_SKIP() << "this CPU has no AVX-512F";
  std::mt19937 generator(10);
  std::normal_distribution<float> logit(0.f, 4.f);
  for (int64_t n : {1, 7, 16, 17, 31, 32, 33, 100, 8000}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& value : x) value = logit(generator);
    if (n > 40) x[static_cast<size_t>(n) - 3] = 100.f;  // the maximum in the masked tail
    if (n > 40) x[5] = NAN;  // skipped: no comparison with it holds
    for (int k : {1, 4, 9, 32}) {
      const cpu::RowMaxAndFloor bounds = max_and_floor(x.data(), n, k);
      float maximum = -INFINITY;
      for (float value : x) maximum = value > maximum ? value : maximum;
      EXPECT_EQ(bounds.max, maximum) << n << " values, k " << k;
      const int64_t at_least =
          std::count_if(x.begin(), x.end(), [&](float v) { return v >= bounds.floor; });
      EXPECT_GE(at_least, std::min<int64_t>(k, n)) << n << " values, k " << k;
      // Not a trivial floor: on 8,000 values, beam search's few (k = 2 x beam + 1) have few others
      // above it (with k = 32, the least of the 32 subsets' maxima, a few times more).
      if (n == 8000 && k <= 9) {
        EXPECT_LE(at_least, 4 * k) << "k " << k;
      }
    }
  }
}

// Head widths 32, 64 and 128 take the AVX-512 kernel where the CPU has it (16 keys at a time):
// lengths below, at and above one block of 16 and two; the causal rows see 1 to 3 keys fewer.
TEST(OpsCpu, AttentionMatchesNaiveSoftmaxAtTheHandVectorisedHeadWidths) {
  for (int64_t head_dim : {32, 64, 128, 48}) {
    expect_attention_matches_naive_softmax(head_dim, 40, {16, 35});
    expect_attention_matches_naive_softmax(head_dim, 40, {4, 17});
  }
}

TEST(OpsCpu, AttentionWeightsOutputIsChecked) {
  const Tensor query = Tensor::zeros({1, 2, 4}, DType::kFloat32);
  const Tensor keys = Tensor::zeros({3, 4}, DType::kFloat32);
  const Tensor key_rows = Tensor::from_vector(std::vector<int32_t>{0, 1, 2}, {1, 3});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{3}, {1});
  Tensor out = Tensor::empty({1, 2, 4}, DType::kFloat32);
  Tensor too_small = Tensor::empty({1, 2, 2, 2}, DType::kFloat32);
  EXPECT_THROW(attention_forward(out, query, keys, keys, key_rows, lengths, 2, false, &too_small),
               std::logic_error);
  Tensor not_float = Tensor::empty({1, 2, 2, 3}, DType::kInt32);
  EXPECT_THROW(attention_forward(out, query, keys, keys, key_rows, lengths, 2, false, &not_float),
               std::logic_error);
}

TEST(OpsCpu, LogSoftmaxRowsSumToOneAndMatchDefinition) {
  std::mt19937 generator(5);
  Tensor x = random_tensor({3, 1000}, generator, 5.f);
  Tensor out = Tensor::empty({3, 1000}, DType::kFloat32);
  log_softmax_forward(out, x);
  std::vector<double> expected;
  for (int r = 0; r < 3; ++r) {
    double best = -1e300, total = 0;
    for (int i = 0; i < 1000; ++i) best = std::max(best, double(x.data<float>()[r * 1000 + i]));
    for (int i = 0; i < 1000; ++i) total += std::exp(x.data<float>()[r * 1000 + i] - best);
    for (int i = 0; i < 1000; ++i) expected.push_back(x.data<float>()[r * 1000 + i] - best - std::log(total));
  }
  expect_near_all(out, expected, 1e-4);
}

TEST(OpsCpu, EmbeddingScalesAndAddsPositionsFromOffset) {
  std::mt19937 generator(6);
  Tensor table = random_tensor({10, 4}, generator);
  Tensor positions = random_tensor({8, 4}, generator);
  const std::vector<int32_t> ids = {3, 9, 0, 1, 1, 7};
  Tensor out = Tensor::empty({2, 3, 4}, DType::kFloat32);
  embedding_forward(out, Tensor::from_vector(ids, {2, 3}), table, positions, 2.f, 2);
  std::vector<double> expected;
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 4; ++c)
        expected.push_back(2.0 * table.data<float>()[ids[n * 3 + t] * 4 + c] + positions.data<float>()[(2 + t) * 4 + c]);
  expect_near_all(out, expected, 1e-6);

  // Rows at their own positions (continuous decoding): row n starts at 1 + row_positions[n].
  const Tensor row_positions = Tensor::from_vector(std::vector<int32_t>{4, 0}, {2});
  embedding_forward(out, Tensor::from_vector(ids, {2, 3}), table, positions, 2.f, 1, row_positions);
  expected.clear();
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 4; ++c)
        expected.push_back(2.0 * table.data<float>()[ids[n * 3 + t] * 4 + c] +
                           positions.data<float>()[(1 + (n == 0 ? 4 : 0) + t) * 4 + c]);
  expect_near_all(out, expected, 1e-6);
  const Tensor beyond = Tensor::from_vector(std::vector<int32_t>{5, 0}, {2});  // 1 + 5 + 2 > 7
  EXPECT_THROW(embedding_forward(out, Tensor::from_vector(ids, {2, 3}), table, positions, 2.f, 1,
                                 beyond),
               std::logic_error);
}

TEST(OpsCpu, LogSoftmaxTopKRanksByLogitAndShiftsTheLogProbabilities) {
  std::mt19937 generator(8);
  // Several of the scan's 32-logit blocks and a partial one; the best late in the row too.
  const int64_t rows = 3, vocabulary = 150;
  Tensor logits = random_tensor({rows, vocabulary}, generator, 3.f);
  logits.data<float>()[7] = logits.data<float>()[9] = 20.f;  // a tie: id 7 ranks before 9
  logits.data<float>()[131] = logits.data<float>()[100] = 15.f;  // and 100 before 131
  // Distinct logits whose shifted log-probabilities round to one float (about -27.7 in row 2):
  // the larger logit, id 3, still ranks first.
  logits.data<float>()[2 * vocabulary + 3] = 1e-8f;
  logits.data<float>()[2 * vocabulary + 2] = 0.f;
  Tensor offsets = Tensor::from_vector(std::vector<float>{-1.5f, 0.f, -7.f}, {rows});
  Tensor log_probs = Tensor::empty({rows, vocabulary}, DType::kFloat32);
  log_softmax_forward(log_probs, logits);
  for (int k : {1, 6, 40, 150}) {  // beam search's few, the host fallback's many, the whole row
    Tensor values = Tensor::empty({rows, k}, DType::kFloat32);
    Tensor ids = Tensor::empty({rows, k}, DType::kInt32);
    log_softmax_top_k(values, ids, logits, offsets, k);
    for (int64_t n = 0; n < rows; ++n) {
      std::vector<std::pair<float, int>> ranked;
      for (int v = 0; v < vocabulary; ++v) {
        ranked.push_back({-logits.data<float>()[n * vocabulary + v], v});
      }
      std::sort(ranked.begin(), ranked.end());
      for (int j = 0; j < k; ++j) {
        const int id = ranked[j].second;
        EXPECT_EQ(ids.data<int32_t>()[n * k + j], id) << "k " << k << " row " << n << " rank " << j;
        EXPECT_NEAR(values.data<float>()[n * k + j],
                    log_probs.data<float>()[n * vocabulary + id] + offsets.data<float>()[n], 1e-5);
      }
    }
    EXPECT_EQ(ids.data<int32_t>()[0], 7);
    if (k > 3) {
      EXPECT_EQ(ids.data<int32_t>()[1], 9);
      EXPECT_EQ(ids.data<int32_t>()[2], 100);
      EXPECT_EQ(ids.data<int32_t>()[3], 131);
    }
  }
}

// The wanted tokens of a constrained search score what log_softmax_top_k gives them (the same
// shift, so exactly), plus the row offset; -1 scores -inf; tokens outside [-1, V) are refused.
TEST(OpsCpu, GatherLogProbsScoresTokensAsTheTopKDoes) {
  std::mt19937 generator(9);
  const int64_t rows = 3, vocabulary = 70;
  const Tensor logits = random_tensor({rows, vocabulary}, generator, 3.f);
  const Tensor offsets = Tensor::from_vector(std::vector<float>{-2.f, 0.f, -0.5f}, {rows});
  Tensor values = Tensor::empty({rows, vocabulary}, DType::kFloat32);
  Tensor ids = Tensor::empty({rows, vocabulary}, DType::kInt32);
  log_softmax_top_k(values, ids, logits, offsets, static_cast<int>(vocabulary));
  Tensor log_probs = Tensor::empty({rows, vocabulary}, DType::kFloat32);
  log_softmax_forward(log_probs, logits);
  const Tensor wanted = Tensor::from_vector(
      std::vector<int32_t>{5, 69, -1, 0, -1, -1, 33, 33, 12}, {rows, 3});
  Tensor gathered = Tensor::empty({rows, 3}, DType::kFloat32);
  gather_log_probs(gathered, logits, offsets, wanted);
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t j = 0; j < 3; ++j) {
      const int32_t token = wanted.data<int32_t>()[n * 3 + j];
      const float got = gathered.data<float>()[n * 3 + j];
      if (token < 0) {
        EXPECT_EQ(got, -INFINITY);
        continue;
      }
      const int32_t* row_ids = ids.data<int32_t>() + n * vocabulary;
      const int64_t rank = std::find(row_ids, row_ids + vocabulary, token) - row_ids;
      EXPECT_EQ(got, values.data<float>()[n * vocabulary + rank]) << "row " << n << " id " << token;
      EXPECT_NEAR(got, log_probs.data<float>()[n * vocabulary + token] + offsets.data<float>()[n],
                  1e-5);
    }
  }
  // A search's shape: a vocabulary of no whole number of vector blocks, k = 4 (log_softmax_top_k
  // then finds the maximum in its one-pass bounds, where the CPU has AVX-512), many rows at once
  // (in parallel): the top 4 ids score exactly what the top k gives them.
  const int64_t search_rows = 9, search_vocabulary = 1003, k = 4;
  const Tensor search_logits = random_tensor({search_rows, search_vocabulary}, generator, 4.f);
  std::vector<float> search_offsets(search_rows);
  for (int64_t n = 0; n < search_rows; ++n) search_offsets[n] = -0.25f * static_cast<float>(n);
  const Tensor row_offsets = Tensor::from_vector(search_offsets, {search_rows});
  Tensor top_values = Tensor::empty({search_rows, k}, DType::kFloat32);
  Tensor top_ids = Tensor::empty({search_rows, k}, DType::kInt32);
  log_softmax_top_k(top_values, top_ids, search_logits, row_offsets, static_cast<int>(k));
  Tensor top_scores = Tensor::empty({search_rows, k}, DType::kFloat32);
  gather_log_probs(top_scores, search_logits, row_offsets, top_ids);
  for (int64_t i = 0; i < search_rows * k; ++i) {
    EXPECT_EQ(top_scores.data<float>()[i], top_values.data<float>()[i]) << "entry " << i;
  }
  const Tensor beyond = Tensor::from_vector(std::vector<int32_t>{1, 70, 2}, {1, 3});
  Tensor one = Tensor::empty({1, 3}, DType::kFloat32);
  EXPECT_THROW(gather_log_probs(one, logits.view(0, {1, vocabulary}), offsets.view(0, {1}), beyond),
               std::logic_error);
}

TEST(OpsCpu, GatherRowsCopiesTheIndexedRows) {
  Tensor inp = Tensor::from_vector(std::vector<float>{0, 1, 10, 11, 20, 21}, {3, 1, 2});
  Tensor out = Tensor::empty({4, 1, 2}, DType::kFloat32);
  gather_rows(out, inp, Tensor::from_vector(std::vector<int32_t>{2, 0, 2, 1}, {4}));
  expect_near_all(out, {20, 21, 0, 1, 20, 21, 10, 11}, 0);
  EXPECT_THROW(gather_rows(out, inp, Tensor::from_vector(std::vector<int32_t>{0, 3, 0, 0}, {4})),
               std::logic_error);
}

TEST(OpsCpu, ScatterRowsWritesTheIndexedRowsOnly) {
  Tensor cache = Tensor::from_vector(std::vector<float>{0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  const Tensor fresh = Tensor::from_vector(std::vector<float>{-1, -2, -3, -4}, {2, 1, 2});
  scatter_rows(cache, fresh, Tensor::from_vector(std::vector<int32_t>{3, 1}, {2}));
  expect_near_all(cache, {0, 1, -3, -4, 20, 21, -1, -2}, 0);
  EXPECT_THROW(scatter_rows(cache, fresh, Tensor::from_vector(std::vector<int32_t>{4, 0}, {2})),
               std::logic_error);
}

// The fused projection's layout: query, keys and values read as column blocks of one
// [rows, q | k | v] tensor (key width 12, value width 6) give exactly the separate tensors'
// attention; a scatter from the k | v block writes just those columns.
TEST(OpsCpu, AttentionAndScatterReadColumnBlocks) {
  std::mt19937 generator(12);
  const int64_t rows = 2, steps = 3, key_width = 12, value_width = 6;
  const int heads = 3;
  const Tensor query = random_tensor({rows, steps, key_width}, generator);
  const Tensor keys = random_tensor({rows, steps, key_width}, generator);
  const Tensor values = random_tensor({rows, steps, value_width}, generator);
  const Tensor fused = side_by_side({query, keys, values});
  std::vector<int32_t> table;
  for (int32_t i = 0; i < rows * steps; ++i) table.push_back(i);
  const Tensor key_rows = Tensor::from_vector(table, {rows, steps});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{3, 2}, {rows});
  Tensor expected = Tensor::empty({rows, steps, value_width}, DType::kFloat32);
  attention_forward(expected, query, keys, values, key_rows, lengths, heads, false);
  Tensor out = Tensor::empty({rows, steps, value_width}, DType::kFloat32);
  attention_forward(out, Columns(fused, 0, key_width), Columns(fused, key_width, key_width),
                    Columns(fused, 2 * key_width, value_width), key_rows, lengths, heads, false);
  EXPECT_EQ(std::memcmp(out.raw_data(), expected.raw_data(), out.nbytes()), 0);

  Tensor cache = Tensor::zeros({10, key_width + value_width}, DType::kFloat32);
  const Tensor indices = Tensor::from_vector(std::vector<int32_t>{9, 0, 4, 2, 7, 5}, {6});
  scatter_rows(cache, Columns(fused, key_width, key_width + value_width), indices);
  const Tensor key_values = side_by_side({keys, values});
  for (int64_t r = 0; r < 6; ++r) {
    const int64_t row = indices.data<int32_t>()[r], width = key_width + value_width;
    EXPECT_EQ(std::memcmp(cache.data<float>() + row * width, key_values.data<float>() + r * width,
                          width * sizeof(float)),
              0)
        << "row " << r;
  }
  EXPECT_THROW(scatter_rows(cache, Columns(fused, key_width, key_width), indices),
               std::logic_error);  // narrower than a cache row
  EXPECT_THROW(attention_forward(out, Columns(fused, 20, key_width), keys, values, key_rows,
                                 lengths, heads, false),
               std::logic_error);  // beyond the fused rows
}

// Values worked by hand from the definitions (CTRL's penalty; transformers' n-gram ban). The
// histories are read through a row table from a time-major token table, as the decoder keeps
// them: row 0 fed 2 5 7 5 (token 5 twice: penalised once), row 1 fed 2 4 6 4 6 4 (bigrams
// "4 6" and "6 4" seen; its last token 4 was followed by 6), row 2 fed the same but has no
// guards.
TEST(OpsCpu, PenalizeRepeatsScalesSeenLogitsOnceAndBansRepeatedNgrams) {
  const int64_t vocabulary = 8, width = 6;
  // Token table [positions·rows]: position p of row r at p·3 + r.
  const std::vector<std::vector<int32_t>> fed = {{2, 5, 7, 5}, {2, 4, 6, 4, 6, 4}, {2, 4, 6, 4, 6, 4}};
  std::vector<int32_t> table(width * 3, 0), rows(3 * width, 0);
  std::vector<int32_t> lengths;
  for (int32_t r = 0; r < 3; ++r) {
    for (size_t p = 0; p < fed[r].size(); ++p) {
      table[p * 3 + r] = fed[r][p];
      rows[r * width + p] = static_cast<int32_t>(p * 3 + r);
    }
    lengths.push_back(static_cast<int32_t>(fed[r].size()));
  }
  std::vector<float> logits_values(3 * vocabulary);
  for (int64_t i = 0; i < 3 * vocabulary; ++i) logits_values[i] = static_cast<float>(i % 8) - 4.f;
  Tensor logits = Tensor::from_vector(logits_values, {3, vocabulary});  // -4 -3 ... 3 per row
  penalize_repeats(logits, Tensor::from_vector(table, {width * 3}),
                   Tensor::from_vector(rows, {3, width}), Tensor::from_vector(lengths, {3}),
                   Tensor::from_vector(std::vector<float>{2.f, 1.f, 1.f}, {3}),
                   Tensor::from_vector(std::vector<int32_t>{0, 2, 0}, {3}));
  const float inf = INFINITY;
  // Row 0, penalty 2: tokens 2 (-2 -> -4), 5 (1 -> 0.5), 7 (3 -> 1.5).
  // Row 1, bigrams: the last token 4 was followed by 6 (twice), so 6 is banned.
  const std::vector<float> expected = {-4, -3, -4, -1, 0, 0.5f, 2, 1.5f,
                                       -4, -3, -2, -1, 0, 1, -inf, 3,
                                       -4, -3, -2, -1, 0, 1, 2, 3};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(logits.data<float>()[i], expected[i]) << "at flat index " << i;
  }

  // n = 1 bans every token fed so far; a penalty below 1 favours them.
  Tensor unigram = Tensor::from_vector(logits_values, {3, vocabulary});
  penalize_repeats(unigram, Tensor::from_vector(table, {width * 3}),
                   Tensor::from_vector(rows, {3, width}), Tensor::from_vector(lengths, {3}),
                   Tensor::from_vector(std::vector<float>{0.5f, 1.f, 1.f}, {3}),
                   Tensor::from_vector(std::vector<int32_t>{1, 0, 0}, {3}));
  const std::vector<float> row0 = {-4, -3, -inf, -1, 0, -inf, 2, -inf};
  for (size_t i = 0; i < row0.size(); ++i) EXPECT_EQ(unigram.data<float>()[i], row0[i]) << i;
  Tensor half = Tensor::from_vector(logits_values, {3, vocabulary});
  penalize_repeats(half, Tensor::from_vector(table, {width * 3}),
                   Tensor::from_vector(rows, {3, width}), Tensor::from_vector(lengths, {3}),
                   Tensor::from_vector(std::vector<float>{0.5f, 1.f, 1.f}, {3}),
                   Tensor::from_vector(std::vector<int32_t>{0, 0, 0}, {3}));
  EXPECT_EQ(half.data<float>()[2], -1.f);  // -2 · 0.5
  EXPECT_EQ(half.data<float>()[5], 2.f);   // 1 / 0.5
  EXPECT_EQ(half.data<float>()[7], 6.f);   // 3 / 0.5

  // A history token beyond the vocabulary is a programming error, named.
  std::vector<int32_t> bad = table;
  bad[1 * 3 + 0] = 99;
  EXPECT_THROW(penalize_repeats(logits, Tensor::from_vector(bad, {width * 3}),
                                Tensor::from_vector(rows, {3, width}),
                                Tensor::from_vector(lengths, {3}),
                                Tensor::from_vector(std::vector<float>{2.f, 1.f, 1.f}, {3}),
                                Tensor::from_vector(std::vector<int32_t>{0, 0, 0}, {3})),
               std::logic_error);
}

TEST(OpsCpu, ShapeMismatchIsALogicError) {
  Tensor x = Tensor::zeros({2, 3}, DType::kFloat32);
  Tensor weight = Tensor::zeros({4, 5}, DType::kFloat32);
  Tensor out = Tensor::zeros({2, 4}, DType::kFloat32);
  EXPECT_THROW(linear_forward(out, x, weight, Tensor(), Activation::kNone), std::logic_error);
}

TEST(DType, HalfAndBfloat16ConversionsRoundTrip) {
  for (float value : {0.f, 1.f, -2.f, 0.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 3.140625f}) {
    EXPECT_EQ(half_to_float(float_to_half(value)), value) << value;
    EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(value)), bfloat16_to_float(float_to_bfloat16(value)));
  }
  EXPECT_EQ(float_to_half(1.f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.f), 0xc000);
  EXPECT_EQ(float_to_bfloat16(1.f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x4049), 3.140625f);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_NEAR(half_to_float(float_to_half(0.1f)), 0.1f, 1e-4);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) float half_to_float_f16c(uint16_t bits) { return _cvtsh_ss(bits); }
#endif

// Every float16 value: widened exactly (the processor's own conversion where it has F16C, and
// back to the same bits), NaNs staying NaNs; a tensor's conversion widens each element alike.
TEST(DType, EveryHalfValueWidensExactly) {
#if defined(__x86_64__)
  const bool has_f16c = __builtin_cpu_supports("f16c");
#else
  const bool has_f16c = false;
#endif
  std::vector<uint16_t> all(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    all[bits] = static_cast<uint16_t>(bits);
    const float value = half_to_float(static_cast<uint16_t>(bits));
    if (((bits >> 10) & 0x1f) == 31 && (bits & 0x3ff) != 0) {
      EXPECT_TRUE(std::isnan(value)) << bits;
      continue;
    }
    ASSERT_EQ(float_to_half(value), bits) << value;
    ASSERT_EQ(std::signbit(value), (bits & 0x8000) != 0) << bits;
#if defined(__x86_64__)
    if (has_f16c) {
      ASSERT_EQ(value, half_to_float_f16c(static_cast<uint16_t>(bits))) << bits;
    }
#endif
  }
  Tensor halves = Tensor::empty({65536}, DType::kFloat16);
  std::memcpy(halves.raw_data(), all.data(), all.size() * 2);
  const Tensor widened = halves.to_dtype(DType::kFloat32);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const float want = half_to_float(static_cast<uint16_t>(bits));
    const float got = widened.data<float>()[bits];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << bits;
    }
  }
}

}  // namespace
}  // namespace xlate
