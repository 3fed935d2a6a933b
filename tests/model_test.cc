// The model's forward pass against golden logits from the independent numpy reference
// (tests/reference/make_golden.py), and incremental decoding against whole-prefix recomputation.
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/transformer.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

struct Batch {
  std::vector<std::vector<int32_t>> source, target;
};

Tensor padded(const std::vector<std::vector<int32_t>>& rows, int32_t pad, Tensor* lengths) {
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.size());
  std::vector<int32_t> values(rows.size() * width, pad), counts;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r].begin(), rows[r].end(), values.begin() + r * width);
    counts.push_back(static_cast<int32_t>(rows[r].size()));
  }
  if (lengths) *lengths = Tensor::from_vector(counts, {int64_t(rows.size())});
  return Tensor::from_vector(values, {int64_t(rows.size()), int64_t(width)});
}

// Teacher-forced logits [B, T, V] of a batch.
Tensor forward_logits(const TransformerModel& model, const Batch& batch) {
  Tensor source_lengths;
  const Tensor source = padded(batch.source, model.config().pad_id, &source_lengths);
  const Tensor target = padded(batch.target, model.config().pad_id, nullptr);
  DecoderState state = model.start_decoding(model.encode(source, source_lengths),
                                            source_lengths, source.dim(0), target.dim(1));
  return model.decode(state, target);
}

// Parameter: a golden model directory under tests/data.
class GoldenModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string directory = testing::test_data_dir() + "/" + GetParam();
    auto model = TransformerModel::Load(directory);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
    std::ifstream file(directory + "/golden.json");
    ASSERT_TRUE(file) << "golden.json missing";
    golden_ = nlohmann::json::parse(file);
    batch_.source = golden_["src"].get<std::vector<std::vector<int32_t>>>();
    batch_.target = golden_["tgt"].get<std::vector<std::vector<int32_t>>>();
  }
  // The first two golden sources, their lengths and their encoder output.
  struct EncodedPair {
    std::vector<std::vector<int32_t>> sources;
    Tensor lengths, padded, output;
  };
  EncodedPair encode_first_two() const {
    EncodedPair pair;
    pair.sources = {batch_.source[0], batch_.source[1]};
    pair.padded = padded(pair.sources, model_->config().pad_id, &pair.lengths);
    pair.output = model_->encode(pair.padded, pair.lengths);
    return pair;
  }
  // Row r of one decoding step's logits [R, V] equals the last position of the whole prefix
  // prefixes[r] recomputed from scratch over sources[row_source[r]].
  void expect_whole_prefix_logits(const Tensor& step_logits, const EncodedPair& pair,
                                  const std::vector<std::vector<int32_t>>& prefixes,
                                  const std::vector<int32_t>& row_source, size_t step) const {
    const int64_t vocabulary = model_->config().vocab_size;
    for (size_t r = 0; r < prefixes.size(); ++r) {
      const Tensor full = forward_logits(*model_, Batch{{pair.sources[row_source[r]]},
                                                        {prefixes[r]}});
      const float* logits = full.data<float>() + (prefixes[r].size() - 1) * vocabulary;
      for (int64_t v = 0; v < vocabulary; ++v) {
        ASSERT_NEAR(step_logits.data<float>()[r * vocabulary + v], logits[v], 1e-4)
            << "step " << step << " row " << r << " token " << v;
      }
    }
  }

  std::shared_ptr<const TransformerModel> model_;
  nlohmann::json golden_;
  Batch batch_;
};

// Tolerance: the reference computes in float64, we in float32; logits are O(1) and pass
// through 2+2 layers, so 1e-4 absolute (stored in golden.json) leaves ~100x headroom.
TEST_P(GoldenModel, LogitsMatchIndependentReference) {
  const Tensor logits = forward_logits(*model_, batch_);
  const float tolerance = golden_["tolerance"].get<float>();
  const int64_t steps = logits.dim(1), vocabulary = logits.dim(2);
  for (size_t b = 0; b < batch_.target.size(); ++b) {
    const auto& expected = golden_["logits"][b];
    ASSERT_EQ(expected.size(), batch_.target[b].size());
    for (size_t t = 0; t < expected.size(); ++t) {
      for (int64_t v = 0; v < vocabulary; ++v) {
        ASSERT_NEAR(logits.data<float>()[(b * steps + t) * vocabulary + v],
                    expected[t][v].get<float>(), tolerance)
            << "sentence " << b << " position " << t << " token " << v;
      }
    }
  }
}

// Each sentence alone gives the logits it gets inside the padded batch.
TEST_P(GoldenModel, LogitsArePaddingInvariant) {
  const Tensor together = forward_logits(*model_, batch_);
  const int64_t steps = together.dim(1), vocabulary = together.dim(2);
  for (size_t b = 0; b < batch_.source.size(); ++b) {
    const Tensor alone = forward_logits(*model_, {{batch_.source[b]}, {batch_.target[b]}});
    for (size_t t = 0; t < batch_.target[b].size(); ++t) {
      for (int64_t v = 0; v < vocabulary; ++v) {
        ASSERT_NEAR(alone.data<float>()[t * vocabulary + v],
                    together.data<float>()[(b * steps + t) * vocabulary + v], 1e-5);
      }
    }
  }
}

// Step-by-step decoding with the KV cache, with a beam reorder in the middle, gives at every
// step the logits of recomputing the whole prefix from scratch.
TEST_P(GoldenModel, IncrementalDecodingEqualsWholePrefixAtEveryStep) {
  const TransformerModel& model = *model_;
  const EncodedPair pair = encode_first_two();
  // Rows: sentence 0 twice, sentence 1 twice (a beam of 2), with different continuations.
  std::vector<std::vector<int32_t>> prefixes = {{2}, {2}, {2}, {2}};
  const std::vector<int32_t> row_source = {0, 0, 1, 1};
  DecoderState incremental = model.start_decoding(pair.output, pair.lengths, 4, 8);
  // Two rows (beams) per sentence, both starting at position 0.
  incremental.place_rows({{-1, 0, 0, 0}, {-1, 0, 1, 0}, {-1, 1, 0, 0}, {-1, 1, 1, 0}});
  const std::vector<std::vector<int32_t>> next_tokens = {
      {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}, {17, 18, 19, 20}, {21, 22, 23, 24}};
  for (size_t step = 0; step <= next_tokens.size(); ++step) {
    std::vector<int32_t> last;
    for (const auto& prefix : prefixes) last.push_back(prefix.back());
    const Tensor step_logits =
        model.decode(incremental, Tensor::from_vector(last, {int64_t(last.size()), 1}));
    expect_whole_prefix_logits(step_logits, pair, prefixes, row_source, step);
    if (HasFatalFailure()) return;
    if (step == next_tokens.size()) break;
    for (size_t r = 0; r < prefixes.size(); ++r) prefixes[r].push_back(next_tokens[step][r]);
    if (step == 2) {
      // Beam reorder: both rows of sentence 0 continue row 1, sentence 1's rows swap.
      incremental.select_rows_on_device(
          Tensor::from_vector(std::vector<int32_t>{1, 1, 3, 2}, {4}));
      prefixes = {prefixes[1], prefixes[1], prefixes[3], prefixes[2]};
    }
  }
}

// The same through a pool shared with other users, whose free blocks are scattered: the rows'
// positions cross block boundaries (16, 32) into blocks that are neither adjacent nor in order,
// beams reorder across them, and each step's logits still equal the whole prefix recomputed.
// Reordering copies no block: the state holds each slot's blocks and its sources' only.
TEST_P(GoldenModel, DecodingThroughScatteredBlocksEqualsWholePrefix) {
  const TransformerModel& model = *model_;
  const EncodedPair pair = encode_first_two();
  const int64_t vocabulary = model.config().vocab_size, steps = 36;
  auto pool = model.kv_cache_pool(64);
  for (int i = 0; i < 9; ++i) pool->take();
  pool->give_back({7, 1, 5, 3});  // held here: 0, 2, 4, 6, 8; free: 1, 3, 5, 7, then 9 on
  DecoderState state = model.start_slots(2, pair.padded.dim(1), 2, steps, pool);
  model.set_sources(state, pair.output, pair.lengths, {0, 1});
  state.place_rows({{-1, 0, 0, 0}, {-1, 0, 1, 0}, {-1, 1, 0, 0}, {-1, 1, 1, 0}});
  std::vector<std::vector<int32_t>> prefixes = {{2}, {2}, {2}, {2}};
  const std::vector<int32_t> row_source = {0, 0, 1, 1};
  std::mt19937 generator(5);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(vocabulary) - 1);
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<int32_t> last;
    for (const auto& prefix : prefixes) last.push_back(prefix.back());
    const Tensor step_logits =
        model.decode(state, Tensor::from_vector(last, {int64_t(last.size()), 1}));
    expect_whole_prefix_logits(step_logits, pair, prefixes, row_source,
                               static_cast<size_t>(step));
    if (HasFatalFailure()) return;
    for (auto& prefix : prefixes) prefix.push_back(token(generator));
    if (step == 5 || step == 17 || step == 30) {
      // Sentence 0's rows both continue row 1 (then row 0); sentence 1's swap.
      const int32_t kept = step == 17 ? 0 : 1;
      state.select_rows_on_device(
          Tensor::from_vector(std::vector<int32_t>{kept, kept, 3, 2}, {4}));
      prefixes = {prefixes[kept], prefixes[kept], prefixes[3], prefixes[2]};
    }
  }
  // 4 slots x 3 blocks (36 positions), 2 sources x 1 block, and the 5 held here.
  EXPECT_EQ(pool->usage().blocks_in_use, 4 * 3 + 2 + 5);
  state.place_rows({});
  EXPECT_EQ(pool->usage().blocks_in_use, 5);
}

// tiny_golden: d_k = d_v = d_model / h. tiny_golden_dkdv: d_k = 3, d_v = 5 (Table 3, row B).
INSTANTIATE_TEST_SUITE_P(Models, GoldenModel,
                         ::testing::Values("tiny_golden", "tiny_golden_dkdv"));

}  // namespace
}  // namespace xlate
